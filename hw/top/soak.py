"""`ib_soak`: the switch under random faults, with hardware traffic at every port and no
software in the inner loop (docs/reliability.md, "Fault-injection soak"; `make soak`).

    endpoint p --[FaultInjector up[p]]--> switch port p --[FaultInjector dn[p]]--> endpoint p

  * Endpoint p (hw/endpoint/endpoint.py) has LID base_lid + p and sends to every other
    endpoint in turn, one packet each: its destinations are the LIDs base_lid + p + 1 ..
    base_lid + p + N - 1, and the LFT routes LID base_lid + j (j < 2N) to port j mod N. Its
    checker knows the N sources, and each (source, destination) is a flow of its own
    sequence numbers.
  * A FaultInjector sits on each wire direction. It is the wire: one register stage,
    and it carries the PHY's `up`.
  * A fault scheduler draws from a 32-bit xorshift generator every cycle, seeded after reset
    from the `seed` input (SoakPlan.seed while it is 0). With `fault_en`,
    a fault fires with probability 2^-rate_log2 per cycle. It picks a kind, a port and a
    direction:

    | kind | what | where |
    |---|---|---|
    | corrupt | one bit of the next data packet flipped: a random bit of a random flit, headers too | either |
    | pktlen | the next data packet's last flit 2 bytes short or long (PktLen disagrees) | either |
    | ebp | the next data packet ends marked bad (EBP) | either |
    | fc_drop | the next flow-control packet lost | either |
    | rogue | `rogue_pkts` packets sent with no regard to credit, to a LID with no route | endpoint to switch |
    | flap | the cable cut (`up` low both ways, every flit lost) for `flap_cycles` cycles | both ways |
    | down | the switch port set Down by management, mid-traffic | the switch port |

    Two weights in eight are corrupt, one each the rest.
  * A small management master (SoakSM, AXI4-Lite) programs the LFT and HOQLife at reset,
    then plays subnet manager: it polls every port's state and moves a port it finds in Init
    to Armed, then Active, and carries out the `down` faults. With `hold` it stops after
    its current access (`sm_idle`), and the AXI4-Lite port of this top (s_axil_*) reaches
    the switch instead, so the test reads the counters.

Each injector counts what it did (INJECT_COUNTERS). A packet is counted by it once: as
begun at its input (`data_in`), and then, if a fault hit it, by that fault. A packet a cut
or an abandoned transmission hits is counted in `cut_rcv` / `cut_both` / `abandoned`, so
that the books can balance (docs/reliability.md):

  cut_rcv    the receiver had seen the packet's start when the cable was cut (it counts a
             truncation)
  cut_both   ... and the sender did not finish it either (it counts a discard too)
  cut_lost   the packet's start went into a cut cable (the receiver never saw it) and the
             sender finished it, not marked bad: lost on the wire, counted by nobody but
             this injector
  abandoned  with the cable whole, the sender gave a packet up (its port went Down) after
             its start had gone out; the receiver counts a truncation at the next start (a
             flow-control packet there is taken as usual: docs/rx-parser.md)
  ebp_in     the sender itself ended a data packet marked bad (EBP): a switch that had begun
             to forward a packet (cut-through) before its receiver found it bad, and counted
             it there; the receiver here counts it again, as EBP
             (PortRcvRemotePhysicalErrors), or as a truncation when the cable was cut
             after the packet's start had gone through

Ports:
  run, fault_en, rate_log2 (0..24), hold     In
  seed                                       In   the scheduler's seed (0: SoakPlan.seed), read after reset
  kind_mask                                  In   bit k: draw k of FAULT_KINDS may fire
  now, cfg_done, sm_idle, max_stall          Out
  ep__<p>__* (sent_pkts, gen_done, state, chk__*, crx__*, ctx__*), up__<p>__*, dn__<p>__* Out
  s_axil_*                                   the switch's registers while `hold` and `sm_idle`
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Array, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from contracts.config import SwitchConfig
from contracts.counters import CHECK_COUNTERS, LINK_RX_COUNTERS, LINK_TX_COUNTERS
from contracts.defs import PortState, iba_port
from contracts.ports import Sig
from contracts.regmap import build_regmap
from contracts.streams import AXIL_ADDR_BITS, axil
from hw.common.crc import CRC16_IB, CRC32_IB, icrc_mask_bytes, serial_update
from hw.common.ports import members
from hw.common.stream import link_rx_signature, link_tx_signature
from hw.endpoint.endpoint import Endpoint
from hw.top.loopback import check_lids_and_length
from hw.top.switch import IBSwitch

__all__ = ["SoakPlan", "Soak", "FaultInjector", "SoakSM", "INJECT_COUNTERS", "FAULT_KINDS", "rogue_packet",
           "soak_writes"]

INJECT_COUNTERS = ["data_in", "corrupt", "pktlen", "ebp", "fc_dropped", "rogue", "flaps", "cut_rcv", "cut_both",
                   "cut_lost", "abandoned", "ebp_in"]
# the scheduler's 3-bit draw -> fault kind
FAULT_KINDS = ["corrupt", "corrupt", "pktlen", "ebp", "fc_drop", "rogue", "flap", "down"]
_KIND = {"corrupt": 1, "pktlen": 2, "ebp": 3, "fc_drop": 4, "rogue": 5}


@dataclass(frozen=True)
class SoakPlan:
    """What the soak sends and how it hurts it. `count`: packets per generator (0: until
    `run` falls); payload lengths as in hw/endpoint/traffic_gen.py; `hoq_life`: HOQLife of
    every output (lifetime units of the config); `switch_life`: SwitchLifetime (SWITCH_LIFE,
    the same units; 20..31 never; 3 = 8 units, 128 cycles in small-rxreg: short enough
    that packets held up by the faults outlive it); `flap_cycles`: how long a cut lasts;
    `rogue_pkts`: packets in one rogue burst; `seed`: the scheduler's generator."""
    base_lid: int = 1
    len_min: int = 1
    len_mask: int = 15
    gap: int = 0
    count: int = 0
    sl: int = 0
    qp: int = 0x11
    hoq_life: int = 8
    switch_life: int = 3
    flap_cycles: int = 64
    rogue_pkts: int = 4
    seed: int = 0x2545F491

    def rogue_dlid(self, cfg: SwitchConfig) -> int:
        return self.base_lid + 2 * cfg.ports

    def check(self, cfg: SwitchConfig):
        if cfg.ports < 2:
            raise ValueError(f"SoakPlan: the soak needs at least 2 ports, the config has {cfg.ports}")
        # the routed LIDs and the rogue's: base_lid .. rogue_dlid
        check_lids_and_length("SoakPlan", cfg, self.base_lid, self.rogue_dlid(cfg) - self.base_lid + 1, self.len_min)
        if not 8 <= self.flap_cycles <= 0xFFFF:
            raise ValueError(f"SoakPlan.flap_cycles: {self.flap_cycles}, must be in 8..65535")
        if not 1 <= self.rogue_pkts <= 64:
            raise ValueError(f"SoakPlan.rogue_pkts: {self.rogue_pkts}, must be in 1..64")
        if not 0 <= self.switch_life <= 31:
            raise ValueError(f"SoakPlan.switch_life: {self.switch_life}, must be in 0..31 (20..31: never)")
        if self.seed == 0 or not 0 < self.seed < 1 << 32:
            raise ValueError(f"SoakPlan.seed: {self.seed:#x}, must be a nonzero 32-bit value")


