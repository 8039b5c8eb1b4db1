"""Stimulus and scoreboard for whole-switch tests: link peers on every port (FC packets
granting credit, data packets within the switch's credit), table programming over
AXI4-Lite as per-cycle inputs, and a scoreboard independent of the micro-architecture."""
from __future__ import annotations

import random
from collections import deque

from hw.common.config import SwitchConfig
from hw.common.defs import PortState
from hw.mgmt.regmap import build_regmap
from models.credit import packet_blocks
from models.packet import LRH, FCPacket, Flit, build_link_packet, from_flits, parse_data_packet, to_flits
from tb.common.stimulus import good_packet

__all__ = ["SwitchEnv"]

_RX = ["valid", "data", "sop", "eop", "bytes", "link", "bad", "up"]


class SwitchEnv:
    def __init__(self, cfg: SwitchConfig, rng: random.Random, *, ready_p: float = 0.9):
        self.cfg, self.rng = cfg, rng
        self.n, self.nvl = cfg.ports, cfg.data_vls
        self.rm = build_regmap(cfg)
        self.axi = deque()                   # (addr, data) writes to perform
        self.axi_wait = 0
        self.rxq = [deque() for _ in range(self.n)]      # flits to send into each rx port
        self.sent = []                       # (in_port, packet bytes, expected out port, expected VL)
        self.got = [[] for _ in range(self.n)]          # packets seen on each tx port
        self._cur = [[] for _ in range(self.n)]
        self.peer_blocks = [[0] * self.nvl for _ in range(self.n)]   # blocks the peer of tx p received
        self.fc_timer = 0
        self.ready_p = ready_p
        self.lft = {}
        self.sl2vl = {}

    # ---------------------------------------------------------------- management
    def write(self, reg, idx, value):
        self.axi.append((self.rm[reg].addr(idx), value))

    def program(self, routes: dict[int, int], sl_to_vl: dict[int, int]):
        """LFT entries DLID -> port, SL -> VL for every (in, out), all ports to Active."""
        words = {}
        for dlid, port in routes.items():
            w = words.setdefault(dlid // 4, 0xFFFFFFFF)
            words[dlid // 4] = (w & ~(0xFF << (8 * (dlid % 4)))) | (port << (8 * (dlid % 4)))
            self.lft[dlid] = port
        for idx, w in words.items():
            self.write("LFT", idx, w)
        self.sl2vl = dict(sl_to_vl)
        for i in range(self.n):
            for o in range(self.n):
                for half in range(2):
                    w = sum((sl_to_vl.get(8 * half + k, 0) & 0xF) << (4 * k) for k in range(8))
                    self.write("SL2VL", (i * self.n + o) * 2 + half, w)
        for st in (PortState.ARMED, PortState.ACTIVE):
            for p in range(self.n):
                self.write("PORT_STATE", p, int(st))

    # ---------------------------------------------------------------- traffic
    def send(self, in_port, dlid, sl, payload_len):
        lrh_vl = self.rng.randrange(self.nvl)
        p = good_packet(self.cfg, self.rng, lnh=2, payload_len=payload_len, vl=lrh_vl)
        lrh = LRH.unpack(p)
        lrh.dlid, lrh.sl = dlid, sl
        from models.packet import BTH, build_data_packet
        body = build_data_packet(lrh, p[20:-6], BTH.unpack(p[8:20]))
        self.rxq[in_port].extend(to_flits(body, self.cfg.data_width))
        out = self.lft.get(dlid)
        self.sent.append((in_port, body, out, self.sl2vl.get(sl, 0)))

    def _fc_flits(self, port):
        out = []
        for v in range(self.nvl):
            fccl = (self.peer_blocks[port][v] + self.cfg.buffer_blocks_per_vl) % 4096
            pkt = build_link_packet(FCPacket(op=0, fctbs=0, vl=v, fccl=fccl))
            out += to_flits(pkt, self.cfg.data_width, link=True)
        return out

    def inputs(self) -> dict:
        inp = {}
        self.fc_timer += 1
        for p in range(self.n):
            q = self.rxq[p]
            if self.fc_timer % 64 == p and not (q and not q[0].sop):
                for f in reversed(self._fc_flits(p)):
                    q.appendleft(f)
            if q and self.rng.random() < 0.9:
                f = q.popleft()
                d = {"valid": 1, "data": f.data, "sop": int(f.sop), "eop": int(f.eop),
                     "bytes": f.nbytes if f.eop else 0, "link": int(f.link), "bad": int(f.bad), "up": 1}
            else:
                d = {k: 0 for k in _RX} | {"up": 1}
            inp.update({f"rx__{p}__{k}": v for k, v in d.items()})
            inp[f"tx__{p}__ready"] = int(self.rng.random() < self.ready_p)
        axi = {"s_axil_awaddr": 0, "s_axil_awvalid": 0, "s_axil_wdata": 0, "s_axil_wstrb": 0, "s_axil_wvalid": 0,
               "s_axil_bready": 1, "s_axil_araddr": 0, "s_axil_arvalid": 0, "s_axil_rready": 1}
        if self.axi and self.axi_wait == 0:
            a, v = self.axi.popleft()
            axi.update(s_axil_awaddr=a, s_axil_awvalid=1, s_axil_wdata=v, s_axil_wstrb=0xF, s_axil_wvalid=1)
            self.axi_wait = 2                # accepted at once (no response pending), bvalid next cycle
        self.axi_wait = max(0, self.axi_wait - 1)
        inp.update(axi)
        return inp

    def observe(self, i, o):
        nb = self.cfg.bytes_per_flit
        for p in range(self.n):
            if o[f"tx__{p}__valid"] and i[f"tx__{p}__ready"] and not o[f"tx__{p}__link"]:
                eop = bool(o[f"tx__{p}__eop"])
                self._cur[p].append(Flit(o[f"tx__{p}__data"], bool(o[f"tx__{p}__sop"]), eop,
                                         o[f"tx__{p}__bytes"] if eop else nb))
                if eop:
                    b = from_flits(self._cur[p], self.cfg.data_width)
                    self.got[p].append(b)
                    self._cur[p] = []
                    lrh = LRH.unpack(b)
                    if lrh.vl < self.nvl:
                        self.peer_blocks[p][lrh.vl] += packet_blocks(lrh.pktlen)

    def check(self):
        """Each packet routed by the LFT arrived once, on its port, with the SL2VL VL, the
        VCRC valid, the ICRC and all other bytes intact; order kept per (in, out, VL)."""
        want = {}
        for in_p, body, out, vl in self.sent:
            if out is not None and out < self.n:
                want.setdefault((out, in_p, vl), []).append(body)
        got = {}
        for out in range(self.n):
            for b in self.got[out]:
                d = parse_data_packet(b)
                assert d.vcrc_ok, f"port {out}: bad VCRC"
                assert d.icrc_ok, f"port {out}: ICRC changed"
                src = [s for s in self.sent if s[2] == out and s[1][1:-2] == b[1:-2]]
                assert src, f"port {out}: a packet nobody sent (or corrupted)"
                in_p, body, _, vl = src[0]
                assert d.lrh.vl == vl, f"port {out}: VL {d.lrh.vl}, SL2VL says {vl}"
                got.setdefault((out, in_p, vl), []).append(body)
        for k, pk in want.items():
            assert got.get(k, []) == pk, f"(out, in, VL) {k}: {len(got.get(k, []))} of {len(pk)} packets, or order"
        return sum(len(v) for v in got.values())
