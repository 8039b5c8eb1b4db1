"""Golden model of the crossbar (hw/switch/crossbar.py), from docs/switch-core.md: each
output shows the one flit waiting for it at some input and that input's flit is taken when
the output takes it; a flit going nowhere (void) is taken at once; an input may begin a
packet only while the output it is for is not holding back another input's flit. Two
inputs offering a flit to the same output break the switch's contract (the allocator gives
an output to one input at a time): the model raises."""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.streams import FLIT

__all__ = ["CrossbarModel",]

_FL = list(FLIT)


class CrossbarModel:
    peek_by_copy = True                 # its state copies faster than its cycle evaluates (models.compose)
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg

    def step(self, inp: dict) -> dict:
        n = self.cfg.ports
        waiting_for = {}                         # output -> the input whose flit is for it
        for i in range(n):
            if inp[f"r__{i}__valid"] and not inp[f"r__{i}__void"]:
                o = inp[f"r__{i}__port"]
                if o in waiting_for:
                    raise AssertionError(f"CrossbarModel: inputs {waiting_for[o]} and {i} both hold a flit "
                                         f"for output {o}")
                waiting_for[o] = i
        out = {}
        for o in range(n):
            i = waiting_for.get(o)
            out[f"out__{o}__valid"] = int(i is not None)
            out.update({f"out__{o}__{k}": inp[f"r__{i}__{k}"] if i is not None else 0 for k in _FL + ["vl"]})
        holding = {o for o, i in waiting_for.items() if not inp[f"out__{o}__ready"]}
        for i in range(n):
            out[f"r__{i}__ready"] = int(bool(inp[f"r__{i}__void"] or inp[f"out__{inp[f'r__{i}__port']}__ready"]))
            out[f"first_ok__{i}"] = int(inp[f"issue_port__{i}"] not in holding)
        return out

    def peek(self, inp: dict) -> dict:
        return self.step(inp)
