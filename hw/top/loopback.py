"""`ib_loopback`: the switch with a hardware endpoint on every port, for an FPGA board and
for simulation without software in the loop (docs/endpoint.md, docs/fpga.md).

Endpoint p (on switch port p, IBA port p+1) has LID `base_lid + p` and sends to its pair
partner p ^ 1 (ports paired 0-1, 2-3, ...), so every packet crosses the switch. After
reset an AXI4-Lite writer programs the switch (hw/endpoint/axil_writer.py: the LFT entry
of every endpoint LID, then every port Armed and Active, `loopback_writes`); the
endpoints bring their own ports up (auto_active), and the generators start once the
writes are done and `run` is high.

Ports:
  run                 In   generators may start (held high to run)
  cfg_done, cfg_errors Out the AXI writes are done / answered with an error
  now                 Out  the shared time base (cycles since reset)
  ep__<p>__*          Out  endpoint p's counters: sent_pkts, gen_done, chk (the checker's),
                           state, rx_fault (a receive error counter of its link layer moved)
  pass_, fail         Out  every checker has received `expect` packets or more with no fault /
                           a fault was seen anywhere (checker error, bad packet, link receive error)
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from contracts.config import SwitchConfig
from contracts.counters import CHECK_COUNTERS
from contracts.defs import RX_ERROR_COUNTERS, RX_REMOTE_PHYS_COUNTERS, PortState, iba_port
from contracts.ports import Sig
from contracts.regmap import build_regmap
from contracts.streams import LINK_FLIT, axil
from hw.common.ports import members
from hw.endpoint.axil_writer import AxilWriter
from hw.endpoint.endpoint import Endpoint
from hw.top.switch import IBSwitch

__all__ = ["Loopback", "LoopbackPlan", "loopback_writes", "check_lids_and_length"]


@dataclass(frozen=True)
class LoopbackPlan:
    """What the endpoints send: payload words len_min + (f(PSN) & len_mask), `gap` idle
    cycles after each packet, `count` packets per generator (0: forever), on SL/VL `sl`;
    `expect`: packets each checker must receive for `pass_`; `check_icrc`: the checkers
    verify ICRCs (hw/endpoint/traffic_check.py; the board top leaves it out to fit)."""
    base_lid: int = 1
    len_min: int = 1
    len_mask: int = 15
    gap: int = 0
    count: int = 0
    sl: int = 0
    qp: int = 0x11
    expect: int = 64
    check_icrc: bool = True

    def check(self, cfg: SwitchConfig):
        if cfg.ports % 2:
            raise ValueError(f"LoopbackPlan: ports are paired, {cfg.ports} is odd")
        check_lids_and_length("LoopbackPlan", cfg, self.base_lid, cfg.ports, self.len_min)


def check_lids_and_length(plan: str, cfg: SwitchConfig, base_lid: int, nlids: int, len_min: int):
    """A hardware-traffic plan's LIDs base_lid .. base_lid + nlids - 1 must be unicast LIDs
    inside the LFT, and its shortest payload 1..MTU/4 words (ValueError naming the field)."""
    if not (1 <= base_lid and base_lid + nlids <= min(cfg.lft_entries, 0xC000)):
        raise ValueError(f"{plan}.base_lid: LIDs {base_lid}..{base_lid + nlids - 1} "
                         f"must be unicast LIDs inside the LFT ({cfg.lft_entries} entries)")
    if not 1 <= len_min <= cfg.mtu // 4:
        raise ValueError(f"{plan}.len_min: {len_min} words, must be in 1..{cfg.mtu // 4}")


def pair(p: int) -> int:
    return p ^ 1


def loopback_writes(cfg: SwitchConfig, plan: LoopbackPlan) -> list[tuple[int, int]]:
    """The register writes that set the switch up: LFT entries of the endpoint LIDs (SL2VL
    and VLArb keep their reset values: every SL on VL 0, every data VL weighted alike), then
    every port Armed, then Active (IBA §14.2.5.6: Init -> Armed -> Active)."""
    rm = build_regmap(cfg)
    words: dict[int, int] = {}
    for p in range(cfg.ports):
        lid = plan.base_lid + p
        w = words.setdefault(lid // 4, 0xFFFFFFFF)
        words[lid // 4] = (w & ~(0xFF << (8 * (lid % 4)))) | (iba_port(p) << (8 * (lid % 4)))
    out = [(rm["LFT"].addr(i), w) for i, w in sorted(words.items())]
    for st in (PortState.ARMED, PortState.ACTIVE):
        out += [(rm["PORT_STATE"].addr(p), int(st)) for p in range(cfg.ports)]
    return out


def _ep_signature():
    return wiring.Signature({"sent_pkts": Out(32), "gen_done": Out(1), "state": Out(3),
                             "rx_fault": Out(1),
                             "chk": Out(wiring.Signature({n: Out(48 if n == "lat_sum" else 32)
                                                          for n in CHECK_COUNTERS}))})


class Loopback(wiring.Component):
    def __init__(self, cfg: SwitchConfig, plan: LoopbackPlan | None = None):
        self.cfg = cfg
        self.plan = plan or LoopbackPlan()
        self.plan.check(cfg)
        super().__init__({
            "run": In(1),
            "cfg_done": Out(1), "cfg_errors": Out(16), "now": Out(32),
            "ep": Out(_ep_signature()).array(cfg.ports),
            "pass_": Out(1), "fail": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg, plan, n = self.cfg, self.plan, self.cfg.ports
        m.submodules.switch = sw = IBSwitch(cfg)
        m.submodules.writer = wr = AxilWriter(loopback_writes(cfg, plan))
        for name, member in members(Sig(axil())).items():
            mine = getattr(wr, name[len("s_axil_"):])
            if member.flow == wiring.Flow.In:
                m.d.comb += getattr(sw, name).eq(mine)
            else:
                m.d.comb += mine.eq(getattr(sw, name))
        m.d.comb += [self.cfg_done.eq(wr.done), self.cfg_errors.eq(wr.errors)]
        m.d.sync += self.now.eq(self.now + 1)

        faults, passed = [], []
        for p in range(n):
            ep = Endpoint(cfg, max_dests=1, max_srcs=1, check_icrc=self.plan.check_icrc)
            m.submodules[f"ep{p}"] = ep
            # endpoint -> switch port p and back; the PHY is always up and always ready
            srx, stx = sw.rx[p], sw.tx[p]
            for k in ("valid", *LINK_FLIT):
                m.d.comb += [getattr(srx, k).eq(getattr(ep.tx, k)), getattr(ep.rx, k).eq(getattr(stx, k))]
            m.d.comb += [srx.up.eq(1), ep.rx.up.eq(1), ep.tx.ready.eq(1), stx.ready.eq(1)]
            g = ep.gen
            m.d.comb += [
                ep.now.eq(self.now), ep.auto_active.eq(1), ep.mgmt.req.eq(0),
                g.en.eq(self.run & wr.done), g.slid.eq(plan.base_lid + p), g.dlid_base.eq(plan.base_lid + pair(p)),
                g.ndest.eq(1), g.sl.eq(plan.sl), g.vl.eq(0), g.qp.eq(plan.qp), g.len_min.eq(plan.len_min),
                g.len_mask.eq(plan.len_mask), g.count.eq(plan.count), g.gap.eq(plan.gap),
                ep.chk.src_base.eq(plan.base_lid + pair(p)), ep.chk.len_min.eq(plan.len_min),
                ep.chk.len_mask.eq(plan.len_mask),
            ]
            o = self.ep[p]
            m.d.comb += [o.sent_pkts.eq(ep.sent_pkts), o.gen_done.eq(ep.gen_done), o.state.eq(ep.state),
                         o.rx_fault.eq(Cat(getattr(ep.crx, c) != 0
                                           for c in RX_ERROR_COUNTERS + RX_REMOTE_PHYS_COUNTERS).any())]
            m.d.comb += [getattr(o.chk, k).eq(getattr(ep.counters, k)) for k in CHECK_COUNTERS]
            c = ep.counters
            faults.append((c.rcv_errors != 0) | (c.rcv_bad != 0) | (c.seq_gap != 0) | o.rx_fault)
            passed.append(c.rcv_good >= plan.expect)
        m.d.comb += [self.fail.eq(Cat(faults).any() | (wr.errors != 0)),
                     self.pass_.eq(Cat(passed).all() & ~self.fail)]
        return m
