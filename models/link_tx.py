"""Golden model of the link transmit side (docs/link-layer.md), cycle by cycle.

Written from the behaviour: a registered output stage paced by tx.ready; between packets the
next flit is, in order, a pending FC packet (lowest VL), a VL15 packet, or a data packet that
fits its VL's credit (models.credit.may_send), round robin over the data VLs.
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.counters import LINK_TX_COUNTERS
from contracts.defs import PortState
from contracts.streams import FLIT, LINK_FLIT
from models.credit import MOD, may_send, packet_blocks
from models.packet import LRH, FCPacket, build_link_packet

__all__ = ["LinkTxModel"]

_SRC = ["valid", *FLIT]
_TX = ["valid", *LINK_FLIT]
_SAT = 0xFFFFFFFF


class LinkTxModel:
    def __init__(self, cfg: SwitchConfig, prefix: str = ""):
        self.cfg, self.p = cfg, prefix
        self.nvl = nvl = cfg.data_vls
        self.nb = cfg.bytes_per_flit
        self.srcs = [f"src__{i}" for i in range(nvl)] + ["src15"]
        self.tx = {k: 0 for k in _TX}
        self.in_pkt, self.sel, self.rr = False, 0, 0
        self.pending: set[int] = set()
        self.init = set(range(nvl))
        self.last_sent = [0] * nvl
        self.timer = 0
        self.fctbs = [0] * nvl
        self.fccl = [0] * nvl
        self.counters = {n: 0 for n in LINK_TX_COUNTERS}

    def _count(self, name, amount=1):
        self.counters[name] = min(self.counters[name] + amount, _SAT)

    def _fc_flit(self, v, local_fccl):
        pkt = build_link_packet(FCPacket(op=1 if v in self.init else 0, fctbs=self.fctbs[v], vl=v,
                                         fccl=local_fccl), self.cfg.crc_msb_first)
        return {"valid": 1, "data": int.from_bytes(pkt + bytes(self.nb - 6), "big"), "sop": 1, "eop": 1,
                "bytes": 6, "link": 1, "bad": 0}

    def step(self, inp: dict) -> dict:
        p, nvl = self.p, self.nvl
        g = lambda k: inp[p + k]  # noqa: E731
        # registered outputs: the state before this clock edge
        out = {p + f"tx__{k}": v for k, v in self.tx.items()}
        out.update({p + f"fctbs__{v}": self.fctbs[v] for v in range(nvl)})
        out.update({p + f"fccl__{v}": self.fccl[v] for v in range(nvl)})
        out.update({p + f"counters__{n}": c for n, c in self.counters.items()})
        ready = {s: 0 for s in self.srcs}
        state = g("state")
        down = state == PortState.DOWN
        active = state == PortState.ACTIVE
        can_load = not self.tx["valid"] or g("tx__ready")
        local = [g(f"local_fccl__{v}") for v in range(nvl)]
        start = None                    # (source index, LRH) of a packet starting this cycle
        loaded_fc = None
        waiting = active and not self.in_pkt and any(
            g(f"src__{v}__valid") and g(f"src__{v}__sop") for v in range(nvl))
        nxt_tx = dict(self.tx)

        discards = 0
        if down:
            for s in self.srcs:
                ready[s] = 1
            discards = sum(1 for s in self.srcs if g(f"{s}__valid") and g(f"{s}__eop") and not g(f"{s}__bad"))
        else:
            # the tail of a packet cut by a link-down never wedges the port: drain it
            for k, s in enumerate(self.srcs):
                if g(f"{s}__valid") and not g(f"{s}__sop") and not (self.in_pkt and self.sel == k):
                    ready[s] = 1
                    discards += bool(g(f"{s}__eop")) and not g(f"{s}__bad")
        if not down and can_load:
            nxt_tx = {k: 0 for k in _TX}
            if self.in_pkt:
                s = self.srcs[self.sel]
                if g(f"{s}__valid"):
                    ready[s] = 1
                    nxt_tx = self._flit(g, s, sop=0)
                    if g(f"{s}__eop"):
                        self.in_pkt = False
            elif self.pending:
                v = min(self.pending)
                loaded_fc = v
                nxt_tx = self._fc_flit(v, local[v])
            elif g("src15__valid") and g("src15__sop"):
                start = nvl
            else:
                elig = []
                for v in range(nvl):
                    s = f"src__{v}"
                    if active and g(f"{s}__valid") and g(f"{s}__sop"):
                        n = packet_blocks(LRH.unpack(g(f"{s}__data").to_bytes(self.nb, "big")).pktlen,
                                          self.cfg.credit_vcrc)
                        if may_send(self.fccl[v], self.fctbs[v], n):          # IBA §7.9.4
                            elig.append((v, n))
                if elig:
                    order = [(self.rr + k) % nvl for k in range(nvl)]
                    v, n = min(elig, key=lambda e: order.index(e[0]))
                    self.fctbs[v] = (self.fctbs[v] + n) % MOD
                    self.rr = (v + 1) % nvl
                    start = v
            if start is not None:
                s = self.srcs[start]
                ready[s] = 1
                nxt_tx = self._flit(g, s, sop=1)
                self.in_pkt = not g(f"{s}__eop")
                self.sel = start

        out.update({p + f"{s}__ready": r for s, r in ready.items()})     # combinational

        # ---- clock edge
        if start is not None:
            self._count("xmit_pkts")
            self._count("xmit_words", LRH.unpack(g(f"{self.srcs[start]}__data").to_bytes(self.nb, "big")).pktlen)
        if waiting and not (start is not None and start != nvl):
            self._count("xmit_wait")
        if loaded_fc is not None:
            self._count("fc_sent")
        if discards:
            self._count("xmit_discards", discards)
        if down:
            self.in_pkt = False
            self.pending = set(range(nvl))
            self.init = set(range(nvl))
            self.timer = 0
            self.fctbs = [0] * nvl
            self.fccl = [0] * nvl
            self.last_sent = [0] * nvl
            nxt_tx = dict(self.tx, valid=0)
        else:
            if g("fc_rx__valid") and g("fc_rx__vl") < nvl:
                self.fccl[g("fc_rx__vl")] = g("fc_rx__fccl")
            wrap = self.timer == self.cfg.fc_period - 1
            thr = self.cfg.fc_update_blocks               # send when the limit moved a quarter buffer
            changed = {v for v in range(nvl) if (local[v] - self.last_sent[v]) % 4096 >= thr}
            self.pending |= changed
            if wrap:
                self.pending |= set(range(nvl))
            if loaded_fc is not None:
                self.pending.discard(loaded_fc)
                self.last_sent[loaded_fc] = local[loaded_fc]
                self.init.discard(loaded_fc)
            self.timer = 0 if wrap else self.timer + 1
        self.tx = nxt_tx
        return out

    def _flit(self, g, s, sop):
        return {"valid": 1, "data": g(f"{s}__data"), "sop": sop, "eop": g(f"{s}__eop"), "bytes": g(f"{s}__bytes"),
                "link": 0, "bad": g(f"{s}__bad")}
