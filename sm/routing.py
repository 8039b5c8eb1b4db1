"""Routing engines: each fills every switch's LFT (sm.fabric.Fabric) and, for the layered
engine, an SL per (source switch, destination switch).

  minhop   shortest paths (hops) between switches; among the equal next hops a LID takes
           the (LID + switch) mod k-th, so destinations spread over parallel links. Not
           deadlock-free in general (a ring of switches has a credit loop).
  updn     up*/down* (Schroeder et al., Autonet): switches ranked by BFS distance from the
           roots; a link leads "up" toward the smaller (rank, index); a route never goes up
           after going down. A switch with a down-only path to the destination takes it;
           the others go up toward the nearest switch that has one. Deadlock-free: every
           channel dependency points from an up channel to any channel, or from a down
           channel to a down channel, and both orders are acyclic.
  ftree    fat trees (switches in levels, CAs on the lowest): down toward the destination if
           it is below, else up by destination index (d-mod-k: at each level the next digit of
           the destination's index picks among the up ports), so a permutation's paths spread
           over the cores; it is up*/down* with the levels as ranks (deadlock-free). Switch
           LIDs are routed by up*/down* on the same ranks. Built for scale: O(S * L) array
           work, no per-pair search.
  layered  arbitrary topologies (LASH-style, Skeie et al. 2002): min-hop paths between
           switches, each (source, destination) switch pair put on the lowest virtual layer
           whose channel dependency graph stays acyclic with it; the layer is the pair's SL,
           and SL2VL maps SL l to VL l on every port, so each layer has VLs of its own.

LFT entries are IBA port numbers: 1..N a port, 0 the switch itself (its own LID), 255 no
route. `Routes.lft` is (switches, LIDs) uint8.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from sm.fabric import Fabric, FabricError

__all__ = ["Routes", "route", "ENGINES", "NO_ROUTE"]

NO_ROUTE = 255
_INF = np.int32(1 << 20)


@dataclass
class Routes:
    engine: str
    lft: np.ndarray                      # (S, L) uint8
    sl: np.ndarray | None = None         # (S, S) uint8: SL of traffic from switch s to switch t
    vls: int = 1                         # VLs (layers) the routing needs
    info: dict = field(default_factory=dict)


def _own_and_cas(fab: Fabric, lft: np.ndarray):
    """Entries every engine shares: a switch's own LID -> 0, its CAs' LIDs -> their ports."""
    lft[np.arange(fab.S), fab.lid_sw] = 0
    lft[fab.ca_sw, fab.lid_ca] = fab.ca_port.astype(np.uint8)


def _pick(cand: np.ndarray, key: np.ndarray) -> np.ndarray:
    """cand (P1, n) bool: the candidate ports of n destinations; key (n,) ints. The
    (key mod count)-th candidate port of each (NO_ROUTE where none)."""
    cnt = cand.sum(axis=0)
    k = np.where(cnt > 0, key % np.maximum(cnt, 1), 0)
    cum = np.cumsum(cand, axis=0)
    port = np.argmax(cum > k[None, :], axis=0)
    return np.where(cnt > 0, port, NO_ROUTE).astype(np.uint8)


def _hop_distances(fab: Fabric) -> np.ndarray:
    from scipy.sparse.csgraph import shortest_path
    d = shortest_path(fab.switch_graph(), unweighted=True, directed=False)
    out = np.where(np.isinf(d), _INF, d).astype(np.int32)
    return out


def minhop(fab: Fabric) -> Routes:
    S, L = fab.S, fab.L
    dist = _hop_distances(fab)
    lft = np.full((S, L), NO_ROUTE, dtype=np.uint8)
    dst = fab.lid_dst
    lids = np.arange(L)
    valid = dst >= 0
    for s in range(S):
        cand = np.zeros((fab.P + 1, S), dtype=bool)
        for p in fab.switch_ports(s):
            u = fab.nbr[s, p]
            cand[p] = dist[u] == dist[s] - 1
        row = np.full(L, NO_ROUTE, dtype=np.uint8)
        row[valid] = _pick(cand[:, dst[valid]], lids[valid] + s)
        lft[s] = row
    _own_and_cas(fab, lft)
    return Routes("minhop", lft)


# ------------------------------------------------------------------------------- up*/down*
def _ranks(fab: Fabric, roots, many: bool = True) -> np.ndarray:
    from scipy.sparse.csgraph import shortest_path
    if roots is None:
        # the switches farthest from every CA-carrying switch (a fat tree's top level);
        # when every switch carries CAs (a torus), the most central one
        leaves = [s for s in range(fab.S) if fab.cas_at[s]]
        g = fab.switch_graph()
        if leaves and len(leaves) < fab.S:
            d = shortest_path(g, unweighted=True, directed=False, indices=leaves).min(axis=0)
            # every switch of the top level (as OpenSM picks its roots): the load spreads
            # over all of them; updn() falls back to one root if a switch's way up then
            # fails to meet a destination's (one root reaches every switch going down)
            top = np.flatnonzero(d == d[np.isfinite(d)].max())
            roots = [int(x) for x in top] if many else [int(top[0])]
        else:
            d = shortest_path(g, unweighted=True, directed=False)
            ecc = np.where(np.isinf(d), 1e9, d).max(axis=1)
            roots = [int(np.argmin(ecc))]
    from scipy.sparse.csgraph import shortest_path as sp
    d = sp(fab.switch_graph(), unweighted=True, directed=False, indices=list(roots)).min(axis=0)
    if np.isinf(d).any():
        raise FabricError("up*/down*: the switches are not all connected")
    return d.astype(np.int64)


def _updn_tables(fab: Fabric, rank: np.ndarray, dests: np.ndarray):
    """For destination switches `dests`: (dist (S, D) int32, downonly (S, D) bool, order)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path
    S = fab.S
    key = rank * S + np.arange(S)                       # "up" = toward the smaller key
    rows, cols = np.nonzero(fab.nbr[:, 1:] >= 0)
    nb = fab.nbr[rows, cols + 1]
    down = key[nb] > key[rows]                          # rows -> nb is a down link
    g = csr_matrix((np.ones(int(down.sum())), (rows[down], nb[down])), shape=(S, S))
    # x reaches t on down links: t reaches x on the reversed ones
    da = shortest_path(g.T.tocsr(), unweighted=True, directed=True, indices=dests).T      # (S, D)
    da = np.where(np.isinf(da), _INF, da).astype(np.int32)
    dist = da.copy()
    order = np.argsort(key)                             # roots first: up neighbours are done before
    up_nbrs = [[] for _ in range(S)]
    for x, y in zip(rows[~down], nb[~down], strict=True):
        up_nbrs[x].append(y)
    for x in order:
        ys = up_nbrs[x]
        if ys:
            via = dist[ys].min(axis=0) + 1
            dist[x] = np.where(da[x] < _INF, da[x], np.minimum(via, _INF))
    return dist, da < _INF, key


