"""The port state machine (hw/link/port_state.py, IBA §7.2 and §14.2.5.6) on Icarus and
Verilator, in lock-step with its model: the subnet manager's requests (valid, out of order and
undefined states), the link lost and regained, and data packets arriving in every state,
also in the same cycle as a refused request while Armed."""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.defs import PortState
from contracts.link import port_state
from models.port_state import PortStateModel
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB

CYCLES = 3000


@cocotb.test()
async def requests_link_loss_and_data(dut):
    ins, outs, qual = port_state().ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    rng = random.Random(7)
    seen = set()

    def stim():
        up = 0
        for _c in range(CYCLES):
            if rng.random() < (0.2 if not up else 0.004):
                up ^= 1                                        # the PHY loses and regains the link
            req = int(rng.random() < 0.15)
            # mostly the next state in order; sometimes Down, a repeat, or an undefined code
            want = rng.choice([PortState.ARMED, PortState.ACTIVE, PortState.DOWN, PortState.INIT, 0, 5, 7]) \
                if req else 0
            yield {"up": up, "req": req, "want": int(want), "data_rx": int(rng.random() < 0.1)}

    def observe(inp, out):
        seen.add(out["state"])

    await cocotb_lockstep(dut, PortStateModel(), stim(), outs, qual, on_cycle=observe, vcd=tb.vcd, start_now=True)
    assert seen == {int(s) for s in PortState}, f"states reached: {sorted(seen)}"


def _top(cfg):
    from hw.link.port_state import PortStateMachine
    return PortStateMachine()


@pytest.mark.parametrize("sim", SIMS)
def test_port_state(sim):
    run_cocotb(top=_top, name="ib_port_state", test_module="tb.test_port_state", sim=sim, cfg=CONFIGS["small"])
