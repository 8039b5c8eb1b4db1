"""Run the ibsim-protocol server (fabric/ibsim_server.py) in this process and the IB tools
against it, each in a private socket name, cache and working directory: for tests, the
OpenSM demo and the SM benchmark.

    with ServedFabric(fat_tree_2(4), Path("build/osm")) as sf:
        r = sf.opensm("ftree")                       # opensm --once; r.log, r.dump_dir, r.rc
        out = sf.tool("ibnetdiscover", host="H3")    # stdout of ibsim-run ibnetdiscover
        sf.fab.regs[...]                             # the switches' registers (after stop())

The server runs in a thread of its own (asyncio loop); the tools are subprocesses through
Debian's `ibsim-run` (LD_PRELOAD of libumad2sim.so). `stop()` ends the server; registers
and agents may be inspected once it has stopped (or between tool runs: the server only
changes them while a tool talks to it).
"""
from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from contracts.config import SwitchConfig
from fabric.ibsim_server import IbsimServer, config_for
from fabric.mad_fabric import MadFabric
from fabric.pcap import PcapWriter
from fabric.topology import Topology
from fw.ud import UDPacket, build_ud

__all__ = ["ServedFabric", "OpenSMResult", "have_ib_tools", "tool_env", "tool_argv"]

_seq = 0
_USED = re.compile(r"osm_ucast_mgr_process: (\S+) tables configured on all switches")


def have_ib_tools() -> str | None:
    """None when ibsim-run, OpenSM and infiniband-diags are installed, else what is missing."""
    miss = [t for t in ("ibsim-run", "opensm", "ibnetdiscover", "perfquery", "ibroute", "smpquery")
            if shutil.which(t) is None and not Path("/usr/sbin", t).exists()]
    return None if not miss else f"{', '.join(miss)} not found: apt-get install opensm ibsim-utils infiniband-diags"


def _which(tool: str) -> str:
    return shutil.which(tool) or str(Path("/usr/sbin", tool))


def tool_argv(*args: str) -> list[str]:
    """`ibsim-run tool args...`: the tool with Debian's libumad2sim.so preloaded."""
    return [_which("ibsim-run"), _which(args[0]), *args[1:]]


def tool_env(sock: str, cache_dir: Path | str, host: str | None = None, udp: tuple[str, int] | None = None) -> dict:
    """A tool's environment for a server on socket name `sock` (or ibsim's remote mode at
    `udp`), attached to channel adapter `host`, with OpenSM's cache in `cache_dir`."""
    e = dict(os.environ, IBSIM_SOCKNAME=sock, OSM_CACHE_DIR=str(cache_dir))
    for k in ("LD_PRELOAD", "IBSIM_SERVER_NAME", "IBSIM_SERVER_PORT", "SIM_HOST"):
        e.pop(k, None)
    if udp:
        e.update(IBSIM_SERVER_NAME=udp[0], IBSIM_SERVER_PORT=str(udp[1]))
    if host:
        e["SIM_HOST"] = host
    return e


@dataclass
class OpenSMResult:
    rc: int
    seconds: float
    log: str
    dump_dir: Path
    engine_used: str | None

    @property
    def subnet_up(self) -> bool:
        return "SUBNET UP" in self.log


