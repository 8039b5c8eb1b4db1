"""Simulator-speed benchmark for the receive parser (run by `make bench`, not a test).

Measures simulated cycles per wall-clock second for the same traffic two ways: cocotb only
driving the inputs ("driven"), and the full lock-step harness with the golden model
("lock-step"). Writes $BENCH_OUT as JSON.
"""
import json
import random
import time

import cocotb
from cocotb.triggers import FallingEdge

from contracts.link import rx_parser
from models.rx_parser import RxParserModel
from verif.ib.stimulus import RX_IDLE, cycles, idle_random, mixed_items
from verif.lockstep import cocotb_lockstep
from verif.tb import TB, tb_params


@cocotb.test()
async def bench_speed(dut):
    tb = TB(dut, RX_IDLE)
    await tb.reset()
    cfg = tb.cfg
    rng = random.Random(5)
    n = tb_params().get("packets", 200)
    stim = list(cycles(mixed_items(cfg, rng, n, p_bad=0.0), idle_random(0.1, rng)))
    handles = {k: getattr(dut, k) for k in stim[0]}
    t0 = time.perf_counter()
    for inp in stim:
        await FallingEdge(dut.clk)
        for k, v in inp.items():
            handles[k].value = v
    t_drive = time.perf_counter() - t0
    await tb.reset()                  # the model starts from reset
    t0 = time.perf_counter()
    _, outs, qual = rx_parser(cfg).ports()
    await cocotb_lockstep(dut, RxParserModel(cfg), stim, outs, qual)
    t_lock = time.perf_counter() - t0
    with open(tb_params()["out"], "w") as f:
        json.dump({"cycles": len(stim), "driven": len(stim) / t_drive, "lockstep": len(stim) / t_lock}, f)
