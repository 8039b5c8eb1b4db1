"""A port's counter block on Icarus and Verilator, in lock-step with its model: random counts
from the receiver, transmitter and management port (small; using every bit with sums that
do not saturate; near 2^32 so that the sums saturate), relay-error events from the ingress and the request builder.

Checked apart from the model: the relay errors it keeps are the events it was given (plus
the management port's); every sum stays at 2^32 - 1 once it would pass it; EBP packets are
not receive errors (IBA §16.1.3.5 counts them in PortRcvRemotePhysicalErrors)."""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.counters import PORT_COUNTERS_LIST
from contracts.defs import RX_ERROR_COUNTERS
from contracts.switch import port_counters
from models.counters import PortCountersModel
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB, tb_seed

_SAT = 0xFFFFFFFF


@cocotb.test()
async def counts_and_sums(dut):
    ins, outs, qual = port_counters().ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    rng = random.Random(tb_seed())
    idx = {name: k for k, name in enumerate(PORT_COUNTERS_LIST)}
    events = {"n": 0, "big": 0}
    seen = []

    def stim():
        for c in range(900):
            # small counts, counts that use every bit without their sums saturating, and
            # counts near 2^32 whose sums do
            if c < 300:
                val = lambda: rng.randrange(1000)  # noqa: E731
            elif c < 600:
                val = lambda: rng.getrandbits(rng.choice([16, 24, 28]))  # noqa: E731
            else:
                val = lambda: rng.choice([_SAT, _SAT - 1, 1 << 31, rng.getrandbits(32)])  # noqa: E731
            inp = {k: val() for k in ins if k not in ("route_drop", "discard", "hoq_discard", "life_discard")}
            inp["hoq_discard"] = rng.choice([0, 0, 1, 3])
            inp["life_discard"] = rng.choice([0, 0, 0, 1, 2])
            inp["rx__ebp"] = rng.randrange(1000)
            inp["route_drop"], inp["discard"] = int(rng.random() < 0.3), int(rng.random() < 0.2)
            events["n"] += inp["route_drop"] + inp["discard"]
            yield inp

    def observe(inp, out):
        seen.append((dict(inp), dict(out)))

    await cocotb_lockstep(dut, PortCountersModel(), stim(), outs, qual, on_cycle=observe, vcd=tb.vcd, start_now=True)
    relay = hoq = life = 0
    for inp, out in seen:
        assert out[f"counters__{idx['PortXmitDiscards']}"] == min(inp["tx__xmit_discards"] + hoq + life, _SAT)
        assert (out["details__0"], out["details__1"]) == (life, hoq), "discard reasons miscounted"
        hoq += inp["hoq_discard"]
        life += inp["life_discard"]
        got = out[f"counters__{idx['PortRcvSwitchRelayErrors']}"]
        assert got == min(relay + inp["mgmt__relay_err"], _SAT), "relay errors miscounted"
        relay += inp["route_drop"] + inp["discard"]
        errs = sum(inp[f"rx__{k}"] for k in RX_ERROR_COUNTERS)
        assert out[f"counters__{idx['PortRcvErrors']}"] == min(errs, _SAT)
        assert out[f"counters__{idx['PortRcvRemotePhysicalErrors']}"] == inp["rx__ebp"]
        events["big"] += errs > _SAT
    assert relay == events["n"] and events["big"] > 0


def _top(cfg):
    from hw.switch.counters import PortCounters
    return PortCounters()


@pytest.mark.parametrize("sim", SIMS)
def test_port_counters(sim):
    run_cocotb(top=_top, name="ib_port_counters", test_module="tb.test_port_counters", sim=sim,
               cfg=CONFIGS["small"])
