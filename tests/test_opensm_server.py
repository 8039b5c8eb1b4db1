"""Unmodified OpenSM and infiniband-diags (Debian's, through libumad2sim.so) manage and query
a fabric of our switches' firmware, served by fabric/ibsim_server.py (no RTL: the MAD-level
fabric, fabric/mad_fabric.py).

Every check reads the outside tool's own output with a decoder written here (OpenSM's log
and dump files, ibnetdiscover's topology text, ibroute's and perfquery's tables) against
what our switches hold (their registers) or the net file the fabric was built from.
"""
from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import time

import pytest

from contracts.defs import PortState
from fabric.ibsim_host import ServedFabric, have_ib_tools
from fabric.ibsim_proto import CTL_BYTES, ClientInfo, Ctl, CtlType, sock_name
from fabric.topology import dragonfly, fat_tree_2, torus_2d
from sm.dumps import read_opensm_lfts
from verif.outside.ibdiag_ref import ibnetdiscover_graph


def _need():
    missing = have_ib_tools()
    if missing:
        pytest.fail(missing)


TOPOS = {"ft2-4": lambda: fat_tree_2(4), "torus-3x3": lambda: torus_2d(3, 3, 1), "torus-4x4": lambda: torus_2d(4, 4, 1),
         "dfly-a2p1h1": lambda: dragonfly(2, 1, 1)}


def _regs_lft(sf: ServedFabric, sw: str, lids) -> dict[int, int]:
    async def read():
        return {lid: await sf.fab.lft_entry(sw, lid) for lid in lids}
    return asyncio.run(read())


def _check_brought_up(sf: ServedFabric, r, engine: str):
    assert r.rc == 0, f"opensm exit {r.rc}; log {sf.dir}"
    assert r.subnet_up, f"no SUBNET UP in OpenSM's log ({sf.dir})"
    assert r.engine_used == engine, f"OpenSM routed with {r.engine_used}, not {engine} ({sf.dir})"
    lfts = read_opensm_lfts(r.dump_dir / "opensm-lfts.dump")
    assert set(lfts) == {s.name for s in sf.topo.switches()}
    for sw, table in lfts.items():
        regs = _regs_lft(sf, sw, table)
        assert regs == table, f"{sw}: LFT registers differ from OpenSM's dump"
    for s in sf.topo.switches():                           # every cabled port Active
        k = sf.fab.index[s.name]
        for p in s.ports:
            assert sf.fab.regs[k].state[p - 1] == PortState.ACTIVE, f"{s.name} port {p}"
    for name, ca in sf.fab.cas.items():
        assert ca.port.state == PortState.ACTIVE and ca.port.lid, f"{name}: {ca.port.state.name}, LID {ca.port.lid}"


@pytest.mark.parametrize("topo,engine", [("ft2-4", "ftree"), ("ft2-4", "updn"), ("ft2-4", "minhop"),
                                         ("ft2-4", "dfsssp"), ("torus-3x3", "updn"), ("torus-3x3", "dfsssp"),
                                         ("dfly-a2p1h1", "updn"), ("dfly-a2p1h1", "dfsssp")])
def test_opensm_brings_up_our_switches(tmp_path, topo, engine):
    _need()
    t = TOPOS[topo]()
    with ServedFabric(t, tmp_path / "srv") as sf:
        # up*/down* on a torus or dragonfly: OpenSM finds no root by itself (every switch
        # sees its channel adapters alike); we name one
        roots = ("-a", str(sf.root_guid_file(t.switches()[0].name))) if engine == "updn" and topo != "ft2-4" else ()
        r = sf.opensm(engine, extra=roots)
        sf.stop()
        _check_brought_up(sf, r, engine)


