"""The SM's adaptive-routing plan (sm/adaptive.py, docs/reliability.md): which ports form AR
groups and which (switch, LID) pairs are adaptive, on fat trees routed by ftree, and the
refusal when the union of every adaptive choice could close a credit loop.

Whether a plan is deadlock-free is decided here apart from the planner (which sets
ARPlan.acyclic by its own check, sm.adaptive.ar_union_acyclic) and apart from sm.cdg:

  * `union_cdg` (tools/ar_union.py) builds, with networkx, the channel dependency graph of the union of every
    route the plan allows: at every hop a packet may take its LFT port or, where its LID is
    adaptive at that switch, any port of that port's group (read from ARPlan.group, not
    from the planner's member lists); the graph must be acyclic (networkx's own search);
  * ibdmchk (Debian ibutils), which reads one LFT, checks variant LFTs in which every
    (switch, LID) takes one of its allowed ports (sm.dumps.ar_variant_lfts: variant k the
    k-th member of every group, so every allowed port is in some variant): every variant
    free of credit loops; and one LMC dump carrying the pairwise variants together
    (sm.dumps.write_lmc_dumps), whose CA-to-CA dependencies are shown here to be exactly the
    union's (`_lmc_edges`), so ibdmchk judges the union itself.
A bad plan (both directions of a ring in one group) must fail both checks: they can fail.
"""
import subprocess

import numpy as np
import pytest

from fabric.topology import fat_tree_2, fat_tree_3
from sm.adaptive import ARPlan, ar_plan
from sm.dumps import ar_variant_lfts, write_dumps, write_lmc_dumps
from sm.fabric import Fabric
from sm.routing import NO_ROUTE, Routes, route
from tools.ar_union import ring_both_ways, union_cdg, union_cycle, unrefused_plan


def _plan(topo, engine):
    fab = Fabric.from_topology(topo)
    r = route(fab, engine)
    return fab, r, ar_plan(fab, r)


def _ibdmchk(d, **kw):
    from tools.check_sm import run_ibdmchk
    if subprocess.run(["which", "ibdmchk"], capture_output=True).returncode:
        pytest.fail("ibdmchk not found: apt-get install ibutils (make setup does)")
    res = run_ibdmchk(d, **kw)
    assert res.loops is not None, f"ibdmchk gave no verdict ({res.why}):\n{res.text[-3000:]}"
    return res


def _variant_verdicts(tmp_path, fab, r, plan) -> list[bool]:
    """ibdmchk's credit-loop verdict on each variant LFT of the plan (True: loops)."""
    out = []
    for k, v in enumerate(ar_variant_lfts(fab, r, plan)):
        d = tmp_path / f"variant{k}"
        write_dumps(fab, Routes(f"variant{k}", v), d)
        res = _ibdmchk(d)
        assert res.paths == fab.C * (fab.C - 1), f"variant {k}: ibdmchk traced {res.paths} CA-to-CA paths"
        out.append(res.loops)
    return out


def _lmc_edges(fab, lfts) -> set:
    """The (switch, port) -> (switch, port) dependencies of the CA-to-CA paths of every LFT
    in `lfts` (what ibdmchk builds from an LMC dump of them)."""
    edges = set()
    for lft in lfts:
        for s in (s for s in range(fab.S) if fab.cas_at[s]):
            for lid in fab.lid_ca:
                x, prev = s, None
                for _ in range(fab.S + 1):
                    p = int(lft[x, lid])
                    if p in (0, NO_ROUTE) or fab.nbr[x, p] < 0:
                        break
                    if prev is not None:
                        edges.add((prev, (x, p)))
                    prev, x = (x, p), int(fab.nbr[x, p])
    return edges


def _assert_deadlock_free(tmp_path, fab, r, plan):
    """Both checks, apart from the planner's flag: the networkx union (every scope) has no
    cycle, ibdmchk finds no credit loop in any variant nor in the LMC union."""
    for scope in ("all", "ca-ca"):
        cyc = union_cycle(fab, r.lft, plan, scope)
        assert cyc is None, f"the union of the plan's choices ({scope}) has a cycle: {cyc}"
    assert not any(_variant_verdicts(tmp_path, fab, r, plan))
    pairwise = ar_variant_lfts(fab, r, plan, pairwise=True)
    assert _lmc_edges(fab, pairwise) == set(union_cdg(fab, r.lft, plan, "ca-ca").edges), \
        "the pairwise variants together miss dependencies of the union (or add some)"
    _files, lmc = write_lmc_dumps(fab, pairwise, tmp_path / "lmc")
    res = _ibdmchk(tmp_path / "lmc", lmc=lmc)
    assert not res.loops and res.paths == fab.C * (fab.C - 1) * (1 << lmc), res.text[-2000:]


