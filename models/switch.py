"""Golden model of the whole switch (hw/top/switch.py): the block models composed exactly as
the connection table contracts/ib_switch.py wires the RTL's blocks (models.compose.NetlistModel),
and nothing else. Every block declares its ports (its spec), so a misspelt wire is an error at
construction.

Top-level ports as in the RTL: rx__<p>__*, tx__<p>__*, s_axil_*, m_axis_mgmt_*, s_axis_mgmt_*.
"""
from __future__ import annotations

from contracts import ib_switch
from contracts.config import SwitchConfig
from models.blocks import MODELS
from models.compose import NetlistModel

__all__ = ["SwitchModel", "idle_inputs", "switch_ports"]


def switch_ports(cfg: SwitchConfig):
    """(inputs, outputs, qualifiers) of `ib_switch` (contracts.ib_switch.top)."""
    return ib_switch.top(cfg).ports()


def idle_inputs(cfg: SwitchConfig) -> dict:
    """Top-level inputs of an idle switch: every PHY up, nothing sent, no AXI transfer."""
    return ib_switch.top(cfg).idle() | {f"rx__{p}__up": 1 for p in range(cfg.ports)}


class SwitchModel(NetlistModel):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(ib_switch.netlist(cfg), MODELS)
