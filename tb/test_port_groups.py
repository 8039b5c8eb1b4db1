"""The port groups (failover alternates, adaptive-routing groups) on Icarus and Verilator, in
lock-step with their model, under random port states and register values: the alternates
and groups a subnet manager writes (including out-of-range ALT_PORT values, groups of one,
flow-pinned groups) and every port going up and down.

Checked apart from the model, every cycle: a redirected output is not Active and its
alternate is; an output that may be routed to while not Active is redirected or shares a
group with an Active output; a flow-pinned group's mask is Active outputs of that group and
holds the output itself when it is Active.
"""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.switch import port_groups
from models.port_groups import PortGroupsModel
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB, tb_seed


def _stimulus(cfg, rng, cycles):
    n = cfg.ports
    alt = [rng.randrange(1, n + 1) for _ in range(n)]
    grp = [0] * n
    active = (1 << n) - 1
    for _ in range(cycles):
        if rng.random() < 0.3:                           # a port goes down or comes up
            active ^= 1 << rng.randrange(n)
        if rng.random() < 0.05:
            active = rng.getrandbits(n)
        if rng.random() < 0.1:                           # the SM rewrites a register
            alt[rng.randrange(n)] = rng.choice([0, n + 1, 0xFF, rng.getrandbits(8)] + list(range(1, n + 1)) * 2)
        if cfg.adaptive and rng.random() < 0.1:
            grp[rng.randrange(n)] = rng.choice([0, 1, 2, 0x81, 0x82, rng.getrandbits(8)])
        inp = {"active": active} | {f"alt_port__{o}": alt[o] for o in range(n)}
        if cfg.adaptive:
            inp |= {f"ar_group__{o}": grp[o] for o in range(n)}
        yield inp


def _check(cfg):
    n = cfg.ports
    seen = {"redirect": 0, "pinned": 0, "usable_by_group": 0}

    def check(inp, out):
        act = inp["active"]
        for o in range(n):
            if out["redirect"] >> o & 1:
                a = out[f"alt__{o}"]
                assert not act >> o & 1 and act >> a & 1 and inp[f"alt_port__{o}"] == a + 1, (o, inp, out)
                seen["redirect"] += 1
            if out["usable"] >> o & 1 and not out["redirect"] >> o & 1:
                assert cfg.adaptive and not act >> o & 1, (o, inp, out)
                g = inp[f"ar_group__{o}"]
                assert g and any(act >> x & 1 and inp[f"ar_group__{x}"] == g for x in range(n)), (o, inp, out)
                seen["usable_by_group"] += 1
            if cfg.adaptive and out[f"ar_mask__{o}"]:
                g = inp[f"ar_group__{o}"]
                mask = out[f"ar_mask__{o}"]
                assert g & 0x80 and mask & ~act == 0, (o, inp, out)
                assert all(inp[f"ar_group__{x}"] == g for x in range(n) if mask >> x & 1), (o, inp, out)
                assert bool(mask >> o & 1) == bool(act >> o & 1), (o, inp, out)
                seen["pinned"] += 1
    return check, seen


@cocotb.test()
async def random_states_and_registers(dut):
    cfg = TB.peek_config()
    ins, outs, qual = port_groups(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    check, seen = _check(cfg)
    await cocotb_lockstep(dut, PortGroupsModel(cfg), _stimulus(cfg, random.Random(tb_seed()), 4000), outs, qual,
                          on_cycle=check, vcd=tb.vcd, start_now=True)
    # the premise: every kind of decision was made, many times
    assert seen["redirect"] > 100, seen
    if cfg.adaptive:
        assert seen["pinned"] > 100 and seen["usable_by_group"] > 50, seen
    dut._log.info(f"decisions seen: {seen}")


def _top(cfg):
    from hw.switch.port_groups import PortGroups
    from verif.clocked import Clocked
    return Clocked(PortGroups(cfg))


@pytest.mark.parametrize("cfg_name", ["small-rxreg", "small-failover"])
@pytest.mark.parametrize("sim", SIMS)
def test_port_groups(sim, cfg_name):
    cfg = CONFIGS["small-rxreg"]
    if cfg_name == "small-failover":
        cfg = cfg.replace(name="small-failover", adaptive=False)
    run_cocotb(top=_top, name="ib_port_groups", test_module="tb.test_port_groups", sim=sim, cfg=cfg)
