"""The fabric simulator's fast core (netsim/fast.py, numba) in lock-step with its slow
reference (netsim/ref.py): every grant of every switch and every packet sent by every host,
at the same instant, in the same order per output, on the same fabrics and workloads; and
the same results (flow completion times, latencies, bytes, events, buffer high-water mark,
deadlock verdicts). A divergence is reported at the first instant it appears."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fabric.topology import fat_tree_2, torus_2d
from netsim import fast, ref
from netsim.common import DeadlockError, Params, Resilience
from netsim.workload import Flow, all_to_all, incast, permutation, uniform
from sm.fabric import Fabric
from sm.routing import route
from tests.test_netsim_ref import _clockwise, _ft_resilient, _ring, _star

# one worker compiles and reuses the numba cores (make sim runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("netsim")

COLS = ("t", "node", "in", "out", "flow", "seq")


def first_divergence(want: np.ndarray, got: np.ndarray) -> str | None:
    """Grant traces (t, node, in, out, flow, seq) compared instant by instant, each instant's
    grants ordered by (node, out): the first row that differs, named."""
    a = want[np.lexsort((want[:, 3], want[:, 1], want[:, 0]))]
    b = got[np.lexsort((got[:, 3], got[:, 1], got[:, 0]))]
    n = min(len(a), len(b))
    diff = np.flatnonzero((a[:n] != b[:n]).any(axis=1))
    if diff.size:
        k = int(diff[0])
        named = [dict(zip(COLS, x[k].tolist(), strict=True)) for x in (a, b)]
        return f"grant {k} at t = {min(a[k, 0], b[k, 0])}: reference {named[0]}, fast core {named[1]}"
    if len(a) != len(b):
        more, who = (a, "reference") if len(a) > len(b) else (b, "fast core")
        return f"the {who} made {abs(len(a) - len(b))} more grants, from t = {more[n, 0]}: {more[n].tolist()}"
    return None


def lockstep(fab, lft, flows, prm, resilience=None, sl2vl=None):
    a = ref.simulate(fab, lft, flows, prm, trace=True, resilience=resilience, sl2vl=sl2vl)
    b = fast.simulate(fab, lft, flows, prm, trace=True, resilience=resilience, sl2vl=sl2vl)
    div = first_divergence(a.trace, b.trace)
    assert div is None, div
    keys = ("end", "events", "packets", "delivered_packets", "max_occupancy", "drops", "pauses", "retransmits",
            "naks", "timeouts")
    assert [getattr(a, k) for k in keys] == [getattr(b, k) for k in keys], \
        {k: (getattr(a, k), getattr(b, k)) for k in keys if getattr(a, k) != getattr(b, k)}
    assert np.array_equal(a.fct, b.fct)
    assert np.array_equal(a.delivered_bytes, b.delivered_bytes)
    assert np.array_equal(np.sort(a.latency), np.sort(b.latency))
    assert a.counters == b.counters, (a.counters, b.counters)
    return a


SMALL = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=16)


def _ft():
    fab = Fabric.from_topology(fat_tree_2(4))
    return fab, route(fab, "ftree").lft


def test_first_divergence_names_the_instant_and_both_grants():
    a = np.array([[5, 1, 2, 3, 0, 0], [9, 1, 2, 3, 0, 1]])
    b = a.copy()
    b[1, 2] = 4
    msg = first_divergence(a, b)
    assert "t = 9" in msg and "'in': 2" in msg and "'in': 4" in msg
    assert "1 more grants" in first_divergence(a, a[:1])
    assert first_divergence(a, a.copy()) is None


@pytest.mark.parametrize("buf", [8, 16, 64])
def test_permutation_on_a_fat_tree(buf):
    fab, lft = _ft()
    res = lockstep(fab, lft, permutation(fab.C, 32 * 1024, seed=buf), Params(prop=200, sw_latency=40, mtu=256,
                                                                               buf_blocks=buf))
    assert res.delivered_packets == res.packets


@pytest.mark.parametrize("mode", ["ib", "pfc"])
def test_incast_and_staggered_starts(mode):
    fab, lft = _ft()
    flows = incast(list(range(1, 6)), 0, 20_000) + [Flow(6, 3, 50_000, start=3_000), Flow(7, 3, 7, start=3_000)]
    res = lockstep(fab, lft, flows, Params(prop=200, sw_latency=40, mtu=256, buf_blocks=40, mode=mode,
                                           pause_delay=30))
    assert res.delivered_packets == res.packets
    assert (res.pauses > 0) == (mode == "pfc")


def test_pfc_without_headroom_drops_the_same_packets():
    fab, lft = _ft()
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=20, mode="pfc", xoff=18, xon=10)
    res = lockstep(fab, lft, incast(list(range(1, 8)), 0, 30_000), prm)
    assert res.drops > 0 and res.delivered_packets + res.drops == res.packets


def test_all_to_all_with_two_vls_and_a_torus():
    fab = Fabric.from_topology(torus_2d(3, 3, hosts=1))
    lft = route(fab, "updn").lft
    flows = [Flow(f.src, f.dst, f.size, vl=(f.src + f.dst) % 2) for f in all_to_all(fab.C, 3_000)]
    lockstep(fab, lft, flows, Params(prop=150, sw_latency=30, mtu=512, buf_blocks=24, vls=2))


@pytest.mark.parametrize("mode", ["ib", "pfc"])
def test_a_deadlock_is_the_same_deadlock(mode):
    n = 4
    fab = _ring(n)
    lft = _clockwise(fab)
    flows = [Flow(i, (i + 3) % n, 256 * 256) for i in range(n)]
    prm = Params(prop=100, sw_latency=10, mtu=256, buf_blocks=10, mode=mode, xoff=6, xon=2)
    errs = []
    for sim in (ref, fast):
        with pytest.raises(DeadlockError) as e:
            sim.simulate(fab, lft, flows, prm)
        errs.append(e.value)
    assert errs[0].cycle == errs[1].cycle and errs[0].t == errs[1].t and len(errs[0].cycle) == n + 1


def test_a_switch_of_more_than_64_ports():
    """The fast core keeps a switch's ports in 64-bit masks: ports 63, 64 and beyond cross a
    word boundary (a radix-80 fat tree has 80-port switches)."""
    fab, lft = _star(130)
    flows = incast([62, 64, 65, 127, 128, 129, 0], 63, 8_000) + incast([1, 2, 63], 127, 8_000) + \
        [Flow(h, (h + 64) % 130, 5_000) for h in range(0, 130, 7)]
    res = lockstep(fab, lft, flows, SMALL)
    assert res.delivered_packets == res.packets
    # port 63 alone: the last bit of a mask word, with no other port of its word to arbitrate
    for src, dst in ((100, 62), (62, 100), (62, 63)):
        res = lockstep(fab, lft, [Flow(src, dst, 5_000)], SMALL)
        assert res.delivered_packets == res.packets


def test_max_time_stops_both_at_the_same_point():
    fab, lft = _ft()
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=16, max_time=20_000)
    res = lockstep(fab, lft, permutation(fab.C, 256 * 1024, seed=4), prm)
    assert res.end == 20_000 and 0 < res.delivered_packets < res.packets


@pytest.mark.parametrize("transport", ["gbn", "gb0", "irn"])
def test_lossy_transports_lose_and_resend_the_same_packets(transport):
    fab, lft = _ft()
    flows = incast(list(range(1, 6)), 0, 20_000) + [Flow(6, 3, 50_000, start=3_000, vl=1)]
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=12, vls=2, mode="lossy", transport=transport,
                 rto=20_000, drop_every=9, max_time=3_000_000)
    res = lockstep(fab, lft, flows, prm)
    assert res.drops > 0 and res.retransmits > 0


def test_congestion_control_marks_and_throttles_the_same_packets():
    fab, lft = _ft()
    flows = incast(list(range(1, 8)), 0, 40_000) + [Flow(1, 5, 60_000, vl=1)]
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=40, vls=2, cc=True, cc_threshold=8, ccti_timer=2_000,
                 cct_step=300)
    res = lockstep(fab, lft, flows, prm)
    assert 0 < res.becn <= res.fecn and res.delivered_packets == res.packets     # (marked at several hops: one BECN)


def test_dcqcn_marks_cuts_and_recovers_the_same():
    """RoCE with DCQCN: RED marking (the same pseudo-random draws), a CNP per interval per
    flow, the rate cuts, alpha and the timers' and byte counter's increases, float for float."""
    fab, lft = _ft()
    flows = incast([1, 2, 3, 5, 6], 0, 60_000) + [Flow(4, 7, 40_000), Flow(7, 1, 30_000, start=9_000)]
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=60, mode="pfc", dcqcn=True, ecn_kmin=4, ecn_kmax=30,
                 ecn_pmax=0.3, cnp_interval=3_000, alpha_timer=4_000, rate_timer=3_000, byte_counter=20_000,
                 rate_ai=0.01, rate_hai=0.05)
    res = lockstep(fab, lft, flows, prm)
    assert res.fecn > res.becn > 0 and res.delivered_packets == res.packets


@pytest.mark.parametrize("mode,extra", [("ib", {}), ("pfc", {}), ("ib", dict(fc_bytes=8, fc_update=4, fc_period=900))])
def test_hoqlife_discards_the_same_heads(mode, extra):
    """HOQLife: heads too long at the head of their VOQ are discarded, the same ones at the
    same instants; a cyclic routing's deadlock is broken by them (and does not end the run)."""
    fab, lft = _ft()
    flows = incast([1, 2, 3, 5, 6, 7], 0, 30_000) + [Flow(4, 0, 10_000, start=2_000)]
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=20, mode=mode, hoq_life=2_500, **extra)
    res = lockstep(fab, lft, flows, prm)
    assert res.counters["hoq_discards"] == res.drops > 0 and res.delivered_packets + res.drops == res.packets
    n = 4
    ring = _ring(n)
    pfc = dict(xoff=6, xon=2) if mode == "pfc" else {}
    res = lockstep(ring, _clockwise(ring), [Flow(i, (i + 3) % n, 64 * 256) for i in range(n)],
                   Params(prop=100, sw_latency=10, mtu=256, buf_blocks=10, mode=mode, hoq_life=20_000, **pfc,
                          **extra))
    assert res.drops > 0 and res.delivered_packets + res.drops == res.packets


