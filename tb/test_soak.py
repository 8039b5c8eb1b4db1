"""The fault-injection soak (hw/top/soak.py; docs/reliability.md): the switch with a
hardware endpoint on every port and a fault injector on every wire, under random faults
(flipped bits, bad lengths, EBP, lost flow-control packets, rogue senders over credit,
cable cuts, ports set Down by management). No Python in the inner loop: the test sleeps
while the hardware runs, then reads every counter and holds the books
(tb/common/soak_books.py):

  - every packet sent was delivered good exactly once, or discarded and counted;
  - no packet was delivered corrupted, twice or out of order;
  - no endpoint waited longer than STALL_BOUND cycles for a good packet while traffic ran
    (the switch never wedged);
  - every fault kind was injected.

In `make sim` a short soak (SOAK_PACKETS, default 3,000 packets on Verilator with a fault
every 2^5 cycles on average, 600 on Icarus with one every 2^4: SOAK_RATE_LOG2); `make soak` (tools/soak.py) runs 10^7
packets on Verilator and prints the books.
"""
import json
import os
from pathlib import Path

import cocotb
import pytest

from hw.common.config import CONFIGS, SwitchConfig
from hw.top.soak import SoakPlan
from tb.common.runner import SIMS, run_cocotb
from tb.common.soak_books import table
from tb.common.soak_run import verdict
from tb.common.tb import TB, tb_config

CFG = CONFIGS["small-rxreg"]          # lifetimes: heads for a dead port expire (HOQLife)
PLAN = SoakPlan()
SHORT = {"verilator": (3000, 5), "icarus": (600, 4)}     # packets, rate_log2


@cocotb.test()
async def soak(dut):
    from tb.common.harness import CocotbHarness
    from tb.common.soak_run import kind_mask, soak_procedure
    cfg = tb_config()
    plan = SoakPlan(**json.loads(os.environ["SOAK_PLAN"]))
    TB(dut)                                   # the clock
    kinds = kind_mask(os.environ.get("SOAK_KINDS", ""))
    raw = await soak_procedure(CocotbHarness(dut), cfg, plan, int(os.environ["SOAK_PACKETS"]),
                               int(os.environ.get("SOAK_RATE_LOG2", "7")), kinds)
    out = os.environ.get("SOAK_JSON")
    if out:
        Path(out).write_text(json.dumps(raw, indent=1))
    dut._log.info("\n" + table(raw))
    problems = verdict(raw, cfg, plan, kinds)
    assert not problems, "; ".join(problems)


def _top(cfg, plan=PLAN):
    from hw.top.soak import Soak
    return Soak(cfg, plan)


def run_soak(sim: str, packets: int, *, rate_log2: int = 7, plan: SoakPlan = PLAN, cfg: SwitchConfig = CFG,
             json_out: Path | None = None, cxx_opt: str | None = None, threads: int = 1) -> dict:
    """Build the soak top for `sim` and run `packets` packets through it (tools/soak.py).
    `cxx_opt`: a Verilator build at that C++ optimisation level, in a build directory of its
    own (the regression's is -O0: quick to build, slow to run)."""
    from dataclasses import asdict
    env = {"SOAK_PACKETS": str(packets), "SOAK_RATE_LOG2": str(rate_log2), "SOAK_PLAN": json.dumps(asdict(plan))}
    if json_out is not None:
        env["SOAK_JSON"] = str(json_out)
    kw = {"cxx_opt": cxx_opt, "tag": f"ib_soak-{cfg.name}{cxx_opt}"} if cxx_opt else {}
    if threads > 1:
        kw = {**kw, "verilator_args": ["--threads", str(threads)], "tag": f"ib_soak-{cfg.name}{cxx_opt}-t{threads}"}
    return run_cocotb(top=lambda c: _top(c, plan), name="ib_soak", test_module="tb.test_soak", sim=sim, cfg=cfg,
                      extra_env=env, public_depth=1 if sim == "verilator" else None, rerun_with_waves=False, **kw)


@pytest.mark.parametrize("sim", SIMS)
def test_soak(sim):
    packets, rate = SHORT[sim]
    run_soak(sim, int(os.environ.get("SOAK_PACKETS", packets)), rate_log2=int(os.environ.get("SOAK_RATE_LOG2", rate)))
