"""Egress rewrite on Icarus and Verilator: lock-step with its model; the rewritten packets
carry the output VL and a valid VCRC with the ICRC untouched, for every VCRC position;
bad-marked packets and packets whose PktLen disagrees with their length pass unchanged
except where PktLen puts the VCRC (tb/egress_traffic.py)."""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from models.egress import EgressModel
from tb.egress_traffic import EgressTraffic
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB


@cocotb.test()
async def rewrite_every_vcrc_position(dut):
    cfg = TB.peek_config()
    t = EgressTraffic(cfg, random.Random(9), 60, sizes=(0, 1))
    tb = TB(dut, {k: 0 for k in t.ins})
    await tb.reset()
    await cocotb_lockstep(dut, EgressModel(cfg), t.stim(), t.outs, t.qual, on_cycle=t.observe, vcd=tb.vcd,
                          start_now=True)
    t.check()


def _top(cfg):
    from hw.switch.egress import Egress
    return Egress(cfg)


@pytest.mark.parametrize("cfg_name", ["small", "w512", "small-msb"])
@pytest.mark.parametrize("sim", SIMS)
def test_egress(sim, cfg_name):
    run_cocotb(top=_top, name="ib_egress", test_module="tb.test_egress", sim=sim, cfg=CONFIGS[cfg_name])
