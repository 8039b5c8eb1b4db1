"""Stimulus and scoreboard for whole-switch tests: link peers on every port, table
programming and counter reads over AXI4-Lite as per-cycle inputs, and a scoreboard
independent of the micro-architecture.

Each link peer is an IBA sender and receiver: it sends data packets into its rx port only
within the credit the switch advertised (FC packets seen on the tx port, IBA §7.9.4, per
VL, the packet's whole length checked at its sop), sends FC packets granting the switch
credit for its own receive buffer (`buffer_blocks_per_vl` per VL) every `fc_every` (64)
cycles between packets, and checks what leaves the switch. rx sop -> tx sop latencies are recorded per
delivered copy."""
from __future__ import annotations

import random
from collections import deque

from hw.common.config import SwitchConfig
from hw.common.defs import LFT_NONE, MGMT_PORT, PortState, iba_port, verilog_port
from hw.mgmt.regmap import build_regmap, mft_words
from models.credit import may_send, packet_blocks
from models.packet import (
    LRH,
    FCPacket,
    Flit,
    build_link_packet,
    from_flits,
    parse_data_packet,
    parse_link_packet,
    to_flits,
)
from tb.common.stimulus import good_packet

__all__ = ["SwitchEnv"]

_RX = ["valid", "data", "sop", "eop", "bytes", "link", "bad", "up"]


def _is_mc(body: bytes) -> bool:
    return 0xC000 <= LRH.unpack(body).dlid < 0xFFFF


