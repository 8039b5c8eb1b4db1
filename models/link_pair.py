"""Model of the back-to-back test fixture hw/link/link_pair.py: two link ports and a wire of
`delay` cycles (an input, at most max_delay), per-flit corruption masks and a common link-up
level."""
from __future__ import annotations

from collections import deque

from contracts.config import SwitchConfig
from contracts.streams import LINK_FLIT
from models.link_port import LinkPortModel

__all__ = ["LinkPairModel",]

_FIELDS = ["valid", *LINK_FLIT]


class _Wire:
    def __init__(self, max_delay: int):
        self.q = deque(({k: 0 for k in _FIELDS} for _ in range(max_delay + 1)), maxlen=max_delay + 1)

    def step(self, flit: dict, delay: int) -> dict:
        """Flit entering now; returns the one that entered `delay` cycles ago (0: this one)."""
        self.q.append(flit)
        return self.q[-1 - delay]


class LinkPairModel:
    def __init__(self, cfg: SwitchConfig, max_delay: int = 64):
        self.a = LinkPortModel(cfg, "a__")
        self.b = LinkPortModel(cfg, "b__")
        self.a2b = _Wire(max_delay)
        self.b2a = _Wire(max_delay)

    @staticmethod
    def _enter(tx: dict, ready: int, flip: int) -> dict:
        f = dict(tx)
        f["valid"] = int(tx["valid"] and ready)
        f["data"] = tx["data"] ^ flip
        return f

    def step(self, inp: dict) -> dict:
        ta, tb = self.a.tx_now(), self.b.tx_now()
        to_b = self.a2b.step(self._enter(ta, inp["a_ready"], inp["a2b_flip"]), inp["delay"])
        to_a = self.b2a.step(self._enter(tb, inp["b_ready"], inp["b2a_flip"]), inp["delay"])
        rx_a = {f"rx__{k}": v for k, v in to_a.items()} | {"rx__up": inp["link_up"]}
        rx_b = {f"rx__{k}": v for k, v in to_b.items()} | {"rx__up": inp["link_up"]}
        oa = self.a.step(inp, rx_a, inp["a_ready"])
        ob = self.b.step(inp, rx_b, inp["b_ready"])
        return {k: v for k, v in (oa | ob).items() if not k.startswith("tx__")}