def test_diag_tools_read_our_switches(tmp_path):
    _need()
    topo = fat_tree_2(4)
    with ServedFabric(topo, tmp_path / "srv", pcap=tmp_path / "mads.pcap") as sf:
        r = sf.opensm("ftree")
        assert r.subnet_up, f"no SUBNET UP ({sf.dir})"
        # ibnetdiscover from another host sees exactly the net file's cables
        got = ibnetdiscover_graph(sf.tool("ibnetdiscover", host="H3"))
        want = {frozenset({(a, pa), (b, pb)}) for a, pa, b, pb in topo.links()}
        assert got == want
        # smpquery: a switch's NodeDescription by LID
        lst = (r.dump_dir / "opensm-subnet.lst").read_text()
        lids = {m.group(1): int(m.group(2), 16) for m in re.finditer(r"\{(\w+)\} LID:(\w+)", lst)}
        assert sf.tool("smpquery", "nodedesc", str(lids["S1"]), host="H5").split(".")[-1].strip() == "S1"
        # perfquery on a switch port, after traffic through it, answers the switch's counter
        # registers: the packets it counted, and error counters as set here
        k = sf.fab.index["L1"]
        sf.send_data("H2", "H5", 40)                        # into L1 port 1 (IBA), out of 3 or 4
        sf.srv.call(lambda: sf.fab.regs[k].set_counter(0, "PortRcvErrors", 7))
        sf.srv.call(lambda: sf.fab.regs[k].set_counter(0, "PortXmitDiscards", 3))
        sf.sync()
        pq = sf.tool("perfquery", str(lids["L1"]), "1", host="H0")
        got_c = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+):\.+(\d+)$", pq, re.M)}
        sf.sync()
        regs = sf.fab.regs[k]
        for n in ("PortXmitPkts", "PortRcvPkts", "PortXmitData", "PortRcvData", "PortRcvErrors", "PortXmitDiscards"):
            assert got_c[n] == regs.counter(0, n), f"perfquery {n}: {got_c.get(n)} != register {regs.counter(0, n)}"
        assert got_c["PortRcvPkts"] >= 40 and got_c["PortRcvErrors"] == 7 and got_c["PortXmitDiscards"] == 3, pq
        # ibroute prints each switch's LFT as its registers hold it
        out = sf.tool("ibroute", str(lids["L2"]), host="H7")
        rows = {int(m.group(1), 16): int(m.group(2)) for m in re.finditer(r"^0x([0-9a-f]+) (\d+) :", out, re.M)}
        assert rows, out
        sf.stop()
        regs = _regs_lft(sf, "L2", range(1, max(rows) + 1))
        assert rows == {lid: p for lid, p in regs.items() if p != 255}
        # the capture of every MAD carried: Wireshark's dissector reads each as an IB packet
        # with a MAD of a management class and both CRCs
        res = subprocess.run(["tshark", "-r", str(tmp_path / "mads.pcap"), "-T", "fields", "-e",
                              "infiniband.mad.mgmtclass", "-e", "infiniband.invariant.crc", "-e",
                              "infiniband.variant.crc"], capture_output=True, text=True, timeout=300)
        rows = [ln.split("\t") for ln in res.stdout.splitlines()]
        assert len(rows) == sf.pcap.count > 100, res.stderr
        assert {r[0] for r in rows} <= {"0x01", "0x81", "0x04"}
        assert all(r[1] and r[2] for r in rows if r[0] != "0x04")     # (tshark shows no CRCs behind a PMA MAD)


def _wait_for(pred, timeout, what):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"{what} within {timeout} s")


def test_persistent_opensm_traps_and_queries(tmp_path):
    """OpenSM stays up: sminfo and saquery answer from it; a cable cut makes the switch send
    Trap 128, OpenSM re-sweeps and routes around the dead cable."""
    _need()
    topo = fat_tree_2(4)
    with ServedFabric(topo, tmp_path / "srv") as sf:
        log = sf.dir / "opensm-persist.log"
        dump = sf.dir / "dump-persist"
        dump.mkdir()
        osm = sf.popen("opensm", "-R", "updn", "-D", "0x43", "-d", "2", "--dump_files_dir", str(dump), "-f", str(log),
                       "-s", "0", host=sf.sm_node, stdout=open(sf.dir / "opensm-persist.out", "w"))
        try:
            _wait_for(lambda: log.exists() and "SUBNET UP" in log.read_text(errors="replace"), 60, "SUBNET UP")
            si = sf.tool("sminfo", host="H2")
            assert re.search(r"sminfo: sm lid \d+ sm guid 0x[0-9a-f]+, activity count \d+ priority \d+ state 3 "
                             r"SMINFO_MASTER", si), si
            # the SA (OpenSM) answers another host; umad2sim carries one MAD of an answer, so
            # the first record only (docs/opensm.md)
            sa = sf.tool("saquery", "NodeRecord", host="H6")
            guids = {f"{fw.sma.id.node_guid:#018x}" for fw in sf.fab.fws}
            guids |= {f"{ca.id.node_guid:#018x}" for ca in sf.fab.cas.values()}
            m = re.search(r"node_guid\.+(0x[0-9a-f]+)", sa)
            assert "NodeRecord dump" in sa and m and m.group(1) in guids, sa
            sf.cut("L0", 3)                                 # L0 -- S0
            _wait_for(lambda: "Received Generic Notice type:1 num:128" in log.read_text(errors="replace")
                      or "num:128" in log.read_text(errors="replace"), 30, "Trap 128 at OpenSM")
            n_up = log.read_text(errors="replace").count("SUBNET UP")
            _wait_for(lambda: log.read_text(errors="replace").count("SUBNET UP") > n_up, 60, "a re-sweep")
        finally:
            osm.terminate()
            osm.wait(20)
        sf.stop()
        # after the re-sweep nothing is routed into the dead cable
        k = sf.fab.index["L0"]
        lids = range(1, 200)
        regs = _regs_lft(sf, "L0", lids)
        assert 3 not in regs.values(), "L0 still routes out of its cut port 3"
        assert sf.fab.fws[k].stats["traps_sent"] >= 1


