"""Composing block models into a larger cycle-accurate model.

Each block model is a Mealy machine: `step(inputs)` returns the outputs of the cycle and
advances the state. Inside a composition, one block's inputs are other blocks' outputs of
the same cycle (data flows forward while `ready` flows back), so the blocks cannot simply be
stepped in a fixed order. `Composite` settles the cycle first: it evaluates every block on
a copy of its state (`peek`), feeds the outputs to the connected inputs at once (the blocks
after it in the same pass see them), and repeats the pass until nothing changes (the
hardware has no combinational loops, so this converges in at most the depth of the
combinational paths); then it steps every block once with the settled inputs. Two
shortcuts keep a large composition fast: the settling starts from the last cycle's outputs
(a ready flowing back mostly keeps its value, so the blocks before it need no second look),
and a block whose step left its state as it was (compared with its stepped copy) is
quiescent for those inputs: while they last it is neither copied nor stepped.

    comp = Composite({"voq": VOQModel(cfg), "eg": EgressModel(cfg)},
                     wires={("eg", "i__valid"): ("voq", "r__valid"), ...},
                     ports={"voq": voq(cfg).ports()[:2], "eg": egress(cfg).ports()[:2]})   # contracts.switch
    outs = comp.step(top_inputs)     # {"voq": {...}, "eg": {...}}

`ports` declares each block's (inputs, outputs). With it, a wire into an input a block does
not have, or from an output its source does not have, is a KeyError at construction; a top
input a block does not have, an input left undriven, and a block whose outputs differ from
its declaration are errors at the first step. (Without declarations a misspelt source reads
as 0 for ever: compositions in this project declare.)
"""
from __future__ import annotations

import copy
import enum
from collections import deque

__all__ = ["Composite", "peek", "state_copy"]


_ATOMIC_TYPES = frozenset({int, float, str, bytes, bool, type(None), frozenset, type, range})
_ATOMIC = (*_ATOMIC_TYPES, enum.Enum)             # with their subclasses (an enum member)


_QUIET = object()                            # a block skipped this cycle (Composite._quiet)


def state_copy(x, memo: dict | None = None):
    """A copy of a model's state for a throw-away step: containers (list, dict, deque, set,
    tuple, bytearray) and plain objects are copied recursively, immutable values and
    contract objects (contracts/: a config, the register map) shared; anything else goes to
    copy.deepcopy. As deepcopy, it keeps shared references shared (memo), at a fraction of
    deepcopy's cost on the many small containers a model holds."""
    t = type(x)
    if t in _ATOMIC_TYPES:
        return x
    if memo is None:
        memo = {}
    k = id(x)
    if k in memo:
        return memo[k]
    if t is list:
        y = memo[k] = []
        y.extend(e if type(e) in _ATOMIC_TYPES else state_copy(e, memo) for e in x)
    elif t is dict:
        y = memo[k] = {}
        for a, b in x.items():
            y[a] = b if type(b) in _ATOMIC_TYPES else state_copy(b, memo)
    elif t is tuple:
        y = memo[k] = tuple(e if type(e) in _ATOMIC_TYPES else state_copy(e, memo) for e in x)
    elif t is bytearray:
        y = memo[k] = bytearray(x)
    elif t is deque:
        y = memo[k] = deque((state_copy(e, memo) for e in x), x.maxlen)
    elif t is set:
        y = memo[k] = set(x)
    elif isinstance(x, _ATOMIC):                 # an enum member, a subclass of an immutable type
        return x
    elif t.__module__.startswith("contracts."):
        y = memo[k] = x                          # a contract (a config, the register map): data no model changes
    elif hasattr(x, "__dict__") and not hasattr(x, "__slots__") and t.__module__.startswith("models") \
            and not callable(x):
        y = memo[k] = object.__new__(t)
        y.__dict__.update({a: (b if type(b) in _ATOMIC_TYPES else state_copy(b, memo))
                           for a, b in x.__dict__.items()})
    else:
        y = memo[k] = copy.deepcopy(x, memo)
    return y


def peek(model, inputs: dict) -> dict:
    """The outputs `model` would show this cycle for `inputs`, without advancing it.
    (Composite itself peeks a block without a `peek` method, or whose `peek_by_copy` is
    True, on a copy of its state that it keeps: after the cycle settles the copy's state is
    the block's next state, one evaluation instead of two. A block sets `peek_by_copy` when
    copying its state costs less than evaluating its cycle.)"""
    if hasattr(model, "peek"):
        return model.peek(inputs)
    return state_copy(model).step(inputs)