@pytest.mark.parametrize("mode", ["ib", "pfc"])
@pytest.mark.parametrize("what", ["ar", "alt", "both", "none"])
def test_adaptive_routing_and_failover_take_the_same_ports(mode, what):
    """AR groups, failover alternates and a leaf's up-link failing mid-run: the same grants
    on the same ports, the same packets discarded as DEST_DOWN or stranded (HOQLife)."""
    fab, lft, plan, alt = _ft_resilient()
    leaf = int(fab.ca_sw[0])
    up = [p for p in range(1, int(fab.nports[leaf]) + 1) if fab.nbr[leaf, p] >= 0]
    fails = [(3_000, leaf, up[0]), (9_000, int(fab.ca_sw[fab.C - 1]), up[-1])]
    rs = Resilience(group=plan.group if what in ("ar", "both") else None,
                    adaptive=plan.adaptive if what in ("ar", "both") else None,
                    alt=alt if what in ("alt", "both") else None, failures=fails)
    flows = uniform(fab.C, 120, 2_000, seed=3) + [Flow(i, (i + 3) % fab.C, 30 * 256) for i in range(fab.C)]
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=24, mode=mode, hoq_life=20_000)
    res = lockstep(fab, lft, flows, prm, rs)           # (HOQLife: what waits for a port down with
    c = res.counters                                   #  nothing to take it is discarded in time)
    assert res.delivered_packets + res.drops == res.packets and c["dest_down"] > 0
    assert c["dest_down"] + c["hoq_discards"] == res.drops


