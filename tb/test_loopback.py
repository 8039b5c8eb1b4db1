"""`ib_loopback` on Icarus and Verilator: the switch with a hardware endpoint on every port
(traffic generators and checkers, ports paired), programmed after reset by its own AXI4-Lite
writer, with no software in the loop. Every generator sends COUNT packets to its partner;
the procedure (scenarios/loopback.py, also run on the native binary by
tests/test_native.py) holds the checkers to the generators (every packet arrived good, in
order, once; no fault anywhere), pauses and resumes the generators with `run`, and reports
latency."""
import cocotb
import pytest

from contracts.config import CONFIGS
from scenarios.loopback import COUNT, PLAN
from verif.runner import SIMS, run_cocotb
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


@pytest.mark.parametrize("cfg_name", ["small"])
@pytest.mark.parametrize("sim", SIMS)
def test_loopback(sim, cfg_name):
    run_cocotb(top=_top, name="ib_loopback", test_module="tb.test_loopback", sim=sim, cfg=CONFIGS[cfg_name])