def test_server_survives_bad_input(tmp_path):
    """Malformed control datagrams, an unknown client, a second SM on a node and a client
    that vanishes: each refused or dropped with a log line; the server keeps serving."""
    _need()
    with ServedFabric(fat_tree_2(4), tmp_path / "srv") as sf:
        cl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        cl.bind(sock_name(sf.sock, "ctl424242"))
        cl.settimeout(5)
        cl.connect(sock_name(sf.sock, "ctl"))

        def ask(b: bytes) -> Ctl:
            cl.send(b)
            return Ctl.unpack(cl.recv(4096))
        bad_magic = Ctl(CtlType.GET_VENDOR, 0, 0).pack()
        bad_magic = b"\x00\x00\x00\x00" + bad_magic[4:]
        assert ask(bad_magic).type == CtlType.ERROR
        cl.send(b"short")                                   # no header to answer: ignored
        assert ask(Ctl(CtlType.GET_VENDOR, 7, 0).pack()).type == CtlType.ERROR    # unknown client
        # a client that connects and vanishes (its data socket never existed)
        r = ask(Ctl(CtlType.CONNECT, 0, 44, ClientInfo(424242, 0, 1, "H0").pack()).pack())
        assert r.type == CtlType.ERROR                      # no socket in424242: refused
        dsock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        dsock.bind(sock_name(sf.sock, "in424242"))
        r = ask(Ctl(CtlType.CONNECT, 0, 44, ClientInfo(424242, 0, 1, "H0").pack()).pack())
        assert r.type == CtlType.CONNECT
        slot = ClientInfo.unpack(r.data).id
        r2 = ask(Ctl(CtlType.CONNECT, 0, 44, ClientInfo(424243, 0, 1, "H0").pack()).pack())
        assert r2.type == CtlType.ERROR                     # a second SM on H0
        assert ask(Ctl(CtlType.CONNECT, 0, 44, ClientInfo(1, 0, 0, "nosuch").pack()).pack()).type == CtlType.ERROR
        assert ask(Ctl(99, slot, 0).pack()).type == CtlType.ERROR
        dsock.connect(sock_name(sf.sock, f"out{slot}"))
        dsock.send(b"\x01" * 100)                           # a MAD datagram of the wrong size
        dsock.close()                                       # and gone, without DISCONNECT
        assert len(Ctl(CtlType.GET_VENDOR).pack()) == CTL_BYTES
        # the server still brings the fabric up
        r = sf.opensm("minhop")
        assert r.subnet_up, sf.server_log
        log = sf.server_log
        for frag in ("magic", "unknown client 7", "already has an SM client", "no channel adapter 'nosuch'",
                     "unknown control message type 99", "MAD datagram ignored"):
            assert frag in log, f"no log line about {frag!r}:\n{log}"


