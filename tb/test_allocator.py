"""iSLIP switch allocator: lock-step with its model on Icarus and Verilator."""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.switch import allocator
from models.allocator import ISlipModel
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB


@cocotb.test()
@cocotb.parametrize(load=[0.3, 0.9])
async def random_requests_and_tails(dut, load):
    cfg = TB.peek_config()
    n, iters = cfg.ports, cfg.islip_iterations
    tb = TB(dut, {**{f"req__{i}": 0 for i in range(n)}, **{f"deep__{i}": 0 for i in range(n)},
                  **{f"done__{i}": 0 for i in range(n)}})
    await tb.reset()
    rng = random.Random(int(load * 100))
    _, outs, qual = allocator(n).ports()
    model = ISlipModel(n, iters, cfg.islip_fair_every)
    sending = {}
    busy_cycles = [0]

    def stim():
        for _ in range(1500):
            done = {}
            for i in list(sending):
                sending[i] -= 1
                if sending[i] == 0:
                    done[i] = 1
                    del sending[i]
            inp = {f"done__{i}": done.get(i, 0) for i in range(n)}
            inp.update({f"req__{i}": (rng.getrandbits(n) if rng.random() < load else 0) for i in range(n)})
            inp.update({f"deep__{i}": inp[f"req__{i}"] & rng.getrandbits(n) for i in range(n)})
            yield inp
            for i in model.match.values():
                sending[i] = rng.randrange(1, 6)

    def observe(i, o):
        ins = [o[f"match_in__{x}"] for x in range(n) if o[f"match_valid__{x}"]]
        assert len(ins) == len(set(ins)), "an input matched twice"
        busy_cycles[0] += bin(o["out_busy"]).count("1")

    await cocotb_lockstep(dut, model, stim(), outs, qual, on_cycle=observe, vcd=tb.vcd, start_now=True)
    assert busy_cycles[0] > 0


def _top(cfg):
    from hw.switch.allocator import ISlipAllocator
    return ISlipAllocator(cfg.ports, cfg.islip_iterations, cfg.islip_fair_every)


@pytest.mark.parametrize("cfg_name", ["small", "w128"])
@pytest.mark.parametrize("sim", SIMS)
def test_allocator(sim, cfg_name):
    run_cocotb(top=_top, name="ib_islip", test_module="tb.test_allocator", sim=sim, cfg=CONFIGS[cfg_name])
