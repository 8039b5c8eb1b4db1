"""Topologies and ibsim's net-file format: the generators build what they say (sizes, every
switch port cabled where it should be), net files round-trip, ibsim's own example parses,
and every malformed file is rejected naming its line and the reason."""
import pytest

from fabric.topology import (
    NetFileError,
    dragonfly,
    fat_tree_2,
    fat_tree_3,
    parse_netfile,
    read_netfile,
    torus_2d,
)

# ibsim's net-examples/net.2sw2path4hca (comments shortened): tabs, a description, a
# record per node, cables written at both ends
IBSIM_EXAMPLE = '''# Net configuration file example
Switch	8 "Switch1"
[1]	"Hca1"[1]
[2]	"Hca3"[1]
[3]	"Switch2"[3]
[5]	"Switch2"[5]

Switch 8 "Switch2"	# "a description" lid 5
[1]	"Hca2"[1]
[2]	"Hca4"[1]
[3]	"Switch1"[3]
[5]	"Switch1"[5]

Hca	2 "Hca1"
[1]	"Switch1"[1]

Hca	2 "Hca2"
[1]	"Switch2"[1]

Hca	2 "Hca3"
[1]	"Switch1"[2]

Hca	2 "Hca4"
[1]	"Switch2"[2]
'''


def test_ibsim_example_parses():
    t = parse_netfile(IBSIM_EXAMPLE, "net.2sw2path4hca")
    assert len(t.switches()) == 2 and len(t.hcas()) == 4
    assert t.nodes["Switch2"].desc == "a description"
    assert ("Switch1", 3, "Switch2", 3) in t.links() and len(t.links()) == 6


@pytest.mark.parametrize("topo, switches, hcas", [
    (lambda: fat_tree_2(8), 12, 32),
    (lambda: fat_tree_3(4), 20, 16),
    (lambda: fat_tree_3(16), 320, 1024),
    (lambda: torus_2d(4, 3, hosts=2), 12, 24),
    (lambda: torus_2d(2, 2, wrap=False), 4, 4),
    (lambda: dragonfly(4, 2, 2), 36, 72),
])
def test_generators_round_trip(topo, switches, hcas):
    t = topo()
    assert (len(t.switches()), len(t.hcas())) == (switches, hcas)
    back = parse_netfile(t.to_netfile(), "gen")
    assert back.links() == t.links()
    assert {n.name: n.nports for n in back.nodes.values()} == {n.name: n.nports for n in t.nodes.values()}


def test_fat_trees_are_full():
    """Every switch port of a k-ary fat tree is cabled; every host hangs off an edge
    switch; a 3-level tree's core switches reach every pod once."""
    for t in (fat_tree_2(8), fat_tree_3(8)):
        assert all(len(s.ports) == s.nports for s in t.switches())
        assert all(len(h.ports) == 1 and t.nodes[h.ports[1][0]].is_switch for h in t.hcas())
    t = fat_tree_3(8)
    for c in (s for s in t.switches() if s.name.startswith("C")):
        pods = {r.split("_")[0] for r, _ in c.ports.values()}
        assert len(pods) == 8


def test_dragonfly_groups_fully_connected():
    a, p, h = 3, 1, 2
    t = dragonfly(a, p, h)
    g = a * h + 1
    pairs = set()
    for x, _px, y, _py in t.links():
        gx, gy = x.split("_")[0], y.split("_")[0]
        if x.startswith("R") and y.startswith("R") and gx != gy:
            pairs.add(frozenset((gx, gy)))
    assert len(pairs) == g * (g - 1) // 2


BAD = [
    ('Switch 4 "S"\n[1] "H"[1]\n', 'no node \'H\''),
    ('Switch 4 "S"\n[5] "H"[1]\n\nHca 1 "H"\n[1] "S"[5]\n', "S has ports 1..4, not 5"),
    ('Switch 4 "S"\n[1] "H"[1]\n\nHca 1 "H"\n', "H port 1 lists no cable"),
    ('Switch 4 "S"\n[1] "H"[1]\n[2] "H"[1]\n\nHca 1 "H"\n[1] "S"[1]\n', "H port 1 -> S port 1"),
    ('Switch 4 "S"\n[1] "H"[1]\n[1] "H"[1]\n', "listed twice"),
    ('Switch 4 "S"\n\nSwitch 2 "S"\n', "defined twice"),
    ('Switch 300 "S"\n', "300 ports"),
    ('Switch 4 "S"\n[1] H[1]\n', "cannot read the port line"),
    ('[1] "S"[1]\n', "outside a node record"),
    ('Router 4 "R"\n', "cannot read"),
    ('', "no nodes"),
    ('Hca 1 "H"\n[1] "H2"[0]\n', "ports start at 1"),
]


@pytest.mark.parametrize("text, why", BAD)
def test_malformed_files_name_line_and_reason(text, why):
    with pytest.raises(NetFileError) as e:
        parse_netfile(text, "bad.net")
    assert e.value.where.startswith("bad.net:") and why in str(e.value), str(e.value)


def test_line_numbers_point_at_the_fault(tmp_path):
    f = tmp_path / "x.net"
    f.write_text('# c\nSwitch 4 "S"\n[1] "H"[1]\n[2] "Q"[1]\n\nHca 1 "H"\n[1] "S"[1]\n')
    with pytest.raises(NetFileError) as e:
        read_netfile(f)
    assert e.value.where == f"{f}:4" and "no node 'Q'" in e.value.reason


def test_include(tmp_path):
    (tmp_path / "hcas.net").write_text('Hca 1 "H"\n[1] "S"[2]\n')
    f = tmp_path / "top.net"
    f.write_text('Switch 4 "S"\n[2] "H"[1]\n\ninclude hcas.net\n')
    t = read_netfile(f)
    assert t.links() == [("H", 1, "S", 2)]


def test_missing_file():
    with pytest.raises(NetFileError, match="cannot read"):
        read_netfile("/nonexistent/x.net")