class Composite:
    def __init__(self, blocks: dict, wires: dict, *, ports: dict | None = None, max_iterations: int = 32):
        """blocks: name -> model; wires: (block, input) -> (block, output) or a callable
        taking the dict of all block outputs and returning the value (with a `reads`
        attribute, the names of the blocks it reads: it is then re-evaluated only when
        one of them changes); ports: name -> (inputs, outputs) of each block (see the
        module docstring)."""
        self.blocks = blocks
        self.wires = wires
        self.max_iterations = max_iterations
        self.iterations = 0
        self.ports = None if ports is None else {b: (set(i), set(o)) for b, (i, o) in ports.items()}
        self._checked = False
        self._wires_of: dict = {name: [] for name in blocks}       # block -> [(input, source)]
        self._gather: dict = {}                   # block -> its generated input gatherer
        self._last: dict = {}                    # block -> its outputs in the last cycle
        self._quiet: dict = {}                   # block -> (inputs, outputs) that leave its state as it is
        for (blk, port), src in wires.items():
            if blk not in blocks:
                raise KeyError(f"Composite: wire into {blk}.{port}: no block {blk!r}")
            if not callable(src) and src[0] not in blocks:
                raise KeyError(f"Composite: wire {blk}.{port} <- {src[0]}.{src[1]}: no block {src[0]!r}")
            self._wires_of.setdefault(blk, []).append((port, src))
        self.order = self._dataflow_order()
        # block -> the blocks that read one of its outputs (a function wire reads them all)
        # a function wire reads every block's outputs, unless it names the blocks it reads
        # (its `reads` attribute)
        calls = {name for name in blocks
                 if any(callable(src) and not hasattr(src, "reads") for _p, src in self._wires_of[name])}
        self._readers = {name: set(calls) for name in blocks}
        for name in blocks:
            for _p, src in self._wires_of[name]:
                if not callable(src):
                    self._readers[src[0]].add(name)
                else:
                    for r in getattr(src, "reads", ()):
                        self._readers[r].add(name)
        if self.ports is not None:
            undeclared = set(blocks) - set(self.ports)
            if undeclared:
                raise KeyError(f"Composite: blocks without declared ports: {sorted(undeclared)}")
            for (blk, port), src in wires.items():
                if port not in self.ports[blk][0]:
                    raise KeyError(f"Composite: wire into {blk}.{port}: {blk} has no such input")
                if not callable(src) and src[1] not in self.ports[src[0]][1]:
                    raise KeyError(f"Composite: wire {blk}.{port} <- {src[0]}.{src[1]}: "
                                   f"{src[0]} has no such output")

    def changed(self, name: str):
        """Block `name`'s state was changed from outside (a testbench's backdoor write): it is
        no longer known to be quiescent."""
        self._quiet.pop(name, None)

    def _dataflow_order(self) -> list:
        """The blocks in the order data flows through the wires (a block after the blocks it
        reads), cycles (ready flowing back) broken at the block with the fewest unplaced
        sources: the settling passes then converge in few passes. Only speed depends on it."""
        srcs = {name: {b for _p, src in self._wires_of[name]
                       for b in (getattr(src, "reads", ()) if callable(src) else (src[0],)) if b != name}
                for name in self.blocks}
        order, placed = [], set()
        while len(order) < len(self.blocks):
            left = [b for b in self.blocks if b not in placed]
            ready = [b for b in left if srcs[b] <= placed]
            pick = ready[0] if ready else min(left, key=lambda b: len(srcs[b] - placed))
            order.append(pick)
            placed.add(pick)
        return order

    def _check_inputs(self, top: dict):
        """Top inputs exist and every declared input is driven (before the first step)."""
        for blk, (ins, _outs) in self.ports.items():
            given = set(top.get(blk, {}))
            extra = given - ins
            if extra:
                raise KeyError(f"Composite: top input {blk}.{sorted(extra)[0]}: {blk} has no such input")
            driven = given | {p for p, _s in self._wires_of[blk]}
            if ins - driven:
                raise KeyError(f"Composite: {blk}.{sorted(ins - driven)[0]} is driven by nothing")

    def _check_outputs(self, final: dict):
        for blk, (_ins, outs) in self.ports.items():
            got = set(final[blk])
            if got != outs:
                odd = sorted(got ^ outs)[0]
                raise KeyError(f"Composite: {blk} {'shows undeclared' if odd in got else 'lacks declared'} "
                               f"output {odd}")
        self._checked = True

    def _gatherer(self, name):
        """The function that builds `name`'s inputs from the top inputs and the outputs of
        the cycle so far, generated once per block (each source block's outputs looked up
        once, then one store per wire: the costliest part of a settling pass when written
        as a loop over the wires)."""
        env: dict = {"empty": {}}
        body = [f"    inp = dict(top.get({name!r}, empty))"]
        local: dict = {}
        for k, (port, src) in enumerate(self._wires_of[name]):
            if callable(src):
                env[f"f{k}"] = src
                body.append(f"    inp[{port!r}] = f{k}(outs)")
                continue
            if src[0] not in local:
                local[src[0]] = v = f"o{len(local)}"
                body.append(f"    {v} = outs.get({src[0]!r}, empty)")
            body.append(f"    inp[{port!r}] = {local[src[0]]}.get({src[1]!r}, 0)")
        code = "def gather(top, outs):\n" + "\n".join(body) + "\n    return inp\n"
        exec(compile(code, f"<Composite inputs of {name}>", "exec"), env)
        return env["gather"]

    def _inputs(self, name, top: dict, outs: dict) -> dict:
        g = self._gather.get(name)
        if g is None:
            g = self._gather[name] = self._gatherer(name)
        return g(top, outs)

    def step(self, top: dict) -> dict:
        """top: block -> its inputs that come from outside. Returns block -> outputs."""
        if self.ports is not None and not self._checked:
            self._check_inputs(top)
        # warm start: the outputs of the last cycle stand in for those not evaluated yet in
        # this one (a ready flowing back mostly keeps its value from cycle to cycle, so the
        # blocks before it need no second look); every block is still evaluated once, and
        # a block whose outputs differ from the stand-in sends its readers round again
        outs: dict = dict(self._last)
        seen: dict = {}                      # block -> its last peek's (inputs, outputs, stepped copy or None)
        dirty = set(self.blocks)             # blocks whose inputs may have changed
        for it in range(self.max_iterations):
            # Gauss-Seidel: a block's new outputs are seen by the blocks after it in the same
            # pass, so forward paths settle in one pass and each backward one in another; a
            # block none of whose sources changed is not looked at again
            for name in self.order:
                if name not in dirty:
                    continue
                dirty.discard(name)
                inp = self._inputs(name, top, outs)
                last = seen.get(name)
                if last is not None and last[0] == inp:
                    continue                 # same inputs: same outputs, already in `outs`
                m = self.blocks[name]
                quiet = self._quiet.get(name)
                if quiet is not None and quiet[0] == inp:
                    # quiescent: last cycle these inputs left its state as it was, so they
                    # do again (a step is a function of state and inputs): same outputs,
                    # nothing to step
                    o = quiet[1]
                    seen[name] = (inp, o, _QUIET)
                    if outs.get(name) != o:
                        outs[name] = o
                        dirty |= self._readers[name]
                    continue
                try:
                    if hasattr(m, "peek") and not getattr(m, "peek_by_copy", False):
                        o, ahead = m.peek(inp), None
                    else:                    # a stepped copy, kept: it is the next state
                        ahead = state_copy(m)
                        o = ahead.step(inp)
                except (ValueError, AssertionError):
                    # a block's contract check fired on inputs that have not settled yet
                    # (e.g. a read start computed from another block's stale output): keep
                    # its last outputs and settle on; the final step checks the settled
                    # inputs and raises if the contract really is broken
                    seen.pop(name, None)
                    continue
                seen[name] = (inp, o, ahead)
                if outs.get(name) != o:
                    outs[name] = o
                    dirty |= self._readers[name]
            if not dirty:
                self.iterations = it
                break
        else:
            raise RuntimeError(f"Composite: no fixed point after {self.max_iterations} iterations "
                               "(a combinational loop between the blocks?)")
        # settled: every block's last peek saw its inputs as they are now; a block peeked on
        # a stepped copy of its state takes that copy's state, the others step
        final = {}
        settled = {}
        for name, m in self.blocks.items():
            if name not in seen:
                settled[name] = inp = self._inputs(name, top, outs)
                final[name] = m.step(inp)
                continue
            inp, o, ahead = seen[name]
            settled[name] = inp
            if ahead is None:
                final[name] = m.step(inp)
            elif ahead is _QUIET:
                final[name] = o
            else:
                # a block whose step left its state as it was is quiescent for these inputs
                if m.__dict__ == ahead.__dict__:
                    self._quiet[name] = (inp, o)
                else:
                    self._quiet.pop(name, None)
                    m.__dict__ = ahead.__dict__
                final[name] = o
        if final != outs:
            raise AssertionError("Composite: a block's step disagreed with its peek")
        # each block's inputs and outputs of the cycle, for whoever observes the composition
        # (verif/ib_funcov.py samples functional coverage from them)
        self.last_inputs, self.last_outputs = settled, final
        self._last = final
        if self.ports is not None and not self._checked:
            self._check_outputs(final)
        return final


