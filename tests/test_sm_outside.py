"""Our subnet manager's routing judged by outside tools, and OpenSM's routing judged by ours:

  * ibdmchk (Debian ibutils) reads the OpenSM-format dumps our SM writes (opensm-subnet.lst,
    opensm.fdbs, opensm.mcfdbs): it must trace every CA-to-CA path and agree with our CDG
    checker in the same scope (sm.cdg, docs/routing-checks.md): CA-to-CA paths by default,
    every switch to every LID with -a; no credit loop for ftree/updn, a loop for min-hop on
    a torus, and on fat trees routed min-hop a loop only through switch LIDs (both see it
    with -a / scope "all", neither without);
  * the layered engine's dumps carry each pair's SL and the switches' SL2VL tables
    (path-sl.txt, opensm-sl2vl.dump): with -c/-d ibdmchk follows every path on its VL and
    finds no loop on a 4x4 torus, as ours does; without them (every path on SL 0), or with
    every SL 0 or every VL 0, it finds the loop the layers break, as ours does on one VL;
  * OpenSM (Debian 3.3.23) routes the same net files in ibsim: its LFTs, read back onto our
    fabric view, deliver every CA LID hop by hop; our CDG checker's verdict on them agrees
    with ibdmchk's on OpenSM's own dumps.

ibdmchk 1.5.7 ends every run that reaches a verdict with SIGSEGV (its CrdLoopCleanup, on
OpenSM's dumps too: tools/check_sm.py); the verdict is printed first and is what counts.

Needs opensm, ibsim-utils and ibutils (make setup installs them); a machine without them
fails here, naming what is missing.
"""
import subprocess

import numpy as np
import pytest

from fabric.topology import fat_tree_2, fat_tree_3, torus_2d
from sm.cdg import _channel_ids, _edges_paths, _edges_per_switch, check
from sm.dumps import PATH_SL, SL2VL, write_dumps, write_path_sl, write_sl2vl
from sm.fabric import Fabric
from sm.opensm import have_opensm, run_opensm
from sm.routing import route
from tests.test_sm_routing import _walk
from tools.check_sm import run_ibdmchk

TOPOS = {"ft2-8": lambda: fat_tree_2(8), "ft3-4": lambda: fat_tree_3(4), "torus-4x4": lambda: torus_2d(4, 4, 1),
         "torus-5x3": lambda: torus_2d(5, 3, 2), "mesh-4x4": lambda: torus_2d(4, 4, 1, wrap=False)}


def ibdmchk(d, **kw) -> tuple[bool, int, str]:
    """(credit loops found, CA-to-CA paths scanned, output) of ibdmchk on the dumps in d
    (keywords: tools.check_sm.run_ibdmchk's -a, -c, -d, -l)."""
    res = run_ibdmchk(d, **kw)
    assert res.paths, f"ibdmchk traced no paths (exit {res.returncode}):\n{res.text[-3000:]}"
    assert res.loops is not None, f"ibdmchk gave no credit-loop verdict ({res.why}):\n{res.text[-3000:]}"
    assert res.returncode in (0, 1, -11), f"ibdmchk exit {res.returncode}:\n{res.text[-3000:]}"
    return res.loops, res.paths, res.text


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
    ours = check(fab, r, scope="ca-ca", sls=False)   # what ibdmchk follows: the CA-to-CA paths, on SL 0
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
    ours = check(fab, r, scope="ca-ca")
    assert found == (not ours.acyclic), f"ibdmchk on OpenSM's dumps: loops={found}; our checker: {ours}"


@pytest.mark.parametrize("name", ["torus-4x4", "torus-5x3", "mesh-4x4"])
def test_ibdmchk_follows_the_layers(tmp_path, name):
    """The layered engine (2 layers here): ibdmchk -c path-sl.txt -d opensm-sl2vl.dump finds
    no credit loop, CA to CA and with -a, as our checker does following the SLs; without
    the files, with a path-SL file of all SL 0, or with an SL2VL table sending every SL to
    VL 0, it finds the loop (and ours, every path on one VL, finds one): the files are what
    makes the difference, and ibdmchk reads both."""
    _need()
    fab = Fabric.from_topology(TOPOS[name]())
    r = route(fab, "layered")
    assert r.vls >= 2
    write_dumps(fab, r, tmp_path)
    for scope, all_paths in (("ca-ca", False), ("all", True)):
        ours = check(fab, r, scope=scope)
        found, paths, text = ibdmchk(tmp_path, all_paths=all_paths, psl=PATH_SL, sl2vl=SL2VL)
        assert paths == fab.C * (fab.C - 1)
        assert f"{r.vls} SLs, {r.vls} VLs used" in text, text[-2000:]
        assert ours.acyclic and not found, f"{scope}: ibdmchk loops={found}; ours: {ours}"
        one = check(fab, r, scope=scope, sls=False)
        found, _paths, text = ibdmchk(tmp_path, all_paths=all_paths)
        assert "1 SLs, 1 VLs used" in text
        assert found and not one.acyclic, f"{scope} on SL 0: ibdmchk loops={found}; ours: {one}"
    write_path_sl(fab, r, tmp_path / "sl0.txt", sls=np.zeros_like(r.sl))
    assert ibdmchk(tmp_path, psl="sl0.txt", sl2vl=SL2VL)[0], "every pair on SL 0: the loop is back"
    write_sl2vl(fab, r, tmp_path / "vl0.dump", table=[0] * 16)
    assert ibdmchk(tmp_path, psl=PATH_SL, sl2vl="vl0.dump")[0], "every SL on VL 0: the loop is back"
    assert not check(fab, r, scope="ca-ca", sl2vl=[0] * 16).acyclic


