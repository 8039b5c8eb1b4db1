"""Amaranth signatures from port specifications (contracts/ports.py).

    class VOQBuffer(wiring.Component):
        def __init__(self, cfg):
            super().__init__(signature(contracts.blocks.voq(cfg)))

Model-only members (a leading underscore) are left out; a `Layout` becomes the Amaranth
layout registered under its name in LAYOUTS (checked against the spec's width).
"""
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from contracts.ports import Layout, Sig
from hw.common.layouts import LRHLayout

__all__ = ["signature", "members", "LAYOUTS"]

LAYOUTS = {"LRH": LRHLayout}


def _shape(shape):
    if isinstance(shape, Layout):
        cls = LAYOUTS.get(shape.name)
        if cls is None:
            cls = data.StructLayout(dict(shape.fields))
        got = data.Layout.cast(cls).size
        if got != shape.width:
            raise ValueError(f"layout {shape.name}: the RTL's is {got} bits, the spec's {shape.width}")
        return cls
    if isinstance(shape, Sig):
        return wiring.Signature(members(shape))
    return shape


def members(sig: Sig) -> dict:
    """The Amaranth members of `sig` (In/Out as the spec says), model-only ones left out."""
    out = {}
    for name, m in sig.members.items():
        if m.flow == "model":
            continue
        shape = _shape(m.shape)
        kw = {"init": m.init} if m.init and not isinstance(m.shape, Sig) else {}
        mem = (In if m.flow == "in" else Out)(shape, **kw)
        out[name] = mem.array(*m.dims) if m.dims else mem
    return out


def signature(spec: Sig) -> wiring.Signature:
    return wiring.Signature(members(spec))
