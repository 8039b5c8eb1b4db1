"""Unmodified OpenSM and infiniband-diags manage a fabric of our switches in RTL: the
ibsim-protocol server (fabric/ibsim_server.py) in front of `ib_fabric` (hw/fabric/fabric.py)
instead of the MAD-level model (verif/env/rtl_served.py). Verilator only: a 6-switch fat
tree, fat_tree_2(4), is too slow for Icarus at the pace OpenSM keeps.

  - every switch is the RTL (`ib_switch`) with its firmware (fw/) on its management
    streams and AXI4-Lite port, as in tb/test_fabric.py;
  - every channel adapter is a port of the fabric top driven by a tb LinkPeer with a
    host's agents (fw/ca.py); OpenSM runs on H0, the tools on other hosts, each a process
    of its own through Debian's libumad2sim.so, the server a task in the simulator's thread;
  - a MAD takes simulated cycles (Verilator runs a few thousand a second with the
    testbench's Python in the loop); OpenSM's transaction time-out is raised (`-t`) in case
    a umad2sim honours it (Debian's drops it: the server's status-110 bounce after
    `settle_cycles` is what ends a request nobody answers).

Checked, each with the outside tool's own output decoded here: OpenSM --once reaches SUBNET
UP with ftree; every switch's LFT, read over AXI4-Lite, equals OpenSM's dump; every cabled
port is Active (the switches' PORT_STATE registers, the hosts' agents); ibnetdiscover from
another host sees exactly the net file's cables; data packets from one host to another by
OpenSM's LIDs cross the RTL (VL0, credit flow control) and arrive; perfquery on the switch
port they entered answers that port's counter registers; no switch port counted a receive
error.
"""
import os
import re
import subprocess
import time
from pathlib import Path

import cocotb
import pytest

from contracts.counters import counter_index
from fabric.topology import fat_tree_2
from hw.fabric.fabric import FabricPlan
from scenarios.fabric import FAB_CFG

# the RTL fabric's switch config (scenarios.fabric.FAB_CFG) at the radix of fat_tree_2(4), four
# ports, and without failover: OpenSM gives no alternates. (Four ports rather than eight: the
# hierarchical build compiles one switch, a third the size; `make sim-long` runs the eight-
# port fabric in-band, tb/test_fabric.py.)
OSM_CFG = FAB_CFG.replace(name="fab4", ports=4, failover=False)
OSM_TIMEOUT_MS = 10_000


def _plan():
    return FabricPlan.from_topology(fat_tree_2(4), sm_ca="H0", hosts="all")


