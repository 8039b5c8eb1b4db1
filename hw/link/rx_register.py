"""A register stage on a link's receive side (SwitchConfig.rx_register): every member of `i`
(the PHY's flit and `up`) appears on `o` one cycle later; out of reset `o` is an idle link that
is down (every member 0). The switch puts one in front of each port's link layer so that no
logic depends combinationally on the PHY's inputs (in a fabric of Verilated switches, 1.7x the
cycles/s: docs/fabric.md, "The RTL fabric's simulation speed").

  i  In   contracts.streams.link_rx
  o  Out  the same members, registered
"""
from amaranth.hdl import Module
from amaranth.lib import wiring

from contracts import link as specs
from contracts.config import SwitchConfig
from hw.common.ports import signature

__all__ = ["RxRegister"]


class RxRegister(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(specs.link_register(cfg)))

    def elaborate(self, platform):
        m = Module()
        ins = {path[1:]: v for path, _, v in self.signature.flatten(self) if path[0] == "i"}
        outs = {path[1:]: v for path, _, v in self.signature.flatten(self) if path[0] == "o"}
        for k, v in outs.items():
            m.d.sync += v.eq(ins[k])
        return m