@pytest.mark.parametrize("topo,engine", [("ft2-4", "ftree"), ("torus-4x4", "minhop"), ("torus-4x4", "updn")])
def test_ibdmchk_on_opensm_dumps_agrees_with_our_checker(tmp_path, topo, engine):
    """OpenSM's routing of our switches, judged twice: ibdmchk on the dumps OpenSM wrote, and
    our CDG checker (sm.cdg) on OpenSM's LFTs read back from our switches' registers."""
    _need()
    from sm.cdg import check
    from sm.dumps import read_opensm_guid2lid
    from sm.fabric import Fabric
    from sm.opensm import opensm_routes
    from tools.check_sm import run_ibdmchk
    t = TOPOS[topo]()
    with ServedFabric(t, tmp_path / "srv") as sf:
        roots = ("-a", str(sf.root_guid_file(t.switches()[0].name))) if engine == "updn" else ()
        r = sf.opensm(engine, extra=roots)
        sf.stop()
        assert r.subnet_up and r.engine_used == engine, f"{r.engine_used} ({sf.dir})"
        lids = read_opensm_guid2lid(r.dump_dir / "opensm-subnet.lst")
        lfts = {s.name: {lid: p for lid, p in _regs_lft(sf, s.name, range(1, max(lids.values()) + 1)).items()
                         if p != 255} for s in t.switches()}
    fab = Fabric.from_topology(t)
    routes = opensm_routes(fab, t, lids, lfts, f"opensm-{engine}")
    ours = check(fab, routes, scope="ca-ca")
    res = run_ibdmchk(r.dump_dir)
    assert res.loops is not None, f"ibdmchk gave no verdict ({res.why}):\n{res.text[-3000:]}"
    assert res.paths == fab.C * (fab.C - 1), res.text[-2000:]
    assert res.loops == (not ours.acyclic), f"ibdmchk loops={res.loops}; our checker: {ours}"
    assert res.loops == (engine == "minhop"), "min-hop on a torus has a credit loop, ftree and updn none"


@pytest.mark.parametrize("lid_routed", [False, True])
def test_our_sm_over_the_same_server(tmp_path, lid_routed):
    """Our SM speaks the protocol itself (sm/umad.py) and brings the served fabric up as
    OpenSM does: every port Active, every host LID routed from every switch (LFT registers),
    and OpenSM's tools then read the fabric it programmed (ibnetdiscover from a host)."""
    _need()
    from sm.inband import InbandSM
    from sm.umad import UmadTransport
    t = fat_tree_2(4)
    with ServedFabric(t, tmp_path / "srv") as sf:
        tr = UmadTransport(sf.sock, sf.sm_node)
        sm = InbandSM(tr, timeout=200_000, failover=False, adaptive=False, lid_routed=lid_routed)
        asyncio.run(sm.bring_up("ftree"))
        tr.close()
        assert tr.bounced == 0
        got = ibnetdiscover_graph(sf.tool("ibnetdiscover", host="H2"))
        assert got == {frozenset({(a, pa), (b, pb)}) for a, pa, b, pb in t.links()}
        sf.stop()
    for s in t.switches():
        k = sf.fab.index[s.name]
        assert all(sf.fab.regs[k].state[p - 1] == PortState.ACTIVE for p in s.ports), s.name
    host_lids = [ca.port.lid for ca in sf.fab.cas.values()]
    assert all(ca.port.state == PortState.ACTIVE for ca in sf.fab.cas.values()) and all(host_lids)
    for s in t.switches():
        assert 255 not in _regs_lft(sf, s.name, host_lids).values(), s.name


def _free_udp_ports(n: int) -> int:
    """A UDP port p with p .. p + n - 1 free on 127.0.0.1 (the server's control socket and
    its client slots)."""
    for base in range(20000 + (os.getpid() * 37) % 20000, 60000, 97):
        socks = []
        try:
            for k in range(n):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind(("127.0.0.1", base + k))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free UDP ports")


def test_remote_mode_over_udp(tmp_path):
    """ibsim's remote mode (IBSIM_SERVER_NAME / IBSIM_SERVER_PORT, UDP): OpenSM brings the
    fabric up and ibnetdiscover reads it through the same server on UDP sockets."""
    _need()
    t = fat_tree_2(4)
    port = _free_udp_ports(12)
    with ServedFabric(t, tmp_path / "srv", udp=("127.0.0.1", port)) as sf:
        r = sf.opensm("ftree")
        assert r.subnet_up, sf.server_log
        got = ibnetdiscover_graph(sf.tool("ibnetdiscover", host="H5"))
        assert got == {frozenset({(a, pa), (b, pb)}) for a, pa, b, pb in t.links()}
