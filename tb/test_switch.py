"""The whole switch (ib_switch) on Icarus and Verilator: RTL in lock-step with the composed
SwitchModel; tables programmed over AXI4-Lite; link peers granting credit; unicast traffic
on every port and VL with tx backpressure; an independent scoreboard (port from the LFT, VL
from SL2VL, VCRC valid, ICRC and bytes intact, order per (in, out, VL)); LFT-255 and
unknown-DLID packets dropped and counted; the uncontended rx sop -> tx sop latency."""
import random

import cocotb
import pytest

from hw.common.config import CONFIGS
from models.switch import SwitchModel, switch_ports
from tb.common.lockstep import cocotb_lockstep
from tb.common.runner import SIMS, run_cocotb
from tb.common.switch_env import SwitchEnv
from tb.common.tb import TB


async def _env(dut, ready_p=0.9):
    cfg = TB.peek_config()
    ins, outs, qual = switch_ports(cfg)
    idle = {k: 0 for k in ins}
    idle.update({f"rx__{p}__up": 1 for p in range(cfg.ports)})
    tb = TB(dut, idle)
    await tb.reset()
    env = SwitchEnv(cfg, random.Random(17), ready_p=ready_p)
    return tb, cfg, env, outs, qual


@cocotb.test()
async def unicast_all_ports_and_vls(dut):
    tb, cfg, env, outs, qual = await _env(dut)
    rng = env.rng
    routes = {d: (d * 7) % cfg.ports for d in range(1, 33)}
    routes[40] = 255                                    # LFT drop
    env.program(routes, {sl: sl % cfg.data_vls for sl in range(16)})
    model = SwitchModel(cfg)
    npk = 0

    def stim():
        nonlocal npk
        phases = []
        for c in range(3000):
            # traffic once the tables and port states are programmed (AXI queue empty)
            if not env.axi and (not phases or c == phases[0] + 600) and len(phases) < 2:
                phases.append(c)
                for _ in range(10):
                    env.send(rng.randrange(cfg.ports), rng.randrange(1, 33), rng.randrange(16),
                             rng.choice([0, 16, 64, 200]))
                    npk += 1
                env.send(0, 40, 0, 8)                     # LFT 255: dropped
                env.send(1, 100, 0, 8)                    # beyond the routed range: LFT default 255
            yield env.inputs()

    await cocotb_lockstep(dut, model, stim(), outs, qual, on_cycle=env.observe, vcd=tb.vcd, start_now=True)
    assert env.check() == npk
    errs = [model.glue.relay[p] for p in range(cfg.ports)]          # PortRcvSwitchRelayErrors
    assert errs[0] == 2 and errs[1] == 2, errs


@cocotb.test()
async def uncontended_latency(dut):
    """One packet through an idle switch: cycles from its sop on rx to its sop on tx."""
    tb, cfg, env, outs, qual = await _env(dut, ready_p=1.0)
    env.program({5: 2}, {0: 0})
    marks = {}

    def stim():
        sent = False
        for c in range(700):
            if c >= 300 and not env.axi and not sent:     # after programming, on an idle switch
                env.send(1, 5, 0, 16)
                sent = True
            inp = env.inputs()
            if inp["rx__1__valid"] and inp["rx__1__sop"] and not inp["rx__1__link"]:
                marks.setdefault("rx", c)
            yield inp

    def observe(i, o):
        env.observe(i, o)
        if o["tx__2__valid"] and o["tx__2__sop"] and not o["tx__2__link"]:
            marks.setdefault("tx", observe.c)
        observe.c += 1
    observe.c = 0
    await cocotb_lockstep(dut, SwitchModel(cfg), stim(), outs, qual, on_cycle=observe, vcd=tb.vcd, start_now=True)
    assert env.check() == 1
    lat = marks["tx"] - marks["rx"]
    dut._log.info(f"uncontended latency rx sop -> tx sop: {lat} cycles")
    assert 0 < lat < 20


def _top(cfg):
    from hw.top.switch import IBSwitch
    return IBSwitch(cfg)


@pytest.mark.parametrize("cfg_name", ["small", "w128"])     # 4 ports/64 bits/2 VLs, 8 ports/128 bits/4 VLs
@pytest.mark.parametrize("sim", SIMS)
def test_switch(sim, cfg_name):
    run_cocotb(top=_top, name="ib_switch", test_module="tb.test_switch", sim=sim, cfg=CONFIGS[cfg_name])