class ServedFabric:
    def __init__(self, topo: Topology, workdir: Path | str, cfg: SwitchConfig | None = None,
                 sm_node: str | None = None, pcap: Path | str | None = None, **server_kw):
        global _seq
        _seq += 1
        self.topo = topo
        self.cfg = cfg or config_for(topo)
        self.dir = Path(workdir).resolve()
        if self.dir.exists():
            shutil.rmtree(self.dir)
        self.dir.mkdir(parents=True)
        self.sock = f"ibsrv-{os.getpid()}-{_seq}"
        cas = [n.name for n in topo.hcas()]
        self.sm_node = sm_node or cas[0]
        self.fab = MadFabric(topo, self.cfg, self.sm_node, ca_agents=True, count=True)
        self._logf = open(self.dir / "server.log", "w")
        self.srv = IbsimServer(self.fab, self.sock, self.sm_node, log=self._log, **server_kw)
        self.pcap = PcapWriter(pcap) if pcap else None
        if self.pcap:
            self.srv.capture = self.pcap.write
        self._thread = threading.Thread(target=lambda: asyncio.run(self.srv.serve()), daemon=True,
                                        name=f"ibsim-server {self.sock}")
        self._thread.start()

    def _log(self, s: str):
        self._logf.write(s + "\n")
        self._logf.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self._thread.is_alive():
            self.srv.stop()
            self._thread.join(10)
        self.srv.close()
        if self.pcap:
            self.pcap.close()
        self._logf.close()

    def cut(self, a: str, pa: int):
        """Take the cable at (a, pa) down, in the server's loop (its PHYs report Down)."""
        self.srv.call(lambda: self.fab.cut(a, pa))

    def send_data(self, src: str, dst: str, n: int, payload: int = 256):
        """n UD data packets (QP 0x100 -> 0x100, VL0) from host `src` to host `dst`, by the
        LIDs the SM gave them: traffic for the counters (the hosts count and drop them)."""
        def go():
            a, b = self.fab.cas[src], self.fab.cas[dst]
            for _ in range(n):
                pkt = build_ud(UDPacket(vl=0, sl=0, dlid=b.port.lid, slid=a.port.lid, dest_qp=0x100, src_qp=0x100,
                                        qkey=0x1234, pkey=0xFFFF, mad=bytes(payload)), self.cfg.crc_msb_first)
                self.fab.inject(src, pkt)
        self.srv.call(go)

    def sync(self, timeout: float = 10):
        """Wait until the server has run everything asked of it so far (call, cut, send_data)."""
        done = threading.Event()
        self.srv.call(done.set)
        if not done.wait(timeout):
            raise RuntimeError(f"the server did not answer in {timeout} s")

    @property
    def server_log(self) -> str:
        return (self.dir / "server.log").read_text()

    def root_guid_file(self, *switches: str) -> Path:
        """A file of switch node GUIDs, for OpenSM's -a (up*/down* roots)."""
        f = self.dir / "roots.txt"
        f.write_text("".join(f"{self.fab.fws[self.fab.index[s]].sma.id.node_guid:#018x}\n" for s in switches))
        return f

    def env(self, host: str | None = None) -> dict:
        return tool_env(self.sock, self.dir / "osm-cache", host, self.srv.udp)

    def popen(self, *args: str, host: str | None = None, **kw) -> subprocess.Popen:
        """`ibsim-run args...` attached to `host` (default: the SM's node)."""
        return subprocess.Popen(tool_argv(*args), env=self.env(host), cwd=self.dir, stdin=subprocess.DEVNULL, **kw)

    def tool(self, *args: str, host: str | None = None, timeout: float = 120, check: bool = True) -> str:
        """Run a tool to its end; its stdout (stderr too on a failure)."""
        p = self.popen(*args, host=host, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise RuntimeError(f"{' '.join(args)} did not finish in {timeout} s; server log "
                               f"{self.dir}/server.log") from None
        if check and p.returncode:
            raise RuntimeError(f"{' '.join(args)}: exit {p.returncode}: {err.strip()[-2000:]}")
        return out

    def opensm(self, engine: str, *, once: bool = True, timeout: float = 300, extra: tuple = (),
               name: str | None = None) -> OpenSMResult:
        """opensm --once -R engine (dumps with -D 0x43, as sm/opensm.py runs it on ibsim; -d 2:
        its log flushed line by line)."""
        tag = name or engine
        dump = self.dir / f"dump-{tag}"
        dump.mkdir(exist_ok=True)
        log = self.dir / f"opensm-{tag}.log"
        args = ["opensm", *(["--once"] if once else []), "-R", engine, "-D", "0x43", "-d", "2", "--dump_files_dir",
                str(dump), "-f", str(log), *extra]
        t0 = time.monotonic()
        with open(self.dir / f"opensm-{tag}.out", "w") as so:
            p = self.popen(*args, host=self.sm_node, stdout=so, stderr=subprocess.STDOUT)
            try:
                rc = p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                rc = -9
        text = log.read_text(errors="replace") if log.exists() else ""
        used = _USED.findall(text)
        return OpenSMResult(rc, time.monotonic() - t0, text, dump, used[-1] if used else None)
