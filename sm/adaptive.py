"""Adaptive-routing groups and adaptive LIDs for the switches (docs/reliability.md): which
ports of a switch are equivalent (register AR_GROUP, SMA attribute ARGroup 0xFF11) and which
LIDs may leave by any port of their LFT port's group (bit 7 of the LFT entry, SMA attribute
ARLinearForwardingTable 0xFF12).

The rule, per switch s:
  - a CA LID l that s sends out of switch port p may also go out of switch port q when both
    neighbours are one hop nearer to l's switch than s is (q is an equal-cost, minimal next
    hop, as p is: no path can then loop, every hop takes the packet nearer);
  - ports p and q are in one group when each may carry every CA LID the other is sent: the
    groups are built greedily, lowest port first, of ports that are pairwise equivalent;
  - a CA LID is adaptive when its LFT port is in a group of two or more; switch LIDs and
    the switch's own CAs never are (a spine's LID must take the link to that spine).
Then the channel dependency graph of every choice together (sm.cdg's per-switch superset:
for every switch and LID, each port the LID may leave by, depending on each port the next
switch may send it to) must have no cycle; if it has one, no switch gets groups (the SM
says so) and the routing stays static.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sm.fabric import Fabric
from sm.routing import NO_ROUTE, Routes, _hop_distances

__all__ = ["ARPlan", "ar_plan", "ar_union_acyclic"]


@dataclass
class ARPlan:
    group: np.ndarray                     # (S, P + 1) uint8: AR group per IBA port, 0 none
    adaptive: np.ndarray                  # (S, L) bool: the LID's LFT entry is adaptive at s
    groups: int = 0                       # groups of two or more ports, over all switches
    lids: int = 0                         # (switch, LID) pairs marked adaptive
    acyclic: bool = True
    why: str = ""
    members: dict = field(default_factory=dict)     # (switch, group) -> [ports]

    def group_block(self, s: int, nports: int, block: int = 0, pinned: bool = False) -> bytes:
        """ARGroup block `block` of switch s (byte k: IBA port 64 block + k's group; with
        `pinned`, bit 7 set on every group: flow-pinned, one port per (SLID, DLID))."""
        out = bytearray(64)
        for k in range(64):
            p = 64 * block + k
            if 1 <= p <= nports and p < self.group.shape[1]:
                g = int(self.group[s, p])
                if g > 0x7F:
                    raise ValueError(f"switch {s}: AR group {g} does not fit 7 bits")
                out[k] = g | (0x80 if pinned and g else 0)
        return bytes(out)

    def lft_block(self, s: int, block: int) -> bytes:
        """ARLinearForwardingTable block `block` of switch s (byte k: LID 64 block + k)."""
        out = bytearray(64)
        row = self.adaptive[s]
        for k in range(64):
            lid = 64 * block + k
            if lid < len(row) and row[lid]:
                out[k] = 1
        return bytes(out)


def ar_plan(fab: Fabric, routes: Routes) -> ARPlan:
    S, L = fab.S, fab.L
    lft = routes.lft
    dist = _hop_distances(fab)
    group = np.zeros((S, fab.P + 1), dtype=np.uint8)
    adaptive = np.zeros((S, L), dtype=bool)
    plan = ARPlan(group, adaptive)
    ca = np.asarray(fab.lid_ca, dtype=np.int64)
    ca_sw = fab.lid_dst[ca]
    for s in range(S):
        ports = fab.switch_ports(s)
        if len(ports) < 2:
            continue
        here = ca_sw != s
        lids, dsw = ca[here], ca_sw[here]
        out = lft[s, lids].astype(np.int64)
        nearer = dist[s, dsw] - 1
        # ok[k, j]: port ports[k] is a minimal next hop for lids[j]
        ok = np.stack([dist[int(fab.nbr[s, q]), dsw] == nearer for q in ports])
        carries = {p: out == p for p in ports}
        # q may carry everything p is sent (and p everything q is): pairwise equivalence
        may = {(p, q): bool(ok[k][carries[p]].all()) for k, q in enumerate(ports) for p in ports}
        taken: set[int] = set()
        gid = 0
        for p in ports:
            if p in taken or not carries[p].any():
                continue
            members = [p]
            for q in ports:
                if q == p or q in taken or not carries[q].any():
                    continue
                if all(may[(r, q)] and may[(q, r)] for r in members):
                    members.append(q)
            if len(members) < 2:
                continue
            gid += 1
            taken.update(members)
            group[s, members] = gid
            plan.members[(s, gid)] = members
            adaptive[s, lids[np.isin(out, members)]] = True
        plan.groups += gid
    plan.lids = int(adaptive.sum())
    if plan.groups:
        plan.acyclic = ar_union_acyclic(fab, routes, plan)
        if not plan.acyclic:
            plan.why = "the union of every adaptive choice has a credit loop: no groups given"
            plan.group[:] = 0
            plan.adaptive[:] = False
            plan.members.clear()
            plan.groups = plan.lids = 0
    return plan


def ar_union_acyclic(fab: Fabric, routes: Routes, plan: ARPlan) -> bool:
    """Whether the channel dependency graph of every adaptive choice together is acyclic:
    for switch s and LID l, each port l may leave s by (its LFT port, or any port of that
    port's group if l is adaptive at s) depends on each port the next switch may send l by."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    from sm.cdg import _channel_ids
    chan, where = _channel_ids(fab)
    lft = routes.lft.astype(np.int64)
    S, L = fab.S, fab.L

    def choices(s: int) -> list[np.ndarray]:
        """LFT rows of switch s, one per choice: the k-th member of each adaptive LID's group."""
        row = lft[s]
        ks = max((len(m) for (x, _g), m in plan.members.items() if x == s), default=1)
        out = []
        for k in range(ks):
            alt = row.copy()
            for (x, g), m in plan.members.items():
                if x != s:
                    continue
                sel = plan.adaptive[s] & (plan.group[s, np.where(row == NO_ROUTE, 0, row)] == g)
                alt[sel] = m[k % len(m)]
            out.append(alt)
        return out

    per = [choices(s) for s in range(S)]
    K = max(len(c) for c in per)
    rows = np.stack([np.stack([c[min(k, len(c) - 1)] for k in range(K)]) for c in per])   # (S, K, L)
    lids = np.arange(L)
    edges = []
    for s in range(S):
        for r1 in per[s]:
            ok = (r1 != NO_ROUTE) & (r1 != 0)
            ls, p1 = lids[ok], r1[ok]
            t = fab.nbr[s, p1]
            sw = t >= 0
            ls, p1, t = ls[sw], p1[sw], t[sw]
            for k in range(K):
                p2 = rows[t, k, ls]
                ok2 = (p2 != NO_ROUTE) & (p2 != 0)
                p2c = np.where(ok2, p2, 0)
                ok2 &= fab.nbr[t, p2c] >= 0
                if ok2.any():
                    a, b = chan[s, p1[ok2]], chan[t[ok2], p2c[ok2]]
                    edges.append(np.unique(a * (1 << 32) + b))
    if not edges:
        return True
    codes = np.unique(np.concatenate(edges))
    n = len(where)
    a, b = codes >> 32, codes & 0xFFFFFFFF
    if (a == b).any():
        return False
    g = csr_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n, n))
    ncomp, label = connected_components(g, directed=True, connection="strong")
    return ncomp == n