def updn(fab: Fabric, roots=None, *, _rank=None, name: str = "updn") -> Routes:
    r = _updn(fab, _ranks(fab, roots) if _rank is None else _rank, name)
    if roots is None and _rank is None and len(r.info["roots"]) > 1:
        sources = np.array([bool(c) for c in fab.cas_at])
        targets = fab.lid_dst[1:] >= 0
        if (r.lft[sources][:, 1:][:, targets] == NO_ROUTE).any():
            r = _updn(fab, _ranks(fab, None, many=False), name)
    return r


def _updn(fab: Fabric, rank: np.ndarray, name: str) -> Routes:
    S, L = fab.S, fab.L
    dests = np.arange(S)
    dist, downonly, key = _updn_tables(fab, rank, dests)
    lft = np.full((S, L), NO_ROUTE, dtype=np.uint8)
    dst = fab.lid_dst
    valid = dst >= 0
    lids = np.arange(L)
    for x in range(S):
        cand = np.zeros((fab.P + 1, S), dtype=bool)
        for p in fab.switch_ports(x):
            y = fab.nbr[x, p]
            if key[y] > key[x]:                          # down: only on a down-only path
                cand[p] = downonly[x] & downonly[y] & (dist[y] == dist[x] - 1)
            else:                                        # up: only where x has no down-only path
                cand[p] = ~downonly[x] & (dist[y] == dist[x] - 1)
        row = np.full(L, NO_ROUTE, dtype=np.uint8)
        row[valid] = _pick(cand[:, dst[valid]], lids[valid] + x)
        lft[x] = row
    _own_and_cas(fab, lft)
    return Routes(name, lft, info={"roots": [int(s) for s in np.flatnonzero(rank == 0)]})


