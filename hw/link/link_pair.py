"""Test top: two link ports back to back through a wire model (RTL, for lock-step tests and
benchmarks; not part of the switch).

    A.tx --[phy ready a_ready]--[xor a2b_flip]--[delay d cycles]--> B.rx
    B.tx --[phy ready b_ready]--[xor b2a_flip]--[delay d cycles]--> A.rx

`link_up` drives both receivers' `up`. A flit enters the wire when its tx valid and the
PHY's ready are both high; `*_flip` XORs a mask into its data (corruption: bad VCRC on data,
bad LPCRC on link packets). The delay is an input, `delay` 0..max_delay cycles (0 = the flit
reaches the far receiver in the cycle it is sent; max_delay an elaboration parameter, 64 by
default), so one build serves every wire length: each wire is a shift register of max_delay
stages and the far receiver takes the stage `delay` names.
"""
from amaranth.hdl import Array, Module, Signal
from amaranth.lib import wiring

from contracts import link as specs
from contracts.config import SwitchConfig
from contracts.streams import LINK_FLIT
from hw.common.ports import signature
from hw.common.stream import forward
from hw.link.link_port import LinkPort

__all__ = ["LinkPair"]

_FIELDS = ["valid", *LINK_FLIT]


class LinkPair(wiring.Component):
    def __init__(self, cfg: SwitchConfig, max_delay: int = 64):
        if not 0 <= max_delay <= 256:
            raise ValueError(f"LinkPair: max_delay must be 0..256 cycles, got {max_delay}")
        self.cfg, self.max_delay = cfg, max_delay
        super().__init__(signature(specs.link_pair(cfg, max_delay)))

    def _wire(self, m, name, src, ready, flip, dst):
        stage = {k: getattr(src, k) for k in _FIELDS}
        enter = {}
        for k in _FIELDS:
            s = Signal.like(stage[k], name=f"{name}_in_{k}")
            enter[k] = s
        m.d.comb += [
            enter["valid"].eq(src.valid & ready),
            enter["data"].eq(src.data ^ flip),
            *[enter[k].eq(stage[k]) for k in _FIELDS if k not in ("valid", "data")],
            src.ready.eq(ready),
        ]
        stages = [enter]
        for d in range(self.max_delay):
            nxt = {k: Signal.like(stages[-1][k], name=f"{name}_d{d}_{k}") for k in _FIELDS}
            m.d.sync += [nxt[k].eq(stages[-1][k]) for k in _FIELDS]
            stages.append(nxt)
        for k in _FIELDS:
            m.d.comb += getattr(dst, k).eq(Array(s[k] for s in stages)[self.delay])
        m.d.comb += dst.up.eq(self.link_up)

    def elaborate(self, platform):
        m = Module()
        m.submodules.port_a = pa = LinkPort(self.cfg)
        m.submodules.port_b = pb = LinkPort(self.cfg)
        forward(m, self.a, pa.host)
        forward(m, self.b, pb.host)
        self._wire(m, "a2b", pa.tx, self.a_ready, self.a2b_flip, pb.rx)
        self._wire(m, "b2a", pb.tx, self.b_ready, self.b2a_flip, pa.rx)
        return m