def test_packets_stranded_by_a_failure_are_the_same_deadlock():
    fab, lft, _plan, _alt = _ft_resilient()
    leaf = int(fab.ca_sw[0])
    far = [c for c in range(fab.C) if fab.ca_sw[c] != leaf]
    flows = [Flow(a, b, 100 * 256) for a in range(fab.C) if fab.ca_sw[a] == leaf for b in far]
    rs = Resilience(failures=[(5_000, leaf, int(lft[leaf, fab.lid_ca[far[0]]]))])
    errs = []
    for sim in (ref, fast):
        with pytest.raises(DeadlockError, match="ports down with nothing to take them") as e:
            sim.simulate(fab, lft, flows, Params(prop=200, sw_latency=40, mtu=256, buf_blocks=64), resilience=rs)
        errs.append(e.value)
    assert str(errs[0]) == str(errs[1]) and errs[0].t == errs[1].t


def test_adaptive_routing_alone_spreads_the_same_way():
    fab, lft, plan, _alt = _ft_resilient()
    flows = [Flow(i, (i + 2) % fab.C, 40 * 256) for i in range(fab.C)] + incast([1, 3, 5], 6, 20 * 256)
    res = lockstep(fab, lft, flows, SMALL, Resilience(group=plan.group, adaptive=plan.adaptive))
    assert res.delivered_packets == res.packets and res.counters["dest_down"] == 0


