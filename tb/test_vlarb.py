"""VL arbitration on Icarus and Verilator: lock-step with its model under random readiness,
table rewrites and LimitOfHighPriority changes."""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.switch import vlarb
from models.vlarb import VLArbModel
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB


@cocotb.test()
async def random_tables_and_readiness(dut):
    cfg = TB.peek_config()
    nvl, e = cfg.data_vls, cfg.vlarb_entries
    ins, outs, qual = vlarb(nvl, e).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    rng = random.Random(21)
    high = [rng.randrange(nvl) | rng.choice([0, 2, 8]) << 4 for _ in range(e)]
    low = [rng.randrange(nvl) | rng.choice([0, 1, 4, 16, 255]) << 4 for _ in range(e)]

    def stim():
        limit, sent = 1, 0
        for c in range(2000):
            sent = int(not sent and rng.random() < 0.5)       # never two cycles in a row (contract)
            if c % 113 == 0:
                low[rng.randrange(e)] = rng.randrange(16) | rng.randrange(256) << 4
                limit = rng.choice([0, 1, 2, 255])
            d = {"ready": rng.getrandbits(nvl), "ready15": int(rng.random() < 0.03), "limit": limit,
                 "sent": sent, "blocks": rng.randrange(1, 70)}
            d.update({f"high__{k}": high[k] for k in range(e)})
            d.update({f"low__{k}": low[k] for k in range(e)})
            yield d

    core = await cocotb_lockstep(dut, VLArbModel(nvl, e), stim(), outs, qual, vcd=tb.vcd, start_now=True)
    assert core.cycle == 2000


def _top(cfg):
    from hw.switch.vlarb import VLArbiter
    return VLArbiter(cfg.data_vls, cfg.vlarb_entries)


@pytest.mark.parametrize("cfg_name", ["small", "w512"])
@pytest.mark.parametrize("sim", SIMS)
def test_vlarb(sim, cfg_name):
    run_cocotb(top=_top, name="ib_vlarb", test_module="tb.test_vlarb", sim=sim, cfg=CONFIGS[cfg_name])
