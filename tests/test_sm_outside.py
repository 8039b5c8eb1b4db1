"""Our subnet manager's routing judged by outside tools, and OpenSM's routing judged by ours:

  * ibdmchk (Debian ibutils) reads the OpenSM-format dumps our SM writes (opensm-subnet.lst,
    opensm.fdbs, opensm.mcfdbs): it must trace every CA-to-CA path and agree with our CDG
    checker: no credit loop for ftree/updn, a loop for min-hop on a torus;
  * OpenSM (Debian 3.3.23) routes the same net files in ibsim: its LFTs, read back onto our
    fabric view, deliver every CA LID hop by hop; our CDG checker's verdict on them agrees
    with ibdmchk's on OpenSM's own dumps.

Needs opensm, ibsim-utils and ibutils (make setup installs them); a machine without them
fails here, naming what is missing.
"""
import re
import subprocess

import pytest

from fabric.topology import fat_tree_2, fat_tree_3, torus_2d
from sm.cdg import check
from sm.dumps import write_dumps
from sm.fabric import Fabric
from sm.opensm import have_opensm, run_opensm
from sm.routing import route
from tests.test_sm_routing import _walk

TOPOS = {"ft2-8": lambda: fat_tree_2(8), "ft3-4": lambda: fat_tree_3(4), "torus-4x4": lambda: torus_2d(4, 4, 1)}


def ibdmchk(d) -> tuple[bool, int, str]:
    """(credit loops found, CA-to-CA paths scanned, output) of ibdmchk on the dumps in d."""
    out = subprocess.run(["ibdmchk", "-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m", "opensm.mcfdbs"],
                         cwd=d, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    m = re.search(r"-I- Scanned:(\d+) CA to CA paths", text)
    assert m, f"ibdmchk traced no paths (exit {out.returncode}):\n{text[-3000:]}"
    loops = "credit loops in routing" in text
    assert loops or "no credit loops found" in text, f"ibdmchk gave no credit-loop verdict:\n{text[-3000:]}"
    return loops, int(m.group(1)), text


def _need():
    missing = have_opensm()
    if missing or subprocess.run(["which", "ibdmchk"], capture_output=True).returncode:
        pytest.fail(missing or "ibdmchk not found: apt-get install ibutils (make setup does)")


@pytest.mark.parametrize("name,engine,loops", [
    ("ft2-8", "ftree", False), ("ft3-4", "ftree", False), ("torus-4x4", "updn", False),
    ("torus-4x4", "minhop", True), ("ft2-8", "layered", False)])
def test_ibdmchk_reads_our_dumps(tmp_path, name, engine, loops):
    _need()
    fab = Fabric.from_topology(TOPOS[name]())
    r = route(fab, engine)
    write_dumps(fab, r, tmp_path)
    found, paths, text = ibdmchk(tmp_path)
    assert paths == fab.C * (fab.C - 1), f"ibdmchk traced {paths} CA-to-CA paths of {fab.C * (fab.C - 1)}"
    assert "-E- Fail" not in text and "Fail to find a path" not in text, text[-3000:]
    ours = check(fab, r, mode="paths")           # what ibdmchk follows: the CA-to-CA paths
    assert found == loops == (not ours.acyclic), f"ibdmchk loops={found}, ours: {ours}"


@pytest.mark.parametrize("name,engine", [("ft2-8", "ftree"), ("ft3-4", "updn"), ("torus-4x4", "minhop")])
def test_opensm_routing_through_our_tools(tmp_path, name, engine):
    _need()
    topo = TOPOS[name]()
    net = tmp_path / f"{name}.net"
    topo.write(net)
    run = run_opensm(net, engine, tmp_path / "osm")
    assert run.engine_used == engine, f"OpenSM fell back to {run.engine_used} (asked {engine})"
    fab = Fabric.from_topology(topo)
    r = run.routes(fab)
    for s in range(fab.S):
        if not fab.cas_at[s]:
            continue
        for lid in fab.lid_ca.tolist():
            assert _walk(fab, r, s, lid) is not None, f"OpenSM's LFTs: {fab.sw_names[s]} cannot reach LID {lid}"
    found, paths, _ = ibdmchk(run.dump_dir)
    assert paths == fab.C * (fab.C - 1)
    ours = check(fab, r, mode="paths")
    assert found == (not ours.acyclic), f"ibdmchk on OpenSM's dumps: loops={found}; our checker: {ours}"
