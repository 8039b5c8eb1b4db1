"""`ib_loopback` on Icarus (on Verilator: its native binary, tests/test_native.py): the switch
with a hardware endpoint on every port (traffic generators and checkers, ports paired),
programmed after reset by its own AXI4-Lite writer, with no software in the loop. Every
generator sends COUNT packets to its partner; the procedure (scenarios/loopback.py) holds
the checkers to the generators (every packet arrived good, in order, once; no fault
anywhere), pauses and resumes the generators with `run`, and reports latency."""
import cocotb
import pytest

from contracts.config import CONFIGS
from scenarios.loopback import COUNT, PLAN
from verif.runner import run_cocotb
from verif.tb import TB


@cocotb.test()
async def pairs_exchange(dut):
    from scenarios.loopback import loopback_procedure
    from verif.harness import CocotbHarness
    cfg = TB.peek_config()
    TB(dut, {"run": 0})                       # the clock
    for c in await loopback_procedure(CocotbHarness(dut), cfg.ports, COUNT):
        dut._log.info(f"endpoint {c['endpoint']}: {c['rcv_good']} packets from {c['from']}, latency min "
                      f"{c['lat_min']} mean {c['lat_sum'] / c['rcv_good']:.1f} max {c['lat_max']} cycles")


def _top(cfg):
    from hw.top.loopback import Loopback
    return Loopback(cfg, PLAN)


# Icarus under cocotb; on Verilator the same procedure runs on the native binary of the same
# top (tests/test_native.py: test_native_loopback_pairs_exchange), which is also the path of
# `make soak`'s and the fabric's runs
@pytest.mark.parametrize("cfg_name", ["small"])
@pytest.mark.parametrize("sim", ["icarus"])
def test_loopback(sim, cfg_name):
    run_cocotb(top=_top, name="ib_loopback", test_module="tb.test_loopback", sim=sim, cfg=CONFIGS[cfg_name])