# ---------------------------------------------------------------- the plans
def test_two_level_fat_tree_leaf_up_ports_form_one_group(tmp_path):
    fab, r, p = _plan(fat_tree_2(8), "ftree")
    assert p.acyclic and (p.groups, p.lids) == (8, 224)
    # a group per leaf, of its up-ports; no spine has one (a spine has one way down)
    assert len(p.members) == 8 and all(len(m) == 4 for m in p.members.values())
    grouped = {s for s, _g in p.members}
    assert all((p.group[s] == 0).all() for s in range(p.group.shape[0]) if s not in grouped)
    # a switch's own LID is never adaptive: only CA LIDs are
    assert p.adaptive.sum() == p.lids
    _assert_deadlock_free(tmp_path, fab, r, p)


def test_three_level_fat_tree(tmp_path):
    fab, r, p = _plan(fat_tree_3(4), "ftree")
    assert p.acyclic and (p.groups, p.lids) == (16, 208)
    _assert_deadlock_free(tmp_path, fab, r, p)


def test_a_bad_plan_fails_both_checks(tmp_path):
    """Both ring ports of every switch in one group: the routing alone is deadlock-free
    (up*/down*: networkx and ibdmchk agree), the plan's union has the ring's credit loop:
    networkx finds the cycle through every switch's port 2 (or 3), ibdmchk a loop in every
    variant (all clockwise, all counter-clockwise) and in their LMC dump together."""
    fab, r, plan = ring_both_ways(4)
    static = ARPlan(np.zeros_like(plan.group), np.zeros_like(plan.adaptive))
    assert union_cycle(fab, r.lft, static, "all") is None
    write_dumps(fab, r, tmp_path / "static")
    assert not _ibdmchk(tmp_path / "static").loops
    for scope in ("all", "ca-ca"):
        cyc = union_cycle(fab, r.lft, plan, scope)
        assert cyc is not None, f"{scope}: the ring's loop not found"
        assert len({s for (s, _p), _b in cyc}) == fab.S, cyc          # round the whole ring
    assert _variant_verdicts(tmp_path, fab, r, plan) == [True, True]
    _files, lmc = write_lmc_dumps(fab, ar_variant_lfts(fab, r, plan), tmp_path / "lmc")
    assert _ibdmchk(tmp_path / "lmc", lmc=lmc).loops


def test_a_plan_whose_union_has_a_cycle_is_refused():
    """minhop on a fat tree: the planner refuses (no groups at all). Its reason, checked
    apart: the plan it would give has a cycle in its union, through switch LIDs (scope
    "all": a spine's LID reached down and up again), none among the CA-to-CA paths."""
    fab, r, p = _plan(fat_tree_2(8), "minhop")
    assert not p.acyclic and p.groups == 0 and p.lids == 0 and p.why
    assert not np.any(p.group) and not np.any(p.adaptive)
    full = unrefused_plan(fab, r)
    assert full.groups > 0
    cyc = union_cycle(fab, r.lft, full, "all")
    assert cyc is not None
    assert union_cycle(fab, r.lft, full, "ca-ca") is None


def test_group_blocks_per_packet_and_flow_pinned():
    """ARGroup blocks: byte k is port k's group, bit 7 set on every nonzero group in the
    flow-pinned mode, port 0 and the ports beyond the switch zero."""
    fab, r, p = _plan(fat_tree_2(8), "ftree")
    s, g = next(iter(p.members))
    n = int(fab.nports[s])
    packet = p.group_block(s, n)
    pinned = p.group_block(s, n, pinned=True)
    assert len(packet) == len(pinned) == 64 and packet[0] == 0 and not any(packet[n + 1:])
    assert [k for k in range(64) if packet[k] == g] == sorted(p.members[(s, g)])
    assert all(b == (a | 0x80 if a else 0) for a, b in zip(packet, pinned, strict=True))