@pytest.mark.parametrize("mode", ["ib", "pfc"])
@pytest.mark.parametrize("ar", [False, True])
def test_vlarb_picks_the_same_vls(mode, ar):
    """VLArb's high and low tables, a high-priority limit, weights smaller and larger than a
    packet, on three VLs, alone and with AR and a failure: the same grants."""
    fab, lft, plan, alt = _ft_resilient()
    rng = np.random.default_rng(7)
    flows = [Flow(int(a), int(b), int(rng.integers(1, 8_000)), start=int(rng.integers(0, 4_000)),
                  vl=int(rng.integers(3))) for a, b in rng.integers(0, fab.C, (150, 2)) if a != b]
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=24, mode=mode, vls=3, hoq_life=30_000 if ar else 0,
                 vlarb_high=((2, 3), (0, 0), (2, 9)), vlarb_low=((0, 4), (1, 12), (0, 1), (1, 0)), vlarb_limit=1)
    leaf = int(fab.ca_sw[0])
    rs = Resilience(group=plan.group, adaptive=plan.adaptive, alt=alt,
                    failures=[(6_000, leaf, int(lft[leaf, fab.lid_ca[fab.C - 1]]))]) if ar else None
    res = lockstep(fab, lft, flows, prm, rs)
    assert res.delivered_packets + res.drops == res.packets


@pytest.mark.parametrize("mode", ["ib", "pfc", "lossy"])
def test_sl2vl_moves_packets_between_lanes_the_same(mode):
    """A random SL2VL table per switch (input, output, SL), 3 VLs, VLArb on top: every hop
    may change a packet's VL; the same grants, and the same credit and buffer accounting."""
    fab, lft, _plan, _alt = _ft_resilient()
    rng = np.random.default_rng(11)
    flows = [Flow(int(a), int(b), int(rng.integers(1, 8_000)), start=int(rng.integers(0, 4_000)),
                  vl=int(rng.integers(3))) for a, b in rng.integers(0, fab.C, (150, 2)) if a != b]
    sw = rng.integers(0, 3, (fab.S, fab.P + 1, fab.P + 1, 16)).astype(np.uint8)
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=24, mode=mode, vls=3,
                 vlarb_low=((0, 4), (1, 12), (2, 8)), **({"rto": 20_000} if mode == "lossy" else {}))
    res = lockstep(fab, lft, flows, prm, sl2vl=sw)
    assert res.delivered_packets == res.packets


# the RTL's link layer and allocator (tests/test_netsim_rtl.py validates them against the RTL)
RTL = dict(alloc="islip", islip_iterations=1, islip_cycle=8, fc_bytes=8, fc_update=4, fc_period=2_048)


@pytest.mark.parametrize("iters,fair", [(1, 8), (1, 1), (0, 8), (2, 3)])
def test_the_rtls_allocator_and_fc_packets(iters, fair):
    fab, lft = _ft()
    flows = permutation(fab.C, 24 * 1024, seed=iters + fair) + incast([1, 2, 3, 5], 6, 12_000) + [
        Flow(4, 0, 9_000, vl=1), Flow(7, 0, 9_000, start=5_000, vl=1)]
    prm = Params(prop=16, sw_latency=64, mtu=256, buf_blocks=16, vls=2, **RTL | dict(islip_iterations=iters,
                                                                                     islip_fair_every=fair))
    res = lockstep(fab, lft, flows, prm)
    assert res.delivered_packets == res.packets and res.counters["fc_packets"] > 0


def test_fc_refreshes_stop_when_idle_and_start_again():
    """A period short against the gap between two bursts: the refreshes stop in the gap
    (else an idle fabric would never end) and start again with the second burst; the
    blocks an FC update holds back (fc_update above a packet's) come back by them."""
    fab, lft = _ft()
    flows = [Flow(1, 5, 3_000), Flow(2, 6, 3_000, start=200_000)]
    prm = Params(prop=16, sw_latency=64, mtu=256, buf_blocks=16, **RTL | dict(fc_update=15, fc_period=500))
    res = lockstep(fab, lft, flows, prm)
    assert res.delivered_packets == res.packets and res.end < 300_000


def test_the_rtls_allocator_on_a_switch_of_more_than_64_ports():
    fab, lft = _star(130)
    flows = incast([62, 64, 65, 127, 128, 129, 0], 63, 8_000) + [Flow(h, (h + 64) % 130, 5_000)
                                                                   for h in range(0, 130, 7)]
    res = lockstep(fab, lft, flows, Params(prop=16, sw_latency=64, mtu=256, buf_blocks=16, **RTL))
    assert res.delivered_packets == res.packets


