"""`ib_switch`: the N-port switch datapath (docs/switch-core.md; port names: docs/interfaces.md).

The top only connects components: its ports, its blocks and every wire between them are the
connection table contracts/ib_switch.py, which the composed golden model (models/switch.py)
reads too. Each block has its own model and lock-step test; what a block is, and what the
optional features add (SwitchConfig.rx_register, .lifetimes, .failover, .adaptive, .cc), is
written there.

Ports: clk, rst; rx__<p>__*, tx__<p>__* (link side); s_axil_* (registers); m_axis_mgmt_*,
s_axis_mgmt_* (the management processor's packets).
"""
from amaranth.hdl import Cat as HCat
from amaranth.hdl import Module, Value
from amaranth.lib import wiring

from contracts import ib_switch
from contracts.config import SwitchConfig
from contracts.netlist import Cat, Netlist, Slice
from hw.blocks import RTL
from hw.common.ports import signature

__all__ = ["IBSwitch", "build"]


def build(m: Module, top, net: Netlist):
    """Instantiate the blocks of `net` as submodules of `m` and assign every wire; `top` is the
    component whose ports are the table's block "top"."""
    flat = {"top": _flat(top)}
    for name, (kind, params) in net.blocks.items():
        comp = RTL[kind](**params)
        m.submodules[name] = comp
        flat[name] = _flat(comp)

    def value(src):
        if isinstance(src, int):
            return src
        if isinstance(src, Cat):
            return HCat(*(value(p) for p in src.parts))
        if isinstance(src, Slice):
            return value(src.src)[:src.width]
        blk, _, port = src.partition(".")
        return flat[blk][port]

    for dst, src in net.wires.items():
        m.d.comb += value(dst).eq(value(src))


def _flat(comp) -> dict:
    return {"__".join(str(p) for p in path): Value.cast(v) for path, _, v in comp.signature.flatten(comp)}


class IBSwitch(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(ib_switch.top(cfg)))

    def elaborate(self, platform):
        m = Module()
        build(m, self, ib_switch.netlist(self.cfg))
        return m
