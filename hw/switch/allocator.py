"""Separable input-first switch allocator: iSLIP (McKeown 1999), packet-granular.

Each cycle, free inputs request the free outputs they hold packets for (`req[i]`, one bit
per output); then for `iterations` rounds:

  grant   every unmatched output picks, among the unmatched inputs requesting it, the first
          at or after its grant pointer g[o] (round robin);
  accept  every unmatched input picks, among the outputs granting it, the first at or after
          its accept pointer a[i].

Pointers move only for matches made in the first round, and only on accept:
g[o] := i + 1, a[i] := o + 1 (mod N). This is what desynchronises the pointers and lets
iSLIP reach 100 % throughput under uniform traffic with virtual output queues.

Depth priority (`fair_every` = K > 1): a request may be marked `deep` (its VOQ holds more
than the packet at its head). An output that has deep requesters grants among them only,
round robin from a second pointer gh[o]; its plain pointer g[o] serves every other grant:
when no requester is deep, and on every K-th match of the output (a counter per output),
which ignores depth. Each pointer moves only on its own kind of first-round grant, so the
plain grants alone are a round robin: every input that keeps requesting is granted within
N plain grants, i.e. N x K matches of the output (no starvation). Packet-granular matching
with few packets per input buffer gains from serving deep queues first (docs/switch-core.md).
K = 1 is plain iSLIP.

Packet-granular: a match holds its input and its output (`in_busy`, `out_busy`) until the
datapath reports the packet's tail with `done[i]` (the input releases itself and the output
it holds). New matches are registered: `match_valid[o]` / `match_in[o]` pulse for one cycle
one clock after the request, and the pair stays busy from then on.

Ports:
  req[i]        In(N)   outputs input i has an eligible packet for
  deep[i]       In(N)   of those, the ones whose queue holds more than that packet
  done[i]       In(1)   input i sent the tail of its packet this cycle
  match_valid[o] Out(1) a new match for output o (one-cycle pulse, registered)
  match_in[o]   Out     its input
  new_valid[o], new_in[o]  Out  the same match, combinationally, in the cycle it is made
  out_busy, in_busy Out(N)  current holds
"""
from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from hw.common.ports import signature

__all__ = ["ISlipAllocator", "first_set", "rr_pick"]


def first_set(v, n):
    """Index of the lowest set bit of v (n-1 if none)."""
    choice = Const(n - 1, range(max(n, 2)))
    for j in reversed(range(n)):
        choice = Mux(v[j], j, choice)
    return choice


def rr_pick(m, bits, ptr, n, name):
    """Index of the first set bit of `bits` at or after `ptr` (wrapping), and whether any.
    Thermometer mask + two priority encoders: O(n) logic per arbiter."""
    idx = Signal(range(max(n, 2)), name=f"{name}_idx")
    hit = Signal(name=f"{name}_hit")
    upper = Signal(n, name=f"{name}_upper")
    m.d.comb += [
        upper.eq(bits & (Const((1 << n) - 1, n) << ptr)[:n]),
        hit.eq(bits.any()),
        idx.eq(Mux(upper.any(), first_set(upper, n), first_set(bits, n))),
    ]
    return idx, hit


