"""The subnet manager's routing engines and the channel-dependency-graph checker.

Checked apart from the engines: every (CA switch, LID) pair is followed hop by hop through
the LFTs (it must arrive at the LID's switch and port, without loops, in at most the
switches' count of hops); min-hop and fat-tree paths have the shortest length the graph
allows (networkx, an outside library, computes the distances); up*/down* and fat-tree paths
never go up after going down. The CDG checker finds the credit loop of routings known to
have one (min-hop on a ring, a torus, a dragonfly; a hand-made cycle) and none in the
deadlock-free engines' (up*/down*, fat tree, layered), also after links fail.
"""
import networkx as nx
import numpy as np
import pytest

from fabric.topology import Topology, dragonfly, fat_tree_2, fat_tree_3, torus_2d
from sm.cdg import check
from sm.fabric import Fabric, FabricError
from sm.routing import NO_ROUTE, Routes, route

TOPOS = {
    "ft2-8": lambda: fat_tree_2(8),
    "ft3-4": lambda: fat_tree_3(4),
    "ft3-8": lambda: fat_tree_3(8),
    "torus-4x4": lambda: torus_2d(4, 4, 1),
    "torus-5x3": lambda: torus_2d(5, 3, 2),
    "mesh-3x4": lambda: torus_2d(3, 4, 1, wrap=False),
    "dfly": lambda: dragonfly(4, 2, 2),
}
FAT = {"ft2-8", "ft3-4", "ft3-8"}


def _walk(fab: Fabric, r: Routes, s: int, lid: int):
    """The switches a packet from switch s to `lid` visits; None if it is dropped or loops."""
    x, seen = s, [s]
    for _ in range(fab.S + 1):
        p = int(r.lft[x, lid])
        if p == NO_ROUTE:
            return None
        if p == 0 or fab.nbr[x, p] < 0:
            ok = (x == fab.lid_dst[lid]) and p == fab.lid_port[lid]
            return seen if ok else None
        x = int(fab.nbr[x, p])
        seen.append(x)
    return None


def _graph(fab):
    g = nx.Graph()
    g.add_nodes_from(range(fab.S))
    for s in range(fab.S):
        for p in fab.switch_ports(s):
            g.add_edge(s, int(fab.nbr[s, p]))
    return g


@pytest.mark.parametrize("name", sorted(TOPOS))
@pytest.mark.parametrize("engine", ["minhop", "updn", "ftree", "layered"])
def test_engine_delivers_every_lid(name, engine):
    fab = Fabric.from_topology(TOPOS[name]())
    if engine == "ftree" and name not in FAT:
        with pytest.raises(FabricError, match="not a fat tree"):
            route(fab, engine)
        return
    r = route(fab, engine)
    dist = dict(nx.all_pairs_shortest_path_length(_graph(fab)))
    key = None
    if engine in ("updn", "ftree"):
        lvl = None
        if engine == "ftree":
            from sm.routing import _levels
            lvl = _levels(fab)
            key = (lvl.max() - lvl) * fab.S + np.arange(fab.S)
        else:
            from sm.routing import _ranks
            key = _ranks(fab, None) * fab.S + np.arange(fab.S)
    sources = [s for s in range(fab.S) if fab.cas_at[s]]
    for s in sources:
        for lid in range(1, fab.L):
            path = _walk(fab, r, s, lid)
            assert path is not None, f"{engine} on {name}: LID {lid} from {fab.sw_names[s]} not delivered"
            t = int(fab.lid_dst[lid])
            if engine in ("minhop", "ftree", "layered") and fab.cas_at[t]:
                assert len(path) - 1 == dist[s][t], f"{engine}: {s}->{t} takes {len(path) - 1} hops, not {dist[s][t]}"
            if key is not None:
                dirs = ["u" if key[b] < key[a] else "d" for a, b in zip(path, path[1:], strict=False)]
                assert "du" not in "".join(dirs), f"{engine}: path {path} goes up after down"


