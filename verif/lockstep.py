"""Lock-step checking: the DUT and its golden model get the same inputs every cycle, and
every output is compared every cycle.

`LockstepCore` is simulator-agnostic (used by the cocotb harness below and by Amaranth-
simulator unit tests). The first divergence raises `LockstepDivergence`, whose message
names the cycle, the signal, expected and actual values, the VCD path, and shows the last
cycles of inputs and outputs as a table (DUT vs model), so a failure reads in the terminal.
A JSON copy goes to $LOCKSTEP_REPORT when set, which the pytest runner uses to print the
VCD window around the divergence.

Qualified outputs (payload fields of a stream) are compared only in cycles where their
qualifier (the stream's `valid`) is 1 in the model; the qualifier itself is compared
every cycle.
"""
from __future__ import annotations

import json
import os
from collections import deque
from collections.abc import Callable, Iterable

__all__ = ["LockstepDivergence", "LockstepCore", "cocotb_lockstep", "fmt", "visible"]


def visible(outputs) -> list[str]:
    """A model's outputs that the DUT has: a leading underscore marks a model-only output (a
    qualifier telling when another output matters), which nothing is compared against."""
    return [o for o in outputs if not o.startswith("_")]


def fmt(v) -> str:
    if v is None:
        return "-"
    if v == -1:
        return "X"
    return str(v) if v < 10 else hex(v)


class LockstepDivergence(AssertionError):
    def __init__(self, cycle, signal, expected, actual, vcd, table, sim_time=None):
        self.cycle, self.signal, self.expected, self.actual = cycle, signal, expected, actual
        self.vcd, self.table, self.sim_time = vcd, table, sim_time
        where = vcd or "none recorded (the pytest runner re-runs the test with WAVES=1)"
        t = f" (sim time {sim_time})" if sim_time is not None else ""
        super().__init__(
            f"lock-step divergence at cycle {cycle}{t}: {signal} expected {fmt(expected)} "
            f"actual {fmt(actual)}\n  VCD: {where}\n{table}")

    def to_json(self) -> dict:
        return {"cycle": self.cycle, "signal": self.signal, "expected": self.expected,
                "actual": self.actual, "vcd": self.vcd, "sim_time": self.sim_time, "table": self.table}


def _funcov_sampler(model):
    """The functional coverage model's sampler for `model` in a coverage run (FUNCOV_FILE set
    by verif.runner; verif/funcov.py, verif/ib_funcov.py), else None."""
    from verif import funcov
    if model is None or not funcov.enabled():
        return None
    from verif.ib_funcov import attach
    from verif.tb import tb_config
    return attach(model, funcov.registry(), tb_config())


class LockstepCore:
    def __init__(self, model, outputs: list[str], qualifiers: dict[str, str] | None = None,
                 *, vcd: str | None = None, history: int = 8, show_inputs: list[str] | None = None,
                 report: bool = True):
        self.model = model
        self.outputs = list(outputs)
        self.qual = dict(qualifiers or {})
        self.vcd = vcd
        self.hist: deque = deque(maxlen=history)
        self.show_inputs = show_inputs
        self.report = report
        self.cycle = 0
        self.funcov = _funcov_sampler(model)

    def check(self, inputs: dict, actual: dict, sim_time=None) -> dict:
        """Advance the model one cycle with `inputs` and compare with the DUT's `actual`
        outputs of the same cycle. Returns the model's outputs."""
        exp = self._check(inputs, actual, sim_time)
        if self.funcov is not None:
            self.funcov(inputs, exp)
        return exp

    def _check(self, inputs: dict, actual: dict, sim_time=None) -> dict:
        exp = self.model.step(inputs)
        self.hist.append((self.cycle, inputs, exp, actual))
        for name in self.outputs:
            q = self.qual.get(name)
            if q is not None and not exp[q]:
                continue
            if exp[name] != actual[name]:
                err = LockstepDivergence(self.cycle, name, exp[name], actual[name], self.vcd,
                                         self.table(name), sim_time)
                path = os.environ.get("LOCKSTEP_REPORT")
                # keep the first divergence of the run (the runner clears the file)
                if self.report and path and not os.path.exists(path):
                    with open(path, "w") as f:
                        json.dump(err.to_json(), f)
                raise err
        self.cycle += 1
        return exp

    def table(self, focus: str) -> str:
        ins = self.show_inputs or (list(self.hist[-1][1]) if self.hist else [])
        outs = [focus] + [o for o in self.outputs if o != focus and (o in self.qual.values())]
        head = ["cycle"] + ins + [f"{o} (dut/model)" for o in outs]
        rows = []
        for cyc, i, e, a in self.hist:
            mark = " <<" if cyc == self.cycle else ""
            rows.append([str(cyc)] + [fmt(i.get(n)) for n in ins]
                        + [f"{fmt(a.get(o))}/{fmt(e.get(o))}" for o in outs] + [mark])
        widths = [max(len(r[k]) for r in [head + [""]] + rows) for k in range(len(head) + 1)]
        lines = ["  " + "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=False))]
        lines += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=False)) for r in rows]
        return "\n".join(lines)