class ISlipAllocator(wiring.Component):
    def __init__(self, n: int, iterations: int = 1, fair_every: int = 1):
        if n < 2:
            raise ValueError(f"ISlipAllocator: need at least 2 ports, got {n}")
        if iterations < 1:
            raise ValueError(f"ISlipAllocator: iterations must be >= 1, got {iterations}")
        if fair_every < 1:
            raise ValueError(f"ISlipAllocator: fair_every must be >= 1, got {fair_every}")
        self.n, self.iterations, self.fair_every = n, iterations, fair_every
        super().__init__(signature(specs.allocator(n, iterations, fair_every)))

    def elaborate(self, platform):
        m = Module()
        n = self.n
        g = [Signal(range(n), name=f"gptr{o}") for o in range(n)]
        prio = self.fair_every > 1
        gdeep = [Signal(range(n), name=f"ghptr{o}") for o in range(n)] if prio else g
        k = self.fair_every
        mcnt = [Signal(range(k), name=f"mcnt{o}") for o in range(n)] if prio else []
        a = [Signal(range(n), name=f"aptr{i}") for i in range(n)]
        held = [Signal(range(n), name=f"held{i}") for i in range(n)]   # output held by input i

        # inputs/outputs free this cycle: not busy, or releasing now
        in_free = Signal(n)
        out_free = Signal(n)
        rel_out = Signal(n)
        for i in range(n):
            m.d.comb += in_free[i].eq(~self.in_busy[i] | self.done[i])
        for o in range(n):
            m.d.comb += rel_out[o].eq(Cat((self.in_busy[i] & self.done[i] & (held[i] == o)) for i in range(n)).any())
            m.d.comb += out_free[o].eq(~self.out_busy[o] | rel_out[o])

        in_un = in_free
        out_un = out_free
        matched_in = [Const(0, range(n)) for _ in range(n)]      # per output: input
        matched = Const(0, n)                                    # outputs matched so far
        upd_g = []
        upd_a = []
        for it in range(self.iterations):
            # request: unmatched input i -> unmatched outputs it wants
            grants = []              # per output: (idx, hit)
            plain = []               # per output: this grant is a plain one (pointer g)
            for o in range(n):
                col = Signal(n, name=f"r{it}_col{o}")
                m.d.comb += col.eq(Cat(self.req[i][o] & in_un[i] for i in range(n)) & out_un[o].replicate(n))
                if not prio:
                    grants.append(rr_pick(m, col, g[o], n, f"g{it}_{o}"))
                    plain.append(Const(1, 1))
                    continue
                deep_col = Signal(n, name=f"r{it}_deep{o}")
                use_plain = Signal(name=f"r{it}_plain{o}")
                pick = Signal(n, name=f"r{it}_pick{o}")
                m.d.comb += [
                    deep_col.eq(col & Cat(self.deep[i][o] for i in range(n))),
                    use_plain.eq(~deep_col.any() | (mcnt[o] == k - 1)),
                    pick.eq(Mux(use_plain, col, deep_col)),
                ]
                grants.append(rr_pick(m, pick, Mux(use_plain, g[o], gdeep[o]), n, f"g{it}_{o}"))
                plain.append(use_plain)
            accepts = []             # per input: (idx, hit)
            for i in range(n):
                row = Signal(n, name=f"r{it}_row{i}")
                m.d.comb += row.eq(Cat(grants[o][1] & (grants[o][0] == i) for o in range(n)))
                accepts.append(rr_pick(m, row, a[i], n, f"a{it}_{i}"))
            new_out = Signal(n, name=f"m{it}_out")
            new_in = Signal(n, name=f"m{it}_in")
            for o in range(n):
                gi, gh = grants[o]
                m.d.comb += new_out[o].eq(gh & _accepted(accepts, gi, o, n))
            for i in range(n):
                m.d.comb += new_in[i].eq(accepts[i][1])
            for o in range(n):
                matched_in[o] = Mux(new_out[o], grants[o][0], matched_in[o])
            if it == 0:
                upd_g = [(new_out[o], grants[o][0], plain[o]) for o in range(n)]
                upd_a = [(accepts[i][1], accepts[i][0]) for i in range(n)]
            matched = matched | new_out
            nxt_in = Signal(n, name=f"in_un{it}")
            nxt_out = Signal(n, name=f"out_un{it}")
            m.d.comb += [nxt_in.eq(in_un & ~new_in), nxt_out.eq(out_un & ~new_out)]
            in_un, out_un = nxt_in, nxt_out

        # pointer updates (first round only, on accept)
        for o, (hit, gi, pl) in enumerate(upd_g):
            with m.If(hit & pl):
                m.d.sync += g[o].eq(Mux(gi == n - 1, 0, gi + 1))
            if prio:
                with m.If(hit & ~pl):
                    m.d.sync += gdeep[o].eq(Mux(gi == n - 1, 0, gi + 1))
        for o in range(len(mcnt)):                   # matches of each output, any round
            with m.If(matched[o]):
                m.d.sync += mcnt[o].eq(Mux(mcnt[o] == k - 1, 0, mcnt[o] + 1))
        for i, (hit, ao) in enumerate(upd_a):
            with m.If(hit):
                m.d.sync += a[i].eq(Mux(ao == n - 1, 0, ao + 1))

        # registered matches and holds; the matches being made, combinationally
        for o in range(n):
            m.d.sync += [self.match_valid[o].eq(matched[o]), self.match_in[o].eq(matched_in[o])]
            m.d.comb += [self.new_valid[o].eq(matched[o]), self.new_in[o].eq(matched_in[o])]
        new_busy_out = matched
        new_busy_in = Signal(n)
        for i in range(n):
            m.d.comb += new_busy_in[i].eq(Cat(matched[o] & (matched_in[o] == i) for o in range(n)).any())
            with m.If(new_busy_in[i]):
                for o in range(n):
                    with m.If(matched[o] & (matched_in[o] == i)):
                        m.d.sync += held[i].eq(o)
        m.d.sync += [
            self.out_busy.eq((self.out_busy & ~rel_out) | new_busy_out),
            self.in_busy.eq((self.in_busy & ~Cat(self.done[i] for i in range(n))) | new_busy_in),
        ]
        return m


def _accepted(accepts, gi, o, n):
    """Output o's grant to input gi was accepted: input gi accepted output o."""
    hit = Const(0, 1)
    for i in range(n):
        hit = hit | ((gi == i) & accepts[i][1] & (accepts[i][0] == o))
    return hit
