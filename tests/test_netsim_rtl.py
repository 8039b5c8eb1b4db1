"""The fabric simulator validated against the RTL fabric (scenarios/netsim_rtl.py): the
same `fat_tree_2(k)` (k = 4 in `make sim`: 6 four-port switches of the fabric config, 7
hardware endpoints; k = 8 in `make sim-long`: 12 eight-port switches, 31 endpoints),
the same LFTs (our SM's ftree, programmed over AXI4-Lite), the same traffic (the endpoints'
generators: fixed-length packets sent back to back to their destinations in turn), every
packet timed on both. The RTL is the native Verilator binary (sim/native: Verilator only,
the fabric is too large for Icarus); the simulator is the fast core (netsim/fast.py, held
to the reference by tests/test_netsim_lockstep.py) with the RTL's parameters
(`rtl_params`: its link layer's FC packets and its allocator).

Checked, per workload: the hardware checkers judged every packet good and in order; the
RTL's record of every packet adds up; the simulator's throughput is within 3 % of the
RTL's and its mean and p99 latency within 10 %. An uncontended packet's latency is equal
to the cycle. And the check has teeth: the simulator without the RTL's link layer and
allocator (credits free of wire time, a plain round robin) misses by more than the
tolerance on these same workloads. `make bench-netsim-rtl` runs more workloads and seeds.
"""
from __future__ import annotations

import pytest

from contracts.config import core_latency_cycles
from scenarios.netsim_rtl import (
    TOLERANCE,
    Workload,
    compare,
    incast_workload,
    leaf_workload,
    permutation_workload,
    plain_params,
    rtl_fabric,
    rtl_measure,
    rtl_params,
    sim_measure,
)

# one worker compiles and reuses the numba cores (make sim runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("netsim")


@pytest.fixture(scope="module", params=[pytest.param(4, id="k4"), pytest.param(8, id="k8", marks=pytest.mark.long)])
def measured(request, tmp_path_factory):
    cfg, plan, fab, routes, exe = rtl_fabric(k=request.param)
    leaf = {j: s for (s, _p), j in plan.endpoint_at().items()}
    a = 1
    same = next(j for j in range(len(plan.endpoints)) if j != a and leaf[j] == leaf[a])
    far = next(j for j in range(len(plan.endpoints)) if leaf[j] != leaf[a])
    wls = [Workload("one packet, one switch", {a: [same]}, 1, 32),
           Workload("one packet, three switches", {a: [far]}, 1, 32),
           permutation_workload(plan, fab, 48, 32, seed=1), leaf_workload(plan, 48, 64),
           incast_workload(plan, fab, 24, 32, seed=1)]
    rows = rtl_measure(exe, cfg, plan, fab, routes, wls, tmp_path_factory.mktemp("rtl"))
    return cfg, plan, fab, routes, wls, rows


def test_every_rtl_packet_is_checked_good_and_timed(measured):
    _cfg, _plan, _fab, _routes, wls, rows = measured
    for wl, r in zip(wls, rows, strict=True):
        n = wl.count * len(wl.flows)
        c = r["counters"]
        assert r["done"] and r["sent"] == n and r["packets"] == n, (wl.name, r["sent"], r["packets"])
        assert c["rcv_pkts"] == c["rcv_good"] == n, (wl.name, c)
        assert not any(c[k] for k in ("rcv_bad", "rcv_errors", "icrc_err", "format_err", "pattern_err",
                                      "unknown_src", "seq_gap", "seq_lost", "seq_dup")), (wl.name, c)
        assert len(r["first_starts"]) == 1, f"{wl.name}: the senders did not start together: {r['first_starts']}"


def test_an_uncontended_packet_takes_the_same_cycles(measured):
    cfg, plan, fab, routes, wls, rows = measured
    for wl, r in zip(wls[:2], rows[:2], strict=True):
        s = sim_measure(plan, fab, routes, wl, rtl_params(cfg, wl.words))
        assert s["mean"] == r["mean"], (wl.name, s["mean"], r["mean"])
    # 20 flits on the wire, the cables' 2 cycles, the switch's head in -> head out
    sw = core_latency_cycles(cfg)
    assert sw == 9 and rows[0]["mean"] == 2 + sw + 2 + 20 and rows[1]["mean"] == 3 * (2 + sw) + 2 + 20


@pytest.mark.parametrize("k", [2, 3, 4])
def test_throughput_and_latency_within_tolerance(measured, k):
    cfg, plan, fab, routes, wls, rows = measured
    wl, r = wls[k], rows[k]
    s = sim_measure(plan, fab, routes, wl, rtl_params(cfg, wl.words))
    d = compare(r, s)
    figures = {x: (round(r[x], 2), round(s[x], 2), f"{d[x]:+.1%}") for x in ("throughput", "mean", "p99")}
    assert all(abs(d[x]) <= tol for x, tol in TOLERANCE.items()), (wl.name, figures)


def test_the_check_can_fail(measured):
    """Without the RTL's FC packets and allocator the simulator misses the RTL by more than
    the tolerance on one of the same workloads: the comparison can tell."""
    cfg, plan, fab, routes, wls, rows = measured
    worst = 0.0
    for wl, r in zip(wls[2:], rows[2:], strict=True):
        d = compare(r, sim_measure(plan, fab, routes, wl, plain_params(cfg, wl.words)))
        worst = max(worst, *(abs(d[x]) / tol for x, tol in TOLERANCE.items()))
    assert worst > 1, f"the plain model is within tolerance too (worst {worst:.2f} of it)"
