"""Alternate output ports for the switches' failover (docs/reliability.md): for every switch
port that carries routes to another switch, a port the switch may send those packets to
instead while that port is not Active, without the SM (register ALT_PORT, SMA attribute
PortFailover 0xFF10).

The alternate a of port p on switch s is chosen so that, with the link on p gone:
  - every CA LID that s's LFT sends out of p is still delivered when s sends it out of a:
    following the LFTs from a's neighbour reaches the CA's switch, never coming back to s;
    a's neighbour is no farther from any of those CAs than p's (an equal-cost detour) where
    such a port exists, else at most `slack` hops farther;
  - the channel dependency graph (sm.cdg) of the whole routing, with the failed link gone
    and both of its ends redirected to their alternates, stays acyclic (`verify`).
Candidates are tried from the port after p, round the switch (p + 1, ..., N, 1, ..., p - 1),
so the ports of a switch fail over to different neighbours. A port with no candidate, or
whose failure would close a credit loop, gets none (255): its packets wait for the SM's
re-sweep, as without failover.

Switch LIDs are not required to survive (the switches' own management traffic waits for
the re-sweep), but they are in the CDG check: a detour that would loop them is refused.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from sm.fabric import Fabric
from sm.routing import NO_ROUTE, Routes, _hop_distances

__all__ = ["Alternates", "alternates", "redirected"]


@dataclass
class Alternates:
    alt: np.ndarray                              # (S, P + 1) uint8: IBA port or 255, per port
    covered: int = 0                             # switch-to-switch ports with an alternate
    links: int = 0                               # switch-to-switch ports that carry routes
    refused: list = field(default_factory=list)  # (switch, port, why) with no alternate

    def table(self, s: int, nports: int, block: int = 0) -> bytes:
        """PortFailover block `block` of switch s (byte k: IBA port 64 block + k's alternate)."""
        out = bytearray([NO_ROUTE] * 64)
        for k in range(64):
            p = 64 * block + k
            if 1 <= p <= nports and p < self.alt.shape[1]:
                out[k] = int(self.alt[s, p])
        return bytes(out)


def redirected(fab: Fabric, routes: Routes, alt: np.ndarray, s: int, p: int) -> tuple[Fabric, Routes]:
    """The fabric with the cable on port p of switch s gone and the routing as the switches
    then forward: at both ends of the cable, the entries for the dead port sent to its
    alternate (where it has one)."""
    f2 = copy.deepcopy(fab)
    b, q = int(fab.nbr[s, p]), int(fab.nbr_port[s, p])
    f2.fail_link(s, p)
    lft = routes.lft.copy()
    for x, port in ((s, p), (b, q)):
        a = int(alt[x, port])
        if a != NO_ROUTE:
            row = lft[x]
            row[routes.lft[x] == port] = a
    return f2, Routes(routes.engine, lft, routes.sl, routes.vls, dict(routes.info))


class _Verdicts:
    """The CDG (per-switch dependencies, one VL: sm.cdg) of the routing, kept per source
    switch, and a rank of its channels that every dependency climbs (a topological order by
    levels; None if the graph has a cycle). A cable's failure with redirects changes only the
    dependencies that leave its two switches and their neighbours: those are recomputed; if
    every new one climbs the rank, the graph is still acyclic (the rest climbs it already,
    and removing dependencies cannot close a loop); else the whole graph is checked."""

    def __init__(self, fab: Fabric, routes: Routes):
        from sm.cdg import _channel_ids, _edges_per_switch
        self.fab, self.routes = fab, routes
        self.chan, where = _channel_ids(fab)
        self.n = len(where)
        self.per = [_edges_per_switch(fab, routes.lft, self.chan, switches=[x]) for x in range(fab.S)]
        codes = np.concatenate(self.per) if self.per else np.zeros(0, dtype=np.int64)
        self.rank = _rank(self.n, codes >> 32, codes & 0xFFFFFFFF)

    def acyclic_after(self, alt: np.ndarray, s: int, p: int) -> bool:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        from sm.cdg import _edges_per_switch
        fab, lft0 = self.fab, self.routes.lft
        b, q = int(fab.nbr[s, p]), int(fab.nbr_port[s, p])
        nbr = fab.nbr.copy()
        nbr[s, p] = nbr[b, q] = -1
        lft = lft0.copy()
        for x, port in ((s, p), (b, q)):
            if alt[x, port] != NO_ROUTE:
                lft[x][lft0[x] == port] = alt[x, port]
        touched = {s, b} | {int(x) for x in np.flatnonzero(((fab.nbr == s) | (fab.nbr == b)).any(axis=1))}
        new = _edges_per_switch(fab, lft, self.chan, switches=sorted(touched), nbr=nbr)
        a, c = new >> 32, new & 0xFFFFFFFF
        if (self.rank[a] < self.rank[c]).all():
            return True
        codes = np.concatenate([new] + [self.per[x] for x in range(fab.S) if x not in touched])
        a, c = codes >> 32, codes & 0xFFFFFFFF
        g = csr_matrix((np.ones(len(a), dtype=np.int8), (a, c)), shape=(self.n, self.n))
        ncomp, label = connected_components(g, directed=True, connection="strong")
        return ncomp == self.n and not (a == c).any()


def _rank(n: int, a: np.ndarray, b: np.ndarray):
    """Levels of a topological order of the graph a -> b on n nodes (a node's level is above
    every predecessor's); None if it has a cycle."""
    from scipy.sparse import csr_matrix
    g = csr_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n))
    g.sum_duplicates()
    indptr, indices = g.indptr, g.indices
    indeg = np.bincount(indices, minlength=n)
    rank = np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(indeg == 0)
    level = 0
    while frontier.size:
        rank[frontier] = level
        lens = indptr[frontier + 1] - indptr[frontier]
        if lens.sum():
            starts = np.repeat(indptr[frontier], lens)
            offs = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
            succ = indices[starts + offs]
            np.subtract.at(indeg, succ, 1)
            cand = np.unique(succ)
            frontier = cand[indeg[cand] == 0]
        else:
            frontier = np.zeros(0, dtype=np.int64)
        level += 1
    return rank if (rank >= 0).all() else None


