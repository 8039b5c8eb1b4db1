"""OpenSM, the subnet manager everybody runs, on the same net files as ours: it routes a
fabric that Debian's `ibsim` simulates (its MADs reach ibsim through `umad2sim`, which
`ibsim-run` preloads), writes its tables to dump files, and we read them back.

    run = run_opensm("fabric.net", "ftree", "build/osm/ftree")
    run.seconds, run.peak_rss_mb, run.engine_used       # what OpenSM took, and what it ran
    routes = run.routes(fab)                             # OpenSM's LIDs and LFTs on our Fabric

`routes(fab)` gives `fab` OpenSM's LID assignment and returns OpenSM's LFTs as an
sm.routing.Routes: our CDG checker, balance figures and the RTL fabric (hw/fabric) then
take OpenSM's routing exactly as they take ours. Nodes are matched by their names in the
net file (OpenSM's dumps carry the node descriptions ibsim gives them: the names).

What OpenSM needs, measured on Debian 12 (opensm 3.3.23, ibsim 0.10):
  * each ibsim a private socket name (IBSIM_SOCKNAME), or two runs talk to each other's
    simulator; ibsim is ready when its control socket (@<name>:ctl@) is listening;
  * ibsim's node, switch and port limits (-N/-S/-P) raised for nets beyond ~256 switches;
  * the engine OpenSM actually used read from its log ("<engine> tables configured on all
    switches"): a failed engine falls back to minhop without any other sign.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fabric.topology import Topology, read_netfile
from sm.dumps import read_opensm_guid2lid, read_opensm_lfts
from sm.fabric import Fabric, FabricError
from sm.routing import NO_ROUTE, Routes

__all__ = ["OpenSMError", "OpenSMRun", "run_opensm", "have_opensm"]

_TOOLS = ("ibsim", "opensm", "ibsim-run")
_USED = re.compile(r"-> osm_ucast_mgr_process: (\S+) tables configured on all switches")
_seq = 0


class OpenSMError(RuntimeError):
    pass


def have_opensm() -> str | None:
    """None when ibsim and OpenSM are installed, else what is missing."""
    miss = [t for t in _TOOLS if shutil.which(t) is None and not Path("/usr/sbin", t).exists()]
    return None if not miss else (f"{', '.join(miss)} not found: apt-get install opensm ibsim-utils "
                                  "(make setup does)")


def vm_hwm_kb(pid: int | str = "self") -> int:
    """A process's peak resident memory (VmHWM, KiB): its own address space since its last
    exec. getrusage's ru_maxrss is not that: Linux carries a process's high-water mark across
    exec, so a child started from a large Python process reports the parent's size."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def _watch_hwm(p: subprocess.Popen, every: float = 0.05) -> int:
    """Wait for `p` (ibsim-run execs OpenSM in the same process), sampling its VmHWM: the
    largest seen, KiB (the high-water mark only grows, so the last sample is the peak up to
    `every` seconds before the exit)."""
    hwm = 0
    while p.poll() is None:
        try:
            hwm = max(hwm, vm_hwm_kb(p.pid))
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
        time.sleep(every)
    return hwm


def _which(tool: str) -> str:
    return shutil.which(tool) or str(Path("/usr/sbin", tool))


@dataclass
class OpenSMRun:
    engine: str                   # asked for
    engine_used: str              # what OpenSM's log says it configured the switches with
    seconds: float                # wall time of `opensm --once` (discovery through ibsim, routing, programming)
    route_seconds: float          # from "Entering MASTER state" to "tables configured" in its log
    peak_rss_mb: float            # OpenSM's own peak resident memory
    dump_dir: Path
    topo: Topology

    @property
    def lfts(self) -> dict[str, dict[int, int]]:
        return read_opensm_lfts(self.dump_dir / "opensm-lfts.dump")

    @property
    def lids(self) -> dict[str, int]:
        return read_opensm_guid2lid(self.dump_dir / "opensm-subnet.lst")

    def routes(self, fab: Fabric) -> Routes:
        return opensm_routes(fab, self.topo, self.lids, self.lfts, f"opensm-{self.engine_used}")