async def cocotb_lockstep(dut, model, stimulus: Iterable[dict], outputs: list[str],
                          qualifiers: dict[str, str] | None = None, *, clock: str = "clk",
                          on_cycle: Callable[[dict, dict], None] | None = None,
                          vcd: str | None = None, show_inputs=None, report: bool = True,
                          start_now: bool = False) -> LockstepCore:
    """Drive `stimulus` (one input dict per cycle) into `dut` and `model`, comparing every
    output every cycle. Inputs are applied just after the falling edge and outputs sampled
    once they have settled (ReadOnly), so combinational paths are compared too.

    `start_now`: apply the first inputs at once instead of at the next falling edge; use it
    right after `TB.reset()` (which returns at the falling edge where reset is released) so
    that the model and the DUT leave reset in the same cycle."""
    from cocotb.triggers import FallingEdge, ReadOnly
    from cocotb.utils import get_sim_time

    core = LockstepCore(model, outputs, qualifiers, vcd=vcd, show_inputs=show_inputs, report=report)
    clk = getattr(dut, clock)
    in_handles: dict = {}
    out_handles = {n: getattr(dut, n) for n in outputs}
    first = True
    for inp in stimulus:
        if not (first and start_now):
            await FallingEdge(clk)
        first = False
        for n, v in inp.items():
            h = in_handles.get(n)
            if h is None:
                h = in_handles[n] = getattr(dut, n)
            h.value = v
        await ReadOnly()
        actual = {n: _int(h) for n, h in out_handles.items()}      # X -> -1: fails if compared
        if model is not None:               # model None: drive and observe only (demos, benchmarks)
            core.check(inp, actual, sim_time=f"{get_sim_time('ns')} ns")
        if on_cycle is not None:
            on_cycle(inp, actual)
    return core


X = -1   # an output holding X/Z bits: never equal to a model value, so it fails if compared


def _int(handle, x_as_zero=False) -> int:
    """The value of a logic signal as an int (the simulator's bit string read directly: the
    same bits as `handle.value`, without building a LogicArray every cycle for every port);
    X/Z bits: X, or 0 for those bits with `x_as_zero`."""
    raw = getattr(handle, "_handle", None)
    try:
        return int(raw.get_signal_val_binstr(), 2) if raw is not None else int(handle.value)
    except ValueError:
        if x_as_zero:        # an undriven input (payload while its valid is low): read as 0
            return int("0" + "".join(c if c in "01" else "0" for c in str(handle.value)), 2)
        return X


class LockstepObserver:
    """Lock-step in observe mode, for inputs driven by someone else (e.g. cocotbext-axi
    masters): every cycle the DUT's inputs and outputs are sampled once settled, the model
    steps on the sampled inputs, and every output is compared. Start with `start()`, end
    with `await stop()` (which re-raises the first divergence)."""

    def __init__(self, dut, model, inputs: list[str], outputs: list[str], qualifiers=None, *,
                 clock: str = "clk", vcd: str | None = None, start_now: bool = False):
        """start_now: the first sample is taken in the current time step (call `start()` right
        after `TB.reset()`, which returns at the falling edge where reset is released, so
        that the model's first cycle is the DUT's first cycle out of reset)."""
        self.dut, self.inputs = dut, inputs
        self.start_now = start_now
        self.core = LockstepCore(model, outputs, qualifiers, vcd=vcd, show_inputs=inputs[:12])
        self.clock = clock
        self.error: BaseException | None = None
        self._task = None
        self._running = False
        self.cycles = 0

    def start(self):
        import cocotb
        self._running = True
        self._task = cocotb.start_soon(self._run())
        return self

    async def _run(self):
        from cocotb.triggers import FallingEdge, ReadOnly
        from cocotb.utils import get_sim_time
        clk = getattr(self.dut, self.clock)
        ins = {n: getattr(self.dut, n) for n in self.inputs}
        outs = {n: getattr(self.dut, n) for n in self.core.outputs}
        first = True
        while self._running:
            if not (first and self.start_now):
                await FallingEdge(clk)
            first = False
            await ReadOnly()
            try:
                inp = {n: _int(h, x_as_zero=True) for n, h in ins.items()}
                act = {n: _int(h) for n, h in outs.items()}
                self.core.check(inp, act, sim_time=f"{get_sim_time('ns')} ns")
            except LockstepDivergence as e:
                self.error = e
                self._running = False
                return
            self.cycles += 1

    async def stop(self):
        from cocotb.triggers import Timer
        self._running = False
        await Timer(1, "ns")
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self.error is not None:
            raise self.error
        return self.cycles