@cocotb.test()
async def opensm_manages_the_rtl_fabric(dut):
    from cocotb.triggers import ClockCycles

    from contracts.defs import PortState
    from fabric.ibsim_host import tool_argv, tool_env
    from fabric.ibsim_server import IbsimServer
    from fw.ud import UDPacket, build_ud
    from sm.dumps import read_opensm_lfts
    from verif.env.fabric_tb import start_firmware
    from verif.env.rtl_served import RtlMadFabric, host_idle_inputs
    from verif.outside.ibdiag_ref import ibnetdiscover_graph
    from verif.tb import TB, tb_config, tb_params

    cfg = tb_config()
    topo = fat_tree_2(4)
    plan = _plan()
    tb = TB(dut, host_idle_inputs(plan))
    await tb.reset()
    fws = start_firmware(dut, cfg, plan, polling={"every": 0})
    fab = RtlMadFabric(dut, cfg, plan, topo, fws, tb.rng)
    work = Path(tb_params()["work"])
    work.mkdir(parents=True, exist_ok=True)
    sock = f"ibrtl-{os.getpid()}"
    logf = open(work / "server.log", "w")

    def log(s):
        logf.write(f"[{fab.cycles}] {s}\n")
        logf.flush()
    srv = IbsimServer(fab, sock, plan.sm_ca, log=log)
    cocotb.start_soon(srv.serve())

    async def run(*args, host, name, timeout_s=900):
        """A tool to its end while the simulation runs; its stdout and stderr."""
        out = work / f"{name}.out"
        t0, c0 = time.monotonic(), fab.cycles
        with open(out, "w") as f:
            p = subprocess.Popen(tool_argv(*args), env=tool_env(sock, work / "osm-cache", host), cwd=work,
                                 stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT)
            while p.poll() is None:
                if time.monotonic() - t0 > timeout_s:
                    p.kill()
                    p.wait()
                    raise AssertionError(f"{args[0]} did not end in {timeout_s} s; {out}, {work / 'server.log'}")
                await ClockCycles(dut.clk, 500)
        dut._log.info(f"{name}: exit {p.returncode}, {time.monotonic() - t0:.1f} s, {fab.cycles - c0} cycles, "
                      f"server MADs in {srv.stats['mads_in']}")
        return p.returncode, out.read_text(errors="replace")

    # OpenSM brings the fabric up
    dump = work / "dump"
    dump.mkdir(exist_ok=True)
    osm_log = work / "opensm.log"
    rc, _ = await run("opensm", "--once", "-R", "ftree", "-D", "0x43", "-d", "2", "-t", str(OSM_TIMEOUT_MS),
                      "--dump_files_dir", str(dump), "-f", str(osm_log), host="H0", name="opensm")
    text = osm_log.read_text(errors="replace")
    assert rc == 0 and "SUBNET UP" in text, f"opensm exit {rc}, no SUBNET UP: {osm_log}"
    used = re.findall(r"osm_ucast_mgr_process: (\S+) tables configured", text)
    assert used and used[-1] == "ftree", f"OpenSM routed with {used}"
    # every LFT as OpenSM's dump says, read from the RTL over AXI4-Lite
    lfts = read_opensm_lfts(dump / "opensm-lfts.dump")
    assert set(lfts) == set(plan.switches), sorted(lfts)
    for k, sw in enumerate(plan.switches):
        for lid, port in lfts[sw].items():
            got = await fws[k].regs.read("LFT", lid // 4) >> (8 * (lid % 4)) & 0xFF
            assert got == port, f"{sw}: LFT[{lid}] = {got} in the RTL, OpenSM's dump {port}"
    # every cabled port Active
    for k, s in enumerate(topo.switches()):
        assert plan.switches[k] == s.name
        for p in s.ports:
            st = await fws[k].regs.read("PORT_STATE", p - 1) & 7
            assert st == PortState.ACTIVE, f"{s.name} port {p}: state {st}"
    for name, ca in fab.cas.items():
        assert ca.port.state == PortState.ACTIVE and ca.port.lid, f"{name}: {ca.port.state.name}, LID {ca.port.lid}"
    # ibnetdiscover from another host: the net file's cables
    rc, out = await run("ibnetdiscover", host="H3", name="ibnetdiscover")
    assert rc == 0, out
    assert ibnetdiscover_graph(out) == {frozenset({(a, pa), (b, pb)}) for a, pa, b, pb in topo.links()}, out
    # data by OpenSM's LIDs through the RTL: H2 (on L1's port 1) to H5
    src, dst, n = fab.cas["H2"], fab.cas["H5"], 24
    before = dst.stats["data"]
    for i in range(n):
        fab.inject("H2", build_ud(UDPacket(vl=0, sl=0, dlid=dst.port.lid, slid=src.port.lid, dest_qp=0x100,
                                           src_qp=0x100, qkey=0x1234, pkey=0xFFFF, mad=bytes([i]) * 256),
                                  cfg.crc_msb_first))
    for _ in range(200):
        if dst.stats["data"] - before == n:
            break
        await ClockCycles(dut.clk, 200)
    assert dst.stats["data"] - before == n, f"H5 got {dst.stats['data'] - before} of {n} data packets"
    # perfquery on L1 port 1 (where they entered) answers the RTL's counter registers
    lst = (dump / "opensm-subnet.lst").read_text()
    lids = {m.group(1): int(m.group(2), 16) for m in re.finditer(r"\{(\w+)\} LID:(\w+)", lst)}
    rc, pq = await run("perfquery", str(lids["L1"]), "1", host="H6", name="perfquery")
    assert rc == 0, pq
    got_c = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+):\.+(\d+)$", pq, re.M)}
    k = plan.switches.index("L1")
    for c in ("PortRcvPkts", "PortRcvData", "PortXmitPkts"):
        reg = await fws[k].regs.read("COUNTERS", counter_index(0, c))
        assert got_c[c] == reg, f"perfquery {c}: {got_c.get(c)}, the RTL's register {reg}"
    assert got_c["PortRcvPkts"] >= n, pq
    # and no receive error anywhere in the fabric (a host's link carries flow control for
    # its own VLs only: VL0, as OpenSM set the switch port's OperationalVLs)
    for k, s in enumerate(topo.switches()):
        for p in s.ports:
            e = await fws[k].regs.read("COUNTERS", counter_index(p - 1, "PortRcvErrors"))
            assert e == 0, f"{s.name} port {p}: PortRcvErrors {e}"
    srv.stop()
    fab.stop()
    dut._log.info(f"server: {srv.stats}")


@pytest.mark.parametrize("sim", ["verilator"])
def test_opensm_rtl(sim, tmp_path):
    from fabric.ibsim_host import have_ib_tools
    from verif.env.fabric_tb import FABRIC_CXX_OPT, fabric_sources, verilator_fabric_args
    from verif.runner import ROOT, run_cocotb
    missing = have_ib_tools()
    if missing:
        pytest.fail(missing)
    plan = _plan()
    out = ROOT / "build" / "sim" / "ib_fabric-osm-src"
    srcs = fabric_sources(OSM_CFG, plan, out)
    run_cocotb(top=None, name="ib_fabric", test_module="tb.test_opensm_rtl", sim=sim, cfg=OSM_CFG, sources=srcs,
               tag="ib_fabric-osm", rerun_with_waves=False, public_depth=1,
               verilator_args=verilator_fabric_args(out, endpoints=bool(plan.endpoints)), cxx_opt=FABRIC_CXX_OPT,
               testcase=["opensm_manages_the_rtl_fabric"], params={"work": str(tmp_path / "osm")})
