"""Lock-step in the Amaranth simulator, for fast unit tests (no HDL simulator needed)."""
from __future__ import annotations

from amaranth.sim import Simulator

from verif.lockstep import LockstepCore

__all__ = ["port", "pysim_lockstep"]


def port(dut, name: str):
    """Resolve a flattened port name (`rx__valid`, `tx__0__data`) on a wiring.Component."""
    obj = dut
    for part in name.split("__"):
        obj = obj[int(part)] if part.isdigit() else getattr(obj, part)
    if hasattr(obj, "as_value"):          # a struct view: its raw bits
        obj = obj.as_value()
    return obj


def pysim_lockstep(dut, model, stimulus, outputs, qualifiers=None, *, vcd=None, on_cycle=None):
    core = LockstepCore(model, outputs, qualifiers)
    outs = {n: port(dut, n) for n in outputs}

    async def bench(ctx):
        for inp in stimulus:
            for n, v in inp.items():
                ctx.set(port(dut, n), v)
            actual = {n: ctx.get(s) for n, s in outs.items()}
            actual = {n: (v.as_value().value if hasattr(v, "as_value") else int(v))
                      for n, v in actual.items()}
            core.check(inp, actual)
            if on_cycle:
                on_cycle(inp, actual)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()
    return core
