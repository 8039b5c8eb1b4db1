"""`make gate [CONFIG=small SIM=icarus]`: gate-level simulation (docs/fpga.md). The switch as
`synth_ecp5` leaves it (tools/gate.py: LUT4, carry, flip-flop, LUT-RAM and block-RAM cells,
with the ECP5 cell models yosys ships and our DP16KD model) runs the switch's cocotb traffic
tests (tb/test_switch.py: GATE_TESTS) in lock-step with the golden model, so the netlist is
known to behave like the RTL. Marked `gate`: outside `make sim` and `make sim-long` (the
synthesis alone takes about 6 minutes for config small; the netlist is kept while the RTL's
Verilog is unchanged).

    pytest -m gate tb/test_gate.py [--gate-config small] [--gate-sim icarus|verilator] [--gate-resynth]
"""
import time

import pytest

from contracts.config import get_config
from tools.gate import GATE_TESTS, cell_library, switch_netlist
from verif.runner import ROOT, run_cocotb


@pytest.mark.gate
def test_gate(request):
    cfg = get_config(request.config.getoption("--gate-config"))
    sim = request.config.getoption("--gate-sim")
    out = ROOT / "build" / "gate"
    net = switch_netlist(cfg, out, force=request.config.getoption("--gate-resynth"))
    lib = cell_library(out / "ecp5_cells_sim.v")
    t = time.time()
    res = run_cocotb(top=None, name="ib_switch", test_module="tb.test_switch", sim=sim, cfg=cfg, testcase=GATE_TESTS,
                     tag=f"gate-ib_switch-{cfg.name}", sources=[net, lib], rerun_with_waves=False)
    print(f"gate-level ib_switch ({cfg.name}) on {sim}: {res['tests']} tests passed in {time.time() - t:.0f} s "
          f"({', '.join(GATE_TESTS)}); netlist {net}")
