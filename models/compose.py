"""Composing block models into a larger cycle-accurate model.

Each block model is a Mealy machine: `step(inputs)` returns the outputs of the cycle and
advances the state. Inside a composition, one block's inputs are other blocks' outputs of
the same cycle (data flows forward while `ready` flows back), so the blocks cannot simply be
stepped in a fixed order. `Composite` settles the cycle first: it evaluates every block on
a copy of its state (`peek`), feeds the outputs to the connected inputs, and repeats until
nothing changes (the hardware has no combinational loops, so this converges in at most the
depth of the combinational paths); then it steps every block once with the settled inputs.

    comp = Composite({"voq": VOQModel(cfg), "eg": EgressModel(cfg)},
                     wires={("eg", "i__valid"): ("voq", "r__valid"), ...})
    outs = comp.step(top_inputs)     # {"voq": {...}, "eg": {...}}
"""
from __future__ import annotations

import copy

__all__ = ["Composite", "peek"]


def peek(model, inputs: dict) -> dict:
    """The outputs `model` would show this cycle for `inputs`, without advancing it."""
    if hasattr(model, "peek"):
        return model.peek(inputs)
    return copy.deepcopy(model).step(inputs)


class Composite:
    def __init__(self, blocks: dict, wires: dict, *, max_iterations: int = 32):
        """blocks: name -> model; wires: (block, input) -> (block, output) or a callable
        taking the dict of all block outputs and returning the value."""
        self.blocks = blocks
        self.wires = wires
        self.max_iterations = max_iterations
        self.iterations = 0
        self._wires_of: dict = {name: [] for name in blocks}       # block -> [(input, source)]
        for (blk, port), src in wires.items():
            self._wires_of.setdefault(blk, []).append((port, src))

    def _inputs(self, name, top: dict, outs: dict) -> dict:
        inp = dict(top.get(name, {}))
        for port, src in self._wires_of[name]:
            if callable(src):
                inp[port] = src(outs)
            else:
                inp[port] = outs.get(src[0], {}).get(src[1], 0)
        return inp

    def step(self, top: dict) -> dict:
        """top: block -> its inputs that come from outside. Returns block -> outputs."""
        outs: dict = {}
        seen: dict = {}                      # block -> (inputs, outputs) of its last peek
        for it in range(self.max_iterations):
            new = {}
            for name, m in self.blocks.items():
                inp = self._inputs(name, top, outs)
                last = seen.get(name)
                if last is not None and last[0] == inp:
                    new[name] = last[1]      # same inputs: same outputs
                else:
                    new[name] = peek(m, inp)
                    seen[name] = (inp, new[name])
            if new == outs:
                self.iterations = it
                break
            outs = new
        else:
            raise RuntimeError(f"Composite: no fixed point after {self.max_iterations} iterations "
                               "(a combinational loop between the blocks?)")
        final = {name: m.step(self._inputs(name, top, outs)) for name, m in self.blocks.items()}
        if final != outs:
            raise AssertionError("Composite: a block's step disagreed with its peek")
        return final