def opensm_routes(fab: Fabric, topo: Topology, lids: dict[str, int], lfts: dict[str, dict[int, int]],
                  name: str = "opensm") -> Routes:
    """Give `fab` OpenSM's LIDs and return OpenSM's LFTs on it. `fab`'s switches are named as
    in the net file; its CAs are found by the switch port they are cabled to (so a fabric
    discovered in-band, whose CAs have no names, matches too)."""
    lid_sw = []
    for nm in fab.sw_names:
        if nm not in lids:
            raise FabricError(f"OpenSM assigned no LID to switch {nm!r} (is this the net file OpenSM ran on?)")
        lid_sw.append(lids[nm])
    lid_ca = []
    for c in range(fab.C):
        sw = fab.sw_names[int(fab.ca_sw[c])]
        far = topo.nodes[sw].ports.get(int(fab.ca_port[c])) if sw in topo.nodes else None
        if far is None or far[0] not in lids:
            raise FabricError(f"CA behind {sw} port {int(fab.ca_port[c])}: no such CA in OpenSM's subnet")
        lid_ca.append(lids[far[0]])
    fab.set_lids(lid_sw, lid_ca)
    lft = np.full((fab.S, fab.L), NO_ROUTE, dtype=np.uint8)
    for s, nm in enumerate(fab.sw_names):
        table = lfts.get(nm)
        if table is None:
            raise FabricError(f"OpenSM's LFT dump has no switch {nm!r}")
        for lid, port in table.items():
            if lid < fab.L and port != 255:
                lft[s, lid] = port
    return Routes(name, lft, info={"seconds": 0.0})


def _limits(topo: Topology) -> list[str]:
    nodes, sws = len(topo.nodes), len(topo.switches())
    ports = sum(n.nports + 1 for n in topo.nodes.values())
    return ["-N", str(max(2048, nodes + 64)), "-S", str(max(256, sws + 16)), "-P", str(max(13000, ports + 256))]


def _stamp(line: str) -> float | None:
    """Seconds of the day of an OpenSM log line ('Dec 02 16:37:20 322965 [...]')."""
    m = re.match(r"\w+ \d+ (\d+):(\d+):(\d+) (\d+) ", line)
    if not m:
        return None
    h, mi, s, us = (int(x) for x in m.groups())
    return h * 3600 + mi * 60 + s + us / 1e6


def run_opensm(netfile: Path | str, engine: str, out_dir: Path | str, *, timeout: float = 3600.0,
               ibsim_wait: float = 600.0) -> OpenSMRun:
    """ibsim on `netfile`, then `opensm --once -R engine` against it; dumps into out_dir."""
    global _seq
    missing = have_opensm()
    if missing:
        raise OpenSMError(missing)
    netfile = Path(netfile).resolve()
    topo = read_netfile(netfile)
    out = Path(out_dir).resolve()
    if out.exists():
        shutil.rmtree(out)
    (out / "dump").mkdir(parents=True)
    _seq += 1
    sock = f"ibswitch-{os.getpid()}-{_seq}"
    env = dict(os.environ, IBSIM_SOCKNAME=sock)
    env.pop("LD_PRELOAD", None)
    with open(out / "ibsim.log", "w") as lg:
        sim = subprocess.Popen([_which("ibsim"), "-s", "-n", *_limits(topo), str(netfile)], env=env, cwd=out,
                               stdin=subprocess.DEVNULL, stdout=lg, stderr=subprocess.STDOUT)
    try:
        t0 = time.monotonic()
        while f"@{sock}:ctl@" not in Path("/proc/net/unix").read_text(errors="replace"):
            if sim.poll() is not None:
                raise OpenSMError(f"ibsim exited ({sim.returncode}) before it listened: {out / 'ibsim.log'}")
            if time.monotonic() - t0 > ibsim_wait:
                raise OpenSMError(f"ibsim did not listen within {ibsim_wait:.0f} s: {out / 'ibsim.log'}")
            time.sleep(0.1)
        log = out / "opensm.log"
        cmd = [_which("ibsim-run"), _which("opensm"), "--once", "-D", "0x43", "-R", engine,
               "--dump_files_dir", str(out / "dump"), "-f", str(log)]
        t1 = time.monotonic()
        with open(out / "opensm.out", "w") as so:
            p = subprocess.Popen(cmd, env=env, cwd=out, stdin=subprocess.DEVNULL, stdout=so,
                                 stderr=subprocess.STDOUT)
            try:
                hwm = _watch_hwm(p)
            except BaseException:
                p.kill()
                raise
        seconds = time.monotonic() - t1
        if seconds > timeout:
            raise OpenSMError(f"opensm took {seconds:.0f} s (> {timeout:.0f} s)")
    finally:
        sim.terminate()
        try:
            sim.wait(10)
        except subprocess.TimeoutExpired:
            sim.kill()
    text = log.read_text(errors="replace") if log.exists() else ""
    used = _USED.findall(text)
    if not used:
        raise OpenSMError(f"opensm (exit {p.returncode}) configured no switch tables: {log}")
    master = [_stamp(x) for x in text.splitlines() if "Entering MASTER state" in x]
    done = [_stamp(x) for x in text.splitlines() if "tables configured on all switches" in x]
    route_s = (done[-1] - master[0]) % 86400 if master and done and None not in (master[0], done[-1]) else float("nan")
    for f in ("opensm-lfts.dump", "opensm-subnet.lst"):
        if not (out / "dump" / f).exists():
            raise OpenSMError(f"opensm wrote no {f} into {out / 'dump'}")
    return OpenSMRun(engine, used[-1], seconds, route_s, hwm / 1024, out / "dump", topo)