# ------------------------------------------------------------------------------- fat tree
def _multi_source_hops(fab: Fabric, sources) -> np.ndarray:
    """Hops from the nearest of `sources` to every switch: one BFS from a virtual node
    cabled to all of them."""
    from scipy.sparse import bmat, csr_matrix
    from scipy.sparse.csgraph import shortest_path
    g = fab.switch_graph()
    v = csr_matrix((np.ones(len(sources)), (np.zeros(len(sources), dtype=np.int64), np.asarray(sources))),
                   shape=(1, fab.S))
    aug = bmat([[None, v], [v.T, g]]).tocsr()
    return shortest_path(aug, unweighted=True, directed=False, indices=0)[1:] - 1


def _levels(fab: Fabric) -> np.ndarray:
    leaves = [s for s in range(fab.S) if fab.cas_at[s]]
    if not leaves:
        raise FabricError("ftree: no switch has channel adapters")
    lvl = _multi_source_hops(fab, leaves)
    if np.isinf(lvl).any():
        raise FabricError("ftree: the switches are not all connected")
    lvl = lvl.astype(np.int64)
    rows, cols = np.nonzero(fab.nbr[:, 1:] >= 0)
    nb = fab.nbr[rows, cols + 1]
    bad = np.abs(lvl[rows] - lvl[nb]) != 1
    if bad.any():
        a, b = int(rows[bad][0]), int(nb[bad][0])
        raise FabricError(f"ftree: not a fat tree: {fab.sw_names[a]} (level {lvl[a]}) and {fab.sw_names[b]} "
                          f"(level {lvl[b]}) are cabled (links must join adjacent levels)")
    return lvl


def _first_fit(order, masks, free):
    """Give each set bit of `free` (packed bits) to the first port in `order` whose mask
    (packed bits) has it: [(port, packed bits it gets)]."""
    out = []
    for p, mk in zip(order, masks, strict=True):
        m = mk & free
        if m.any():
            out.append((p, m))
            free = free & ~m
    return out


