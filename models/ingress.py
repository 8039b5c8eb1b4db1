"""Golden model of an input port's ingress (hw/switch/ingress.py), from docs/switch-core.md:
packets arrive on the accepted stream; at its first flit a packet is routed
(models.route.route on its LRH and the table entries given for its DLID) and from then on
every flit of it goes where that decision says: into the VOQ buffer with the route's
output, or nowhere, its blocks credited back to its input VL at once and a relay error
reported at its last flit, unless the packet is for the management port or ends bad (a
packet is counted under one reason: a bad one by the receiver). The management port sees every
accepted flit, told at a packet's first flit whether a copy is for it (models.route.for_switch).

Timing (docs/switch-core.md, "Route and VOQ write"): a packet whose first flit arrives on
the link (`la`) in cycle t is routed with the SL2VL words and AR groups of cycle t + 1 and the
LFT/MFT entries (which come two cycles after their address) and port states of cycle t + 2;
its flits enter the VOQ buffer in cycle t + 3 and after (`acc` brings each flit 1 cycle after
the link, 2 with cfg.rx_register, so they wait 2 or 1 cycles).

Outputs whose value only matters at a packet's first flit (the route's fields on the VOQ
write, the management tap's `here`) are qualified by model-only outputs (leading
underscore), which a lock-step compares nothing against.
"""
from __future__ import annotations

from collections import deque

from contracts.config import SwitchConfig
from contracts.defs import RouteDrop
from contracts.streams import FLIT
from contracts.switch import INGRESS_WRITE_CYCLE, accepted_lag
from models.packet import LRH
from models.route import for_switch, lft_adaptive, route, route_lid

__all__ = ["IngressModel",]

_FL = list(FLIT)


class IngressModel:
    peek_by_copy = True                 # its state copies faster than its cycle evaluates (models.compose)

    def __init__(self, cfg: SwitchConfig, in_port: int):
        self.cfg, self.in_port = cfg, in_port
        self.refused = False                     # the packet being written now was refused at its head
        self.refused_here = False                # ... and a copy of it was for the management port
        # what arrived on the link a cycle ago; the packet being routed (arrived two cycles ago)
        # with the SL2VL words and AR groups of the cycle after; the last decision
        self.arrived = LRH()
        self.routing = (LRH(), [0] * (2 * cfg.ports), None)
        self.decided = None
        # the accepted flits on their way to the VOQ write
        self.flits = deque([None] * (INGRESS_WRITE_CYCLE - accepted_lag(cfg)))
        self.last_route = None                   # the last head written or refused (verif/ib_funcov.py)

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def _decide(self, inp: dict) -> dict:
        """The route of the packet in `self.routing`, with this cycle's entries and port states."""
        cfg, n = self.cfg, self.cfg.ports
        lrh, row, pinned = self.routing
        lft = {cfg.lft_index(route_lid(cfg, lrh)): inp["lft_port"]}
        mft = {lrh.dlid - 0xC000: inp["mft_mask"]}
        sl2vl = {(self.in_port * n + o) * 2 + h: row[2 * o + h] for o in range(n) for h in range(2)}
        active = {p for p in range(n) if inp["port_active"] >> p & 1}
        redirected = {p for p in range(n) if inp["redirect"] >> p & 1} if cfg.failover else set()
        decision = route(cfg, self.in_port, lrh, lft, sl2vl, active, mft, redirected, pinned)
        mcast = 0xC000 <= lrh.dlid < 0xFFFF
        return {"lrh": lrh, "decision": decision, "mcast": mcast, "here": for_switch(cfg, lrh, lft, mft),
                "ar": (not mcast) and lft_adaptive(cfg, inp["lft_port"]), "lft_port": inp["lft_port"],
                "active": inp["port_active"], "redirect": inp["redirect"] if cfg.failover else 0}

    def step(self, inp: dict, commit: bool = True) -> dict:
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        # ---- address: the tables addressed from the flit arriving on the link
        la = LRH.unpack((inp["la"] >> (cfg.data_width - 64)).to_bytes(8, "big"))
        out = {"lft_dlid": route_lid(cfg, la),
               "mft_mlid": (la.dlid - 0xC000) % (1 << (max(cfg.mft_entries, 2) - 1).bit_length())}
        # ---- write: the flit that waited for its packet's decision
        f = self.flits[0]
        valid = f is not None and bool(f["valid"])
        head = valid and bool(f["sop"])
        d = self.decided
        refused = (d["decision"][0] != RouteDrop.NONE) if head else self.refused
        write = valid and not refused
        mcast = bool(d and d["mcast"]) if head else False
        out["_head"] = int(head)
        out["w__valid"] = int(write)
        out.update(_wr=int(write and head), _uc=int(write and head and not mcast), _mc=int(write and head and mcast))
        g = f or {"valid": 0, **{k: 0 for k in _FL}, "vl": 0, "blocks": 0, "sl": 0}
        out.update({f"w__{k}": g[k] for k in _FL})
        where = d["decision"][1] if (head and d) else 0
        out.update(w__dest=0 if mcast else where, w__ovl=d["decision"][2] if (head and d) else 0,
                   w__blocks=g["blocks"], w__ivl=g["vl"], w__mcast=int(mcast), w__mask=where if mcast else 0,
                   w__sl=g["sl"])
        if cfg.adaptive:
            out["w__ar"] = int(head and bool(d and d["ar"]))
        out.update({f"tap__{k}": g[k] for k in ["valid"] + _FL + ["blocks"]})
        here = bool(d and d["here"]) if head else False
        out["tap__here"] = int(here)
        dropped_now = head and refused
        # the relay error: at the refused packet's last flit, if it ended good and was not
        # for the management port (a packet that ended bad counts as a receive error only)
        for_mgmt = here if head else self.refused_here
        ends_good = valid and bool(g["eop"]) and not g["bad"]
        out["dropped"] = int(refused and ends_good and not for_mgmt)
        for v in range(nvl):
            back = inp["rel__blocks"] if inp["rel__valid"] and inp["rel__ivl"] == v else 0
            back += g["blocks"] if dropped_now and g["vl"] == v else 0
            out[f"release__{v}"] = back
        if not commit:
            return out
        if valid:
            # a refused packet's later flits go nowhere; the next packet is decided afresh
            self.refused = refused and not g["eop"]
            if head:
                self.refused_here = here
                self.last_route = dict(d, ivl=g["vl"])
        # ---- decide, head, address: the stages move on
        self.decided = self._decide(inp)
        pinned = {o: [y for y in range(n) if inp[f"ar_mask__{o}"] >> y & 1] for o in range(n)} \
            if cfg.adaptive else None
        self.routing = (self.arrived, [inp[f"sl2vl_row__{j}"] for j in range(2 * n)], pinned)
        self.arrived = la
        self.flits.popleft()
        self.flits.append({"valid": inp["acc__valid"], **{k: inp[f"acc__{k}"] for k in _FL},
                           "vl": inp["acc__vl"], "blocks": inp["acc__blocks"],
                           "sl": LRH.unpack(inp["acc__hdr"].to_bytes(8, "big")).sl})
        return out
