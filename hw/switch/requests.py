"""Request builder: from the inputs' queues to the allocator's requests, and from its matches
to the readers' starts (docs/switch-core.md, "Allocation" and "Multicast").

Per input i, what it could send next (from its VOQ buffer's status `q[i]`, as of the last
clock edge):
  - the head packet of each unicast queue (output o, VL v) (`nonempty`, `head_blocks`);
  - a copy of its multicast head for the lowest port still owed one (`mc_mask`), on the VL
    SL2VL(i, port, SL) (read through `mc_sl2vl_index[i]` -> `mc_sl2vl_word[i]`, same cycle).
    The copy *can go* if that port is Active and the VL is a data VL; a copy that cannot go
    *blocks* the input: it requests nothing until the copy is read out into the void
    (a *discard read*: decided in a cycle where the input is idle - no read under way, not
    held by the allocator, not started by a match - and started in the next one; meanwhile
    the input stays blocked; `discard[i]` pulses when that read ends: a relay error, unless
    the packet's tail was bad (`q[i].done_bad`): its receiver counted it, one packet, one
    count).
A packet *fits* output o on VL v when all its blocks fit the downstream credit
(hw.link.credit.fits on `fccl`/`fctbs` of (o, v), IBA §7.9.4).

Per output o (Active), VLArb (`va[o]`) is told which data VLs could go: VL v is `ready` if
some input that is free to start (not held by the allocator, or ending its packet: the VOQ's
`ending`, from its registers) and not blocked has a packet for (o, v) that fits. VLArb
decides a cycle ahead (hw/switch/vlarb.py): its `sel_vl` of this cycle was picked from the
readiness of the last. Every unblocked
input with a fitting packet for (o, sel_vl) requests o (`alloc.req[i]` bit o), its
multicast copy preferred over its unicast head for the same (o, VL); `alloc.deep[i]` bit
o: the request is for a unicast head with more packets queued behind it.

A match made now (`alloc.new_valid[o]`, `new_in[o]`) tells VLArb (`va[o].sent`, the
matched packet's `blocks`) and is remembered with its VL and kind (unicast or copy); when
the allocator shows it registered (`match_valid[o]`, `match_in[o]`) a cycle later, the
input's reader starts (`rd[i]`: port, VL, multicast copy). A discard read starts with
`rd[i].void`, for the blocked copy's port. `alloc.done[i]` passes the reader's `done` to
the allocator, except for a discard read's.

Lifetimes (cfg.lifetimes, docs/reliability.md): each unicast queue head has an age, counted
in ticks of its output's lifetime clock (`hoq_tick[o]`: HOQLife); it starts at 0 when the
packet becomes the head (the queue was empty, or a read of that queue started) and stops
at 2: the head has *expired* (it waited at least one whole HOQLife period, at most two).
A head has also expired when it has been in the switch longer than the switch lifetime
(`q[i].head_old`, SwitchInfo:LifeTimeValue, hw/switch/voq.py). An input with an expired
head is blocked and, when idle, reads it into the void like a copy that cannot go (after
such a copy, if both are due; the lowest (output, VL) first); `hoq_discard[o]` counts the
heads of output o discarded for HOQLife (or a stall) whose read into the void ended this
cycle, `life_discard[o]` those discarded only for the switch lifetime (both:
PortXmitDiscards of o; PortXmitDiscardDetails keeps them apart); like `discard[i]`, neither
counts a packet whose tail was bad.

VLStalled (cfg.lifetimes, IBA §18.2.5.4): per queue (output o, VL v), over all inputs, the
number of expired heads discarded since a head of that queue last started a real (not void)
read; when it reaches VLStallCount (`vl_stall[o]`, 0: never) the queue is *stalled*: every
input's head in it counts as expired at once, so the queue drains into the void, and so do
the packets that arrive (a discard for the switch lifetime alone neither counts nor ends a
run); a stalled queue is released at the 9th tick of its output after
the stall began (at least 8 whole HOQLife periods), its count cleared. An output without a
lifetime (`hoq_never[o]`) has no stalled queue and no count; with VLStallCount 0 nothing is
counted.

Ports (N inputs, N outputs, V data VLs):
  q[i]             In   VOQ status: nonempty[o] (V), deep[o] (V), head_blocks[o][v],
                        mc_valid, mc_mask (N), mc_sl, mc_blocks, busy, done; with
                        cfg.adaptive head_ar[o] (V): the head of (o, v) is adaptive; with
                        cfg.lifetimes head_old[o] (V): it outlived the switch lifetime
  mc_sl2vl_index[i] Out / mc_sl2vl_word[i] In   SL2VL read for input i's multicast copy
  active           In(N)  ports Active
  fccl[o][v], fctbs[o][v]  In  downstream credit of output o
  va[o]            ready (Out V), sel_valid/sel_vl (In), sent/blocks (Out)
  alloc            req[i], deep[i], done[i] (Out); in_busy, new_valid[o], new_in[o],
                   match_valid[o], match_in[o] (In)
  rd[i]            Out  start, port, vl, mc, void (the VOQ reader's start); with
                        cfg.failover also dest (the output the read is for)
  discard[i]       Out  a multicast copy's discard read ended (its packet's tail good)
  hoq_tick         In   (cfg.lifetimes) bit o: output o's lifetime period ends
  hoq_discard[o]   Out  (cfg.lifetimes) heads of output o discarded for HOQLife, their reads
                        ended now (tails good)
  life_discard[o]  Out  (cfg.lifetimes) ... for the switch lifetime alone
  vl_stall[o]      In   (cfg.lifetimes) VLStallCount of output o (0: never)
  hoq_never        In   (cfg.lifetimes) bit o: output o has no lifetime (HOQLife 20..31)
  redirect, alt[o] In   (cfg.failover) bit o: output o is not Active and its packets go to
                        its alternate, output alt[o] (Active), docs/reliability.md
  ar_group[o]      In   (cfg.adaptive) AR group of output o (register AR_GROUP; 0: none)

Failover (cfg.failover): output a serves, besides its own queues, the queues of every output
redirected to it. What input i offers a on VL v is the head of the first (lowest-numbered)
redirected queue (o, v) that is non-empty, else the head of (a, v): packets that waited for
the failed port go before those that came for a itself. The offer is deep when another
packet waits behind it in any of these queues. The match remembers which queue it took;
the reader starts with `port` that queue and `dest` a.

Adaptive routing (cfg.adaptive, docs/reliability.md): output a also serves the queues of the
other outputs of its AR group (`ar_group[a]` != 0, the same number): after the redirected
queues and its own, the first (lowest-numbered) of them whose head on v is adaptive
(`q[i].head_ar`: its DLID's LFT entry has bit 7). A packet routed
to o thus leaves on whichever port of o's group takes it first: one that is free, Active and
has downstream credit for it (late binding: the choice is made by the allocator's match).
Each queue is still read in order, so the packets of one queue start leaving in the order
they came; on different ports, they may arrive out of order downstream.
A flow-pinned group (AR_GROUP bit 7 set) is chosen at the route lookup instead (one port
per (SLID, DLID), hw/switch/route.py): its queues are offered to the group's other ports
only while their own port is not Active.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from hw.common.ports import signature
from hw.link.credit import fits
from hw.switch.allocator import first_set

__all__ = ["RequestBuilder"]


def _nbits(cfg: SwitchConfig) -> int:
    return cfg.max_packet_blocks.bit_length()


class RequestBuilder(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(specs.requests(cfg)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        nb = _nbits(cfg)
        q, al, active = self.q, self.alloc, self.active

        # ---- per input: its multicast copy (port, VL, can it go), blocked inputs
        mc_port = [Signal(range(n), name=f"mc_port{i}") for i in range(n)]
        mc_vl = [Signal(4, name=f"mc_vl{i}") for i in range(n)]
        mc_ok = [Signal(name=f"mc_ok{i}") for i in range(n)]
        mc_bad = [Signal(name=f"mc_bad{i}") for i in range(n)]
        discarding = [Signal(name=f"discarding{i}") for i in range(n)]
        blocked = [Signal(name=f"blocked{i}") for i in range(n)]
        for i in range(n):
            m.d.comb += [
                mc_port[i].eq(first_set(q[i].mc_mask, n)),
                self.mc_sl2vl_index[i].eq(((i * n + mc_port[i]) << 1) | q[i].mc_sl[3]),
                mc_vl[i].eq(self.mc_sl2vl_word[i].word_select(q[i].mc_sl[:3], 4)),
                mc_ok[i].eq(q[i].mc_valid & active.bit_select(mc_port[i], 1) & (mc_vl[i] < nvl)),
                mc_bad[i].eq(q[i].mc_valid & ~mc_ok[i]),
            ]
        # ---- per input: lifetimes (cfg.lifetimes): the age of each unicast head in its
        # output's lifetime ticks; a head two ticks old has expired
        expired = [Signal(name=f"expired{i}") for i in range(n)]
        exp_q = [Signal(range(n), name=f"exp_q{i}") for i in range(n)]
        exp_v = [Signal(range(max(nvl, 2)), name=f"exp_v{i}") for i in range(n)]
        exp_hoq = [Signal(name=f"exp_hoq{i}") for i in range(n)]    # ... for HOQLife (else the switch lifetime)
        age = [[[Signal(2, name=f"age{i}_{o}_{v}") for v in range(nvl)] for o in range(n)] for i in range(n)]
        stalled = [[Signal(name=f"stalled{o}_{v}") for v in range(nvl)] for o in range(n)]
        if cfg.lifetimes:
            for i in range(n):
                hoq_bits = Cat((age[i][o][v] == 2) | (stalled[o][v] & q[i].nonempty[o][v])
                               for o in range(n) for v in range(nvl))
                bits = hoq_bits | Cat(q[i].head_old[o][v] for o in range(n) for v in range(nvl))
                first = first_set(bits, n * nvl)
                m.d.comb += [expired[i].eq(bits.any()), exp_q[i].eq(first // nvl if nvl > 1 else first),
                             exp_v[i].eq(first % nvl if nvl > 1 else 0), exp_hoq[i].eq(hoq_bits.bit_select(first, 1))]
        for i in range(n):
            m.d.comb += blocked[i].eq(mc_bad[i] | discarding[i] | expired[i])
        soon_free = Signal(n)                    # inputs free, or about to be, for VLArb's next choice
        m.d.comb += soon_free.eq(Cat(~al.in_busy[i] | q[i].ending for i in range(n)))

        # ---- adaptive routing: outputs x and o in one AR group (not 0)
        same_group = [[Signal(name=f"same_group{x}_{o}") for o in range(n)] for x in range(n)]
        if cfg.adaptive:
            for x in range(n):
                for o in range(n):
                    g = self.ar_group[x]
                    m.d.comb += same_group[x][o].eq((g != 0) & (g == self.ar_group[o]) if x != o else 0)

        # ---- per output: VLArb readiness, requests, the match's VL and kind
        m_vl = [Signal(4, name=f"m_vl{o}") for o in range(n)]
        m_mc = [Signal(name=f"m_mc{o}") for o in range(n)]
        m_q = [Signal(range(n), name=f"m_q{o}") for o in range(n)]     # the queue a match took
        for o in range(n):
            a = self.va[o]
            ok_uc = [Signal(nvl, name=f"ok_uc{i}_{o}") for i in range(n)]
            ok_mc = [Signal(nvl, name=f"ok_mc{i}_{o}") for i in range(n)]
            # the unicast head input i offers o on VL v: nonempty, blocks, deep, its queue
            u_ne = [Signal(nvl, name=f"u_ne{i}_{o}") for i in range(n)]
            u_deep = [Signal(nvl, name=f"u_deep{i}_{o}") for i in range(n)]
            u_hb = [[Signal(nb, name=f"u_hb{i}_{o}_{v}") for v in range(nvl)] for i in range(n)]
            u_q = [[Signal(range(n), name=f"u_q{i}_{o}_{v}") for v in range(nvl)] for i in range(n)]
            for i in range(n):
                for v in range(nvl):
                    if not cfg.failover:
                        m.d.comb += [u_ne[i][v].eq(q[i].nonempty[o][v]), u_deep[i][v].eq(q[i].deep[o][v]),
                                     u_hb[i][v].eq(q[i].head_blocks[o][v]), u_q[i][v].eq(o)]
                        continue
                    # queues redirected to o with a packet on v; the lowest goes first
                    cand = Signal(n, name=f"cand{i}_{o}_{v}")
                    src = Signal(range(n), name=f"src{i}_{o}_{v}")
                    m.d.comb += [cand.eq(Cat(self.redirect[x] & (self.alt[x] == o) & q[i].nonempty[x][v]
                                             if x != o else 0 for x in range(n))),
                                 src.eq(first_set(cand, n))]
                    has = cand.any()
                    own = q[i].nonempty[o][v]
                    pick = Signal(range(n), name=f"pick{i}_{o}_{v}")
                    union = Signal(n, name=f"union{i}_{o}_{v}")
                    if cfg.adaptive:
                        # then o's own queue, then the queues of o's AR group (lowest first)
                        gcand = Signal(n, name=f"gcand{i}_{o}_{v}")
                        gsrc = Signal(range(n), name=f"gsrc{i}_{o}_{v}")
                        # (a flow-pinned group's queue only while its own port is not Active)
                        m.d.comb += [gcand.eq(Cat(same_group[x][o] & q[i].head_ar[x][v]
                                                  & ~(self.ar_group[x][7] & active[x]) if x != o else 0
                                                  for x in range(n))),
                                     gsrc.eq(first_set(gcand, n)),
                                     pick.eq(Mux(has, src, Mux(own | ~gcand.any(), o, gsrc))),
                                     union.eq(cand | gcand | (own << o))]
                    else:
                        m.d.comb += [pick.eq(Mux(has, src, o)), union.eq(cand | (own << o))]
                    m.d.comb += [
                        u_ne[i][v].eq(union.any()),
                        u_q[i][v].eq(pick),
                        u_hb[i][v].eq(Array(q[i].head_blocks[x][v] for x in range(n))[pick]),
                        u_deep[i][v].eq(Array(q[i].deep[x][v] for x in range(n))[pick]
                                        | ((union & (union - 1)) != 0)),
                    ]
            for i in range(n):
                for v in range(nvl):
                    m.d.comb += [
                        ok_uc[i][v].eq(u_ne[i][v] & fits(self.fccl[o][v], self.fctbs[o][v], u_hb[i][v])),
                        ok_mc[i][v].eq(mc_ok[i] & (mc_port[i] == o) & (mc_vl[i] == v)
                                       & fits(self.fccl[o][v], self.fctbs[o][v], q[i].mc_blocks)),
                    ]
            for v in range(nvl):
                # only inputs free to start count: a VL whose packets all wait at busy inputs
                # must not win VLArb and leave the output idle. VLArb decides a cycle ahead,
                # so "free" is: not held, or ending its packet (the VOQ's registered hint that
                # `done` may come next cycle), never the allocator's `done` of this cycle
                any_i = Cat(~blocked[i] & soon_free[i] & (ok_uc[i][v] | ok_mc[i][v]) for i in range(n)).any()
                m.d.comb += a.ready[v].eq(any_i & active[o])
            sel = a.sel_vl[:max(1, (nvl - 1).bit_length())]
            use_mc = [Signal(name=f"use_mc{i}_{o}") for i in range(n)]
            blocks_i = [Signal(nb, name=f"blocks{i}_{o}") for i in range(n)]
            queue_i = [Signal(range(n), name=f"queue{i}_{o}") for i in range(n)]
            for i in range(n):
                one = nvl == 1
                hb = u_hb[i][0] if one else Array(u_hb[i])[sel]
                uc_now = ok_uc[i][0] if one else ok_uc[i].bit_select(sel, 1)
                mc_now = ok_mc[i][0] if one else ok_mc[i].bit_select(sel, 1)
                deep_now = u_deep[i][0] if one else u_deep[i].bit_select(sel, 1)
                m.d.comb += [
                    use_mc[i].eq(mc_now),
                    blocks_i[i].eq(Mux(use_mc[i], q[i].mc_blocks, hb)),
                    queue_i[i].eq(Mux(use_mc[i], o, u_q[i][0] if one else Array(u_q[i])[sel])),
                    al.req[i][o].eq(a.sel_valid & (uc_now | use_mc[i]) & active[o] & ~blocked[i]),
                    al.deep[i][o].eq(uc_now & ~use_mc[i] & deep_now),
                ]
            new_i = al.new_in[o]
            m.d.comb += [a.sent.eq(al.new_valid[o]), a.blocks.eq(Array(blocks_i)[new_i])]
            with m.If(al.new_valid[o]):
                m.d.sync += [m_vl[o].eq(a.sel_vl), m_mc[o].eq(Array(use_mc)[new_i])]
                if cfg.failover:
                    m.d.sync += m_q[o].eq(Array(queue_i)[new_i])

        # ---- per input: a registered match starts its reader; discard reads
        counted = []                             # per input: bit o, a head of o discarded for HOQLife ended now
        counted_life = []                        # per input: bit o, ... for the switch lifetime
        decided_v = []                           # per input: bit o * nvl + v, HOQLife discards per queue
        sent_q = []                              # per input: bit o * nvl + v, a real read of that queue starts
        for i in range(n):
            start = Signal(n, name=f"start{i}")          # bit o: output o's match is input i
            m.d.comb += start.eq(Cat(al.match_valid[o] & (al.match_in[o] == i) for o in range(n)))
            port = Signal(range(n), name=f"start_port{i}")
            for o in range(n):
                with m.If(start[o]):
                    m.d.comb += port.eq(o)
            # decided now, started at the next edge (the decision depends on the SL2VL read of
            # the copy's port; the reader's start must not). The multicast head cannot change
            # meanwhile: nothing reads it; nor can an expired head: the input is blocked.
            # A copy that cannot go is read out first, then an expired unicast head.
            disc_go = Signal(name=f"disc_go{i}")
            disc_start = Signal(name=f"disc_start{i}")
            d_hoq = Signal(name=f"d_hoq{i}")             # the discard read is an expired head's
            d_life = Signal(name=f"d_life{i}")           # ... expired for the switch lifetime alone
            d_q = Signal(range(n), name=f"d_q{i}")
            d_v = Signal(range(max(nvl, 2)), name=f"d_v{i}")
            # the discard counts when its read ends, unless the packet's tail was bad: its
            # receiver counted it then (one packet, one count)
            d_count = Signal(name=f"d_count{i}")
            m.d.comb += [disc_go.eq((mc_bad[i] | expired[i]) & ~discarding[i] & ~q[i].busy & ~al.in_busy[i]
                                    & ~start.any()),
                         d_count.eq(discarding[i] & q[i].done & ~q[i].done_bad),
                         self.discard[i].eq(d_count & ~d_hoq)]
            m.d.sync += disc_start.eq(disc_go)
            with m.If(disc_go):
                m.d.sync += [discarding[i].eq(1), d_hoq.eq(~mc_bad[i]), d_q.eq(exp_q[i]), d_v.eq(exp_v[i]),
                             d_life.eq(~mc_bad[i] & ~exp_hoq[i] if cfg.lifetimes else 0)]
            with m.Elif(q[i].done):
                m.d.sync += discarding[i].eq(0)
            rd = self.rd[i]
            queue = Array(m_q)[port] if cfg.failover else port
            hoq_now = disc_start & d_hoq
            if cfg.failover:
                m.d.comb += rd.dest.eq(Mux(start.any(), port, Mux(hoq_now, d_q, mc_port[i])))
            m.d.comb += [rd.start.eq(start.any() | disc_start), rd.void.eq(disc_start),
                         rd.port.eq(Mux(start.any(), queue, Mux(hoq_now, d_q, mc_port[i]))),
                         rd.vl.eq(Mux(hoq_now, d_v, Array(m_vl)[port])),
                         rd.mc.eq(Mux(start.any(), Array(m_mc)[port], ~hoq_now)),
                         al.done[i].eq(q[i].done & ~discarding[i] & ~disc_go)]
            if cfg.lifetimes:
                # a read of a unicast queue (a match's or a discard's) dequeues its head: the
                # next one starts at age 0
                for o in range(n):
                    for v in range(nvl):
                        deq = rd.start & ~rd.mc & (rd.port == o) & ((rd.vl == v) if nvl > 1 else 1)
                        a = age[i][o][v]
                        with m.If(deq | ~q[i].nonempty[o][v]):
                            m.d.sync += a.eq(0)
                        with m.Elif(self.hoq_tick[o] & (a != 2)):
                            m.d.sync += a.eq(a + 1)
                hoq_go = disc_go & ~mc_bad[i] & exp_hoq[i]
                counted.append(Mux(d_count & d_hoq & ~d_life, Const(1, n) << d_q, 0)[:n])
                counted_life.append(Mux(d_count & d_life, Const(1, n) << d_q, 0)[:n])
                decided_v.append(Mux(hoq_go, Const(1, n * nvl) << (exp_q[i] * nvl + exp_v[i]), 0)[:n * nvl])
                sent_q.append(Mux(start.any() & ~Array(m_mc)[port], Const(1, n * nvl) << (queue * nvl + rd.vl),
                                  0)[:n * nvl])
        if cfg.lifetimes:
            # expired heads discarded per output (their reads ended this cycle; several
            # inputs may at once)
            for o in range(n):
                m.d.comb += [self.hoq_discard[o].eq(sum(d[o] for d in counted)),
                             self.life_discard[o].eq(sum(d[o] for d in counted_life))]
            # VLStalled: per queue (o, v), the discards in a row, the stall and its ticks
            for o in range(n):
                for v in range(nvl):
                    k = o * nvl + v
                    run = Signal(3, name=f"stall_run{o}_{v}")
                    ticks = Signal(4, name=f"stall_ticks{o}_{v}")
                    total = Signal(range(8 + n), name=f"stall_total{o}_{v}")
                    m.d.comb += total.eq(Mux(Cat(s[k] for s in sent_q).any(), 0, run)
                                         + sum(d[k] for d in decided_v))
                    limit = self.vl_stall[o]
                    with m.If(self.hoq_never[o]):
                        m.d.sync += [stalled[o][v].eq(0), run.eq(0), ticks.eq(0)]
                    with m.Elif(stalled[o][v]):
                        with m.If(self.hoq_tick[o]):
                            m.d.sync += ticks.eq(ticks + 1)
                            with m.If(ticks == 8):
                                m.d.sync += [stalled[o][v].eq(0), ticks.eq(0)]
                    with m.Elif(limit == 0):
                        m.d.sync += run.eq(0)
                    with m.Elif(total >= limit):
                        m.d.sync += [stalled[o][v].eq(1), run.eq(0), ticks.eq(0)]
                    with m.Else():
                        m.d.sync += run.eq(total)
        return m
