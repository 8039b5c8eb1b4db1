"""Stimulus and checking for whole-switch runs: one facade over the parts a switch
testbench is made of, so that cocotb tests, Amaranth-simulator tests, the demo and the
benchmarks drive a switch the same way.

  - a link peer per port (verif.ib.link_peer.LinkPeer): the IBA node at the far end,
    sending within the switch's credit and granting its own, with idle and backpressure
    generators;
  - the scoreboard (verif.env.switch_scoreboard.SwitchScoreboard): what the tables promise,
    checked against what the peers saw, and the counters;
  - table programming as register writes (`program`, `program_mft`, `route`, ...) queued in
    `axi`: in cocotb tests a cocotbext-axi AxiLiteMaster performs them (verif.env.switch_tb);
    elsewhere (the Amaranth simulator) `inputs()` drives them itself, holding each request
    until the slave takes it and its response until `bready`/`rready` (both random);
  - the management processor's streams when no firmware runs (packets for the switch
    collected in `mgmt_rx`, packets queued with `mgmt_send`).

Per cycle: `inputs()` gives every top-level input, `observe(inputs, outputs)` takes the
outputs. rx sop -> tx sop latencies are recorded per delivered copy.
"""
from __future__ import annotations

import random
from collections import deque

from contracts.config import SwitchConfig
from contracts.counters import PORT_COUNTERS_LIST, counter_index
from contracts.defs import LFT_NONE, MGMT_PORT, PortState, iba_port
from contracts.regmap import build_regmap, mft_words
from contracts.streams import axil
from models.credit import packet_blocks
from models.packet import LRH, to_flits
from verif.env.switch_scoreboard import SwitchScoreboard
from verif.ib.link_peer import GENERATORS, LinkPeer
from verif.ib.stimulus import good_packet

__all__ = ["SwitchEnv", "MixedTraffic", "OUTCOME"]

_AXI_IDLE = {k: 0 for k, m in axil().items() if m.flow == "in"}          # the AXI4-Lite master idle


