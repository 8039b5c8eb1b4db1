"""An adaptive-routing plan judged apart from the planner (sm.adaptive, whose ARPlan.acyclic
is its own check, ar_union_acyclic) and apart from sm.cdg: the channel dependency graph of
the union of every route the plan allows, built and searched with networkx
(tests/test_sm_adaptive.py, `make check-sm`: tools/check_sm.py; docs/routing-checks.md).
Also the plans those use to show the check can fail: the planner's plan without its own
refusal, and a ring with both directions in one group.
"""
from __future__ import annotations

from unittest import mock

import networkx as nx
import numpy as np

from fabric.topology import Topology
from sm.adaptive import ARPlan, ar_plan
from sm.fabric import Fabric
from sm.routing import NO_ROUTE, Routes, route

__all__ = ["allowed_ports", "union_cdg", "union_cycle", "unrefused_plan", "ring_both_ways"]


def allowed_ports(fab: Fabric, lft: np.ndarray, plan: ARPlan, s: int, lid: int) -> list[int]:
    """The ports a packet for `lid` may leave switch s by: its LFT port, and where the LID is
    adaptive at s every port in that port's AR group (ARPlan.group[s, port], 0: none)."""
    p = int(lft[s, lid])
    if p in (0, NO_ROUTE):
        return []
    g = int(plan.group[s, p])
    if not (plan.adaptive[s, lid] and g):
        return [p]
    return [q for q in range(1, int(fab.nports[s]) + 1) if int(plan.group[s, q]) == g]


def union_cdg(fab: Fabric, lft: np.ndarray, plan: ARPlan, scope: str = "all") -> nx.DiGraph:
    """The channel dependency graph (nodes (switch, port)) of every route the plan allows,
    packets taking any allowed port at each hop. scope "all": from every switch to every
    LID; "ca-ca": from the switches with CAs to the CA LIDs (ibdmchk's default), following
    only the switches those routes reach."""
    g = nx.DiGraph()
    if scope == "all":
        sources = list(range(fab.S))
        lids = [int(x) for x in np.flatnonzero(fab.lid_dst >= 0)]
    elif scope == "ca-ca":
        sources = [s for s in range(fab.S) if fab.cas_at[s]]
        lids = [int(x) for x in fab.lid_ca]
    else:
        raise ValueError(f"scope {scope!r}: all or ca-ca")
    for lid in lids:
        seen, todo = set(sources), list(sources)
        while todo:
            s = todo.pop()
            for p in allowed_ports(fab, lft, plan, s, lid):
                t = int(fab.nbr[s, p])
                if t < 0:
                    continue                    # to a CA: the path ends
                for q in allowed_ports(fab, lft, plan, t, lid):
                    if fab.nbr[t, q] >= 0:
                        g.add_edge((s, p), (t, q))
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
    return g


def union_cycle(fab, lft, plan, scope="all"):
    """None if the union's CDG is acyclic, else one cycle (networkx.find_cycle's edges)."""
    g = union_cdg(fab, lft, plan, scope)
    if nx.is_directed_acyclic_graph(g):
        return None
    return nx.find_cycle(g)


def unrefused_plan(fab: Fabric, r: Routes) -> ARPlan:
    """The plan the planner would give if it did not check its union (to judge its refusal)."""
    with mock.patch("sm.adaptive.ar_union_acyclic", return_value=True):
        return ar_plan(fab, r)


def ring_both_ways(n: int = 4):
    """A ring of n switches (port 2 to the next one's port 3), a CA on port 1 of each,
    routed by up*/down* (deadlock-free), and a bad plan: at every switch both ring ports in
    one group, every other switch's CA LID adaptive. The union has every switch's port 2
    depend on the next one's: the textbook credit loop (Dally & Seitz)."""
    t = Topology(f"ring{n}")
    for k in range(n):
        t.add("Switch", f"S{k}", 3)
        t.add("Hca", f"H{k}", 1)
        t.connect(f"S{k}", 1, f"H{k}", 1)
    for k in range(n):
        t.connect(f"S{k}", 2, f"S{(k + 1) % n}", 3)
    fab = Fabric.from_topology(t)
    r = route(fab, "updn")
    group = np.zeros((fab.S, fab.P + 1), dtype=np.uint8)
    group[:, [2, 3]] = 1
    adaptive = np.zeros((fab.S, fab.L), dtype=bool)
    for s in range(fab.S):
        adaptive[s, fab.lid_ca[fab.ca_sw != s]] = True
    plan = ARPlan(group, adaptive, groups=fab.S, lids=int(adaptive.sum()),
                  members={(s, 1): [2, 3] for s in range(fab.S)})
    return fab, r, plan
