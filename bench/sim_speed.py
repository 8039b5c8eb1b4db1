"""`make bench`: simulator speed on the receive parser, as a table.

Cycles of simulated time per wall-clock second, for the same packet stream:
  icarus / verilator, driven    cocotb drives the inputs every cycle, nothing else
  icarus / verilator, lock-step the full harness: drive, read every output, step the model
  model                         the golden model alone (pure Python)
  amaranth                      Amaranth's own simulator, inputs only
Benchmarks measure speed; tests never do.
"""
from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from amaranth.sim import Simulator

from contracts.config import CONFIGS
from hw.link.rx_parser import RxParser
from models.rx_parser import RxParserModel
from verif.ib.stimulus import cycles, idle_random, mixed_items
from verif.pysim import port
from verif.runner import SIMS, run_cocotb

BENCH_CONFIGS = ["small", "default", "w512"]
PACKETS = 200


def _stim(cfg):
    rng = random.Random(5)
    return list(cycles(mixed_items(cfg, rng, PACKETS, p_bad=0.0), idle_random(0.1, rng)))


def model_speed(cfg) -> float:
    stim = _stim(cfg)
    m = RxParserModel(cfg)
    t0 = time.perf_counter()
    for i in stim:
        m.step(i)
    return len(stim) / (time.perf_counter() - t0)


def amaranth_speed(cfg) -> float:
    stim = _stim(cfg)
    dut = RxParser(cfg)
    t = {}

    async def bench(ctx):
        t0 = time.perf_counter()
        for inp in stim:
            for n, v in inp.items():
                ctx.set(port(dut, n), v)
            await ctx.tick()
        t["dt"] = time.perf_counter() - t0

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return len(stim) / t["dt"]


def cocotb_speed(cfg, sim) -> dict:
    from hw.link.rx_parser import RxParser as P
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "bench.json"
        run_cocotb(top=P, name="ib_rx_parser", test_module="bench.rx_parser_speed", sim=sim, cfg=cfg,
                   tag=f"bench-rx-{cfg.name}", waves=False, rerun_with_waves=False, cxx_opt="-Os",
                   params={"out": str(out), "packets": PACKETS})
        return json.loads(out.read_text())


def main():
    rows = []
    for name in BENCH_CONFIGS:
        cfg = CONFIGS[name]
        r = {"config": name, "W": cfg.data_width}
        for sim in SIMS:
            res = cocotb_speed(cfg, sim)
            r[f"{sim} driven"] = res["driven"]
            r[f"{sim} lock-step"] = res["lockstep"]
            r["cycles"] = res["cycles"]
        r["model"] = model_speed(cfg)
        r["amaranth"] = amaranth_speed(cfg)
        rows.append(r)
    cols = ["config", "W", "cycles", "icarus driven", "icarus lock-step", "verilator driven",
            "verilator lock-step", "model", "amaranth"]
    print("receive parser, simulated cycles per wall-clock second")
    print("  ".join(f"{c:>19}" if i > 1 else f"{c:>7}" for i, c in enumerate(cols)))
    for r in rows:
        print("  ".join((f"{r[c]:>19.0f}" if isinstance(r[c], float) else f"{r[c]:>19}") if i > 1
                        else f"{r[c]:>7}" for i, c in enumerate(cols)))


if __name__ == "__main__":
    main()