@pytest.mark.parametrize("name,engine", [("ft3-4", "minhop"), ("ft2-8", "minhop"), ("ft3-4", "layered"),
                                         ("torus-4x4", "updn"), ("torus-4x4", "minhop")])
def test_scopes_ours_beside_ibdmchk(tmp_path, name, engine):
    """Our checker's scopes against ibdmchk's: CA to CA (ours "ca-ca", ibdmchk's default) and
    every switch to every LID (ours "all", ibdmchk -a), both on one VL. On fat trees routed
    min-hop the only loop is through switch LIDs: paths from switches without CAs (a spine's
    traffic to another spine goes down and up again); "ca-all" (the CAs' paths to every
    LID) does not see it either."""
    _need()
    fab = Fabric.from_topology(TOPOS[name]())
    r = route(fab, engine)
    write_dumps(fab, r, tmp_path)
    verdicts = {}
    for scope, all_paths in (("ca-ca", False), ("all", True)):
        ours = check(fab, r, scope=scope, sls=False)
        found, paths, _ = ibdmchk(tmp_path, all_paths=all_paths)
        assert paths == fab.C * (fab.C - 1)
        assert found == (not ours.acyclic), f"scope {scope}: ibdmchk loops={found}; ours: {ours}"
        verdicts[scope] = ours.acyclic
    if name.startswith("ft"):
        assert verdicts == {"ca-ca": True, "all": False}
        assert check(fab, r, scope="ca-all", sls=False).acyclic
        names = {n: k for k, n in enumerate(fab.sw_names)}
        cyc = check(fab, r, scope="all", sls=False).cycle
        assert any(not fab.cas_at[names[s]] for s, _p, _v in cyc)      # a cycle through switches without CAs


def test_all_scope_two_ways():
    """Scope "all" built per switch (every LFT entry) and built path by path from every switch
    are the same dependencies (so per_switch is that scope, no more, no less)."""
    for name in ("ft3-4", "torus-4x4"):
        fab = Fabric.from_topology(TOPOS[name]())
        for engine in ("minhop", "updn", "layered"):
            r = route(fab, engine)
            chan, _where = _channel_ids(fab)
            a = _edges_per_switch(fab, r.lft, chan)
            b = _edges_paths(fab, r, chan, 1, None, "all", sls=False)
            assert np.array_equal(a, b), (name, engine)
            assert check(fab, r, scope="all", sls=False).mode == "per_switch"
    with pytest.raises(ValueError, match="scope"):
        check(fab, r, mode="per_switch", scope="ca-ca")
    with pytest.raises(ValueError, match="scope"):
        check(fab, r, scope="ca")


@pytest.mark.parametrize("name,engine", [("ft2-8", "ftree"), ("ft3-4", "updn")])
def test_ibdmchk_all_paths_dead_ends_are_ours(tmp_path, name, engine):
    """up*/down* on a fat tree (ftree, updn) leaves switch pairs unrouted (a top switch to
    another goes down and must not go up again; in a 3-level tree also aggregation switches
    of one pod, cabled to different cores): ibdmchk -a then gives no verdict, and the pairs
    it cannot trace are exactly those whose LFT walk does not arrive (ours). CA to CA every
    pair is routed and both say no loop."""
    _need()
    fab = Fabric.from_topology(TOPOS[name]())
    r = route(fab, engine)
    write_dumps(fab, r, tmp_path)
    res = run_ibdmchk(tmp_path, all_paths=True)
    assert res.loops is None and res.dead_ends, res.text[-2000:]
    # every port (switch LID, CA LID) as source and destination, as -a traces them
    ports = [(int(fab.lid_sw[s]), s, True) for s in range(fab.S)]
    ports += [(int(fab.lid_ca[c]), int(fab.ca_sw[c]), False) for c in range(fab.C)]
    lost = [(s, t, sw1, sw2) for src, s, sw1 in ports for lid, t, sw2 in ports
            if lid != src and _walk(fab, r, s, lid) is None]
    assert res.dead_ends == len(lost)
    # all of them between switches without CAs (a CA reaches every LID, every LID a CA)
    assert all(sw1 and sw2 and not fab.cas_at[s] and not fab.cas_at[t] for s, t, sw1, sw2 in lost), lost
    assert not ibdmchk(tmp_path)[0] and check(fab, r, scope="ca-ca").acyclic and check(fab, r, scope="all").acyclic


def test_check_sm_table(capsys, monkeypatch):
    """tools/check_sm.py: every row agrees today (exit 0, the layered torus's row as in
    docs/routing-checks.md); with our checker made to answer wrongly on the layered engine
    it says so and exits 1 (the tool can fail)."""
    _need()
    from tools import check_sm
    assert check_sm.main([]) == 0
    out = capsys.readouterr().out
    assert "| torus-4x4 | layered | 2 | LOOP | LOOP | LOOP | LOOP | ok | ok | ok | ok | yes |" in out, out
    assert "| ft3-4 | minhop | 1 | ok | ok | LOOP | LOOP | — | — | — | — | yes |" in out, out
    import sm.cdg
    real = sm.cdg.check

    def wrong(fab, r, **kw):
        res = real(fab, r, **kw)
        if r.engine == "layered":
            res.acyclic = not res.acyclic
        return res
    monkeypatch.setattr(sm.cdg, "check", wrong)
    assert check_sm.main([]) == 1
    assert "disagree" in capsys.readouterr().err
