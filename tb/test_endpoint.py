"""The hardware endpoint (traffic generator + checker on the switch's link layer) on Icarus
and Verilator, in lock-step with its composed model (models/endpoint.py): its transmit
side wired back to its own receive side through the testbench, with PHY pacing, and with
a wire that drops whole packets and flips single bits; the endpoint's counters are held to
the wire's own books (tb/endpoint_traffic.py)."""
import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.endpoint import endpoint
from models.endpoint import EndpointModel
from tb.endpoint_traffic import SelfLoop
from verif.lockstep import cocotb_lockstep
from verif.runner import run_cocotb, sim_matrix
from verif.tb import TB


async def _run(dut, **kw):
    cfg = TB.peek_config()
    ins, outs, qual = endpoint(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    loop = SelfLoop(cfg, tb.rng, **kw)
    await cocotb_lockstep(dut, EndpointModel(cfg), loop.stim(), outs, qual, on_cycle=loop.observe, vcd=tb.vcd,
                          start_now=True)
    loop.check()
    return loop


@cocotb.test()
async def self_loop_clean(dut):
    """Packets of every length the generator makes, back to back and with gaps, through
    the link layer's credits to the endpoint's own checker: all good, none lost."""
    loop = await _run(dut, cycles=1400, count=60, gap=1, ready_p=0.85)
    assert loop.last["counters__rcv_good"] == 60


@cocotb.test()
async def self_loop_faults(dut):
    """A wire that drops packets and flips bits: every fault is counted where it belongs."""
    loop = await _run(dut, cycles=2600, count=110, gap=0, ready_p=0.9, drop_p=0.1, flip_p=0.15)
    assert loop.dropped and loop.flipped, "the wire injected no faults (seed?)"


def _top(cfg):
    from hw.endpoint.endpoint import Endpoint
    return Endpoint(cfg)


# W=512 on one simulator in `make sim` (the other in `make sim-long`): docs/verification.md
@pytest.mark.parametrize("sim, cfg_name", sim_matrix(["small", "w512"], long=("verilator-w512",)))
def test_endpoint(sim, cfg_name):
    run_cocotb(top=_top, name="ib_endpoint", test_module="tb.test_endpoint", sim=sim, cfg=CONFIGS[cfg_name])