@pytest.mark.parametrize("name, engine, acyclic", [
    ("torus-4x4", "minhop", False), ("dfly", "minhop", False), ("mesh-3x4", "updn", True),
    ("torus-4x4", "updn", True), ("dfly", "updn", True), ("ft3-8", "ftree", True), ("ft3-8", "updn", True),
    ("torus-4x4", "layered", True), ("torus-5x3", "layered", True), ("dfly", "layered", True),
])
def test_cdg_verdicts(name, engine, acyclic):
    fab = Fabric.from_topology(TOPOS[name]())
    r = route(fab, engine)
    res = check(fab, r, mode="paths")
    assert res.acyclic == acyclic, str(res)
    if not acyclic:                         # the printed cycle is a cycle of real channels
        cyc = res.cycle
        assert len(cyc) >= 3 and cyc[0] == cyc[-1]
        names = {n: k for k, n in enumerate(fab.sw_names)}
        for (sa, pa, _va), (sb, _pb, _vb) in zip(cyc, cyc[1:], strict=False):
            assert fab.nbr[names[sa], pa] == names[sb], f"{sa}:{pa} does not lead to {sb}"
    if engine in ("updn", "ftree"):          # the per-switch superset is acyclic too
        assert check(fab, r, mode="per_switch").acyclic


def test_cdg_finds_a_hand_made_loop():
    """Four switches in a ring, each sending every foreign LID clockwise: the textbook
    credit loop (Dally & Seitz)."""
    t = Topology("ring")
    for k in range(4):
        t.add("Switch", f"S{k}", 3)
        t.add("Hca", f"H{k}", 1)
        t.connect(f"S{k}", 1, f"H{k}", 1)
    for k in range(4):
        t.connect(f"S{k}", 2, f"S{(k + 1) % 4}", 3)
    fab = Fabric.from_topology(t)
    lft = np.full((fab.S, fab.L), NO_ROUTE, dtype=np.uint8)
    lft[:, 1:] = 2                                        # clockwise, always
    r = Routes("clockwise", lft)
    lft[np.arange(4), fab.lid_sw] = 0
    lft[fab.ca_sw, fab.lid_ca] = 1
    res = check(fab, r)
    assert not res.acyclic and len(res.cycle) == 5, str(res)
    assert check(fab, route(fab, "updn")).acyclic