def test_a_deadlock_under_the_rtls_link_layer():
    n = 4
    fab = _ring(n)
    lft = _clockwise(fab)
    flows = [Flow(i, (i + 3) % n, 256 * 256) for i in range(n)]
    prm = Params(prop=100, sw_latency=10, mtu=256, buf_blocks=10, **RTL)
    errs = []
    for sim in (ref, fast):
        with pytest.raises(DeadlockError) as e:
            sim.simulate(fab, lft, flows, prm)
        errs.append(e.value)
    assert errs[0].cycle == errs[1].cycle and errs[0].t == errs[1].t and len(errs[0].cycle) == n + 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n=st.integers(1, 40), size=st.integers(1, 6_000),
       buf=st.integers(5, 40), mtu=st.sampled_from([64, 256, 300]), swl=st.integers(0, 100),
       spread=st.integers(0, 5_000), mode=st.sampled_from(["ib", "ib+cc", "ib+rtl", "pfc", "pfc+dcqcn", "lossy"]),
       transport=st.sampled_from(["gbn", "gb0", "irn"]), window=st.sampled_from([0, 3, 16]),
       drop_every=st.sampled_from([0, 5, 40]))
@example(seed=4698, n=31, size=4512, buf=5, mtu=64, swl=0, spread=5, mode="ib+rtl", transport="gbn", window=0,
         drop_every=5)
def test_random_workloads(seed, n, size, buf, mtu, swl, spread, mode, transport, window, drop_every):
    fab, lft = _ft()
    rng = np.random.default_rng(seed)
    flows = [Flow(f.src, f.dst, int(rng.integers(1, size + 1)), start=int(rng.integers(0, spread + 1)))
             for f in uniform(fab.C, n, size, seed)]
    pkt = -(-(mtu + 26) // 64)
    buf = max(buf, 2 * pkt + 1)
    lossy = dict(transport=transport, window=window, drop_every=drop_every, rto=int(rng.integers(2_000, 30_000)),
                 max_time=1_000_000) if mode == "lossy" else {}
    if mode == "ib+cc":
        mode, lossy = "ib", dict(cc=True, cc_threshold=int(rng.integers(1, buf)), cc_marking_rate=drop_every % 3,
                                 ccti_increase=1 + window % 3, ccti_limit=int(rng.integers(5, 128)),
                                 ccti_timer=int(rng.integers(100, 5_000)), cct_step=int(rng.integers(0, 2_000)))
    if mode == "pfc+dcqcn":
        kmin = int(rng.integers(0, buf))
        mode, lossy = "pfc", dict(dcqcn=True, ecn_kmin=kmin, ecn_kmax=kmin + int(rng.integers(1, 40)),
                                  ecn_pmax=float(rng.uniform(0.01, 1)), cnp_interval=int(rng.integers(0, 5_000)),
                                  dcqcn_g=float(rng.uniform(0.001, 0.5)), alpha_timer=int(rng.integers(100, 5_000)),
                                  rate_timer=int(rng.integers(100, 5_000)), byte_counter=int(rng.integers(500, 50_000)),
                                  rate_fr_steps=int(rng.integers(0, 6)), rate_ai=float(rng.uniform(0, 0.1)),
                                  rate_hai=float(rng.uniform(0, 0.3)), rate_min=float(rng.uniform(0.001, 0.5)))
    if mode == "ib+rtl":                  # the RTL's allocator and FC packets, any of their settings
        mode, lossy = "ib", dict(alloc="islip", islip_iterations=int(rng.integers(0, 4)),
                                 islip_fair_every=int(rng.integers(1, 9)), islip_cycle=int(rng.integers(1, 60)),
                                 fc_bytes=int(rng.integers(1, 65)), fc_update=int(rng.integers(1, buf + 1)),
                                 fc_period=int(rng.integers(50, 5_000)))
    if mode != "lossy" and rng.random() < 0.3:     # HOQLife on top, now and then
        lossy = lossy | dict(hoq_life=int(rng.integers(500, 20_000)))
    prm = Params(prop=int(rng.integers(1, 400)), sw_latency=swl, mtu=mtu, buf_blocks=buf, mode=mode,
                 pause_delay=int(rng.integers(0, 100)), xoff=buf - pkt, xon=int(rng.integers(0, buf - pkt)), **lossy)
    lockstep(fab, lft, flows, prm)
