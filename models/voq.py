"""Golden model of the VOQ input buffer (hw/switch/voq.py), cycle by cycle.

Written from the queue semantics only — packets in FIFO order per (output, output VL),
flits readable from the cycle after they are written, the reader never passing the writer,
a one-flit output register between the buffer and the crossbar — with no blocks, free lists
or linked lists: those are the RTL's business, and a fault in them shows up here as wrong
data, order or timing.

Reading a packet: the start dequeues it; its flits are issued one a cycle (the first one
only while `first_ok`, or for a read into the void) into the output register `r`, which
shows a flit from the cycle after its issue until it is taken; a flit is issued only when
the register is empty or being taken. The reader knows where a packet ends from the cycle
after its read started, or, for a packet still being written, from the cycle after its tail
was written; `done` (with the credit `rel` of the copy that frees the packet) comes in the
cycle the last flit is issued, or in the cycle its end becomes known if that is later, and
`done_bad` with it when the packet's tail was marked bad.

Credit without the VCRC (SwitchConfig.credit_vcrc False): the buffer keeps no data of a
flit beyond what the packet's charged blocks hold (only the VCRC of a PktLen % 16 == 0
packet is ever there): it is read back as zeros, with its byte count and bad mark.

Adaptive routing (cfg.adaptive): a unicast packet written with `ar` is adaptive;
`head_ar[o]` has bit v set while the head of (o, v) is.

SwitchLifetime (cfg.lifetimes): a unicast packet remembers how many quarter-lifetime ticks
(`sw_tick`) had passed when its sop was written; `head_old[o]` has bit v set while the head
of (o, v) has seen 5 ticks or more since (counted without bound: an RTL that forgets how
old a packet is shows here).

Multicast packets wait in one more FIFO with the set of ports still owed a copy; a read of
the head for one of those ports sends a copy and strikes the port off; the copy that strikes
off the last port takes the packet out of the FIFO and returns its credit.
"""
from __future__ import annotations

from collections import deque

from contracts.config import BLOCK_BYTES, SwitchConfig
from contracts.streams import FLIT

__all__ = ["VOQModel",]

_FLIT = ["valid", *FLIT]


class _Pkt:
    def __init__(self, n, ivl, owed=0, sl=0):
        self.n, self.ivl = n, ivl
        self.ar = False                          # adaptive routing: may leave on its port's group
        self.born = 0                            # SwitchLifetime ticks seen before it came
        self.owed, self.sl = owed, sl           # multicast: ports still owed a copy, SL
        self.flits: list[dict] = []             # written so far (each readable from the next cycle)

    @property
    def complete(self) -> bool:
        return bool(self.flits) and bool(self.flits[-1]["eop"])


class _Read:
    """One packet being read: what was asked at its start and how far it got."""

    def __init__(self, pkt, port, vl, frees, void, forced):
        self.pkt, self.port, self.vl, self.frees = pkt, port, vl, frees
        self.void, self.forced = void, forced   # read into the void; because rd_void asked it
        self.issued = 0
        self.fresh = True                       # this is its start cycle


