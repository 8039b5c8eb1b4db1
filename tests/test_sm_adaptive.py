"""The SM's adaptive-routing plan (sm/adaptive.py, docs/reliability.md): which ports form AR
groups and which (switch, LID) pairs are adaptive, on fat trees routed by ftree, and the
refusal when the union of every adaptive choice could close a credit loop."""
import numpy as np

from fabric.topology import fat_tree_2, fat_tree_3
from sm.adaptive import ar_plan, ar_union_acyclic
from sm.fabric import Fabric
from sm.routing import route


def _plan(topo, engine):
    fab = Fabric.from_topology(topo)
    r = route(fab, engine)
    return fab, r, ar_plan(fab, r)


def test_two_level_fat_tree_leaf_up_ports_form_one_group():
    fab, r, p = _plan(fat_tree_2(8), "ftree")
    assert p.acyclic and ar_union_acyclic(fab, r, p)
    assert (p.groups, p.lids) == (8, 224)
    # a group per leaf, of its up-ports; no spine has one (a spine has one way down)
    assert len(p.members) == 8 and all(len(m) == 4 for m in p.members.values())
    grouped = {s for s, _g in p.members}
    assert all((p.group[s] == 0).all() for s in range(p.group.shape[0]) if s not in grouped)
    # a switch's own LID is never adaptive: only CA LIDs are
    assert p.adaptive.sum() == p.lids


def test_three_level_fat_tree():
    fab, r, p = _plan(fat_tree_3(4), "ftree")
    assert p.acyclic and (p.groups, p.lids) == (16, 208)


def test_a_plan_whose_union_has_a_cycle_is_refused():
    fab, r, p = _plan(fat_tree_2(8), "minhop")
    assert not p.acyclic and p.groups == 0 and p.lids == 0 and p.why
    assert not np.any(p.group) and not np.any(p.adaptive)


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
