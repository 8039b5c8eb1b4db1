"""Golden model of the request builder (hw/switch/requests.py), from docs/switch-core.md
("Allocation", "Multicast"), in terms of the packets each input could send and the matches
the allocator makes:

  - an input's *offers*: the head packet of each of its unicast queues (output, VL), and one
    copy of its multicast head, for the lowest port still owed one, on the VL SL2VL(input,
    port, SL) says; the copy *can go* if that port is Active and the VL a data VL;
  - an offer *fits* when all its blocks fit the downstream credit (IBA §7.9.4);
  - an input whose multicast copy cannot go is *blocked*: it offers nothing until the copy
    has been read into the void (decided when the input is idle, started a cycle later,
    finished when its reader says done);
  - VLArb of output o is told the VLs with a fitting offer from an input that is free to
    start (not held by the allocator, or ending its packet: the VOQ's `ending`) and not
    blocked (VLArb decides a cycle ahead); the offers on the VL it picks become requests (a copy is preferred
    to the unicast head of the same queue); a unicast request is *deep* if more packets wait
    behind its head;
  - a match remembers its VL and whether it took the copy; a cycle later (when the allocator
    shows it registered) the input's reader is started for it;
  - failover (cfg.failover, docs/reliability.md): an output that is not Active but has an
    Active alternate is *redirected*; its queues are offered to the alternate: for (o, v)
    the input offers the head of its lowest-numbered redirected queue that holds a packet on
    v, else its own queue's head (the packets that waited longest for a failed port first);
    the offer is deep when anything else waits in those queues; the reader starts on the
    queue the offer came from, for output o;
  - adaptive routing (cfg.adaptive, docs/reliability.md): the outputs with one AR group
    number (not 0) are equivalent; output o is also offered, after the redirected queues and
    its own, the head of the lowest-numbered queue of another output of its group whose head
    on v is adaptive (its DLID's LFT entry has bit 7), unless that group is flow-pinned
    (group number bit 7: the route chose the port) and the other output is Active;
  - lifetimes (cfg.lifetimes, docs/reliability.md): a unicast head's age is the number of
    its output's lifetime ticks since it became the head (its queue was empty, or a read of
    the queue started), up to 2: then it has expired; an input with an expired head is
    blocked like one with a copy that cannot go, and reads the head into the void the same
    way (the copy first if both are due; the lowest (output, VL) first); the discards are
    counted per output when their reads end, and not at all for a packet whose tail was bad
    (the VOQ's `done_bad`: its receiver counted it; the copies' relay errors alike); a head
    that has been in the switch longer than the switch lifetime (the VOQ's `head_old`,
    SwitchInfo:LifeTimeValue) has expired too: its discard is counted apart
    (`life_discard`) unless it had also outlived HOQLife or sits in a stalled queue;
  - VLStalled (IBA §18.2.5.4): a queue (output, VL) whose heads were discarded for their
    age VLStallCount times in a row (over all inputs; a head of it leaving for real ends the
    run; a discard for the switch lifetime alone does neither) stalls: for the next 9 ticks
    of its output every head in it is expired at once;
    an output with no lifetime (HOQLife 20..31) has no stalls and no runs.

Outputs whose value only matters when a reader starts, a match is made or a multicast head
exists are qualified by model-only outputs (leading underscore).
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from models.credit import may_send

__all__ = ["RequestBuilderModel",]

_Q = ["mc_valid", "mc_mask", "mc_sl", "mc_blocks", "busy", "done", "ending", "done_bad"]


class RequestBuilderModel:
    peek_by_copy = True                 # its state copies faster than its cycle evaluates (models.compose)
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n = cfg.ports
        self.matched = [None] * n                # output -> (VL, a multicast copy?, queue) of its latest match
        # input -> None | ("decided", expired head or None, kind) | ("reading", output, kind);
        # kind: "copy", "hoq" or "life"
        self.discard = [None] * n
        nvl = cfg.data_vls
        self.age = {(i, o, v): 0 for i in range(n) for o in range(n) for v in range(nvl)}   # unicast heads
        self.run = {(o, v): 0 for o in range(n) for v in range(nvl)}          # age discards in a row
        self.stall_left = {(o, v): 0 for o in range(n) for v in range(nvl)}   # ticks until the stall ends

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        active = {o for o in range(n) if inp["active"] >> o & 1}
        out = {}

        def fit(o, v, blocks):
            return may_send(inp[f"fccl__{o}__{v}"], inp[f"fctbs__{o}__{v}"], blocks)

        # each input's multicast copy: (port, VL, can go)
        copy = [None] * n
        lowest = [n - 1] * n                     # the lowest port owed a copy
        for i in range(n):
            owed, sl = inp[f"q__{i}__mc_mask"], inp[f"q__{i}__mc_sl"]
            port = lowest[i] = min((o for o in range(n) if owed >> o & 1), default=n - 1)
            out[f"mc_sl2vl_index__{i}"] = (i * n + port) * 2 + sl // 8
            out[f"_mc__{i}"] = inp[f"q__{i}__mc_valid"]
            if inp[f"q__{i}__mc_valid"]:
                vl = inp[f"mc_sl2vl_word__{i}"] >> (4 * (sl % 8)) & 0xF
                copy[i] = (port, vl, port in active and vl < nvl)
        mc_bad = [copy[i] is not None and not copy[i][2] for i in range(n)]
        # each input's first expired unicast head (output, VL), lowest output then VL
        def hoq_stale(i, o, v):
            return self.age[i, o, v] == 2 or (self.stall_left[o, v] > 0 and inp[f"q__{i}__nonempty__{o}"] >> v & 1)

        def stale(i, o, v):
            return hoq_stale(i, o, v) or inp[f"q__{i}__head_old__{o}"] >> v & 1
        expired = [next(((o, v) for o in range(n) for v in range(nvl) if cfg.lifetimes and stale(i, o, v)), None)
                   for i in range(n)]
        blocked = [self.discard[i] is not None or mc_bad[i] or expired[i] is not None for i in range(n)]
        started = {}                             # input -> output whose registered match starts it
        for o in range(n):
            if inp[f"alloc__match_valid__{o}"]:
                started[inp[f"alloc__match_in__{o}"]] = o
        in_busy = inp["alloc__in_busy"]
        decide = [(mc_bad[i] or expired[i] is not None) and self.discard[i] is None
                  and not inp[f"q__{i}__busy"] and not in_busy >> i & 1 and i not in started for i in range(n)]
        done = [bool(inp[f"q__{i}__done"]) and self.discard[i] is None and not decide[i] for i in range(n)]
        # free for VLArb's next choice: not held, or ending its packet (VLArb decides a cycle ahead)
        soon_free = [not in_busy >> i & 1 or bool(inp[f"q__{i}__ending"]) for i in range(n)]

        # failover: output -> the outputs redirected to it, lowest first
        redirected_to = {o: [] for o in range(n)}
        if cfg.failover:
            for x in range(n):
                if inp["redirect"] >> x & 1:
                    redirected_to[inp[f"alt__{x}"]].append(x)

        # adaptive routing: output -> the other outputs of its AR group, lowest first
        group = [inp.get(f"ar_group__{o}", 0) if cfg.adaptive else 0 for o in range(n)]
        grouped = {o: [x for x in range(n) if x != o and group[o] and group[x] == group[o]] for o in range(n)}
        # a flow-pinned group (bit 7) chose its port at the route: its packets stay on that
        # port while it is Active
        grouped = {o: [x for x in xs if not (group[x] & 0x80 and x in active)] for o, xs in grouped.items()}

        def unicast(i, o, v):
            """The head input i offers o on v: (queue, its blocks, more waiting) or None."""
            queues = [x for x in redirected_to[o] if x != o] + [o]
            full = [x for x in queues if inp[f"q__{i}__nonempty__{x}"] >> v & 1]
            # then the other outputs of o's group whose head is adaptive
            full += [x for x in grouped[o] if x not in queues and inp[f"q__{i}__head_ar__{x}"] >> v & 1]
            if not full:
                return None
            x = full[0]
            more = len(full) > 1 or bool(inp[f"q__{i}__deep__{x}"] >> v & 1)
            return x, inp[f"q__{i}__head_blocks__{x}__{v}"], more

        def offers(i, o, v):
            """(unicast head fits, copy fits) of input i for (o, v)."""
            u = unicast(i, o, v)
            uc = u is not None and fit(o, v, u[1])
            c = copy[i]
            mc = c is not None and c[2] and c[0] == o and c[1] == v and fit(o, v, inp[f"q__{i}__mc_blocks"])
            return uc, mc

        req = [0] * n
        deep = [0] * n
        took_copy = {}
        for o in range(n):
            ready = 0
            if o in active:
                for v in range(nvl):
                    if any(not blocked[i] and soon_free[i] and any(offers(i, o, v)) for i in range(n)):
                        ready |= 1 << v
            out[f"va__{o}__ready"] = ready
            sel = inp[f"va__{o}__sel_vl"] % nvl if nvl > 1 else 0
            blocks = {}
            for i in range(n):
                uc, mc = offers(i, o, sel)
                u = unicast(i, o, sel)
                took_copy[i, o] = (mc, o if mc or u is None else u[0])
                # (an empty queue's blocks: its last head's, as the VOQ shows them)
                blocks[i] = inp[f"q__{i}__mc_blocks"] if mc else (
                    u[1] if u is not None else inp[f"q__{i}__head_blocks__{o}__{sel}"])
                if inp[f"va__{o}__sel_valid"] and o in active and not blocked[i] and (uc or mc):
                    req[i] |= 1 << o
                if uc and not mc and u[2]:
                    deep[i] |= 1 << o
            new = bool(inp[f"alloc__new_valid__{o}"])
            out[f"va__{o}__sent"] = int(new)
            out[f"va__{o}__blocks"] = blocks[inp[f"alloc__new_in__{o}"]] if new else 0
        hoq_discard = [0] * n
        life_discard = [0] * n
        aged_out = []                            # (queue, VL) of each expired head discarded now
        # a discard counts when its read into the void ends, unless the packet's tail was bad
        # (its receiver counted it: one packet, one count)
        ended = {i: self.discard[i][1:] for i in range(n) if isinstance(self.discard[i], tuple)
                 and self.discard[i][0] == "reading" and inp[f"q__{i}__done"] and not inp[f"q__{i}__done_bad"]}
        for o, kind in ended.values():
            if kind == "hoq":
                hoq_discard[o] += 1
            elif kind == "life":
                life_discard[o] += 1
        dequeued = set()                         # (input, queue, VL) whose head a read takes now
        left = set()                             # (queue, VL) whose head leaves for real now
        for i in range(n):
            out.update({f"alloc__req__{i}": req[i], f"alloc__deep__{i}": deep[i], f"alloc__done__{i}": int(done[i]),
                        f"discard__{i}": int(i in ended and ended[i][1] == "copy")})
            if decide[i] and not mc_bad[i] and hoq_stale(i, *expired[i]):
                aged_out.append(expired[i])
            rd = {"start": 0, "port": 0, "vl": 0, "mc": 0, "void": 0} | ({"dest": 0} if cfg.failover else {})
            vl_known = False
            if i in started:
                o = started[i]
                vl, (mc, queue) = self.matched[o]
                rd.update(start=1, port=queue, vl=vl, mc=int(mc))
                if cfg.failover:
                    rd["dest"] = o
                vl_known = True
                if not mc:
                    dequeued.add((i, queue, vl % nvl))
                    left.add((queue, vl % nvl))
            elif isinstance(self.discard[i], tuple) and self.discard[i][0] == "decided":
                head = self.discard[i][1]
                if head is None:                 # the blocked copy, into the void
                    rd.update(start=1, port=lowest[i], mc=1, void=1)
                else:                            # the expired head, into the void
                    rd.update(start=1, port=head[0], vl=head[1], mc=0, void=1)
                    vl_known = True
                    dequeued.add((i, head[0], head[1]))
                if cfg.failover:
                    rd["dest"] = rd["port"]
            out.update({f"rd__{i}__{k}": x for k, x in rd.items()})
            out[f"_match__{i}"] = int(vl_known)
        if cfg.lifetimes:
            out.update({f"hoq_discard__{o}": hoq_discard[o] for o in range(n)})
            out.update({f"life_discard__{o}": life_discard[o] for o in range(n)})
        if not commit:
            return out
        # ---- clock edge
        for o in range(n):
            if inp[f"alloc__new_valid__{o}"]:
                self.matched[o] = (inp[f"va__{o}__sel_vl"], took_copy[inp[f"alloc__new_in__{o}"], o])
        for i in range(n):
            if decide[i]:
                kind = "copy" if mc_bad[i] else "hoq" if hoq_stale(i, *expired[i]) else "life"
                self.discard[i] = ("decided", None if mc_bad[i] else expired[i], kind)
            elif isinstance(self.discard[i], tuple) and self.discard[i][0] == "decided":
                head, kind = self.discard[i][1:]
                self.discard[i] = ("reading", lowest[i] if head is None else head[0], kind)
            elif isinstance(self.discard[i], tuple) and inp[f"q__{i}__done"]:
                self.discard[i] = None
        if cfg.lifetimes:
            tick = inp["hoq_tick"]
            for (o, v) in self.run:
                if inp["hoq_never"] >> o & 1:
                    self.run[o, v] = self.stall_left[o, v] = 0
                elif self.stall_left[o, v]:
                    self.stall_left[o, v] -= tick >> o & 1
                else:
                    run = (0 if (o, v) in left else self.run[o, v]) + aged_out.count((o, v))
                    limit = inp[f"vl_stall__{o}"]
                    if not limit:                # VLStallCount 0: never stalls, nothing counted
                        self.run[o, v] = 0
                    elif run >= limit:
                        self.run[o, v], self.stall_left[o, v] = 0, 9
                    else:
                        self.run[o, v] = run
            for (i, o, v), a in self.age.items():
                if (i, o, v) in dequeued or not inp[f"q__{i}__nonempty__{o}"] >> v & 1:
                    self.age[i, o, v] = 0
                elif tick >> o & 1 and a < 2:
                    self.age[i, o, v] = a + 1
        return out