class VOQModel:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.n, self.v = cfg.ports, cfg.data_vls
        self.q = {(o, x): deque() for o in range(self.n) for x in range(self.v)}
        self.head_blocks = {(o, x): 0 for o in range(self.n) for x in range(self.v)}
        self.mc: deque[_Pkt] = deque()
        self.wpkt: _Pkt | None = None
        self.cur: _Read | None = None           # the read still issuing flits
        self.last_port = 0
        self.out: dict | None = None            # the output register: flit, port, vl, void
        self.ticks = 0                          # SwitchLifetime quarter ticks since reset

    def _vl(self, x):
        return x if self.v > 1 else 0

    def peek(self, inp: dict) -> dict:
        """This cycle's outputs without the clock edge (cheaper than a copy of the queues)."""
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        n = self.n
        out = {f"nonempty__{o}": sum(1 << x for x in range(self.v) if self.q[(o, x)]) for o in range(n)}
        out.update({f"deep__{o}": sum(1 << x for x in range(self.v) if len(self.q[(o, x)]) >= 2)
                    for o in range(n)})
        out.update({f"head_blocks__{o}__{x}": self.head_blocks[(o, x)] for o in range(n) for x in range(self.v)})
        if self.cfg.adaptive:
            out.update({f"head_ar__{o}": sum(1 << x for x in range(self.v) if self.q[(o, x)] and self.q[(o, x)][0].ar)
                        for o in range(n)})
        if self.cfg.lifetimes:
            out.update({f"head_old__{o}": sum(1 << x for x in range(self.v)
                                              if self.q[(o, x)] and self.ticks - self.q[(o, x)][0].born >= 5)
                        for o in range(n)})
        h = self.mc[0] if self.mc else None
        out.update(mc_valid=int(h is not None), mc_mask=h.owed if h else 0, mc_sl=h.sl if h else 0,
                   mc_blocks=h.n if h else 0)
        out["busy"] = int(self.cur is not None)
        # the packet being read has its end known and at most two flits left to issue: its
        # `done` may come next cycle
        c = self.cur
        out["ending"] = int(c is not None and c.pkt.complete and c.issued >= len(c.pkt.flits) - 2)
        # the packet a unicast read starts now: its blocks
        head = (self.q.get((inp["rd_port"], self._vl(inp["rd_vl"])))
                if inp["rd_start"] and not inp["rd_mc"] and self.cur is None else None)
        out["_rd_uc"] = int(bool(head))
        out["rd_blocks"] = head[0].n if head else 0
        # the output register
        o_ = self.out
        out.update({f"r__{k}": 0 for k in _FLIT + ["void", "port", "vl"]})
        if o_ is not None:
            out.update({f"r__{k}": o_["flit"][k] for k in ("data", "eop", "bytes", "bad")})
            out.update(r__valid=1, r__sop=o_["sop"], r__void=int(o_["read"].void), r__port=o_["read"].port,
                       r__vl=o_["read"].vl)
        take = o_ is not None and bool(inp["r__ready"])
        # start
        start = bool(inp["rd_start"]) and self.cur is None
        mc = bool(inp["rd_mc"])
        rd = self.cur
        if start:
            port = inp["rd_port"]
            key = (port, self._vl(inp["rd_vl"]))
            if mc:
                if h is None or not h.owed >> port & 1:
                    raise ValueError(f"VOQModel: multicast read for port {port} not owed a copy")
                pkt, frees = h, h.owed == 1 << port
            else:
                if not self.q[key]:
                    raise ValueError(f"VOQModel: rd_start on empty queue (port {key[0]}, VL {key[1]})")
                pkt, frees = self.q[key][0], True
            # complete and bad when its read starts: dropped (read into the void)
            forced = bool(inp["rd_void"])
            # the output it is read for: the queue's, or (failover) its alternate
            dest = inp["rd_dest"] if self.cfg.failover else port
            rd = _Read(pkt, dest, inp["rd_vl"], frees, forced or (pkt.complete and bool(pkt.flits[-1]["bad"])), forced)
        out["issue_port"] = rd.port if rd is not None else self.last_port
        # issue
        issue = done = False
        if rd is not None:
            known = not rd.fresh and rd.pkt.complete          # its end is known this cycle
            total = len(rd.pkt.flits)
            gate = rd.issued > 0 or bool(inp["first_ok"]) or rd.forced
            issue = rd.issued < total and (o_ is None or take) and gate
            if issue:
                done = known and rd.issued == total - 1
            else:
                done = known and rd.issued == total
        out.update({"done": int(done), "done_bad": int(done and bool(rd.pkt.flits[-1]["bad"])),
                    "rel__valid": 0, "rel__ivl": 0, "rel__blocks": 0})
        if done and rd.frees:
            out.update({"rel__valid": 1, "rel__ivl": rd.pkt.ivl, "rel__blocks": rd.pkt.n})
        if not commit:
            return out
        # ---- clock edge
        if start:
            if mc:
                h.owed &= ~(1 << inp["rd_port"])
                if rd.frees:
                    self.mc.popleft()
            else:
                self.q[key].popleft()
            self.last_port = rd.port
        if issue:
            self.out = {"flit": rd.pkt.flits[rd.issued], "sop": int(rd.issued == 0), "read": rd}
            rd.issued += 1
        elif take:
            self.out = None
        if rd is not None:
            rd.fresh = False
        self.cur = None if (rd is None or done) else rd
        if inp["w__valid"]:
            f = {k: inp[f"w__{k}"] for k in ("data", "eop", "bytes", "bad")}
            if inp["w__sop"]:
                self.wpkt = _Pkt(inp["w__blocks"], inp["w__ivl"] if self.v > 1 else inp["w__ivl"] & 1)
                if inp["w__mcast"]:
                    self.wpkt.owed, self.wpkt.sl = inp["w__mask"], inp["w__sl"]
                    self.mc.append(self.wpkt)
                else:
                    self.wpkt.ar = self.cfg.adaptive and bool(inp["w__ar"])
                    self.wpkt.born = self.ticks
                    self.q[(inp["w__dest"], self._vl(inp["w__ovl"]))].append(self.wpkt)
            kept = self.wpkt.n * BLOCK_BYTES // self.cfg.bytes_per_flit     # flits the charged blocks hold
            if not self.cfg.credit_vcrc and len(self.wpkt.flits) >= kept:
                f = dict(f, data=0)                  # past the charged blocks: not kept
            self.wpkt.flits.append(f)
        for k, qq in self.q.items():
            if qq:
                self.head_blocks[k] = qq[0].n
        if self.cfg.lifetimes:
            self.ticks += inp["sw_tick"]
        return out
