"""Golden model of an input port's ingress (hw/switch/ingress.py), from docs/switch-core.md:
packets arrive on the accepted stream; at its first flit a packet is routed
(models.route.route on its LRH and the table entries given for its DLID) and from then on
every flit of it goes where that decision says: into the VOQ buffer with the route's
output, or nowhere, its blocks credited back to its input VL at once and a relay error
reported at its last flit, unless the packet is for the management port or ends bad (a
packet is counted under one reason: a bad one by the receiver). The management port sees every
accepted flit, told at a packet's first flit whether a copy is for it (models.route.for_switch).

Outputs whose value only matters at a packet's first flit (the route's fields on the VOQ
write, the management tap's `here`, the SL2VL read address) are qualified by model-only
outputs (leading underscore), which a lock-step compares nothing against.
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.defs import RouteDrop
from contracts.streams import FLIT
from models.packet import LRH
from models.route import for_switch, lft_adaptive, route, route_lid

__all__ = ["IngressModel",]

_FL = list(FLIT)
_W = ["dest", "ovl", "blocks", "ivl", "mcast", "mask", "sl"]


class _SL2VLRead:
    """The SL2VL table as route() reads it: one word per cycle, the one at the address asked."""

    def __init__(self, word: int):
        self.word, self.index = word, None

    def __getitem__(self, index):
        self.index = index
        return self.word


class IngressModel:
    peek_by_copy = True                 # its state copies faster than its cycle evaluates (models.compose)
    def __init__(self, cfg: SwitchConfig, in_port: int):
        self.cfg, self.in_port = cfg, in_port
        self.refused = False                     # the packet arriving now was refused at its head
        self.refused_here = False                # ... and a copy of it was for the management port
        self.last_route = None                   # (LRH, route decision, multicast, for the switch) of the last head

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        valid, sop = bool(inp["acc__valid"]), bool(inp["acc__sop"])
        head = valid and sop
        out = {"_head": int(head), "_sl2vl_read": 0, "sl2vl_index": 0}
        # the tables are read a cycle early, addressed from the flit entering the parser
        la = LRH.unpack((inp["la"] >> (cfg.data_width - 64)).to_bytes(8, "big"))
        out["lft_dlid"] = route_lid(cfg, la)
        out["mft_mlid"] = (la.dlid - 0xC000) % (1 << (max(cfg.mft_entries, 2) - 1).bit_length())
        decision = RouteDrop.NONE, 0, 0
        mcast = here = False
        lrh = LRH.unpack(inp["acc__hdr"].to_bytes(8, "big"))
        if head:
            lft = {cfg.lft_index(route_lid(cfg, lrh)): inp["lft_port"]}
            mft = {lrh.dlid - 0xC000: inp["mft_mask"]}
            sl2vl = _SL2VLRead(inp["sl2vl_word"])
            active = {p for p in range(n) if inp["port_active"] >> p & 1}
            redirected = {p for p in range(n) if inp["redirect"] >> p & 1} if cfg.failover else set()
            # flow-pinned AR groups: per output, the Active ports of its group
            pinned = {o: [y for y in range(n) if inp[f"ar_mask__{o}"] >> y & 1] for o in range(n)} \
                if cfg.adaptive else None
            decision = route(cfg, self.in_port, lrh, lft, sl2vl, active, mft, redirected, pinned)
            mcast = 0xC000 <= lrh.dlid < 0xFFFF
            here = for_switch(cfg, lrh, lft, mft)
            if sl2vl.index is not None:
                out.update(_sl2vl_read=1, sl2vl_index=sl2vl.index)
        refused = decision[0] != RouteDrop.NONE if head else self.refused
        write = valid and not refused
        out["w__valid"] = int(write)
        out.update(_wr=int(write and head), _uc=int(write and head and not mcast), _mc=int(write and head and mcast))
        out.update({f"w__{k}": inp[f"acc__{k}"] for k in _FL})
        out.update(w__dest=0 if mcast else decision[1], w__ovl=decision[2], w__blocks=inp["acc__blocks"],
                   w__ivl=inp["acc__vl"], w__mcast=int(mcast), w__mask=decision[1] if mcast else 0, w__sl=lrh.sl)
        if cfg.adaptive:
            out["w__ar"] = int(head and not mcast and lft_adaptive(cfg, inp["lft_port"]))
        out.update({f"tap__{k}": inp[f"acc__{k}"] for k in ["valid"] + _FL + ["blocks"]})
        out["tap__here"] = int(here)
        dropped_now = head and refused
        # the relay error: at the refused packet's last flit, if it ended good and was not
        # for the management port (a packet that ended bad counts as a receive error only)
        for_mgmt = here if head else self.refused_here
        ends_good = valid and bool(inp["acc__eop"]) and not inp["acc__bad"]
        out["dropped"] = int(refused and ends_good and not for_mgmt)
        for v in range(nvl):
            back = inp["rel__blocks"] if inp["rel__valid"] and inp["rel__ivl"] == v else 0
            back += inp["acc__blocks"] if dropped_now and inp["acc__vl"] == v else 0
            out[f"release__{v}"] = back
        if commit and valid:
            # a refused packet's later flits go nowhere; the next packet is decided afresh
            self.refused = refused and not inp["acc__eop"]
            if head:
                self.refused_here = here
                # the last head's routing (observed by functional coverage, verif/ib_funcov.py)
                self.last_route = (lrh, decision, mcast, here)
        return out