class SwitchEnv:
    def __init__(self, cfg: SwitchConfig, rng: random.Random, *, ready_p: float = 0.9, rx_p: float = 0.9,
                 fc_every: int = 64, per_vl_queues: bool = False):
        """ready_p / rx_p: the peers' tx ready and rx flit probabilities per cycle (random
        generators; set_idle_generator / set_backpressure_generator replace them)."""
        self.cfg, self.rng = cfg, rng
        self.n, self.nvl = cfg.ports, cfg.data_vls
        n = self.n
        self.rm = build_regmap(cfg)
        self.peers = [LinkPeer(cfg, p, rng, fc_every=fc_every, per_vl_queues=per_vl_queues) for p in range(n)]
        self.sb = SwitchScoreboard(cfg)
        self._ready_p = self._rx_p = None
        self.ready_p, self.rx_p = ready_p, rx_p
        self.tx_hold = set()                 # tx ports whose PHY is not ready
        # register accesses to perform: (addr, data) writes, (addr, None) reads
        self.axi = deque()
        self.axi_inflight = 0                # accesses under way by someone else's master (SwitchTB)
        self.reads = {}                      # read results: address -> value
        self._aw = self._ar = None           # requests presented, not yet taken
        self._b = self._r = 0                # responses outstanding
        self._rd_addr = deque()
        self.axi_ready_p = 0.7               # bready / rready
        self.cycle = 0
        self.last_tx = 0
        self.rx_time = {}                    # packet key -> (cycle its sop went in, port)
        self.tx_sop = [0] * n
        self.latency = []                    # (in, out, cycles rx sop -> tx sop, bytes)
        self.log = []                        # (cycle of eop, out port, VL, bytes) per packet that left
        # the management processor: packets it receives (bytes, IBA port, bad) and beats to send
        self.mgmt_ready_p = 1.0
        self.mgmt_rx: list[tuple[bytes, int, bool]] = []
        self._mgmt_cur = bytearray()
        self.mgmt_tx = deque()               # beats (tdata, tkeep, tlast, tdest)
        self.mgmt_packets = deque()          # the same packets whole, (bytes, tdest), for AxiStreamSource
        self._mgmt_beat = None
        self._mgmt_ready = 1

    # ---------------------------------------------------------------- the parts, by port
    @property
    def pending(self):
        return [pp.pending for pp in self.peers]

    @property
    def rxq(self):
        return [pp.rxq for pp in self.peers]

    @property
    def got(self):
        return [pp.got for pp in self.peers]

    @property
    def got_bad(self):
        return [pp.got_bad for pp in self.peers]

    @property
    def fccl(self):
        return [pp.fccl for pp in self.peers]

    def __getattr__(self, name):
        # the scoreboard's books and tables (sent, rx_pkts, lft, active, ...) read as the env's
        if name in ("sent", "sent_bad", "rx_pkts", "rx_words", "rx_errors", "rx_ebp", "vl15_for_switch", "taken",
                    "taken_words", "lft", "sl2vl", "mft", "active", "switch_lid", "ebp_copies"):
            return getattr(self.__dict__["sb"], name)
        raise AttributeError(name)

    def __setattr__(self, name, value):
        if name in ("lft", "sl2vl", "mft", "active", "switch_lid") and "sb" in self.__dict__:
            setattr(self.sb, name, value)
        else:
            object.__setattr__(self, name, value)

    @property
    def ready_p(self):
        return self._ready_p

    @ready_p.setter
    def ready_p(self, p):
        self._ready_p = p
        self.set_backpressure_generator("random", 1 - p)

    @property
    def rx_p(self):
        return self._rx_p

    @rx_p.setter
    def rx_p(self, p):
        self._rx_p = p
        self.set_idle_generator("random", 1 - p)

    def set_idle_generator(self, kind: str | None, p: float = 0.1):
        """Gaps in what every peer sends: None, 'random' or 'bursty' (verif.ib.link_peer)."""
        for pp in self.peers:
            pp.set_idle_generator(GENERATORS[kind](self.rng, p))

    def set_backpressure_generator(self, kind: str | None, p: float = 0.1):
        """Cycles in which every peer's PHY is not ready for the switch's tx."""
        for pp in self.peers:
            pp.set_backpressure_generator(GENERATORS[kind](self.rng, p))

    # ---------------------------------------------------------------- registers
    def write(self, reg, idx, value):
        self.axi.append((self.rm[reg].addr(idx), value))

    def read(self, reg, idx):
        """Queue a register read; the value lands in self.reads[address]."""
        self.axi.append((self.rm[reg].addr(idx), None))

    def counter_addr(self, port, name):
        return self.rm["COUNTERS"].addr(counter_index(port, name))

    def read_counters(self, names=("PortXmitPkts", "PortRcvPkts", "PortXmitData", "PortRcvData",
                                   "PortRcvSwitchRelayErrors", "PortRcvErrors", "PortXmitDiscards",
                                   "ExcessiveBufferOverrunErrors", "VL15ForSwitch", "PortRcvRemotePhysicalErrors")):
        for p in range(self.n):
            for c in names:
                self.read("COUNTERS", counter_index(p, c))

    def reads_pending(self) -> int:
        return len(self._rd_addr) + sum(1 for _, v in self.axi if v is None)

    @property
    def registers_busy(self) -> bool:
        """Register accesses queued or under way."""
        return (bool(self.axi) or self.axi_inflight > 0 or self._aw is not None or self._ar is not None
                or bool(self._b) or bool(self._r))

    def counter(self, port, name):
        return self.reads[self.counter_addr(port, name)]

    def check_counters(self, relay: dict | None = None):
        """Counters read over AXI equal what the test sent and saw (SwitchScoreboard)."""
        self.sb.check_counters(self.counter, self.got, self.got_bad, relay,
                               have=lambda p, name: self.counter_addr(p, name) in self.reads)

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
            slot = self.lft_slot(dlid)
            w = words.setdefault(slot // 4, 0xFFFFFFFF)
            words[slot // 4] = (w & ~(0xFF << (8 * (slot % 4)))) | (e << (8 * (slot % 4)))
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

    def program_switch_lid(self, lid: int):
        self.write("SWITCH_LID", 0, lid)
        self.switch_lid = lid

    def program_vlarb_low(self, port: int, entries: list[tuple[int, int]]):
        """Low-priority VLArb table of output `port`: [(VL, weight in 64-byte units)], the rest
        weight 0."""
        self.program_vlarb(port, entries, "VLARB_LOW")

    def program_vlarb(self, port: int, entries: list[tuple[int, int]], table: str = "VLARB_HIGH",
                      limit: int | None = None):
        """A VLArb table of output `port` (VLARB_HIGH or VLARB_LOW): [(VL, weight in 64-byte
        units)], the rest weight 0; `limit`: its LimitOfHighPriority (4 KB units, 255: none)."""
        e = self.cfg.vlarb_entries
        reg = self.rm[table]
        for k in range(e):
            vl, w = entries[k] if k < len(entries) else (0, 0)
            self.write(table, port * e + k, reg.pack(vl=vl, weight=w))
        if limit is not None:
            self.write("LIMIT_HIGH", port, limit)

    def route(self, dlid: int, port: int):
        """Change one LFT entry (to Verilog port `port`) at run time (the whole 4-entry word
        is rewritten)."""
        self.route_entry(dlid, self.lft_entry(port))

    def lft_slot(self, lid: int) -> int:
        """The LFT register entry of `lid` (docs/registers.md): the DLID; in the extended-LID
        mode page * lft_entries + DLID (the page: lid >> 16)."""
        return (lid >> 16) * self.cfg.lft_entries + (lid & 0xFFFF)

    def route_entry(self, dlid: int, entry: int):
        """Write one raw LFT entry (an IBA port number: 0 the management port); the whole
        4-entry word is rewritten."""
        self.lft[dlid] = entry
        w = sum((self.lft.get((dlid & ~3) + k, LFT_NONE) & 0xFF) << (8 * k) for k in range(4))
        self.write("LFT", self.lft_slot(dlid) // 4, w)

    def program_mft(self, mlid: int, mask: int):
        """MFT entry of MLID 0xC000 + mlid: bit p = Verilog port p (written as IBA port
        bits: mask << 1; bit 0 would be the management port)."""
        words = mft_words(self.cfg)
        iba = mask << 1
        for w in range(words):
            self.write("MFT", mlid * words + w, (iba >> (32 * w)) & 0xFFFFFFFF)
        self.mft[mlid] = iba

    def for_switch(self, dlid) -> bool:
        return self.sb.for_switch(dlid)

    def expected_outputs(self, in_port, dlid, sl, vl15: bool = False) -> dict:
        return self.sb.expected_outputs(in_port, dlid, sl, vl15)

    # ---------------------------------------------------------------- management port
    def mgmt_send(self, pkt: bytes, tdest: int = 0):
        """Queue a packet (LRH..VCRC) for the processor to send: out of IBA port `tdest`, or
        by the LFT (tdest 0). Byte 0 goes in lane 0 (AXI4-Stream)."""
        nb = self.cfg.bytes_per_flit
        self.mgmt_packets.append((pkt, tdest))
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
    def send(self, in_port, dlid, sl, payload_len, *, bad: str | None = None, vl: int | None = None,
             slid: int | None = None):
        """Queue a data packet into rx port `in_port`. bad="ebp": its last flit carries the
        PHY's bad-packet mark; bad="vcrc": its VCRC is wrong. A bad packet counts as a
        receive error and, once forwarding began, leaves every output it goes to marked
        bad (EBP): it is then expected in got_bad, not got. vl=15: a subnet management
        packet (no credit needed; payload at most 256 bytes). slid: the LRH's SLID (else random)."""
        lrh_vl = self.rng.randrange(self.nvl) if vl is None else vl
        p = good_packet(self.cfg, self.rng, lnh=2, payload_len=payload_len, vl=lrh_vl)
        lrh = LRH.unpack(p)
        # dlid: a LID; in the extended-LID mode its page (above bit 16) goes in the LRH's
        # reserved bits in front of PktLen
        lrh.dlid, lrh.sl, lrh.rsvd1 = dlid & 0xFFFF, sl, dlid >> 16
        if slid is not None:
            lrh.slid = slid
        from models.packet import BTH, build_data_packet
        body = build_data_packet(lrh, p[20:-6], BTH.unpack(p[8:20]), msb_first=self.cfg.crc_msb_first)
        if bad == "vcrc":
            body = body[:-1] + bytes([body[-1] ^ 0x01])
        elif bad not in (None, "ebp"):
            raise ValueError(f"SwitchEnv.send: bad must be None, 'ebp' or 'vcrc', not {bad!r}")
        self._enqueue(in_port, body, to_flits(body, self.cfg.data_width, bad=bad == "ebp"))
        self.sb.expect(in_port, body, bad)

    def send_raw(self, in_port: int, body: bytes):
        """Queue a packet as given (LRH..VCRC) into rx port `in_port` (a data VL packet waits
        for credit). Counted as received; not expected anywhere (the caller takes it)."""
        self._enqueue(in_port, body, to_flits(body, self.cfg.data_width))

    def send_malformed(self, in_port: int, item):
        """Queue a malformed packet (a verif.ib.stimulus Item: its flits as given) into rx port
        `in_port`: a data packet on its LRH's VL, charged the credit its PktLen says, a link
        packet without credit. Expected nowhere (the caller routes it nowhere), not counted."""
        if item.link or len(item.data) < 8:
            self.peers[in_port].queue_raw(item.flits)
        else:
            lrh = LRH.unpack(item.data)
            vl = lrh.vl if lrh.vl < self.nvl or lrh.vl == 15 else None
            data = vl not in (None, 15)
            blocks = packet_blocks(min(lrh.pktlen, self.cfg.max_pktlen), self.cfg.credit_vcrc) if data else 0
            self.peers[in_port].queue_raw(item.flits, vl, blocks)

    def _enqueue(self, in_port: int, body: bytes, flits):
        self.peers[in_port].queue(body, flits, key=body[1:-2])
        self.sb.received(in_port, body)

    def take(self, port: int, match) -> bytes | None:
        """Remove and return the first packet that left tx port `port` with match(bytes)."""
        for k, b in enumerate(self.got[port]):
            if match(b):
                self.sb.taken[port] += 1
                self.sb.taken_words[port] += LRH.unpack(b).pktlen
                return self.got[port].pop(k)
        return None

    def outstanding(self) -> int:
        """Good copies the tables promise that have not left the switch yet, plus packets the
        peers have not sent (bad packets may be dropped: see `idle_for`)."""
        return self.sb.outstanding(self.got) + sum(len(q) for q in self.pending)

    @property
    def peers_busy(self) -> bool:
        return any(pp.busy for pp in self.peers)

    def idle_for(self) -> int:
        """Cycles since the last data flit left any tx port."""
        return self.cycle - self.last_tx

    def link_inputs(self) -> dict:
        """The link side of this cycle: rx__* and tx__*__ready from the peers."""
        inp = {}
        for p, pp in enumerate(self.peers):
            pp.hold = p in self.tx_hold
            inp.update(pp.inputs())
            if pp.sending_key is not None:
                self.rx_time.setdefault(pp.sending_key, (self.cycle, p))
        self.cycle += 1
        return inp

    def _axi_inputs(self) -> dict:
        """AXI4-Lite master: one write and one read at a time, each request held until the
        slave takes it, bready/rready random."""
        if self._aw is None and self._ar is None and self.axi and not self._b and not self._r:
            a, v = self.axi.popleft()
            if v is None:
                self._ar = a
                self._rd_addr.append(a)
            else:
                self._aw = (a, v)
        d = dict(_AXI_IDLE)
        if self._aw is not None:
            d.update(s_axil_awaddr=self._aw[0], s_axil_awvalid=1, s_axil_wdata=self._aw[1], s_axil_wstrb=0xF,
                     s_axil_wvalid=1)
        if self._ar is not None:
            d.update(s_axil_araddr=self._ar, s_axil_arvalid=1)
        d["s_axil_bready"] = int(self.rng.random() < self.axi_ready_p)
        d["s_axil_rready"] = int(self.rng.random() < self.axi_ready_p)
        return d

    def inputs(self) -> dict:
        inp = self.link_inputs()
        inp.update(self._axi_inputs())
        inp.update(self._mgmt_inputs())
        return inp

    def _axi_observe(self, i, o):
        if "s_axil_awready" not in o:                # registers driven by someone else
            return
        if i["s_axil_awvalid"] and o["s_axil_awready"] and o["s_axil_wready"]:
            self._aw = None
            self._b += 1
        if i["s_axil_arvalid"] and o["s_axil_arready"]:
            self._ar = None
            self._r += 1
        if o["s_axil_bvalid"] and i["s_axil_bready"]:
            self._b -= 1
        if o["s_axil_rvalid"] and i["s_axil_rready"]:
            self.reads[self._rd_addr.popleft()] = o["s_axil_rdata"]
            self._r -= 1

    def observe(self, i, o):
        self._mgmt_observe(i, o)
        self._axi_observe(i, o)
        now = self.cycle - 1
        for p, pp in enumerate(self.peers):
            if o[f"tx__{p}__valid"] and i[f"tx__{p}__ready"] and not o[f"tx__{p}__link"]:
                self.last_tx = now
                if o[f"tx__{p}__sop"]:
                    self.tx_sop[p] = now
            done = pp.observe(i, o)
            if done is None:
                continue
            b, bad = done
            self.log.append((now, p, LRH.unpack(b).vl, len(b)))
            t0 = self.rx_time.get(b[1:-2])
            if t0 is not None and not bad:
                self.latency.append((t0[1], p, self.tx_sop[p] - t0[0], len(b)))

    def check(self):
        """The scoreboard (verif.env.switch_scoreboard); returns the copies delivered."""
        for p in range(self.n):
            assert not any(not f.link for f in self.rxq[p]), f"rx port {p}: a packet still being sent"
        return self.sb.check(self.got, self.got_bad, self.pending)


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
        env = self.env
        sent = quiet = 0
        read_at = None
        c = 0
        while c < self.max_cycles:
            if not env.registers_busy and sent < self.packets and self.rng.random() < self.rate:
                self.one()
                sent += 1
            busy = env.outstanding() > 0 or any(not f.link for q in env.rxq for f in q) or env.idle_for() < 20
            quiet = 0 if (busy or sent < self.packets or env.registers_busy) else quiet + 1
            if quiet == 100 and read_at is None:         # drained: read every counter back
                env.read_counters(PORT_COUNTERS_LIST)
                read_at = c
            if read_at is not None and not env.registers_busy and not env.reads_pending():
                break
            c += 1
            yield env.inputs()
        self.cycles = c

    async def run_observed(self, dut, regs):
        """The traffic of `stim()` with the link peers driven by someone else (observe mode,
        verif.env.switch_tb.SwitchTB) and the counters read with `regs` (a
        fw.hw.SwitchRegs, e.g. the firmware's AXI4-Lite master) into env.reads."""
        from cocotb.triggers import FallingEdge

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
            for name in PORT_COUNTERS_LIST:
                env.reads[env.counter_addr(p, name)] = await regs.read("COUNTERS", counter_index(p, name))

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


# what the switch does with each kind of packet of MixedTraffic (the demo prints it beside the counts)
OUTCOME = {"unicast": "delivered once, to the LFT port, VL from SL2VL",
           "multicast": "one copy per MFT port but the input",
           "LFT 255": "dropped, PortRcvSwitchRelayErrors",
           "LFT 0 (management port)": "to the management processor (AXI4-Stream), MgmtRcvPkts; "
                                      "a relay error if its queue has no room",
           "DLID beyond LFT": "dropped, relay error",
           "DLID 0": "dropped, relay error", "multicast, only the input in the mask": "dropped, relay error",
           "EBP at tail": "PortRcvRemotePhysicalErrors; dropped, or marked bad (EBP) if forwarding had begun",
           "bad VCRC": "PortRcvErrors; dropped, or marked bad (EBP) if forwarding had begun",
           "VL15 LID-routed": "forwarded on VL15 to the LFT port (no credit needed)",
           "VL15 for the switch": "permissive LID, SWITCH_LID or LFT 0: VL15ForSwitch, to the management "
                                  "processor (VL15Dropped if its queue has no room)",
           "VL15 LFT 255": "SMP the LFT cannot route: dropped, relay error"}