@pytest.mark.parametrize("name", ["ft3-8", "torus-5x3", "dfly"])
def test_deadlock_free_after_link_failures(name):
    """Take links out (never disconnecting the fabric) and route again: still every LID
    delivered, still no cycle."""
    topo = TOPOS[name]()
    rng = np.random.default_rng(7)
    sw_links = [(a, pa, b, pb) for a, pa, b, pb in topo.links()
                if topo.nodes[a].is_switch and topo.nodes[b].is_switch]
    failed = 0
    for k in rng.permutation(len(sw_links))[:len(sw_links) // 4]:
        a, pa, b, pb = sw_links[k]
        trial = topo.copy()
        trial.disconnect(a, pa)
        if nx.is_connected(_graph(Fabric.from_topology(trial))):
            topo = trial
            failed += 1
    assert failed >= 2
    fab = Fabric.from_topology(topo)
    for engine in ("updn", "layered") + (("ftree",) if name in FAT else ()):
        try:
            r = route(fab, engine)
        except FabricError as e:
            assert engine == "ftree" and "no up-then-down path" in str(e), str(e)   # a fat tree with holes: says so
            continue
        assert check(fab, r, mode="paths").acyclic, f"{engine} after {failed} failures"
        for s in (s for s in range(fab.S) if fab.cas_at[s]):
            for lid in fab.lid_ca:
                assert _walk(fab, r, s, int(lid)) is not None, f"{engine}: LID {lid} lost after failures"


def test_extended_lids_skip_what_is_not_unicast_and_route_like_any():
    """LIDs past IBA's 0xBFFF go on in pages of 64 Ki, skipping each page's low-16 0 and
    0xC000..0xFFFF (multicast/permissive there too); a fabric numbered across pages routes
    and proves acyclic like any other; set_lids refuses a LID whose low 16 bits are not
    unicast."""
    from sm.fabric import EXT_MAX_LID, unicast_lid
    assert list(unicast_lid([1, 0xBFFF, 0xC000, 0xC001, 2 * 0xBFFF, 2 * 0xBFFF + 1])) == [
        1, 0xBFFF, 0x10001, 0x10002, 0x1BFFF, 0x20001]
    assert int(unicast_lid(32 * 0xBFFF)) == EXT_MAX_LID
    fab = Fabric.from_topology(fat_tree_3(8))
    n = np.arange(0xBFFF - 60, 0xBFFF - 60 + fab.S + fab.C)          # across the first page's end
    fab.set_lids(unicast_lid(n[:fab.S]), unicast_lid(n[fab.S:]))
    assert fab.extended_lids and fab.max_lid > 0x10000
    assert not ((fab.lid_ca & 0xFFFF) >= 0xC000).any()
    for engine in ("minhop", "updn", "ftree"):
        r = route(fab, engine)
        for s in (s for s in range(fab.S) if fab.cas_at[s]):
            for lid in fab.lid_ca:
                assert _walk(fab, r, s, int(lid)) is not None, f"{engine}: LID {lid:#x} from {fab.sw_names[s]}"
        if engine != "minhop":
            assert check(fab, r).acyclic, engine
    for bad in (0x10000, 0x1C000, 0x1FFFF):
        lids = fab.lid_ca.copy()
        lids[0] = bad
        with pytest.raises(FabricError, match="not unicast"):
            fab.set_lids(fab.lid_sw, lids)


@pytest.mark.parametrize("name", ["ft2-8", "ft3-4"])
def test_failover_alternates_on_fat_trees(name):
    """sm.failover (docs/reliability.md) on fat trees routed by ftree: every up-port that
    carries routes gets an alternate (another up-port), no down-port does (a fat tree has no
    equal-cost detour downward). For each such port: with its cable failed and the routing
    as the switches then forward (entries of the dead port sent to the alternate), the switch
    reaches every CA again, and the CDG, built apart by sm.cdg, has no cycle."""
    from sm.failover import alternates, redirected
    fab = Fabric.from_topology(TOPOS[name]())
    r = route(fab, "ftree")
    a = alternates(fab, r)
    level = {s: n[0] for s, n in enumerate(fab.sw_names)}        # L, E leaf / A aggregation / S, C top
    ups = 0
    for s in range(fab.S):
        for p in fab.switch_ports(s):
            t = int(fab.nbr[s, p])
            up = _rank(fab, t) > _rank(fab, s)
            ups += up
            assert (a.alt[s, p] != NO_ROUTE) == up, (fab.sw_names[s], p, level[s])
    assert a.covered == ups and not [x for x in a.refused if "loop" in x[2]]
    for s in range(fab.S):
        for p in fab.switch_ports(s):
            if a.alt[s, p] == NO_ROUTE:
                continue
            f2, r2 = redirected(fab, r, a.alt, s, p)
            assert check(f2, r2).acyclic
            # from s itself every CA is reached again (its upward routes moved)
            for lid in fab.lid_ca:
                assert _walk(f2, r2, s, int(lid)) is not None, (fab.sw_names[s], p, int(lid))


def _rank(fab, s):
    """Fat-tree level by name: leaves lowest."""
    return {"L": 0, "E": 0, "A": 1}.get(fab.sw_names[s][0], 2)


def test_failover_refuses_detours_that_close_a_credit_loop():
    """Where a detour would close a credit loop, sm.failover gives no alternate, and the
    loop is real: taking the same candidates unverified, the CDG of that failure has a cycle.
    A routing that has a loop already (min-hop on a torus) gets no alternates at all."""
    from sm.failover import alternates, redirected
    fab = Fabric.from_topology(torus_2d(4, 3, hosts=2))
    r = route(fab, "updn")
    checked = alternates(fab, r)
    raw = alternates(fab, r, verify=False)
    loops = {(n, p) for n, p, why in checked.refused if "credit loop" in why}
    assert loops, "no detour was refused: the test shows nothing"
    idx = {n: k for k, n in enumerate(fab.sw_names)}
    for n, p in loops:
        f2, r2 = redirected(fab, r, raw.alt, idx[n], p)
        assert not check(f2, r2).acyclic, (n, p)
    assert checked.covered > 0
    m = alternates(fab, route(fab, "minhop"))
    assert m.covered == 0 and all("itself has a credit loop" in w for _n, _p, w in m.refused
                                  if w != "no port delivers all its CA LIDs")