def ftree(fab: Fabric) -> Routes:
    S, L = fab.S, fab.L
    lvl = _levels(fab)
    top = int(lvl.max())
    leaves = np.array([s for s in range(S) if fab.cas_at[s]], dtype=np.int64)
    nl = len(leaves)
    leaf_idx = np.full(S, -1, dtype=np.int64)
    leaf_idx[leaves] = np.arange(nl)
    up_ports = [[] for _ in range(S)]
    down_ports = [[] for _ in range(S)]
    for s in range(S):
        for p in fab.switch_ports(s):
            (up_ports if lvl[fab.nbr[s, p]] > lvl[s] else down_ports)[s].append(p)
    by_level = [np.flatnonzero(lvl == lev) for lev in range(top + 1)]
    # packed bitmaps: the leaves (and switches) below each switch, itself included; the ones
    # it reaches going up and then down (all of them in a whole fat tree, fewer where links
    # failed): an up port is a candidate only toward what its switch reaches
    below = np.zeros((S, (nl + 7) // 8), dtype=np.uint8)
    below_sw = np.zeros((S, (S + 7) // 8), dtype=np.uint8)
    below[leaves] = np.packbits(np.eye(nl, dtype=bool), axis=1)
    eye_sw = np.arange(S)
    below_sw[eye_sw, eye_sw // 8] = 0x80 >> (eye_sw % 8)
    for lev in range(1, top + 1):
        for s in by_level[lev]:
            for p in down_ports[s]:
                below[s] |= below[fab.nbr[s, p]]
                below_sw[s] |= below_sw[fab.nbr[s, p]]
    reach, reach_sw = below.copy(), below_sw.copy()
    for lev in range(top - 1, -1, -1):
        for s in by_level[lev]:
            for p in up_ports[s]:
                reach[s] |= reach[fab.nbr[s, p]]
                reach_sw[s] |= reach_sw[fab.nbr[s, p]]
    # d-mod-k: the CA's index picks the up port; at level i the digit (index // stride_i) % up_i
    nup = [max((len(up_ports[s]) for s in by_level[lev]), default=1) or 1 for lev in range(top + 1)]
    stride = np.cumprod([1] + nup[:-1])
    ca_lids = fab.lid_ca
    ca_leaf = leaf_idx[fab.ca_sw]
    g = np.arange(fab.C, dtype=np.int64)               # destination index (CA order)
    lft = np.full((S, L), NO_ROUTE, dtype=np.uint8)
    sw_lids = fab.lid_sw
    for s in range(S):
        row = lft[s]
        key = g // stride[lvl[s]]
        # up: the leaves' candidate sets (one in a whole tree), each CA its digit among them
        ups = up_ports[s]
        up_choice = np.full(fab.C, NO_ROUTE, dtype=np.uint8)
        if ups:
            pat = np.unpackbits(np.stack([reach[fab.nbr[s, p]] for p in ups]), axis=1, count=nl)   # (ups, leaves)
            # each leaf's candidate set as a number (a bit per up port), to group the leaves
            code = np.zeros(nl, dtype=object if len(ups) > 63 else np.uint64)
            for k in range(len(ups)):
                code = code | (pat[k].astype(code.dtype) << (code.dtype.type(k) if len(ups) <= 63 else k))
            kinds, which = np.unique(code, return_inverse=True)
            which = which.reshape(-1)
            for k, kind in enumerate(kinds):
                mask = np.array([(int(kind) >> b) & 1 for b in range(len(ups))], dtype=bool)
                ports = np.array(ups, dtype=np.uint8)[mask]
                if len(ports):
                    sel = which[ca_leaf] == k
                    up_choice[sel] = ports[key[sel] % len(ports)]
        bel = np.unpackbits(below[s], count=nl).astype(bool)[ca_leaf]
        if lvl[s] == 0:
            row[ca_lids] = np.where(bel, 0, up_choice)   # own CAs: set below
        else:
            # down: per leaf, the first down port (rotated by the switch) that has it below
            order = down_ports[s][s % max(1, len(down_ports[s])):] + down_ports[s][:s % max(1, len(down_ports[s]))]
            down_leaf = np.full(nl, NO_ROUTE, dtype=np.uint8)
            for p, m in _first_fit(order, [below[fab.nbr[s, p]] for p in order], below[s].copy()):
                down_leaf[np.unpackbits(m, count=nl).astype(bool)] = p
            row[ca_lids] = np.where(bel, down_leaf[ca_leaf], up_choice)
        # switch LIDs: down to what is below, else up toward a switch that reaches it
        # (first fit in a port order rotated by the switch: every choice is up*/down*)
        here = below_sw[s].copy()
        here[s // 8] &= ~np.uint8(0x80 >> (s % 8))
        dn = down_ports[s]
        up_o = ups[s % max(1, len(ups)):] + ups[:s % max(1, len(ups))]
        dn_o = dn[s % max(1, len(dn)):] + dn[:s % max(1, len(dn))]
        gets = _first_fit(dn_o, [below_sw[fab.nbr[s, p]] for p in dn_o], here)
        up_free = ~below_sw[s]
        if len(up_o) > 1:                                # reachable through every up port: spread
            every = np.bitwise_and.reduce(np.stack([reach_sw[fab.nbr[s, p]] for p in up_o]), axis=0) & up_free
            ts = np.flatnonzero(np.unpackbits(every, count=S))
            row[sw_lids[ts]] = np.array(up_o, dtype=np.uint8)[ts % len(up_o)]
            up_free = up_free & ~every
        gets += _first_fit(up_o, [reach_sw[fab.nbr[s, p]] for p in up_o], up_free)
        for p, m in gets:
            row[sw_lids[np.unpackbits(m, count=S).astype(bool)]] = p
    _own_and_cas(fab, lft)
    # a path only ever meets switches that reach its destination (the candidates above), so
    # only a CA switch itself can be stuck: where links failed, some pairs may need a path
    # down and up again, which a fat tree's levels do not allow
    stuck = (lft[leaves][:, ca_lids] == NO_ROUTE).sum()
    if stuck:
        raise FabricError(f"ftree: {int(stuck)} (CA switch, CA) pairs have no up-then-down path with the fat "
                          f"tree's levels (links failed?): route with updn or layered")
    return Routes("ftree", lft, info={"levels": top + 1, "up_ports": nup})


# ------------------------------------------------------------------------------- layered
def layered(fab: Fabric, max_layers: int = 8) -> Routes:
    """Min-hop paths between switches (one next hop per (switch, destination switch), as
    minhop picks it), each (source, destination) switch pair on the lowest layer whose
    channel dependency graph stays acyclic with the pair's path added (LASH)."""
    base = minhop(fab)
    S = fab.S
    # every LID behind a switch takes the path of the switch's own LID (a pair of switches is
    # one path, on one layer): the CA LIDs' columns copy it, but at their own switch
    base.lft[:, fab.lid_ca] = base.lft[:, fab.lid_sw[fab.ca_sw]]
    _own_and_cas(fab, base.lft)
    nxt = np.full((S, S), -1, dtype=np.int32)           # the next switch toward t (by t's own LID)
    port = base.lft[:, fab.lid_sw]                      # (S, S)
    for s in range(S):
        ok = (port[s] != NO_ROUTE) & (port[s] != 0)
        nxt[s, ok] = fab.nbr[s, port[s, ok]]
    # channel (switch, port) ids
    chan = np.full((S, fab.P + 1), -1, dtype=np.int64)
    ports = np.argwhere(fab.nbr >= 0)
    chan[ports[:, 0], ports[:, 1]] = np.arange(len(ports))
    layers: list[dict[int, set]] = []                    # per layer: channel -> successor channels
    sl = np.zeros((S, S), dtype=np.uint8)
    # every source of traffic (a switch with CAs) to every destination switch (its own LID
    # is a destination too: management traffic to switches)
    pairs = sorted(((s, t) for s in range(S) for t in range(S) if s != t and fab.cas_at[s]),
                   key=lambda st: -_hops(nxt, *st))     # longest paths first
    for s, t in pairs:
        path = []
        x = s
        while x != t:
            p = int(port[x, t])
            if p in (0, NO_ROUTE):
                break
            path.append(int(chan[x, p]))
            x = int(nxt[x, t])
        deps = list(zip(path, path[1:], strict=False))
        for k, g in enumerate(layers + [None]):
            if g is None:
                if len(layers) == max_layers:
                    raise FabricError(f"layered: more than {max_layers} layers needed")
                layers.append({})
                g = layers[-1]
            if not _would_cycle(g, deps):
                for a, b in deps:
                    g.setdefault(a, set()).add(b)
                sl[s, t] = k
                break
    return Routes("layered", base.lft, sl=sl, vls=max(1, len(layers)), info={"layers": len(layers)})


def _hops(nxt, s, t):
    n, x = 0, s
    while x != t and x >= 0 and n < len(nxt):
        x = nxt[x, t]
        n += 1
    return n


def _would_cycle(g: dict[int, set], deps) -> bool:
    """Adding the edges `deps` (a path's consecutive channels c0 -> c1 -> ... -> ck) to g
    closes a cycle? Only if some c_j is reachable from a later c_m (the chain then leads
    from c_j forward to c_m)."""
    if not deps:
        return False
    path = [deps[0][0]] + [b for _a, b in deps]
    pos = {c: k for k, c in enumerate(path)}
    for m in range(1, len(path)):
        seen = set()
        stack = [path[m]]
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            k = pos.get(v)
            if k is not None and k < m:
                return True
            stack.extend(g.get(v, ()))
            if k is not None and k + 1 < len(path):
                stack.append(path[k + 1])
    return False


ENGINES = {"minhop": minhop, "updn": updn, "ftree": ftree, "layered": layered}


def route(fab: Fabric, engine: str, **kw) -> Routes:
    if engine not in ENGINES:
        raise ValueError(f"unknown routing engine {engine!r} (one of {', '.join(ENGINES)})")
    t0 = time.perf_counter()
    r = ENGINES[engine](fab, **kw)
    r.info["seconds"] = time.perf_counter() - t0
    return r