def _reaches(fab: Fabric, lft: np.ndarray, start: int, avoid: int, lids: np.ndarray) -> np.ndarray:
    """For each LID: does following the LFTs from switch `start` reach the LID's switch
    without passing switch `avoid`? Also the hops taken."""
    dst = fab.lid_dst[lids]
    x = np.full(len(lids), start, dtype=np.int64)
    ok = np.zeros(len(lids), dtype=bool)
    live = np.ones(len(lids), dtype=bool)
    hops = np.zeros(len(lids), dtype=np.int64)
    for _ in range(fab.S + 1):
        live &= x != avoid
        arrived = live & (x == dst)
        ok |= arrived
        live &= ~arrived
        if not live.any():
            break
        p = lft[x, lids].astype(np.int64)
        live &= (p != NO_ROUTE) & (p != 0)
        nx = fab.nbr[x, np.where(live, p, 0)]
        live &= nx >= 0
        x = np.where(live, nx, x)
        hops += live
    return ok, hops


def alternates(fab: Fabric, routes: Routes, *, verify: bool = True, slack: int = 2) -> Alternates:
    """Alternates for every switch-to-switch port of `fab` routed by `routes` (module
    docstring). verify: check the CDG of every single-cable failure (one CDG per cable);
    slack: how many hops longer than the dead port's a detour may be, where no equal-cost
    one exists."""
    from sm.cdg import check
    S, P = fab.S, fab.P
    alt = np.full((S, P + 1), NO_ROUTE, dtype=np.uint8)
    dist = _hop_distances(fab)
    lft = routes.lft
    ca_lids = np.asarray(fab.lid_ca, dtype=np.int64)
    res = Alternates(alt)
    for s in range(S):
        ports = fab.switch_ports(s)
        for p in ports:
            lids = ca_lids[lft[s, ca_lids] == p]
            if not len(lids):
                continue
            res.links += 1
            t = int(fab.nbr[s, p])
            dsw = fab.lid_dst[lids]
            order = [a for a in ports if a > p] + [a for a in ports if a < p]
            # equal-cost detours first, then ones up to `slack` hops longer for some LIDs
            for extra in sorted({0, slack}):
                for a in order:
                    u = int(fab.nbr[s, a])
                    if u == t or (dist[u, dsw] > dist[t, dsw] + extra).any():
                        continue             # a parallel cable to the same switch, or longer
                    ok, _hops = _reaches(fab, lft, u, s, lids)
                    if ok.all():
                        alt[s, p] = a
                        break
                if alt[s, p] != NO_ROUTE:
                    break
            else:
                res.refused.append((fab.sw_names[s], p, "no port delivers all its CA LIDs"))
    if verify:
        layered = routes.sl is not None and routes.vls > 1
        verdict = _Verdicts(fab, routes) if not layered else None
        if (verdict.rank is None) if verdict else not check(fab, routes).acyclic:
            for s in range(S):
                for p in fab.switch_ports(s):
                    if alt[s, p] != NO_ROUTE:
                        res.refused.append((fab.sw_names[s], p, "the routing itself has a credit loop"))
                        alt[s, p] = NO_ROUTE
        done = set()
        for s in range(S):
            for p in fab.switch_ports(s):
                b, q = int(fab.nbr[s, p]), int(fab.nbr_port[s, p])
                if (b, q) in done or (alt[s, p] == NO_ROUTE and alt[b, q] == NO_ROUTE):
                    continue
                done.add((s, p))
                if verdict is not None:
                    ok = verdict.acyclic_after(alt, s, p)
                else:
                    f2, r2 = redirected(fab, routes, alt, s, p)
                    ok = check(f2, r2).acyclic
                if not ok:
                    for x, port in ((s, p), (b, q)):
                        if alt[x, port] != NO_ROUTE:
                            res.refused.append((fab.sw_names[x], port, "its detour closes a credit loop"))
                            alt[x, port] = NO_ROUTE
    res.covered = int(sum(1 for s in range(S) for p in fab.switch_ports(s) if alt[s, p] != NO_ROUTE))
    return res
