"""Workloads for the fabric simulator: flows (source host, destination host, bytes, start
time), checked against the fabric before a run.

    uniform(n, flows, size, seed)        random source/destination pairs
    permutation(n, size, seed)           every host sends to one other, every host receives one
    incast(senders, receiver, size)      many to one
    all_to_all(n, size)                  every ordered pair
    poisson(n, load, size, duration)     each host starts flows to random others as a Poisson
                                         process, offering `load` of its link

Times are in the simulator's unit (netsim.ib_ref.Params: byte times on a link). A flow
that does not fit the fabric (an unknown host, a flow to itself, a size that is not
positive, a negative start) raises WorkloadError naming the flow.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Flow", "WorkloadError", "uniform", "permutation", "incast", "all_to_all", "poisson", "check_flows",
           "check_flow_arrays"]


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


def poisson(n: int, load: float, size: int, duration: int, seed: int = 1, mtu: int = 4096,
            header: int = 26) -> list[Flow]:
    """Every host starts flows of `size` payload bytes to uniformly random other hosts, at
    exponentially distributed intervals whose mean makes the flows' wire bytes `load` of the
    host's link (0 < load <= 1), from time 0 to `duration` (byte times)."""
    if not 0 < load <= 1:
        raise WorkloadError(f"poisson: load {load} must be in (0, 1]")
    if size <= 0 or duration <= 0 or n < 2:
        raise WorkloadError(f"poisson: size {size} and duration {duration} must be positive, hosts {n} >= 2")
    rng = random.Random(seed)
    wire = size + -(-size // mtu) * header
    mean = wire / load
    out = []
    for h in range(n):
        t = rng.expovariate(1 / mean)
        while t < duration:
            d = rng.randrange(n - 1)
            out.append(Flow(h, d + (d >= h), size, int(t)))
            t += rng.expovariate(1 / mean)
    out.sort(key=lambda f: f.start)
    return out
