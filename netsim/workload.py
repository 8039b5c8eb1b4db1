"""Workloads for the fabric simulator: flows (source host, destination host, bytes, start
time), checked against the fabric before a run.

    uniform(n, flows, size, seed)        random source/destination pairs
    permutation(n, size, seed)           every host sends to one other, every host receives one
    incast(senders, receiver, size)      many to one
    all_to_all(n, size)                  every ordered pair
    poisson(n, load, size, duration)     each host starts flows to random others as a Poisson
                                         process, offering `load` of its link; `size` a
                                         number of bytes or a CDF (e.g. WEBSEARCH)
    hotspot(n, flows, size, hot, frac)   random flows, a fraction `frac` of them to the hot hosts
    ring_allreduce(hosts, size)          the traffic of a pipelined ring all-reduce of `size`
                                         bytes: every host to its ring successor
    cdf_sizes(cdf, k, seed)              flow sizes drawn from a CDF (linear between its points)

Times are in the simulator's unit (netsim.ib_ref.Params: byte times on a link). A flow
that does not fit the fabric (an unknown host, a flow to itself, a size that is not
positive, a negative start) raises WorkloadError naming the flow.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Flow", "WorkloadError", "uniform", "permutation", "incast", "all_to_all", "poisson", "check_flows",
           "check_flow_arrays", "hotspot", "ring_allreduce", "cdf_sizes", "cdf_mean", "WEBSEARCH"]

# The web-search flow-size distribution (Alizadeh et al., "Data Center TCP", SIGCOMM 2010),
# as the HPCC artifact tabulates it (traffic_gen/WebSearch_distribution.txt): (bytes,
# cumulative percent), sizes drawn linearly between the points.
WEBSEARCH = ((0, 0), (10_000, 15), (20_000, 20), (30_000, 30), (50_000, 40), (80_000, 53), (200_000, 60),
             (1_000_000, 70), (2_000_000, 80), (5_000_000, 90), (10_000_000, 97), (30_000_000, 100))


class WorkloadError(ValueError):
    pass


@dataclass(frozen=True)
class Flow:
    src: int          # host index (sm.fabric.Fabric CA index)
    dst: int
    size: int         # payload bytes
    start: int = 0    # time unit of the simulator
    vl: int = 0


def check_flows(flows: list[Flow], hosts: int, vls: int = 1):
    for k, f in enumerate(flows):
        where = f"flow {k} ({f.src} -> {f.dst}, {f.size} B at {f.start})"
        if not (0 <= f.src < hosts and 0 <= f.dst < hosts):
            raise WorkloadError(f"{where}: no such host (the fabric has {hosts})")
        if f.src == f.dst:
            raise WorkloadError(f"{where}: a flow to itself")
        if f.size <= 0:
            raise WorkloadError(f"{where}: size must be positive")
        if f.start < 0:
            raise WorkloadError(f"{where}: negative start time")
        if not 0 <= f.vl < vls:
            raise WorkloadError(f"{where}: VL {f.vl} (the fabric has {vls} data VL(s))")


def check_flow_arrays(src, dst, size, start, vl, hosts: int, vls: int = 1):
    """check_flows for a workload held as arrays (one entry per flow); names the first bad flow."""
    import numpy as np
    bad = [("no such host (the fabric has %d)" % hosts, (src < 0) | (src >= hosts) | (dst < 0) | (dst >= hosts)),
           ("a flow to itself", src == dst), ("size must be positive", size <= 0),
           ("negative start time", start < 0), ("VL out of range (the fabric has %d data VL(s))" % vls,
                                                 (vl < 0) | (vl >= vls))]
    for what, m in bad:
        if m.any():
            k = int(np.flatnonzero(m)[0])
            raise WorkloadError(f"flow {k} ({src[k]} -> {dst[k]}, {size[k]} B at {start[k]}): {what}")


def uniform(n: int, flows: int, size: int, seed: int = 1) -> list[Flow]:
    rng = random.Random(seed)
    out = []
    for _ in range(flows):
        s = rng.randrange(n)
        d = rng.randrange(n - 1)
        out.append(Flow(s, d + (d >= s), size))
    return out


def permutation(n: int, size: int, seed: int = 1) -> list[Flow]:
    """A random derangement: host i sends to p[i] != i."""
    rng = random.Random(seed)
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if all(p[i] != i for i in range(n)):
            return [Flow(i, p[i], size) for i in range(n)]


def incast(senders: list[int], receiver: int, size: int) -> list[Flow]:
    return [Flow(s, receiver, size) for s in senders]


def all_to_all(n: int, size: int) -> list[Flow]:
    return [Flow(s, d, size) for s in range(n) for d in range(n) if s != d]


def _check_cdf(cdf) -> list[tuple[float, float]]:
    pts = [(float(x), float(p)) for x, p in cdf]
    if len(pts) < 2 or pts[0][1] != 0 or pts[-1][1] != 100:
        raise WorkloadError(f"CDF {cdf!r}: at least two (size, percent) points, from 0 % to 100 %")
    for (x0, p0), (x1, p1) in zip(pts[:-1], pts[1:], strict=True):
        if x1 < x0 or p1 < p0 or x0 < 0:
            raise WorkloadError(f"CDF point ({x1}, {p1}) after ({x0}, {p0}): sizes and percents must not fall")
    return pts


def cdf_sizes(cdf, k: int, seed: int = 1) -> list[int]:
    """`k` flow sizes (bytes, at least 1) from a CDF of (size, cumulative percent) points,
    linear between them (as HPCC's traffic generator draws them)."""
    pts = _check_cdf(cdf)
    rng = random.Random(seed)
    return [_draw(pts, rng.random() * 100) for _ in range(k)]


def _draw(pts, u: float) -> int:
    """The size at cumulative percent u, linear between the points (at least 1 byte)."""
    for (x0, p0), (x1, p1) in zip(pts[:-1], pts[1:], strict=True):
        if u <= p1 and p1 > p0:
            return max(1, int(round(x0 + (x1 - x0) * (u - p0) / (p1 - p0))))
    return max(1, int(pts[-1][0]))


def cdf_mean(cdf) -> float:
    """The mean size of a CDF drawn linearly between its points."""
    pts = _check_cdf(cdf)
    return sum((x0 + x1) / 2 * (p1 - p0) / 100 for (x0, p0), (x1, p1) in zip(pts[:-1], pts[1:], strict=True))


def poisson(n: int, load: float, size, duration: int, seed: int = 1, mtu: int = 4096,
            header: int = 26) -> list[Flow]:
    """Every host starts flows to uniformly random other hosts, at exponentially distributed
    intervals whose mean makes the flows' wire bytes `load` of the host's link (0 < load <=
    1), from time 0 to `duration` (byte times). `size`: payload bytes, or a CDF of (bytes,
    cumulative percent) points (e.g. WEBSEARCH) each flow's size is drawn from (the load
    then counts the mean size, and half a header more per flow for its last, partial,
    packet)."""
    if not 0 < load <= 1:
        raise WorkloadError(f"poisson: load {load} must be in (0, 1]")
    fixed = isinstance(size, int)
    if (fixed and size <= 0) or duration <= 0 or n < 2:
        raise WorkloadError(f"poisson: size {size} and duration {duration} must be positive, hosts {n} >= 2")
    rng = random.Random(seed)
    if fixed:
        wire = size + -(-size // mtu) * header
    else:
        m = cdf_mean(size)
        wire = m + (m / mtu + 0.5) * header
        pts = _check_cdf(size)
    mean = wire / load
    out = []
    for h in range(n):
        t = rng.expovariate(1 / mean)
        while t < duration:
            d = rng.randrange(n - 1)
            if fixed:
                sz = size
            else:
                sz = _draw(pts, rng.random() * 100)
            out.append(Flow(h, d + (d >= h), sz, int(t)))
            t += rng.expovariate(1 / mean)
    out.sort(key=lambda f: f.start)
    return out


def hotspot(n: int, flows: int, size: int, hot: list[int], frac: float, seed: int = 1) -> list[Flow]:
    """`flows` flows of `size` bytes from uniformly random sources: each goes to one of the
    `hot` hosts (uniformly) with probability `frac`, else to a uniformly random other host."""
    if not hot or any(not 0 <= h < n for h in hot) or not 0 <= frac <= 1 or n < 2:
        raise WorkloadError(f"hotspot: hot hosts {hot} among {n}, fraction {frac} in [0, 1]")
    rng = random.Random(seed)
    out = []
    while len(out) < flows:
        s = rng.randrange(n)
        if rng.random() < frac:
            d = rng.choice(hot)
            if d == s:
                continue
        else:
            d = rng.randrange(n - 1)
            d += d >= s
        out.append(Flow(s, d, size))
    return out


def ring_allreduce(hosts: list[int], size: int) -> list[Flow]:
    """The traffic of a ring all-reduce of a `size`-byte buffer over `hosts` (in ring order),
    pipelined: its 2 (N - 1) steps (reduce-scatter, then all-gather) each move a chunk of
    size / N from every host to its successor, so every host sends 2 (N - 1) / N x size
    bytes to the next one in the ring. One flow per ring link, from time 0 (the steps'
    chunk-by-chunk dependencies are not modelled: the pipeline's steady state is)."""
    n = len(hosts)
    if n < 2 or len(set(hosts)) != n or size < n:
        raise WorkloadError(f"ring_allreduce: {n} distinct hosts (at least 2) and a size >= {n} bytes")
    per = 2 * (n - 1) * -(-size // n)
    return [Flow(hosts[k], hosts[(k + 1) % n], per) for k in range(n)]
