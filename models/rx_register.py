"""Golden model of the link receive register stage (hw/link/rx_register.py): what went in on
`i` comes out on `o` a cycle later; out of reset an idle link that is down (all zeros)."""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.link import link_register

__all__ = ["RxRegisterModel"]


class RxRegisterModel:
    def __init__(self, cfg: SwitchConfig):
        ins, outs, _ = link_register(cfg).ports()
        self.names = [k[len("i__"):] for k in ins]
        self.held = {f"o__{k}": 0 for k in self.names}

    def step(self, inp: dict) -> dict:
        out, self.held = self.held, {f"o__{k}": inp[f"i__{k}"] for k in self.names}
        return out
