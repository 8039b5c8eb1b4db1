"""The channel dependency graph (Dally & Seitz): routing over credit-flow-controlled links is
deadlock-free if the graph of dependencies between channels has no cycle. A channel is a
(switch, output port, VL): the link leaving that port, on that VL. A packet holding channel
a and waiting for channel b (the next hop its LFT gives, on the VL that SL2VL gives) makes
a -> b.

The scope: which paths' dependencies are in the graph (docs/routing-checks.md). A path
starts at a switch (a CA's path at the switch the CA hangs off: the CA's own link depends
on nothing, so it cannot be in a cycle) and follows the LFTs to the LID's switch:

  "ca-ca"   from every switch with CAs to every CA LID: the CA-to-CA paths, what ibdmchk
            checks by default;
  "ca-all"  from every switch with CAs to every LID, switch LIDs included (the CAs'
            traffic to the switches' management port 0 too);
  "all"     from every switch to every LID: every LFT entry of every switch (the switches'
            own traffic too), what `ibdmchk -a` checks. Widest: a cycle in a narrower
            scope is one here.

Two ways to build it:

  per_switch   (scope "all", one VL, SLs ignored) every LFT entry: for switch s and LID l,
               the channel s forwards l on depends on the channel the next switch forwards
               l on; fast: O(switches x LIDs) array work. Every switch is a source in this
               scope, so these are exactly the dependencies of its paths.
  paths        the paths of the scope, hop by hop, each on the VL its SL maps to at every
               hop (SL from Routes.sl, per (source switch, destination switch); SL2VL
               identity, as the layered engine programs it, or `sl2vl`); one VL (every path
               on SL 0, as ibdmchk sees dumps without a path-SL file) with `sls=False`.

`check(fab, routes)` returns a CDGResult: acyclic, the sizes, and one cycle (as
(switch, port, VL) triples) when there is one.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sm.fabric import Fabric
from sm.routing import NO_ROUTE, Routes

__all__ = ["CDGResult", "check", "SCOPES"]

SCOPES = ("ca-ca", "ca-all", "all")


@dataclass
class CDGResult:
    acyclic: bool
    channels: int
    edges: int
    mode: str
    cycle: list[tuple[str, int, int]] = field(default_factory=list)    # (switch, port, VL)
    scope: str = "all"

    def __str__(self):
        what = f"CDG ({self.mode}, scope {self.scope}): {self.channels} channels, {self.edges} dependencies"
        if self.acyclic:
            return f"{what}, no cycle"
        return f"{what}, CYCLE: " + " -> ".join(f"{s}:{p}/VL{v}" for s, p, v in self.cycle)


def _channel_ids(fab: Fabric):
    chan = np.full((fab.S, fab.P + 1), -1, dtype=np.int64)
    where = np.argwhere(fab.nbr >= 0)
    chan[where[:, 0], where[:, 1]] = np.arange(len(where))
    return chan, where


def _edges_per_switch(fab: Fabric, lft: np.ndarray, chan: np.ndarray, switches=None, nbr=None) -> np.ndarray:
    """The dependencies (a << 32 | b) whose first channel leaves one of `switches` (all by
    default); `nbr`: the cabling to follow (default the fabric's)."""
    nbr = fab.nbr if nbr is None else nbr
    out = []
    for s in (range(fab.S) if switches is None else switches):
        p1 = lft[s].astype(np.int64)
        ok = (p1 != NO_ROUTE) & (p1 != 0)
        lids = np.flatnonzero(ok)
        p1 = p1[ok]
        t = nbr[s, p1]
        sw = t >= 0                                     # the next hop is a switch
        lids, p1, t = lids[sw], p1[sw], t[sw]
        p2 = lft[t, lids].astype(np.int64)
        ok2 = (p2 != NO_ROUTE) & (p2 != 0) & (nbr[t, np.where(p2 == NO_ROUTE, 0, p2)] >= 0)
        a = chan[s, p1[ok2]]
        b = chan[t[ok2], p2[ok2]]
        if len(a):
            out.append(np.unique(a * (1 << 32) + b))
    return np.unique(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)


def _scope(fab: Fabric, scope: str) -> tuple[list[int], np.ndarray]:
    """The source switches and destination LIDs of a scope."""
    if scope not in SCOPES:
        raise ValueError(f"CDG scope {scope!r}: one of {', '.join(SCOPES)}")
    sources = list(range(fab.S)) if scope == "all" else [s for s in range(fab.S) if fab.cas_at[s]]
    lids = np.asarray(fab.lid_ca, dtype=np.int64) if scope == "ca-ca" else np.flatnonzero(fab.lid_dst >= 0)
    return sources, np.sort(lids)


def _edges_paths(fab: Fabric, routes: Routes, chan: np.ndarray, nvl: int, sl2vl, scope: str,
                 sls: bool = True) -> np.ndarray:
    lft = routes.lft
    out = []
    sources, lids = _scope(fab, scope)
    dsw = fab.lid_dst[lids]
    for s in sources:
        if routes.sl is not None and sls:
            sl = routes.sl[s, dsw]
            vl = sl2vl[sl] if sl2vl is not None else sl.astype(np.int64)
        else:
            vl = np.zeros(len(lids), dtype=np.int64)
        x = np.full(len(lids), s, dtype=np.int64)
        prev = np.full(len(lids), -1, dtype=np.int64)
        alive = np.ones(len(lids), dtype=bool)
        for _hop in range(fab.S + 1):
            p = lft[x, lids].astype(np.int64)
            alive &= (p != NO_ROUTE) & (p != 0)
            if not alive.any():
                break
            pp = np.where(alive, p, 0)
            nx = fab.nbr[x, pp]
            alive &= nx >= 0
            c = np.where(alive, chan[x, pp] * nvl + vl, -1)
            m = alive & (prev >= 0)
            if m.any():
                out.append(np.unique(prev[m] * (1 << 32) + c[m]))
            prev = c
            x = np.where(alive, nx, x)
    return np.unique(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)


def check(fab: Fabric, routes: Routes, *, mode: str | None = None, scope: str | None = None, sl2vl=None,
          sls: bool = True) -> CDGResult:
    """mode: "per_switch" or "paths"; scope: "ca-ca", "ca-all" or "all" (module docstring).
    Defaults: a routing with SLs (layered) is checked by paths, scope "ca-all"; one without
    by per_switch (scope "all"); a scope given alone picks per_switch for "all" without SLs,
    else paths; per_switch serves only scope "all". sl2vl: an array SL -> VL (default
    identity); sls=False: every path on SL 0 (one VL), as a checker without the SLs sees it."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components
    chan, where = _channel_ids(fab)
    layered = routes.sl is not None and routes.vls > 1 and sls
    if mode is None:
        mode = "per_switch" if not layered and scope in (None, "all") else "paths"
    if scope is None:
        scope = "all" if mode == "per_switch" else "ca-all"
    if scope not in SCOPES:
        raise ValueError(f"CDG scope {scope!r}: one of {', '.join(SCOPES)}")
    sl2 = None if sl2vl is None else np.asarray(sl2vl, dtype=np.int64)
    nvl = 1
    if mode == "paths" and layered:
        nvl = max(routes.vls, 1 if sl2 is None else int(sl2.max()) + 1)
    if mode == "paths":
        codes = _edges_paths(fab, routes, chan, nvl, sl2, scope, sls=layered)
    elif mode == "per_switch":
        if scope != "all":
            raise ValueError(f"CDG mode per_switch covers scope 'all' only (every LFT entry), not scope {scope!r}: "
                             f"use mode paths")
        codes = _edges_per_switch(fab, routes.lft, chan)
    else:
        raise ValueError(f"CDG mode {mode!r}: per_switch or paths")
    n = len(where) * nvl
    a, b = codes >> 32, codes & 0xFFFFFFFF
    g = csr_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n))
    ncomp, label = connected_components(g, directed=True, connection="strong")
    size = np.bincount(label, minlength=ncomp)
    self_loop = a[a == b]
    bad = np.flatnonzero(size > 1)
    res = CDGResult(True, n, len(codes), mode, scope=scope)
    if len(bad) or len(self_loop):
        res.acyclic = False
        start = int(self_loop[0]) if len(self_loop) else int(np.flatnonzero(label == bad[0])[0])
        comp = label[start]
        cyc = _find_cycle(g, start, label, comp)
        res.cycle = [(fab.sw_names[int(where[c // nvl, 0])], int(where[c // nvl, 1]), int(c % nvl)) for c in cyc]
    return res


def _find_cycle(g, start: int, label, comp) -> list[int]:
    """A cycle through `start` inside its strongly connected component (BFS back to it)."""
    from collections import deque
    indptr, indices = g.indptr, g.indices
    parent = {start: None}
    q = deque([start])
    while q:
        v = q.popleft()
        for w in indices[indptr[v]:indptr[v + 1]]:
            w = int(w)
            if w == start:
                path = [v]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return list(reversed(path)) + [start]
            if label[w] == comp and w not in parent:
                parent[w] = v
                q.append(w)
    return [start]