def rogue_packet(cfg: SwitchConfig, plan: SoakPlan) -> bytes:
    """The rogue sender's packet: LRH (VL 0, LNH 2, DLID = a LID with no route, SLID 0xFFF0,
    PktLen 6) + BTH (RC SEND Only, no payload) + ICRC + VCRC, CRC-valid (IBA §7.7, §7.8)."""
    dlid, slid, pktlen = plan.rogue_dlid(cfg), 0xFFF0, 6
    lrh = bytes([0x00, 0x02]) + dlid.to_bytes(2, "big") + pktlen.to_bytes(2, "big") + slid.to_bytes(2, "big")
    bth = bytes([0x04, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00])
    body = bytearray(lrh + bth)
    for off, mask in icrc_mask_bytes(2).items():
        body[off] |= mask
    icrc = serial_update(CRC32_IB, CRC32_IB.init, bytes(body)) ^ CRC32_IB.xorout
    pkt = lrh + bth + icrc.to_bytes(4, "little")
    vcrc = serial_update(CRC16_IB, CRC16_IB.init, pkt) ^ CRC16_IB.xorout
    lo, hi = vcrc & 0xFF, vcrc >> 8
    return pkt + bytes([hi, lo] if cfg.crc_msb_first else [lo, hi])


class FaultInjector(wiring.Component):
    """One wire direction: sender (`i`, a LinkTx's tx) -> receiver (`o`, a LinkRx's rx),
    one register stage. `cut` (a level) takes `up` low and loses every flit. `arm` with
    `kind` (1 corrupt, 2 pktlen, 3 ebp, 4 fc_drop, 5 rogue) arms a fault for the next packet
    it applies to; an armed fault of the same kind is not armed twice. A corruption flips
    one bit of the packet, chosen by `where` at the arm: flit `where[8:11]` (0: the first,
    the LRH's; the last flit if the packet is shorter) and, among that flit's valid bits,
    the one `where[0:8]` / 256 of the way from its first byte. `counters`: 32-bit
    (module docstring of hw/top/soak.py)."""

    def __init__(self, cfg: SwitchConfig, rogue: bytes | None = None, rogue_pkts: int = 1):
        self.cfg, self.rogue, self.rogue_pkts = cfg, rogue, rogue_pkts
        super().__init__({
            "i": In(link_tx_signature(cfg)),
            "o": Out(link_rx_signature(cfg)),
            "cut": In(1), "arm": In(1), "kind": In(3), "where": In(11),
            "counters": Out(wiring.Signature({k: Out(32) for k in INJECT_COUNTERS})),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        W, nb = cfg.data_width, cfg.bytes_per_flit
        i, o, c = self.i, self.o, self.counters

        def inc(name, cond):
            ctr = getattr(c, name)
            with m.If(cond & (ctr != 0xFFFFFFFF)):
                m.d.sync += ctr.eq(ctr + 1)

        pend = {k: Signal(name=f"pend_{k}") for k in _KIND}
        for k, v in _KIND.items():
            if k == "rogue" and self.rogue is None:
                continue
            with m.If(self.arm & (self.kind == v)):
                m.d.sync += pend[k].eq(1)

        # ---- the rogue sender: a burst of CRC-valid packets on the wire, credit or not
        in_open = Signal()                       # the sender's data packet is under way
        rogue_active = Signal()
        rogue_start = Signal()
        rflit = None
        if self.rogue is not None:
            pkt = self.rogue
            flits = [pkt[k:k + nb] for k in range(0, len(pkt), nb)]
            nfl = len(flits)
            total = nfl * self.rogue_pkts
            rom = Array(Const(int.from_bytes(f.ljust(nb, b"\0"), "big"), W) for f in flits)
            left = Signal(range(total + 1))
            idx = Signal(range(nfl))
            m.d.comb += [rogue_active.eq(left != 0),
                         rogue_start.eq(pend["rogue"] & ~in_open & ~rogue_active & ~self.cut)]
            with m.If(rogue_start):
                m.d.sync += [left.eq(total), idx.eq(0), pend["rogue"].eq(0)]
            with m.Elif(rogue_active):
                m.d.sync += [left.eq(left - 1), idx.eq(Mux(idx == nfl - 1, 0, idx + 1))]
            rflit = {"data": rom[idx], "sop": idx == 0, "eop": idx == nfl - 1,
                     "bytes": Mux(idx == nfl - 1, len(flits[-1]), nb)}

        m.d.comb += i.ready.eq(~rogue_active & ~rogue_start)
        take = Signal()
        m.d.comb += take.eq(i.valid & i.ready)
        is_data = ~i.link
        sop_d = take & i.sop & is_data
        eop_d = take & i.eop & is_data

        # the fault on the packet under way at the input (latched at its sop)
        cur = Signal(2)                          # 0 none, 1 corrupt, 2 pktlen, 3 ebp
        f_now = Signal(2)
        with m.If(pend["corrupt"]):
            m.d.comb += f_now.eq(1)
        with m.Elif(pend["pktlen"]):
            m.d.comb += f_now.eq(2)
        with m.Elif(pend["ebp"]):
            m.d.comb += f_now.eq(3)
        fault = Mux(sop_d, Mux(self.cut, 0, f_now), cur)
        with m.If(sop_d & ~self.cut):
            m.d.sync += cur.eq(f_now)
            for k, v in (("corrupt", 1), ("pktlen", 2), ("ebp", 3)):
                with m.If(f_now == v):
                    m.d.sync += pend[k].eq(0)
        inc("data_in", sop_d)
        # the corruption's flit and bit (latched at the arm); the flit index of the packet
        c_flit, c_frac = Signal(3), Signal(8)
        with m.If(self.arm & (self.kind == _KIND["corrupt"]) & ~pend["corrupt"]):
            m.d.sync += [c_flit.eq(self.where[8:11]), c_frac.eq(self.where[:8])]
        idx = Signal(range(cfg.max_packet_flits + 2))
        with m.If(take & ~i.link):
            m.d.sync += idx.eq(Mux(i.sop, 1, idx + 1))
        here = Mux(i.sop, 0, idx)
        # at the chosen flit, or at the last one of a shorter packet; bit k of the flit's
        # 8 * bytes valid bits (bytes from the top of the flit: byte 0 is the first on the wire)
        hit = take & is_data & (fault == 1) & ((here == c_flit) | (i.eop & (here < c_flit)))   # once a packet
        nbits = Mux(i.eop, i.bytes, nb) << 3
        k = Signal(range(W))
        m.d.comb += k.eq((c_frac * nbits) >> 8)
        flip = Signal(W)
        m.d.comb += flip.eq(Const(1 << (W - 1), W) >> k)
        # the data packet under way at the input: its start went through (the receiver
        # counts it one way or another)
        in_seen = Signal()
        with m.If(sop_d):
            m.d.sync += in_seen.eq(~self.cut)
        inc("ebp_in", eop_d & i.bad & Mux(i.sop, ~self.cut, in_seen))

        # ---- packet identities, to tell who counts a cut packet
        in_id = Signal(16)                       # id of the packet under way at the input
        last_eop_id = Signal(16)                 # id of the last packet whose end the sender gave
        flit_id = Mux(sop_d, in_id + 1, in_id)
        cut_q = Signal()
        m.d.sync += cut_q.eq(self.cut)
        ended = ~self.cut & cut_q                # the cut is over (the sender gave up its packet)
        drop_fc = take & i.link & pend["fc_drop"] & ~self.cut
        link_sop = take & i.sop & i.link & ~drop_fc & ~self.cut
        with m.If(sop_d):
            m.d.sync += [in_id.eq(in_id + 1), in_open.eq(~i.eop)]
        with m.Elif(eop_d | ended | link_sop):
            m.d.sync += in_open.eq(0)
        with m.If(eop_d):
            m.d.sync += last_eop_id.eq(flit_id)
        # with the cable whole, a sender that starts anything while its packet is open gave
        # it up; the receiver ends the open packet there (TRUNCATED) and loses the new one
        # (FRAMING): when that is a flow-control packet, no data packet was lost for it
        abandon = take & i.sop & in_open & ~self.cut & ~drop_fc
        inc("abandoned", abandon)
        # a data packet whose start the cut swallowed: if the sender finishes it, nobody
        # but the wire knows it existed; if it gives it up (its port went Down), it counts
        lost_open = Signal()
        with m.If(take & i.sop):
            m.d.sync += lost_open.eq(is_data & self.cut & ~i.eop)
        with m.Elif(eop_d):
            m.d.sync += lost_open.eq(0)
        inc("cut_lost", ~i.bad & ((sop_d & self.cut & i.eop) | (eop_d & ~i.sop & lost_open)))

        # ---- the flit onto the wire (registered)
        with m.If(drop_fc):
            m.d.sync += pend["fc_drop"].eq(0)
        inc("fc_dropped", drop_fc)
        data = Mux(hit, i.data ^ flip, i.data)
        nbytes = Mux(eop_d & (fault == 2), Mux(i.bytes > 2, i.bytes - 2, i.bytes + 2), i.bytes)
        bad = i.bad | (eop_d & (fault == 3))
        o_id = Signal(16)
        o_rogue = Signal()
        m.d.sync += o.up.eq(~self.cut)
        if self.rogue is not None:
            with m.If(self.cut):
                m.d.sync += left.eq(0)            # a cut ends the burst
        if rflit is None:
            rflit = {"data": 0, "sop": 0, "eop": 0, "bytes": 0}
        with m.If(rogue_active):
            m.d.sync += [o.valid.eq(~self.cut), o.data.eq(rflit["data"]), o.sop.eq(rflit["sop"]),
                         o.eop.eq(rflit["eop"]), o.bytes.eq(rflit["bytes"]), o.link.eq(0), o.bad.eq(0),
                         o_rogue.eq(1)]
            inc("rogue", ~self.cut & rflit["sop"])
        with m.Else():
            m.d.sync += [o.valid.eq(take & ~self.cut & ~drop_fc), o.data.eq(data), o.sop.eq(i.sop),
                         o.eop.eq(i.eop), o.bytes.eq(nbytes), o.link.eq(i.link), o.bad.eq(bad),
                         o_id.eq(flit_id), o_rogue.eq(0)]
        for name, v in (("pktlen", 2), ("ebp", 3)):
            inc(name, eop_d & ~self.cut & (fault == v))
        inc("corrupt", hit & ~self.cut)

        # ---- cuts. What the receiver has taken: a data packet open, and which
        out_open, out_id, out_rogue = Signal(), Signal(16), Signal()
        with m.If(o.valid & o.up):
            with m.If(o.sop):
                # any start ends an open packet at the receiver (a flow-control packet too)
                m.d.sync += [out_open.eq(~o.eop & ~o.link), out_id.eq(o_id), out_rogue.eq(o_rogue)]
            with m.Elif(o.eop & ~o.link):
                m.d.sync += out_open.eq(0)
        up_q = Signal(init=1)
        m.d.sync += up_q.eq(o.up)
        inc("flaps", self.cut & ~cut_q)
        seen = ~o.up & up_q                      # the first cycle the receiver sees the cut
        watch = Signal()
        watch_id = Signal(16)
        with m.If(seen):
            m.d.sync += [watch.eq(out_open & ~out_rogue), watch_id.eq(out_id), out_open.eq(0)]
        inc("cut_rcv", seen & out_open)
        with m.If(ended):
            m.d.sync += watch.eq(0)
        inc("cut_both", ended & watch & (last_eop_id != watch_id))
        return m


def soak_writes(cfg: SwitchConfig, plan: SoakPlan) -> list[tuple[int, int]]:
    """The set-up writes: the LFT entries of LIDs base_lid + j (j < 2N) to port j mod N, and
    HOQLife of every output and SwitchLifetime (with `cfg.lifetimes`). The ports are brought
    up by SoakSM."""
    rm = build_regmap(cfg)
    n = cfg.ports
    words: dict[int, int] = {}
    for j in range(2 * n):
        lid = plan.base_lid + j
        w = words.setdefault(lid // 4, 0xFFFFFFFF)
        words[lid // 4] = (w & ~(0xFF << (8 * (lid % 4)))) | (iba_port(j % n) << (8 * (lid % 4)))
    out = [(rm["LFT"].addr(i), w) for i, w in sorted(words.items())]
    if cfg.lifetimes:
        out += [(rm["HOQ_LIFE"].addr(p), plan.hoq_life) for p in range(n)]
        out += [(rm["SWITCH_LIFE"].addr(0), plan.switch_life)]
    return out


class SoakSM(wiring.Component):
    """The soak's subnet manager in hardware: an AXI4-Lite master that first plays `writes`,
    then forever: carries out a pending Down request (`down_req[p]`, a pulse, remembered),
    else reads PORT_STATE of the next port and, if it is Init, writes Armed, if Armed,
    Active (IBA §14.2.5.6). With `hold` it stops between accesses (`idle`). Every access
    answered other than OKAY counts in `errors`."""

    def __init__(self, cfg: SwitchConfig, writes: list[tuple[int, int]]):
        self.cfg, self.writes = cfg, list(writes)
        a = AXIL_ADDR_BITS
        super().__init__({
            "awaddr": Out(a), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(32), "wvalid": Out(1), "wready": In(1),
            "bresp": In(2), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(a), "arvalid": Out(1), "arready": In(1),
            "rdata": In(32), "rresp": In(2), "rvalid": In(1), "rready": Out(1),
            "down_req": In(cfg.ports), "hold": In(1),
            "done": Out(1), "idle": Out(1), "errors": Out(16), "downs": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        n = self.cfg.ports
        rm = build_regmap(self.cfg)
        ps = rm["PORT_STATE"]
        nw = len(self.writes)
        m.submodules.rom = rom = Memory(shape=AXIL_ADDR_BITS + 32, depth=nw,
                                        init=[(d << AXIL_ADDR_BITS) | a for a, d in self.writes])
        rd = rom.read_port(domain="comb")
        widx = Signal(range(nw + 1))
        m.d.comb += rd.addr.eq(widx)
        pending = Signal(n)
        port = Signal(range(n))
        aw_p, w_p, ar_p = Signal(), Signal(), Signal()
        addr, wdata = Signal(AXIL_ADDR_BITS), Signal(32)
        m.d.comb += [self.awaddr.eq(addr), self.araddr.eq(addr), self.wdata.eq(wdata),
                     self.awvalid.eq(aw_p), self.wvalid.eq(w_p), self.arvalid.eq(ar_p),
                     self.bready.eq(1), self.rready.eq(1)]
        clear = Signal(n)
        with m.If(aw_p & self.awready):
            m.d.sync += aw_p.eq(0)
        with m.If(w_p & self.wready):
            m.d.sync += w_p.eq(0)
        with m.If(ar_p & self.arready):
            m.d.sync += ar_p.eq(0)
        lowest = Signal(range(n))
        for p in reversed(range(n)):
            with m.If(pending[p]):
                m.d.comb += lowest.eq(p)
        with m.FSM():
            with m.State("SETUP"):
                with m.If(widx == nw):
                    m.d.sync += self.done.eq(1)
                    m.next = "NEXT"
                with m.Else():
                    m.d.sync += [addr.eq(rd.data[:AXIL_ADDR_BITS]), wdata.eq(rd.data[AXIL_ADDR_BITS:]),
                                 aw_p.eq(1), w_p.eq(1), widx.eq(widx + 1)]
                    m.next = "SETUP_B"
            with m.State("SETUP_B"):
                with m.If(self.bvalid):
                    with m.If(self.bresp != 0):
                        m.d.sync += self.errors.eq(self.errors + 1)
                    m.next = "SETUP"
            with m.State("NEXT"):
                m.d.comb += self.idle.eq(self.hold)
                with m.If(self.hold):
                    pass
                with m.Elif(pending != 0):
                    m.d.sync += [addr.eq(ps.addr(0) + (lowest << 2)), wdata.eq(int(PortState.DOWN)),
                                 aw_p.eq(1), w_p.eq(1), self.downs.eq(self.downs + 1)]
                    m.d.comb += clear.eq(1 << lowest)
                    m.next = "WRITE_B"
                with m.Else():
                    m.d.sync += [addr.eq(ps.addr(0) + (port << 2)), ar_p.eq(1)]
                    m.next = "READ_R"
            with m.State("READ_R"):
                with m.If(self.rvalid):
                    with m.If(self.rresp != 0):
                        m.d.sync += self.errors.eq(self.errors + 1)
                    st = self.rdata[:3]
                    with m.If((st == PortState.INIT) | (st == PortState.ARMED)):
                        m.d.sync += [wdata.eq(Mux(st == PortState.INIT, int(PortState.ARMED),
                                                  int(PortState.ACTIVE))), aw_p.eq(1), w_p.eq(1)]
                        m.next = "WRITE_B"
                    with m.Else():
                        m.d.sync += port.eq(Mux(port == n - 1, 0, port + 1))
                        m.next = "NEXT"
            with m.State("WRITE_B"):
                with m.If(self.bvalid):
                    with m.If(self.bresp != 0):
                        m.d.sync += self.errors.eq(self.errors + 1)
                    m.next = "NEXT"
        m.d.sync += pending.eq((pending & ~clear) | self.down_req)
        return m


def _xorshift32(x):
    x = x ^ (x << 13)[:32]
    x = x ^ (x >> 17)
    return x ^ (x << 5)[:32]


class Soak(wiring.Component):
    def __init__(self, cfg: SwitchConfig, plan: SoakPlan | None = None):
        self.cfg = cfg
        self.plan = plan or SoakPlan()
        self.plan.check(cfg)
        n = cfg.ports
        inj = wiring.Signature({k: Out(32) for k in INJECT_COUNTERS})
        ep = wiring.Signature({
            "sent_pkts": Out(32), "gen_done": Out(1), "state": Out(3),
            "chk": Out(wiring.Signature({k: Out(48 if k == "lat_sum" else 32) for k in CHECK_COUNTERS})),
            "crx": Out(wiring.Signature({k: Out(32) for k in LINK_RX_COUNTERS})),
            "ctx": Out(wiring.Signature({k: Out(32) for k in LINK_TX_COUNTERS})),
        })
        super().__init__({
            "run": In(1), "fault_en": In(1), "rate_log2": In(5), "kind_mask": In(8), "hold": In(1), "seed": In(32),
            "now": Out(32), "cfg_done": Out(1), "sm_idle": Out(1), "sm_errors": Out(16), "sm_downs": Out(32),
            "max_stall": Out(32),
            "ep": Out(ep).array(n), "up": Out(inj).array(n), "dn": Out(inj).array(n),
            **members(Sig(axil())),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, plan, n = self.cfg, self.plan, self.cfg.ports
        m.submodules.switch = sw = IBSwitch(cfg)
        m.submodules.sm = sm = SoakSM(cfg, soak_writes(cfg, plan))
        m.d.sync += self.now.eq(self.now + 1)
        m.d.comb += [self.cfg_done.eq(sm.done), self.sm_idle.eq(sm.idle), self.sm_errors.eq(sm.errors),
                     self.sm_downs.eq(sm.downs), sm.hold.eq(self.hold)]
        ext = self.hold & sm.idle                 # the test's AXI4-Lite port has the switch
        for name, member in members(Sig(axil())).items():
            short = name[len("s_axil_"):]
            ours, theirs = getattr(self, name), getattr(sw, name)
            if member.flow == wiring.Flow.In:            # master -> switch
                mine = getattr(sm, short, None)
                m.d.comb += theirs.eq(Mux(ext, ours, mine if mine is not None else 0))
            else:                                        # switch -> master
                m.d.comb += ours.eq(Mux(ext, theirs, 0))
                if hasattr(sm, short):
                    m.d.comb += getattr(sm, short).eq(Mux(ext, 0, theirs))
        m.d.comb += sw.s_axil_wstrb.eq(Mux(ext, self.s_axil_wstrb, 0xF))

        # ---- the fault scheduler
        # zero after reset (xorshift never reaches 0): the next cycle loads `seed`, or
        # plan.seed while that input is 0
        rng = Signal(32)
        m.d.sync += rng.eq(Mux(rng == 0, Mux(self.seed != 0, self.seed, plan.seed), _xorshift32(rng)))
        mask = Signal(32)
        m.d.comb += mask.eq((Const(1, 33) << self.rate_log2) - 1)
        kind = rng[24:27]
        # where a corruption hits (FaultInjector `where`): a stream of its own, so that the
        # rate's zero bits of `rng` do not bias it
        rng2 = Signal(32, init=0x5851F42D)
        m.d.sync += rng2.eq(_xorshift32(rng2))
        fire = self.fault_en & ((rng & mask) == 0) & self.kind_mask.bit_select(kind, 1)
        pbits = max(1, (n - 1).bit_length())
        draw = rng[27:27 + pbits]
        port = Signal(range(n))
        m.d.comb += port.eq(Mux(draw >= n, draw - n, draw) if (1 << pbits) != n else draw)
        down_dir = rng[31]
        flap_left = [Signal(16, name=f"flap_left{p}") for p in range(n)]
        down_req = Signal(n)

        rogue = rogue_packet(cfg, plan)
        stalls = []
        for p in range(n):
            ep = Endpoint(cfg, max_dests=n - 1, max_srcs=n, check_icrc=True)
            up = FaultInjector(cfg, rogue=rogue, rogue_pkts=plan.rogue_pkts)
            dn = FaultInjector(cfg)
            m.submodules[f"ep{p}"] = ep
            m.submodules[f"inj_up{p}"] = up
            m.submodules[f"inj_dn{p}"] = dn
            wiring.connect(m, ep.tx, up.i)
            wiring.connect(m, up.o, sw.rx[p])
            wiring.connect(m, sw.tx[p], dn.i)
            wiring.connect(m, dn.o, ep.rx)
            cut = flap_left[p] != 0
            here = fire & (port == p)
            with m.If(cut):
                m.d.sync += flap_left[p].eq(flap_left[p] - 1)
            with m.If(here & (kind == FAULT_KINDS.index("flap")) & ~cut):
                m.d.sync += flap_left[p].eq(plan.flap_cycles)
            m.d.comb += down_req[p].eq(here & (kind == FAULT_KINDS.index("down")))
            k3 = Mux(kind <= 1, _KIND["corrupt"], kind)          # FAULT_KINDS -> FaultInjector kinds
            m.d.comb += [up.cut.eq(cut), dn.cut.eq(cut), up.where.eq(rng2[:11]), dn.where.eq(rng2[:11]),
                         up.arm.eq(here & (kind <= 5) & ~down_dir), up.kind.eq(k3),
                         dn.arm.eq(here & (kind <= 4) & down_dir), dn.kind.eq(k3)]
            g = ep.gen
            m.d.comb += [
                ep.now.eq(self.now), ep.auto_active.eq(1), ep.mgmt.req.eq(0),
                g.en.eq(self.run & sm.done), g.slid.eq(plan.base_lid + p), g.dlid_base.eq(plan.base_lid + p + 1),
                g.ndest.eq(n - 1), g.sl.eq(plan.sl), g.vl.eq(0), g.qp.eq(plan.qp), g.len_min.eq(plan.len_min),
                g.len_mask.eq(plan.len_mask), g.count.eq(plan.count), g.gap.eq(plan.gap),
                ep.chk.src_base.eq(plan.base_lid), ep.chk.len_min.eq(plan.len_min),
                ep.chk.len_mask.eq(plan.len_mask),
            ]
            o = self.ep[p]
            m.d.comb += [o.sent_pkts.eq(ep.sent_pkts), o.gen_done.eq(ep.gen_done), o.state.eq(ep.state)]
            m.d.comb += [getattr(o.chk, k).eq(getattr(ep.counters, k)) for k in CHECK_COUNTERS]
            m.d.comb += [getattr(o.crx, k).eq(getattr(ep.crx, k)) for k in LINK_RX_COUNTERS]
            m.d.comb += [getattr(o.ctx, k).eq(getattr(ep.ctx, k)) for k in LINK_TX_COUNTERS]
            m.d.comb += [getattr(self.up[p], k).eq(getattr(up.counters, k)) for k in INJECT_COUNTERS]
            m.d.comb += [getattr(self.dn[p], k).eq(getattr(dn.counters, k)) for k in INJECT_COUNTERS]
            # the longest time endpoint p went without a good packet while traffic ran
            since = Signal(32, name=f"since{p}")
            last_good = Signal(32, name=f"last_good{p}")
            m.d.sync += last_good.eq(ep.counters.rcv_good)
            with m.If(~self.run | (ep.counters.rcv_good != last_good)):
                m.d.sync += since.eq(0)
            with m.Elif(since != 0xFFFFFFFF):
                m.d.sync += since.eq(since + 1)
            stalls.append(since)
        m.d.comb += sm.down_req.eq(down_req)
        worst = stalls[0]
        for s in stalls[1:]:
            worst = Mux(s > worst, s, worst)
        with m.If(worst > self.max_stall):
            m.d.sync += self.max_stall.eq(worst)
        return m