class SwitchEnv:
    def __init__(self, cfg: SwitchConfig, rng: random.Random, *, ready_p: float = 0.9, rx_p: float = 0.9,
                 fc_every: int = 64, per_vl_queues: bool = False):
        self.cfg, self.rng = cfg, rng
        # per_vl_queues: a peer sends the first waiting packet whose VL has credit (one send
        # queue per VL, as a host channel adapter has); otherwise strictly in order
        self.per_vl_queues = per_vl_queues
        self.n, self.nvl = cfg.ports, cfg.data_vls
        self.rm = build_regmap(cfg)
        self.axi = deque()                   # (addr, data) writes to perform
        self.axi_wait = 0
        self.pending = [deque() for _ in range(self.n)]  # packets waiting to go into each rx port
        self.rxq = [deque() for _ in range(self.n)]      # flits of the packet (or FC) being sent
        self.fc_due = [False] * self.n
        self._key = [None] * self.n
        self.fctbs = [[0] * self.nvl for _ in range(self.n)]      # blocks sent into rx p, per VL
        self.fccl = [[0] * self.nvl for _ in range(self.n)]       # credit limit the switch advertised
        self.rx_p = rx_p
        self.cycle = 0
        self.rx_time = {}                    # packet key -> cycle its sop went in
        self.tx_sop = [0] * self.n
        self.latency = []                    # (in, out, cycles rx sop -> tx sop, bytes)
        self.log = []                        # (cycle of eop, out port, VL, bytes) per packet that left
        self.last_tx = 0
        self.sent = []                       # (in_port, packet bytes, {expected out port: expected VL})
        self.got = [[] for _ in range(self.n)]          # packets seen on each tx port
        self._cur = [[] for _ in range(self.n)]
        self.peer_blocks = [[0] * self.nvl for _ in range(self.n)]   # blocks the peer of tx p received
        self.granted = [[0] * self.nvl for _ in range(self.n)]       # ... and the most it allowed (absolute)
        self.fc_timer = 0
        self.fc_every = fc_every             # cycles between the peers' FC packets
        self.ready_p = ready_p
        self.lft = {}
        self.sl2vl = {}
        self.mft = {}                        # MLID index -> port mask
        self.tx_hold = set()                 # tx ports whose PHY is not ready
        self.reads = {}                      # AXI read results: address -> value
        self._rd_addr = deque()
        self.rx_pkts = [0] * self.n          # data packets sent into each port, and their words
        self.rx_words = [0] * self.n
        self.rx_errors = [0] * self.n        # packets with a local error (bad VCRC)
        self.rx_ebp = [0] * self.n           # packets that came marked EBP (a remote error)
        self.sent_bad = []                   # bad packets: (in_port, bytes, {out: VL})
        self.got_bad = [[] for _ in range(self.n)]      # packets that left marked bad (EBP)
        self.active = set()                  # ports the scoreboard expects Active
        self.switch_lid = 0                  # SWITCH_LID as programmed
        self.vl15_for_switch = [0] * self.n  # SMPs each port received for the switch itself
        # the management processor: packets it receives (bytes, IBA port, bad) and beats to send
        self.taken = [0] * self.n            # packets removed from `got` by `take`, and their words
        self.taken_words = [0] * self.n
        self.mgmt_ready_p = 1.0
        self.mgmt_rx: list[tuple[bytes, int, bool]] = []
        self._mgmt_cur = bytearray()
        self.mgmt_tx = deque()               # beats (tdata, tkeep, tlast, tdest)
        self._mgmt_beat = None
        self._mgmt_ready = 1

    # ---------------------------------------------------------------- management
    def write(self, reg, idx, value):
        self.axi.append((self.rm[reg].addr(idx), value))

    def read(self, reg, idx):
        """Queue an AXI read; the value lands in self.reads[address]."""
        self.axi.append((self.rm[reg].addr(idx), None))

    def counter_addr(self, port, name):
        from hw.mgmt.regmap import PORT_COUNTERS_LIST
        return self.rm["COUNTERS"].addr(port * 16 + PORT_COUNTERS_LIST.index(name))

    def read_counters(self, names=("PortXmitPkts", "PortRcvPkts", "PortXmitData", "PortRcvData",
                                   "PortRcvSwitchRelayErrors", "PortRcvErrors", "PortXmitDiscards",
                                   "ExcessiveBufferOverrunErrors", "VL15ForSwitch", "PortRcvRemotePhysicalErrors")):
        from hw.mgmt.regmap import PORT_COUNTERS_LIST
        for p in range(self.n):
            for c in names:
                self.read("COUNTERS", p * 16 + PORT_COUNTERS_LIST.index(c))

    def reads_pending(self) -> int:
        return len(self._rd_addr) + sum(1 for _, v in self.axi if v is None)

    def counter(self, port, name):
        return self.reads[self.counter_addr(port, name)]

    def check_counters(self, relay: dict | None = None):
        """Counters read over AXI equal what the test sent and saw: packets and words in and
        out per port, relay errors (drops by the tables) as given, no receive errors."""
        for p in range(self.n):
            out = self.got[p] + self.got_bad[p]          # packets sent marked bad (EBP) count too
            xp = len(out) + self.taken[p]
            xw = sum(LRH.unpack(b).pktlen for b in out) + self.taken_words[p]
            for name, want in (("PortXmitPkts", xp), ("PortXmitData", xw)):
                assert self.counter(p, name) == want, f"port {p}: {name} {self.counter(p, name)}, saw {want}"
            assert self.counter(p, "PortRcvPkts") == self.rx_pkts[p], \
                f"port {p}: PortRcvPkts {self.counter(p, 'PortRcvPkts')}, sent {self.rx_pkts[p]}"
            assert self.counter(p, "PortRcvData") == self.rx_words[p], \
                f"port {p}: PortRcvData {self.counter(p, 'PortRcvData')}, sent {self.rx_words[p]}"
            assert self.counter(p, "ExcessiveBufferOverrunErrors") == 0, f"port {p}: the peer overran the buffer"
            assert self.counter(p, "PortRcvErrors") == self.rx_errors[p], \
                f"port {p}: PortRcvErrors {self.counter(p, 'PortRcvErrors')}, sent {self.rx_errors[p]} bad"
            if self.counter_addr(p, "PortRcvRemotePhysicalErrors") in self.reads:
                got = self.counter(p, "PortRcvRemotePhysicalErrors")
                assert got == self.rx_ebp[p], f"port {p}: PortRcvRemotePhysicalErrors {got}, sent {self.rx_ebp[p]} EBP"
            if self.counter_addr(p, "VL15ForSwitch") in self.reads:
                assert self.counter(p, "VL15ForSwitch") == self.vl15_for_switch[p], \
                    f"port {p}: VL15ForSwitch {self.counter(p, 'VL15ForSwitch')}, sent {self.vl15_for_switch[p]}"
            if relay is not None:
                assert self.counter(p, "PortRcvSwitchRelayErrors") == relay.get(p, 0), \
                    f"port {p}: PortRcvSwitchRelayErrors {self.counter(p, 'PortRcvSwitchRelayErrors')}, " \
                    f"expected {relay.get(p, 0)}"

    @staticmethod
    def lft_entry(port: int) -> int:
        """The LFT entry (an IBA port number) that sends to Verilog port `port`; 255 stays."""
        return port if port == LFT_NONE else iba_port(port)

    def program(self, routes: dict[int, int], sl_to_vl: dict[int, int]):
        """LFT entries DLID -> Verilog port (255: drop; written as IBA ports, port + 1), SL -> VL
        for every (in, out), all ports to Active."""
        words = {}
        for dlid, port in routes.items():
            e = self.lft_entry(port)
            w = words.setdefault(dlid // 4, 0xFFFFFFFF)
            words[dlid // 4] = (w & ~(0xFF << (8 * (dlid % 4)))) | (e << (8 * (dlid % 4)))
            self.lft[dlid] = e
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
        self.active = set(range(self.n))

    def expect_tables(self, lft: dict[int, int], sl_to_vl: dict[int, int], active: set[int],
                      switch_lid: int = 0):
        """What the scoreboard expects, for tables someone else programmed (an SM in-band):
        LFT DLID -> entry (an IBA port number), SL -> VL for every (in, out), Active ports."""
        self.lft = dict(lft)
        self.sl2vl = dict(sl_to_vl)
        self.active = set(active)
        self.switch_lid = switch_lid

    def send_raw(self, in_port: int, body: bytes):
        """Queue a packet as given (LRH..VCRC) into rx port `in_port` (a data VL packet waits
        for credit). Counted as received; not expected anywhere (the caller takes it)."""
        self._enqueue(in_port, body, to_flits(body, self.cfg.data_width))

    def _enqueue(self, in_port: int, body: bytes, flits):
        """The peer of rx port `in_port` will send `body`; count it as received there."""
        lrh = LRH.unpack(body)
        self.pending[in_port].append((flits, lrh.vl, packet_blocks(lrh.pktlen), body[1:-2]))
        if lrh.vl == 15 and self.for_switch(lrh.dlid):
            self.vl15_for_switch[in_port] += 1
        self.rx_pkts[in_port] += 1             # PortRcvPkts/Data may include packets with errors (IBA
        self.rx_words[in_port] += lrh.pktlen   # PortCounters): cut-through counts them at the header

    def take(self, port: int, match) -> bytes | None:
        """Remove and return the first packet that left tx port `port` with match(bytes)."""
        for k, b in enumerate(self.got[port]):
            if match(b):
                self.taken[port] += 1
                self.taken_words[port] += LRH.unpack(b).pktlen
                return self.got[port].pop(k)
        return None

    def program_switch_lid(self, lid: int):
        self.write("SWITCH_LID", 0, lid)
        self.switch_lid = lid

    def program_vlarb_low(self, port: int, entries: list[tuple[int, int]]):
        """Low-priority VLArb table of output `port`: [(VL, weight in 64-byte units)], the rest
        weight 0."""
        e = self.cfg.vlarb_entries
        reg = self.rm["VLARB_LOW"]
        for k in range(e):
            vl, w = entries[k] if k < len(entries) else (0, 0)
            self.write("VLARB_LOW", port * e + k, reg.pack(vl=vl, weight=w))

    def route(self, dlid: int, port: int):
        """Change one LFT entry (to Verilog port `port`) at run time (the whole 4-entry word
        is rewritten)."""
        self.route_entry(dlid, self.lft_entry(port))

    def route_entry(self, dlid: int, entry: int):
        """Write one raw LFT entry (an IBA port number: 0 the management port); the whole
        4-entry word is rewritten."""
        self.lft[dlid] = entry
        w = sum((self.lft.get(4 * (dlid // 4) + k, LFT_NONE) & 0xFF) << (8 * k) for k in range(4))
        self.write("LFT", dlid // 4, w)

    def program_mft(self, mlid: int, mask: int):
        """MFT entry of MLID 0xC000 + mlid: bit p = Verilog port p (written as IBA port
        bits: mask << 1; bit 0 would be the management port)."""
        words = mft_words(self.cfg)
        iba = mask << 1
        for w in range(words):
            self.write("MFT", mlid * words + w, (iba >> (32 * w)) & 0xFFFFFFFF)
        self.mft[mlid] = iba

    def for_switch(self, dlid) -> bool:
        """A VL15 packet with this DLID is for the switch itself: the permissive LID, the
        switch's LID, or a unicast LID whose LFT entry is the management port (0)."""
        return (dlid == 0xFFFF or (self.switch_lid != 0 and dlid == self.switch_lid)
                or (0 < dlid < 0xC000 and self.lft.get(dlid, LFT_NONE) == MGMT_PORT))

    def _phys(self, dlid) -> int | None:
        """The Verilog port the LFT sends a unicast DLID to, None if none (drop, management)."""
        e = self.lft.get(dlid, LFT_NONE)
        return verilog_port(e) if 1 <= e <= self.n else None

    def expected_outputs(self, in_port, dlid, sl, vl15: bool = False) -> dict:
        """{output port: output VL} the tables give a packet (empty: dropped). VL15 (SMPs):
        taken by the switch when for the permissive LID or the switch's LID, else LID-routed
        by the LFT and left on VL15 (port at least Init; the tests keep ports Active)."""
        if vl15:
            if self.for_switch(dlid):
                return {}
            port = self._phys(dlid)
            return {port: 15} if 0 < dlid < 0xC000 and port is not None and port in self.active else {}
        vl = self.sl2vl.get(sl, 0)
        if 0xC000 <= dlid < 0xFFFF:
            mask = (self.mft.get(dlid - 0xC000, 0) >> 1) & ~(1 << in_port)       # bit 0: management
            outs = [o for o in range(self.n) if mask >> o & 1]
        else:
            outs = [self._phys(dlid)] if 0 < dlid and self._phys(dlid) is not None else []
        return {o: vl for o in outs if o in self.active and vl < self.nvl}
    # ---------------------------------------------------------------- management port
    def mgmt_send(self, pkt: bytes, tdest: int = 0):
        """Queue a packet (LRH..VCRC) for the processor to send: out of IBA port `tdest`, or
        by the LFT (tdest 0). Byte 0 goes in lane 0 (AXI4-Stream)."""
        nb = self.cfg.bytes_per_flit
        for i in range(0, len(pkt), nb):
            chunk = pkt[i:i + nb]
            self.mgmt_tx.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                                 int(i + nb >= len(pkt)), tdest))

    def _mgmt_inputs(self) -> dict:
        if self._mgmt_beat is None and self.mgmt_tx:
            self._mgmt_beat = self.mgmt_tx.popleft()
        b = self._mgmt_beat
        self._mgmt_ready = int(self.rng.random() < self.mgmt_ready_p)
        d = {"m_axis_mgmt_tready": self._mgmt_ready}
        if b is None:
            return d | {"s_axis_mgmt_tvalid": 0, "s_axis_mgmt_tdata": 0, "s_axis_mgmt_tkeep": 0,
                        "s_axis_mgmt_tlast": 0, "s_axis_mgmt_tdest": 0}
        return d | {"s_axis_mgmt_tvalid": 1, "s_axis_mgmt_tdata": b[0], "s_axis_mgmt_tkeep": b[1],
                    "s_axis_mgmt_tlast": b[2], "s_axis_mgmt_tdest": b[3]}

    def _mgmt_observe(self, i, o):
        if "m_axis_mgmt_tvalid" not in o:            # the processor's side is driven by others
            return
        nb = self.cfg.bytes_per_flit
        if i["s_axis_mgmt_tvalid"] and o["s_axis_mgmt_tready"]:
            self._mgmt_beat = None
        if o["m_axis_mgmt_tvalid"] and i["m_axis_mgmt_tready"]:
            keep = o["m_axis_mgmt_tkeep"]
            self._mgmt_cur += o["m_axis_mgmt_tdata"].to_bytes(nb, "little")[:bin(keep).count("1")]
            if o["m_axis_mgmt_tlast"]:
                u = o["m_axis_mgmt_tuser"]
                self.mgmt_rx.append((bytes(self._mgmt_cur), u & 0xFF, bool(u >> 8)))
                self._mgmt_cur = bytearray()

    # ---------------------------------------------------------------- traffic
    def send(self, in_port, dlid, sl, payload_len, *, bad: str | None = None, vl: int | None = None):
        """Queue a data packet into rx port `in_port`. bad="ebp": its last flit carries the
        PHY's bad-packet mark; bad="vcrc": its VCRC is wrong. A bad packet counts as a
        receive error and, once forwarding began, leaves every output it goes to marked
        bad (EBP): it is then expected in got_bad, not got. vl=15: a subnet management
        packet (no credit needed; payload at most 256 bytes)."""
        lrh_vl = self.rng.randrange(self.nvl) if vl is None else vl
        p = good_packet(self.cfg, self.rng, lnh=2, payload_len=payload_len, vl=lrh_vl)
        lrh = LRH.unpack(p)
        lrh.dlid, lrh.sl = dlid, sl
        from models.packet import BTH, build_data_packet
        body = build_data_packet(lrh, p[20:-6], BTH.unpack(p[8:20]))
        if bad == "vcrc":
            body = body[:-1] + bytes([body[-1] ^ 0x01])
        elif bad not in (None, "ebp"):
            raise ValueError(f"SwitchEnv.send: bad must be None, 'ebp' or 'vcrc', not {bad!r}")
        self._enqueue(in_port, body, to_flits(body, self.cfg.data_width, bad=bad == "ebp"))
        vl15 = lrh_vl == 15
        if bad:
            if bad == "ebp":
                self.rx_ebp[in_port] += 1
            else:
                self.rx_errors[in_port] += 1
            self.sent_bad.append((in_port, body, self.expected_outputs(in_port, dlid, sl, vl15)))
            return
        self.sent.append((in_port, body, self.expected_outputs(in_port, dlid, sl, vl15)))

    def outstanding(self) -> int:
        """Good copies the tables promise that have not left the switch yet, plus packets the
        peers have not sent (bad packets may be dropped: see `idle_for`)."""
        want = sum(len(o) for _, _, o in self.sent)
        have = sum(len(g) for g in self.got)
        return want - have + sum(len(q) for q in self.pending)

    def idle_for(self) -> int:
        """Cycles since the last data flit left any tx port."""
        return self.cycle - self.last_tx

    def _fc_flits(self, port):
        out = []
        for v in range(self.nvl):
            self.granted[port][v] = self.peer_blocks[port][v] + self.cfg.buffer_blocks_per_vl
            fccl = self.granted[port][v] % 4096
            pkt = build_link_packet(FCPacket(op=0, fctbs=self.fctbs[port][v], vl=v, fccl=fccl))
            out += to_flits(pkt, self.cfg.data_width, link=True)
        return out

    def _next_sendable(self, p):
        """Index in pending[p] of the packet the peer of rx port p sends now, or None."""
        blocked = set()
        for k, (_f, vl, blocks, _key) in enumerate(self.pending[p]):
            if vl not in blocked and (vl == 15 or may_send(self.fccl[p][vl], self.fctbs[p][vl], blocks)):
                return k
            if not self.per_vl_queues:
                return None
            blocked.add(vl)                  # later packets of this VL stay behind it
        return None

    def inputs(self) -> dict:
        inp = {}
        self.fc_timer += 1
        for p in range(self.n):
            q = self.rxq[p]
            if self.fc_timer % self.fc_every == p % self.fc_every:
                self.fc_due[p] = True
            if not q:                                    # between packets
                if self.fc_due[p]:
                    q.extend(self._fc_flits(p))
                    self.fc_due[p] = False
                elif self.pending[p]:
                    k = self._next_sendable(p)
                    if k is not None:
                        flits, vl, blocks, key = self.pending[p][k]
                        del self.pending[p][k]
                        if vl != 15:                 # VL15 is not flow controlled
                            self.fctbs[p][vl] = (self.fctbs[p][vl] + blocks) % 4096
                        q.extend(flits)
                        self._key[p] = key
            if q and self.rng.random() < self.rx_p:
                f = q.popleft()
                if f.sop and not f.link:
                    self.rx_time.setdefault(self._key[p], (self.cycle, p))
                d = {"valid": 1, "data": f.data, "sop": int(f.sop), "eop": int(f.eop),
                     "bytes": f.nbytes if f.eop else 0, "link": int(f.link), "bad": int(f.bad), "up": 1}
            else:
                d = {k: 0 for k in _RX} | {"up": 1}
            inp.update({f"rx__{p}__{k}": v for k, v in d.items()})
            inp[f"tx__{p}__ready"] = int(self.rng.random() < self.ready_p and p not in self.tx_hold)
        axi = {"s_axil_awaddr": 0, "s_axil_awvalid": 0, "s_axil_wdata": 0, "s_axil_wstrb": 0, "s_axil_wvalid": 0,
               "s_axil_bready": 1, "s_axil_araddr": 0, "s_axil_arvalid": 0, "s_axil_rready": 1}
        if self.axi and self.axi_wait == 0:
            a, v = self.axi.popleft()
            if v is None:
                axi.update(s_axil_araddr=a, s_axil_arvalid=1)
                self._rd_addr.append(a)
            else:
                axi.update(s_axil_awaddr=a, s_axil_awvalid=1, s_axil_wdata=v, s_axil_wstrb=0xF, s_axil_wvalid=1)
            self.axi_wait = 2                # accepted at once (no response pending), response next cycle
        self.axi_wait = max(0, self.axi_wait - 1)
        inp.update(axi)
        inp.update(self._mgmt_inputs())
        self.cycle += 1
        return inp

    def observe(self, i, o):
        nb = self.cfg.bytes_per_flit
        self._mgmt_observe(i, o)
        if o.get("s_axil_rvalid") and i.get("s_axil_rready"):
            self.reads[self._rd_addr.popleft()] = o["s_axil_rdata"]
        now = self.cycle - 1
        for p in range(self.n):
            if o[f"tx__{p}__valid"] and i[f"tx__{p}__ready"] and o[f"tx__{p}__link"] and o[f"tx__{p}__sop"]:
                fc, ok = parse_link_packet((o[f"tx__{p}__data"] >> (self.cfg.data_width - 48)).to_bytes(6, "big"))
                if ok and fc.vl < self.nvl:              # the switch grants credit for its rx buffer
                    self.fccl[p][fc.vl] = fc.fccl
            if o[f"tx__{p}__valid"] and i[f"tx__{p}__ready"] and not o[f"tx__{p}__link"]:
                self.last_tx = now
                if o[f"tx__{p}__sop"]:
                    self.tx_sop[p] = now
                eop = bool(o[f"tx__{p}__eop"])
                self._cur[p].append(Flit(o[f"tx__{p}__data"], bool(o[f"tx__{p}__sop"]), eop,
                                         o[f"tx__{p}__bytes"] if eop else nb))
                if eop:
                    b = from_flits(self._cur[p], self.cfg.data_width)
                    (self.got_bad if o[f"tx__{p}__bad"] else self.got)[p].append(b)
                    self.log.append((now, p, LRH.unpack(b).vl, len(b)))
                    self._cur[p] = []
                    lrh = LRH.unpack(b)
                    t0 = self.rx_time.get(b[1:-2])
                    if t0 is not None and not o[f"tx__{p}__bad"]:
                        self.latency.append((t0[1], p, self.tx_sop[p] - t0[0], len(b)))
                    if lrh.vl < self.nvl:
                        self.peer_blocks[p][lrh.vl] += packet_blocks(lrh.pktlen)
                        assert self.peer_blocks[p][lrh.vl] <= self.granted[p][lrh.vl], \
                            f"tx port {p} VL {lrh.vl}: {self.peer_blocks[p][lrh.vl]} blocks sent, " \
                            f"the peer granted only {self.granted[p][lrh.vl]} (credit exceeded)"

    def check(self):
        """Each packet arrived once on every port the LFT/MFT give it (multicast: every port of
        the mask but the input), with the SL2VL VL, the VCRC valid, the ICRC and all other
        bytes intact; order kept per (in, out, VL) among unicast packets and among multicast
        packets (IBA orders packets of one path; a unicast and a multicast DLID are two
        paths). Returns the number of copies delivered."""
        for p in range(self.n):
            assert not self.pending[p] and not any(not f.link for f in self.rxq[p]), \
                f"rx port {p}: {len(self.pending[p])} packets never sent (no credit from the switch?)"
        want = {}
        for in_p, body, outs in self.sent:
            for out, vl in outs.items():
                want.setdefault((out, in_p, vl, _is_mc(body)), []).append(body)
        got = {}
        for out in range(self.n):
            for b in self.got[out]:
                d = parse_data_packet(b)
                assert d.vcrc_ok, f"port {out}: bad VCRC"
                assert d.icrc_ok, f"port {out}: ICRC changed"
                src = [s for s in self.sent if out in s[2] and s[1][1:-2] == b[1:-2]]
                assert src, f"port {out}: a packet nobody sent there (or corrupted)"
                in_p, body, outs = src[0]
                vl = outs[out]
                assert d.lrh.vl == vl, f"port {out}: VL {d.lrh.vl}, SL2VL says {vl}"
                got.setdefault((out, in_p, vl, _is_mc(body)), []).append(body)
        for k, pk in want.items():
            assert got.get(k, []) == pk, \
                f"(out, in, VL, multicast) {k}: {len(got.get(k, []))} of {len(pk)} packets, or order"
        # bad packets: dropped (tail in before forwarding began) or left marked bad (EBP), at most
        # once per output it was routed to, bytes intact up to the VCRC; never good
        for in_p, body, outs in self.sent_bad:
            for out in range(self.n):
                hit = [b for b in self.got_bad[out] if b[1:-2] == body[1:-2]]
                assert len(hit) <= (1 if out in outs else 0), \
                    f"bad packet from port {in_p}: {len(hit)} EBP copies on port {out}"
                assert not any(b[1:-2] == body[1:-2] for b in self.got[out]), \
                    f"bad packet from port {in_p} left port {out} unmarked"
        self.ebp_copies = sum(len(g) for g in self.got_bad)
        assert self.ebp_copies <= sum(len(outs) for _, _, outs in self.sent_bad), \
            "a packet left marked bad that was not sent bad"
        return sum(len(v) for v in got.values())


class MixedTraffic:
    """The demo's traffic (also a regression test): a host LID space behind every port, three
    multicast groups, unicast and multicast on all SLs/VLs, and every kind of packet the
    switch must refuse or mark bad, at random, then a drain and a read-back of every counter.
    `stim()` yields per-cycle inputs; `check()` runs the scoreboard and the counter checks."""

    KINDS = ["unicast", "multicast", "LFT 255", "LFT 0 (management port)", "DLID beyond LFT", "DLID 0",
             "multicast, only the input in the mask", "EBP at tail", "bad VCRC",
             "VL15 LID-routed", "VL15 for the switch", "VL15 LFT 255"]
    VL15_KINDS = KINDS[-3:]

    def __init__(self, cfg: SwitchConfig, env: SwitchEnv, *, packets=160, rate=0.06, max_cycles=20000,
                 program: bool = True):
        """program: write the tables over AXI4-Lite (env.axi); False: someone else programs
        `tables()` (an SM in-band) and the scoreboard just expects them."""
        self.cfg, self.env, self.rng = cfg, env, env.rng
        n = cfg.ports
        self.hosts = 4 * n                                # DLID d lives behind port (d - 1) % n
        routes = {d: (d - 1) % n for d in range(1, self.hosts + 1)}
        routes[self.hosts + 1] = 255                      # a LID the subnet manager blocks
        self.routes = routes
        self.sl2vl = {sl: sl % cfg.data_vls for sl in range(16)}
        self.switch_lid = self.hosts + 2
        self.to_mgmt = self.hosts + 3                     # a LID the LFT sends to the management port
        self.groups = {0: (1 << n) - 1, 1: sum(1 << p for p in range(0, n, 2)), 2: 0b10 | (1 << (n - 1)),
                       3: 0b10}                           # group 3: port 1 alone
        if program:
            env.program(routes, self.sl2vl)
            env.program_switch_lid(self.switch_lid)
            env.route_entry(self.to_mgmt, MGMT_PORT)
            for g, mask in self.groups.items():
                env.program_mft(g, mask)
        else:
            t = self.tables()
            env.expect_tables(t["lft"], self.sl2vl, set(range(n)), self.switch_lid)
            env.mft = dict(t["mft"])
        self.kinds = dict.fromkeys(self.KINDS, 0)
        self.relay = [0] * n
        self.to_mgmt_sent = [0] * n
        self.packets, self.rate, self.max_cycles = packets, rate, max_cycles
        self.sizes = [0, 16, 64, 256, min(1024, cfg.mtu), cfg.mtu]
        self.cycles = 0

    def tables(self) -> dict:
        """The tables in IBA terms: lft LID -> IBA port (0 the management port, 255 drop),
        mft MLID index -> IBA port mask (bit 0 the management port), sl2vl, switch_lid."""
        lft = {d: SwitchEnv.lft_entry(p) for d, p in self.routes.items()}
        lft[self.to_mgmt] = MGMT_PORT
        lft[self.switch_lid] = MGMT_PORT                  # as an SM writes it for the switch's own LID
        return {"lft": lft, "mft": {g: m << 1 for g, m in self.groups.items()}, "sl2vl": dict(self.sl2vl),
                "switch_lid": self.switch_lid}

    def one(self):
        env, rng, n = self.env, self.rng, self.cfg.ports
        p = rng.randrange(n)
        r = rng.random()
        size = rng.choice(self.sizes)
        host = rng.randrange(1, self.hosts + 1)
        if r < 0.62:
            k = "unicast"
            env.send(p, host, rng.randrange(16), size)
        elif r < 0.80:
            k = "multicast"
            env.send(p, 0xC000 + rng.randrange(3), rng.randrange(16), size)
        elif r < 0.86:                                   # subnet management packets
            k = rng.choice(self.VL15_KINDS)
            size = rng.choice([0, 16, 64, 256])
            dlid = {"VL15 LID-routed": host,
                    "VL15 for the switch": rng.choice([0xFFFF, self.hosts + 2, self.to_mgmt]),
                    "VL15 LFT 255": self.hosts + 1}[k]
            env.send(p, dlid, 0, size, vl=15)
            self.relay[p] += k == "VL15 LFT 255"
        else:
            k = rng.choice(self.KINDS[2:-3])
            if k in ("EBP at tail", "bad VCRC"):
                env.send(p, host, 0, size, bad="ebp" if k == "EBP at tail" else "vcrc")
            else:
                if k == "multicast, only the input in the mask":
                    p, dlid = 1, 0xC003
                else:
                    dlid = {"LFT 255": self.hosts + 1, "LFT 0 (management port)": self.to_mgmt,
                            "DLID beyond LFT": self.cfg.lft_entries + 5, "DLID 0": 0}[k]
                env.send(p, dlid, 0, size)
                if k == "LFT 0 (management port)":
                    self.to_mgmt_sent[p] += 1            # a relay error only if the queue has no room
                else:
                    self.relay[p] += 1
        self.kinds[k] += 1

    def stim(self):
        from hw.mgmt.regmap import PORT_COUNTERS_LIST
        env = self.env
        sent = quiet = 0
        read_at = None
        c = 0
        while c < self.max_cycles:
            if not env.axi and sent < self.packets and self.rng.random() < self.rate:
                self.one()
                sent += 1
            busy = env.outstanding() > 0 or any(not f.link for q in env.rxq for f in q) or env.idle_for() < 20
            quiet = 0 if (busy or sent < self.packets or env.axi) else quiet + 1
            if quiet == 100 and read_at is None:         # drained: read every counter back
                env.read_counters(PORT_COUNTERS_LIST)
                read_at = c
            if read_at is not None and not env.axi and not env.reads_pending():
                break
            c += 1
            yield env.inputs()
        self.cycles = c

    async def run_observed(self, dut, regs):
        """The traffic of `stim()` with the link peers driven by someone else (observe mode,
        tb.common.fw_harness.run_link_peers) and the counters read with `regs` (a
        fw.hw.SwitchRegs, e.g. the firmware's AXI4-Lite master) into env.reads."""
        from cocotb.triggers import FallingEdge

        from hw.mgmt.regmap import PORT_COUNTERS_LIST
        env = self.env
        sent = quiet = c = 0
        while c < self.max_cycles and quiet < 100:
            await FallingEdge(dut.clk)
            if sent < self.packets and self.rng.random() < self.rate:
                self.one()
                sent += 1
            busy = env.outstanding() > 0 or any(not f.link for q in env.rxq for f in q) or env.idle_for() < 20
            quiet = 0 if (busy or sent < self.packets) else quiet + 1
            c += 1
        self.cycles = c
        for p in range(self.cfg.ports):
            for k, name in enumerate(PORT_COUNTERS_LIST):
                env.reads[env.counter_addr(p, name)] = await regs.read("COUNTERS", p * 16 + k)

    def check(self) -> int:
        """The scoreboard; packets for the switch at the management processor (each data one
        taken or counted as a relay error; the VL15 ones taken or counted in VL15Dropped);
        the counters."""
        env = self.env
        copies = env.check()
        data_in = [0] * self.cfg.ports           # data packets for LFT 0 that reached the processor
        v15_in = [0] * self.cfg.ports
        gmp_in = [0] * self.cfg.ports            # (an SM's GMPs to the switch's LID)
        for body, port, _bad in env.mgmt_rx:
            assert 1 <= port <= self.cfg.ports, f"management queue: packet from IBA port {port}"
            h = LRH.unpack(body)
            if h.vl == 15:
                v15_in[port - 1] += 1
                assert env.for_switch(h.dlid), f"management queue: a VL15 packet for DLID {h.dlid:#x}"
            elif h.dlid == self.switch_lid:
                gmp_in[port - 1] += 1
            else:
                data_in[port - 1] += 1
                assert h.dlid == self.to_mgmt, f"management queue: a data packet for DLID {h.dlid:#x}"
            assert len(body) == 4 * h.pktlen + 2, "management queue: packet length differs from PktLen"
        relay = {p: self.relay[p] + self.to_mgmt_sent[p] - data_in[p] for p in range(self.cfg.ports)}
        env.check_counters(relay)
        for p in range(self.cfg.ports):
            if env.counter_addr(p, "VL15Dropped") in env.reads:
                assert env.counter(p, "VL15Dropped") == env.vl15_for_switch[p] - v15_in[p], \
                    f"port {p}: VL15Dropped {env.counter(p, 'VL15Dropped')}, " \
                    f"{env.vl15_for_switch[p] - v15_in[p]} for the switch not taken"
            if env.counter_addr(p, "MgmtRcvPkts") in env.reads:
                assert env.counter(p, "MgmtRcvPkts") == data_in[p] + v15_in[p] + gmp_in[p]
        return copies
