"""The fabric simulator's slow reference (netsim/ref.py): what credit flow control, PFC,
cut-through switches, round-robin arbitration and the lossy transports must give, each
against a figure worked out here from the parameters, not from the simulator."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabric.topology import HCA, SWITCH, Topology, fat_tree_2
from netsim.experiments import star
from netsim.ref import BLOCK, DeadlockError, Params, Resilience, RoutingError, simulate
from netsim.workload import Flow, WorkloadError, incast, permutation
from sm.fabric import Fabric
from sm.routing import route

# one worker compiles and reuses the numba cores (make sim runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("netsim")

SMALL = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=64)


def _ft():
    fab = Fabric.from_topology(fat_tree_2(4))
    return fab, route(fab, "ftree").lft


def _star(n: int):
    fab = star(n)
    return fab, route(fab, "minhop").lft


def _ring(n: int):
    """n switches in a ring (port 1 to the next, port 2 to the previous), a host on port 3."""
    t = Topology("ring")
    for i in range(n):
        t.add(SWITCH, f"S{i}", 3)
        t.add(HCA, f"H{i}", 1)
        t.connect(f"S{i}", 3, f"H{i}", 1)
    for i in range(n):
        t.connect(f"S{i}", 1, f"S{(i + 1) % n}", 2)
    return Fabric.from_topology(t)


def _clockwise(fab) -> np.ndarray:
    """_ring's LFT with every destination clockwise (port 1): a cycle in its channel
    dependencies, the routing that deadlocks."""
    lft = np.full((fab.S, fab.L), 255, dtype=np.uint8)
    for s in range(fab.S):
        for c in range(fab.C):
            lft[s, fab.lid_ca[c]] = 3 if fab.ca_sw[c] == s else 1
    return lft


def test_one_packet_crosses_in_cut_through_time():
    fab, lft = _ft()
    src, dst = 0, fab.C - 1                      # different leaves: 3 switches, 4 links
    res = simulate(fab, lft, [Flow(src, dst, 100)], SMALL)
    wire = 100 + SMALL.header
    assert res.latency.tolist() == [4 * SMALL.prop + 3 * SMALL.sw_latency + wire]
    # a flow of 5 packets pipelines: serialisation counts once per packet, latency once
    res = simulate(fab, lft, [Flow(src, dst, 5 * 256)], SMALL)
    assert res.fct.tolist() == [4 * SMALL.prop + 3 * SMALL.sw_latency + 5 * (256 + SMALL.header)]


def test_permutation_delivers_everything_within_the_buffers():
    fab, lft = _ft()
    flows = permutation(fab.C, 64 * 1024, seed=3)
    res = simulate(fab, lft, flows, SMALL)
    assert res.delivered_packets == res.packets
    assert (res.fct > 0).all()
    assert res.delivered_bytes.sum() == sum(f.size for f in flows)
    for f in flows:
        assert res.delivered_bytes[f.dst] >= f.size
    assert 0 < res.max_occupancy <= SMALL.buf_blocks


@pytest.mark.parametrize("blocks", [8, 16, 32])
def test_a_small_buffer_limits_a_flow_to_its_credit_loop(blocks):
    """One flow through one switch: the sender may have `blocks` blocks outstanding; each
    block's credit comes back one loop later: the head's propagation, the switch's latency,
    the packet's serialisation out of the buffer and the credit's propagation."""
    fab, lft = _star(2)
    prm = Params(prop=500, sw_latency=50, mtu=256, buf_blocks=blocks)
    size = 400 * 256
    res = simulate(fab, lft, [Flow(0, 1, size)], prm)
    wire = 256 + prm.header
    per_pkt = -(-wire // BLOCK)
    loop = 2 * prm.prop + prm.sw_latency + wire
    in_flight = blocks // per_pkt                      # whole packets the credit covers
    want = min(1.0, in_flight * wire / loop)           # fraction of the link's rate
    got = 400 * wire / res.fct[0]
    assert got == pytest.approx(want, rel=0.03), (got, want)


def test_a_large_buffer_keeps_the_link_full():
    fab, lft = _star(2)
    prm = Params(prop=500, sw_latency=50, mtu=256, buf_blocks=256)
    res = simulate(fab, lft, [Flow(0, 1, 400 * 256)], prm)
    wire = 256 + prm.header
    assert res.fct[0] == 400 * wire + 2 * prm.prop + prm.sw_latency


def test_incast_shares_the_receivers_link_evenly():
    fab, lft = _star(4)
    size = 200 * 256
    res = simulate(fab, lft, incast([0, 1, 2], 3, size), SMALL)
    wire = 256 + SMALL.header
    # the receiver's link is busy back to back: 600 packets in 600 packet times
    end = res.fct.max()
    assert end == pytest.approx(600 * wire, rel=0.02)
    # round robin: every flow finishes within a few packet times of the others
    assert res.fct.max() - res.fct.min() <= 3 * wire


def test_a_cyclic_routing_deadlocks_and_names_its_cycle():
    n = 4
    fab = _ring(n)
    lft = _clockwise(fab)
    prm = Params(prop=100, sw_latency=10, mtu=256, buf_blocks=10)
    flows = [Flow(i, (i + 3) % n, 256 * 256) for i in range(n)]
    with pytest.raises(DeadlockError) as e:
        simulate(fab, lft, flows, prm)
    assert len(e.value.cycle) == n + 1 and e.value.cycle[0] == e.value.cycle[-1]
    assert all("port 2 VL0" in b for b in e.value.cycle), e.value.cycle
    # the same ring routed up*/down* (no cycle in its channel dependencies) delivers all
    res = simulate(fab, route(fab, "updn").lft, flows, prm)
    assert res.delivered_packets == res.packets


def test_hoqlife_discards_only_heads_stalled_that_long():
    """HOQLife: an incast's heads wait about two packet times for the shared output, so a
    lifetime of ten changes nothing; the cyclic routing's deadlock is broken by discards
    instead (every packet delivered or discarded, and the run ends)."""
    fab, lft = _star(4)
    flows = incast([0, 1, 2], 3, 100 * 256)
    wire = 256 + SMALL.header
    plain = simulate(fab, lft, flows, SMALL)
    long = simulate(fab, lft, flows, dataclasses.replace(SMALL, hoq_life=10 * wire))
    assert long.counters["hoq_discards"] == long.drops == 0 and (long.fct == plain.fct).all()
    short = simulate(fab, lft, flows, dataclasses.replace(SMALL, hoq_life=wire + wire // 2, buf_blocks=40))
    assert short.counters["hoq_discards"] > 0
    assert short.delivered_packets + short.drops == short.packets
    n = 4
    ring = _ring(n)
    ring_flows = [Flow(i, (i + 3) % n, 256 * 256) for i in range(n)]
    res = simulate(ring, _clockwise(ring), ring_flows,
                   Params(prop=100, sw_latency=10, mtu=256, buf_blocks=10, hoq_life=20_000))
    assert res.drops > 0 and res.delivered_packets + res.drops == res.packets


def _ft_resilient():
    """fat_tree_2(4) routed ftree, its AR plan and failover alternates as our SM makes them."""
    from sm.adaptive import ar_plan
    from sm.failover import alternates
    fab = Fabric.from_topology(fat_tree_2(4))
    routes = route(fab, "ftree")
    return fab, routes.lft, ar_plan(fab, routes), alternates(fab, routes).alt


def test_adaptive_routing_spreads_flows_that_share_an_up_link():
    """Two flows from one leaf whose destinations the LFT sends up the same link: alone they
    share it (each at half rate); with the SM's AR groups the second up-link takes half the
    packets and both finish in about half the time."""
    fab, lft, plan, _alt = _ft_resilient()
    leaf = int(fab.ca_sw[0])
    mine = [c for c in range(fab.C) if fab.ca_sw[c] == leaf]
    far = [c for c in range(fab.C) if fab.ca_sw[c] != leaf]
    d1, d2 = next((a, b) for a in far for b in far if a < b and lft[leaf, fab.lid_ca[a]] == lft[leaf, fab.lid_ca[b]])
    flows = [Flow(mine[0], d1, 200 * 256), Flow(mine[1], d2, 200 * 256)]
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=64)
    static = simulate(fab, lft, flows, prm, trace=True)
    ar = simulate(fab, lft, flows, prm, trace=True, resilience=Resilience(group=plan.group, adaptive=plan.adaptive))
    wire = 256 + prm.header
    assert static.fct.max() >= 400 * wire and ar.fct.max() <= 230 * wire, (static.fct, ar.fct)
    ups = [p for p in range(1, int(fab.nports[leaf]) + 1) if fab.nbr[leaf, p] >= 0]
    used = {p: int(((ar.trace[:, 1] == leaf) & (ar.trace[:, 3] == p)).sum()) for p in ups}
    assert min(used.values()) >= 150, used


def test_failover_takes_the_alternate_and_a_dead_port_discards():
    """A leaf's up-link fails under load: with the SM's alternates its queues and new packets
    leave by the other up-link and everything is delivered; without, what is routed to it is
    discarded (DEST_DOWN) and counted, and nothing hangs."""
    fab, lft, _plan, alt = _ft_resilient()
    leaf = int(fab.ca_sw[0])
    ups = [p for p in range(1, int(fab.nports[leaf]) + 1) if fab.nbr[leaf, p] >= 0]
    far = [c for c in range(fab.C) if fab.ca_sw[c] != leaf]
    src = [c for c in range(fab.C) if fab.ca_sw[c] == leaf]
    flows = [Flow(a, b, 100 * 256) for a in src for b in far]
    prm = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=64)
    cut = [(5_000, leaf, lft[leaf, fab.lid_ca[far[0]]])]
    good = simulate(fab, lft, flows, prm, resilience=Resilience(alt=alt, failures=cut))
    assert good.delivered_packets == good.packets and good.counters["dest_down"] == 0
    with pytest.raises(DeadlockError, match=f"ports down with nothing to take them: switch {leaf} port {cut[0][2]}"):
        simulate(fab, lft, flows, prm, resilience=Resilience(failures=cut))    # what was queued stays
    bad = simulate(fab, lft, flows, dataclasses.replace(prm, hoq_life=20_000), resilience=Resilience(failures=cut))
    c = bad.counters
    assert c["dest_down"] > 0 and c["hoq_discards"] > 0 and c["dest_down"] + c["hoq_discards"] == bad.drops
    assert bad.delivered_packets + bad.drops == bad.packets
    with pytest.raises(ValueError, match=r"failures\[0\].*host links do not fail"):
        simulate(fab, lft, flows, prm, resilience=Resilience(failures=[(0, leaf, int(fab.ca_port[src[0]]))]))
    with pytest.raises(ValueError, match="alloc 'rr' only"):
        simulate(fab, lft, flows, dataclasses.replace(prm, alloc="islip"), resilience=Resilience(alt=alt))
    assert len(ups) == 2


def test_vlarb_weights_share_an_output_between_vls():
    """VLArb (IBA §7.6.9): two hosts send on VL0 and VL1 through one output; with low-priority
    weights of 1 and 3 packets the output carries VL1 three times as often while both are
    backlogged; VL1 in the high-priority table with LimitOfHighPriority 0 alternates a high
    and a low packet; without tables the lower VL goes first."""
    fab, lft = _star(3)
    size = 120 * 256
    flows = [Flow(0, 2, size, vl=0), Flow(1, 2, size, vl=1)]
    blocks = -(-(256 + SMALL.header) // BLOCK)
    base = dataclasses.replace(SMALL, vls=2)

    def share(prm):
        tr = simulate(fab, lft, flows, prm, trace=True).trace
        first = tr[tr[:, 3] == fab.ca_port[2]][:80, 4]          # the first 80 packets out to host 2
        return int((first == 1).sum()), int((first == 0).sum())
    one, zero = share(dataclasses.replace(base, vlarb_low=((0, blocks), (1, 3 * blocks))))
    assert (one, zero) == (60, 20), (one, zero)
    one, zero = share(dataclasses.replace(base, vlarb_high=((1, 255),), vlarb_low=((0, blocks),), vlarb_limit=0))
    assert (one, zero) == (40, 40), (one, zero)
    one, zero = share(dataclasses.replace(base, vlarb_high=((1, 255),), vlarb_low=((0, blocks),)))
    assert (one, zero) == (80, 0), (one, zero)
    with pytest.raises(ValueError, match="vlarb_low"):
        simulate(fab, lft, flows, dataclasses.replace(base, vlarb_low=((15, 1),)))


def test_sl2vl_maps_service_levels_to_lanes_per_hop():
    """SL2VL (IBA §7.6.6): one table for every port is the same run as flows given those VLs;
    a switch's own table swapping two SLs' VLs swaps which flow VLArb favours on its output;
    a table naming a VL the run does not have is refused, naming the entry."""
    fab, lft = _star(3)
    size = 120 * 256
    blocks = -(-(256 + SMALL.header) // BLOCK)
    prm = dataclasses.replace(SMALL, vls=2, vlarb_low=((0, blocks), (1, 3 * blocks)))
    table = np.zeros(16, np.int64)
    table[5] = 1
    a = simulate(fab, lft, [Flow(0, 2, size, vl=5), Flow(1, 2, size, vl=0)], prm, sl2vl=table)
    b = simulate(fab, lft, [Flow(0, 2, size, vl=1), Flow(1, 2, size, vl=0)], prm)
    assert (a.fct == b.fct).all() and a.end == b.end and a.fct[0] < a.fct[1]
    sw = np.zeros((fab.S, fab.P + 1, fab.P + 1, 16), np.uint8)
    sw[:, :, :, 0], sw[:, :, :, 1] = 1, 0                   # at the switch: SL0 -> VL1, SL1 -> VL0

    def share(res):
        first = res.trace[res.trace[:, 3] == fab.ca_port[2]][:80, 4]
        return int((first == 0).sum()), int((first == 1).sum())
    flows = [Flow(0, 2, size, vl=0), Flow(1, 2, size, vl=1)]
    assert share(simulate(fab, lft, flows, prm, trace=True)) == (20, 60)
    assert share(simulate(fab, lft, flows, prm, trace=True, sl2vl=sw)) == (60, 20)
    sw[0, 1, 3, 7] = 2
    with pytest.raises(ValueError, match=r"sl2vl\[0, 1, 3, 7\] = 2"):
        simulate(fab, lft, flows, prm, sl2vl=sw)


def test_bad_input_is_refused_before_the_run():
    fab, lft = _ft()
    with pytest.raises(WorkloadError, match="to itself"):
        simulate(fab, lft, [Flow(1, 1, 10)])
    with pytest.raises(WorkloadError, match="no such host"):
        simulate(fab, lft, [Flow(0, 99, 10)])
    with pytest.raises(WorkloadError, match="positive"):
        simulate(fab, lft, [Flow(0, 1, -5)])
    holed = lft.copy()
    holed[:, fab.lid_ca[5]] = 255
    with pytest.raises(RoutingError, match="no route to LID"):
        simulate(fab, holed, [Flow(0, 5, 10)])


def _lossy(transport, **kw):
    return Params(**{**dict(mode="lossy", transport=transport, prop=500, sw_latency=50, mtu=256, buf_blocks=256,
                            rto=200_000), **kw})


def test_go_back_n_resends_from_the_loss_and_finishes():
    """One flow through one switch, every 50th data packet into the switch dropped: each loss
    costs one NAK and the packets sent after the lost one until the NAK is back."""
    fab, lft = _star(2)
    n = 400
    res = simulate(fab, lft, [Flow(0, 1, n * 256)], _lossy("gbn", drop_every=50))
    assert res.delivered_packets == n and res.fct[0] > 0 and res.timeouts == 0
    assert res.naks == res.drops
    wire = 256 + 26
    # until the NAK comes back the sender goes on: the loop is the lost packet's way to the
    # receiver, the NAK's way back (ACKs go first at a host), and the packet being sent
    loop = 2 * (2 * 500 + 50) + 30 + wire
    assert res.retransmits == pytest.approx(res.drops * -(-loop // wire), abs=res.drops)


def test_go_back_0_livelocks_where_go_back_n_does_not():
    """Guo et al. (SIGCOMM 2016, section 4): every 256th packet dropped, a message of 1,024
    packets; going back to the message's first packet never gets 1,024 packets through in a
    row, so the message never completes; going back to the lost one does."""
    fab, lft = _star(2)
    flows = [Flow(0, 1, 1024 * 256)]
    gb0 = simulate(fab, lft, flows, _lossy("gb0", drop_every=256, max_time=5_000_000))
    assert gb0.fct[0] == -1 and gb0.delivered_bytes[1] < 256 * 256
    gbn = simulate(fab, lft, flows, _lossy("gbn", drop_every=256))
    assert gbn.fct[0] > 0 and gbn.delivered_packets == 1024


def test_selective_retransmission_resends_only_the_lost():
    fab, lft = _star(2)
    res = simulate(fab, lft, [Flow(0, 1, 400 * 256)], _lossy("irn", drop_every=50))
    assert res.delivered_packets == 400 and res.timeouts == 0
    assert res.retransmits == res.drops


def test_a_lossy_incast_overflows_and_recovers():
    fab, lft = _star(4)
    size = 100 * 256
    for tp in ("gbn", "irn"):
        res = simulate(fab, lft, incast([0, 1, 2], 3, size), _lossy(tp, buf_blocks=20, rto=20_000))
        assert res.drops > 0, tp
        assert (res.fct > 0).all() and res.delivered_bytes[3] == 3 * size, tp


def test_congestion_control_throttles_an_incast_without_starving_it():
    """IBA Annex A10 on a 4-to-1 incast: the congested output marks FECN, every mark comes
    back to its source as a BECN, the sources slow down (the output's queue stays lower),
    and the receiver's link still carries the incast at >= 80 % of its rate."""
    fab, lft = _star(5)
    size = 300 * 256
    base = Params(prop=200, sw_latency=40, mtu=256, buf_blocks=64)
    plain = simulate(fab, lft, incast([0, 1, 2, 3], 4, size), base)
    cc = simulate(fab, lft, incast([0, 1, 2, 3], 4, size), Params(**{**base.__dict__, "cc": True, "cc_threshold": 16,
                                                                      "ccti_timer": 3_000, "cct_step": 200}))
    assert plain.fecn == plain.becn == 0
    assert cc.fecn > 0 and cc.becn == cc.fecn
    assert cc.delivered_packets == cc.packets
    wire = 256 + 26
    assert 4 * 300 * wire / cc.fct.max() >= 0.8
    assert np.mean(cc.latency) < np.mean(plain.latency)       # shorter queues


def test_dcqcn_stops_an_incasts_pauses_and_shortens_its_queue():
    """RoCE's incast of 8 to 1 under PFC alone pauses the senders again and again and fills
    the buffer to XOFF; with DCQCN (RED marking at the output, a CNP per 5 us per flow,
    the senders' rates cut) the queue stays near ECN's thresholds and no PAUSE is sent.
    Every byte arrives either way."""
    fab, lft = _star(10)
    flows = incast(list(range(1, 9)), 0, 2_000_000)
    base = dict(mode="pfc", mtu=1024, buf_blocks=2000, prop=1250, sw_latency=160)
    dq = dict(dcqcn=True, ecn_kmin=40, ecn_kmax=400, ecn_pmax=0.2, rate_timer=68_750, alpha_timer=68_750,
              cnp_interval=62_500, byte_counter=1_000_000)
    plain = simulate(fab, lft, flows, Params(**base))
    cc = simulate(fab, lft, flows, Params(**base, **dq))
    assert plain.pauses > 1000 and plain.fecn == 0
    assert cc.pauses == 0 and cc.fecn > cc.becn > 0
    assert cc.max_occupancy < plain.max_occupancy / 2
    assert cc.delivered_packets == cc.packets and plain.delivered_packets == plain.packets
    assert np.percentile(cc.latency, 99) < np.percentile(plain.latency, 99) / 2


def test_dcqcn_random_draws_are_the_fast_cores():
    from netsim.common import uniform01
    from netsim.fast import _uniform01
    rng = np.random.default_rng(4)
    for _ in range(2000):
        s, o, k, q = (int(x) for x in rng.integers(0, 1 << 20, 4))
        t = int(rng.integers(0, 1 << 45))
        u = uniform01(s, o, k, q, t)
        assert 0 <= u < 1 and u == _uniform01(s, o, k, q, t)


def test_dcqcn_parameters_are_checked():
    with pytest.raises(ValueError, match="dcqcn"):
        Params(mode="ib", dcqcn=True).check()
    with pytest.raises(ValueError, match="dcqcn"):
        Params(mode="pfc", dcqcn=True, ecn_kmin=50, ecn_kmax=50).check()
