"""The RTL fabric on its native Verilator binary (verif/native/fabric.py; `make sim-long`):
`fat_tree_2(4)` of fab8 switches (6 switches, 7 hardware endpoints and the SM's port),
programmed as our SM programs it (ftree routes and failover alternates over AXI4-Lite,
scenarios/fabric.py), then

  - traffic from every leaf's endpoints to the next leaf's, every packet crossing a spine:
    every packet received good, once, in order, by the endpoint it was for;
  - a spine cable of leaf L1 cut under that traffic, with an ideal PHY and with one that
    takes 32 cycles to see the loss of signal: the leaf's traffic moves to the alternate
    port with no SM, nothing delivered bad, twice or out of order, and no more lost than
    was on the cable or started into it before the PHY saw the cut.
"""
from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.long


def test_fabric_native_traffic_and_failover():
    from fabric.topology import fat_tree_2
    from hw.fabric.fabric import FabricPlan
    from scenarios.fabric import (
        FAB_CFG,
        alternates_of,
        check_failover,
        check_traffic,
        failover_run,
        leaf_flows,
        offline_bring_up,
        offline_routes,
        traffic,
    )
    from sm.failover import alternates
    from verif.harness import NativeHarness
    from verif.native import NativeSim
    from verif.native.fabric import build_fabric
    topo = fat_tree_2(4)
    plan = FabricPlan.from_topology(topo, sm_ca="H0")
    fab, routes = offline_routes(topo, "ftree")
    alts = alternates_of(fab, alternates(fab, routes))
    exe = build_fabric(FAB_CFG, plan, los=True, monitor=True, say=lambda s: None)
    senders = len(fab.cas_at[fab.sw_names.index("L1")])

    async def go(h):
        await h.set(los_cycles=0)
        lid_of = await offline_bring_up(h, FAB_CFG, plan, fab, routes, alternates=alts)
        res = await traffic(h, plan, lid_of, leaf_flows(plan), 40, seed=3)
        assert not check_traffic(plan, res), check_traffic(plan, res)
        for los, seed, offset in ((0, 5, 3), (32, 6, 17)):
            fo = await failover_run(h, FAB_CFG, plan, fab, routes, alts, count=40, seed=seed, offset=offset, los=los)
            assert not check_failover(fo, 40, senders), (fo, check_failover(fo, 40, senders))
            assert los < fo["cycles_to_alternate"] <= los + 64, fo
    with NativeSim(exe) as s:
        asyncio.run(go(NativeHarness(s)))
