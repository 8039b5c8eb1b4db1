"""The fabric simulator's workloads (netsim/workload.py): flow sizes from a CDF (the
web-search distribution), Poisson arrivals offering a load, hotspots and a ring
all-reduce, each checked against what it promises, and bad input refused."""
from __future__ import annotations

import statistics

import pytest

from netsim import fast
from netsim.common import Params
from netsim.workload import (
    WEBSEARCH,
    WorkloadError,
    cdf_mean,
    cdf_sizes,
    hotspot,
    poisson,
    ring_allreduce,
)
from tests.test_netsim_ref import _star

# one worker compiles and reuses the numba cores (make sim runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("netsim")


def test_websearch_sizes_follow_the_cdf():
    sizes = cdf_sizes(WEBSEARCH, 40_000, seed=3)
    assert abs(statistics.mean(sizes) / cdf_mean(WEBSEARCH) - 1) < 0.05
    # (size, percent) points: the share at or below each size is its percent, within 1 point
    for x, pct in WEBSEARCH[1:-1]:
        share = 100 * sum(s <= x for s in sizes) / len(sizes)
        assert abs(share - pct) < 1.0, (x, pct, share)
    assert min(sizes) >= 1 and max(sizes) <= 30_000_000


def test_poisson_with_a_cdf_offers_its_load():
    n, load, duration, mtu, header = 32, 0.4, 4_000_000_000, 4096, 26
    flows = poisson(n, load, WEBSEARCH, duration, seed=5, mtu=mtu, header=header)
    wire = sum(f.size + -(-f.size // mtu) * header for f in flows)
    assert abs(wire / (n * duration) / load - 1) < 0.15
    assert all(f.src != f.dst and 0 <= f.start < duration for f in flows)
    assert [f.start for f in flows] == sorted(f.start for f in flows)


def test_hotspot_sends_its_fraction_to_the_hot_hosts():
    flows = hotspot(64, 4_000, 1_000, hot=[3, 40], frac=0.3, seed=2)
    share = sum(f.dst in (3, 40) for f in flows) / len(flows)
    assert abs(share - (0.3 + 0.7 * 2 / 63)) < 0.03
    assert all(f.src != f.dst for f in flows)


def test_ring_allreduce_moves_its_bytes_at_line_rate():
    """On one switch every ring link is a host link of its own: the all-reduce's 2 (N - 1) / N
    x size bytes per host go at line rate, plus the path's latency."""
    n, size = 8, 64_000
    fab, lft = _star(n)
    flows = ring_allreduce(list(range(n)), size)
    per = 2 * (n - 1) * (size // n)
    assert all(f.size == per for f in flows)
    prm = Params(prop=100, sw_latency=50, mtu=1_000, buf_blocks=64)
    res = fast.simulate(fab, lft, flows, prm)
    pkts = -(-per // prm.mtu)
    ideal = per + pkts * prm.header + 2 * prm.prop + prm.sw_latency
    assert res.delivered_packets == res.packets
    assert ideal <= res.fct.max() <= ideal * 1.01, (res.fct.max(), ideal)


@pytest.mark.parametrize("bad", [((0, 0), (10, 50)), ((0, 10), (10, 100)), ((0, 0), (10, 60), (5, 100))])
def test_a_bad_cdf_is_refused(bad):
    with pytest.raises(WorkloadError, match="CDF"):
        cdf_sizes(bad, 10)


def test_bad_workload_arguments_are_refused():
    with pytest.raises(WorkloadError, match="hotspot"):
        hotspot(8, 10, 100, hot=[9], frac=0.5)
    with pytest.raises(WorkloadError, match="ring_allreduce"):
        ring_allreduce([1, 1, 2], 100)
    with pytest.raises(WorkloadError, match="load"):
        poisson(8, 1.5, WEBSEARCH, 1_000)