class NetlistModel:
    """The golden model of a top built from a connection table (contracts/netlist.py): each
    block's model from `registry` (kind -> model class, taking the table's params), composed
    with Composite and wired exactly as the table says; the top's own inputs and outputs by
    their flattened names. The RTL top (hw/top/switch.py `build`) reads the same table."""

    def __init__(self, net, registry: dict):
        from contracts.netlist import Cat, Slice
        self._cat, self._slice = Cat, Slice
        self.net = net
        blocks = {name: registry[kind](**params) for name, (kind, params) in net.blocks.items()}
        ports = {name: net.specs[name].ports()[:2] for name in blocks}
        self.top_in: dict = {}                   # block -> {its input: top input}
        self.top_out: dict = {}                  # top output -> source
        self.consts: dict = {}                   # block -> {its input: a constant}
        self._inp: dict = {}
        wires = {}
        for dst, src in net.wires.items():
            blk, _, port = dst.partition(".")
            if blk == "top":
                self.top_out[port] = src
            elif isinstance(src, str) and src.startswith("top."):
                self.top_in.setdefault(blk, {})[port] = src[len("top."):]
            elif isinstance(src, str):
                wires[(blk, port)] = tuple(src.split(".", 1))
            elif isinstance(src, int):                           # a constant: a fixed input
                self.consts.setdefault(blk, {})[port] = src
            else:
                wires[(blk, port)] = self._function(src)
        self.blocks = blocks
        self.comp = Composite(blocks, wires, ports=ports)
        self.inputs = [leaf.name for leaf in net.top.leaves() if leaf.flow == "in"]

    def _function(self, src):
        """A constant, a concatenation or a slice of outputs, as a Composite function wire."""
        if isinstance(src, int):
            return lambda outs: src
        parts = []                              # (block, "top" or None for a constant; port or value; shift, mask)
        shift = 0
        for p in (src.parts if isinstance(src, self._cat) else (src,)):
            width = self.net.width(p)
            if isinstance(p, int):
                parts.append((None, p, shift, (1 << width) - 1))
            else:
                ref = p.src if isinstance(p, self._slice) else p
                blk, _, port = ref.partition(".")
                parts.append((blk, port, shift, (1 << width) - 1))
            shift += width
        inp = self._inp

        def value(outs):
            v = 0
            for blk, port, sh, mask in parts:
                x = port if blk is None else inp[port] if blk == "top" else outs.get(blk, {}).get(port, 0)
                v |= (x & mask) << sh
            return v
        value.reads = {blk for blk, _p, _s, _m in parts if blk not in (None, "top")}
        return value

    def step(self, inp: dict) -> dict:
        self._inp.clear()
        self._inp.update(inp)
        top = {blk: dict(c) for blk, c in self.consts.items()}
        for blk, m in self.top_in.items():
            top.setdefault(blk, {}).update({port: inp[name] for port, name in m.items()})
        o = self.comp.step(top)
        out = {}
        for name, src in self.top_out.items():
            if isinstance(src, str):
                blk, _, port = src.partition(".")
                out[name] = inp[port] if blk == "top" else o[blk][port]
            else:
                out[name] = self._function(src)(o)
        return out
