"""A server of ibsim 0.10's socket protocol (fabric/ibsim_proto.py) in front of a fabric of
our switches: unmodified OpenSM and infiniband-diags, run with Debian's `libumad2sim.so`
preloaded (`ibsim-run`), manage and query our switches' firmware (fw/) as they would a
real subnet.

    python -m fabric.ibsim_server fabric.net [--sock NAME] [--sm-node H1] [--log FILE]
    IBSIM_SOCKNAME=NAME SIM_HOST=H1 ibsim-run opensm --once ...     # in another shell

The fabric is fabric/mad_fabric.py with a host's agents on every channel adapter (fw/ca.py),
or anything with its interface: verif/env/rtl_served.py puts the RTL fabric there (the
server's loop a cocotb task; a request bounces once it has been inside the fabric
`settle_cycles` cycles, the RTL never being idle);
each client attaches to a channel adapter of the net file (SIM_HOST: its name, which is also
its NodeDescription; none: `--sm-node`, else the first channel adapter). Any number of
clients at once; one of them per node may be the SM (issm).

A MAD from a client (what ibsim does, and where we differ):
  * a request gets the client's slot in TID bits 48..63 (responses are routed back by it);
    umad2sim has put its agent id in bits 32..47; the low 32 bits are the client's own
  * it leaves the client's node out of port 1 as a UD packet: SMPs on VL15 (QP0),
    others on VL0 with QP1's Q_Key. A directed-route SMP leaves with hop pointer 1: the
    sending node's SMI advances it (IBA §14.2.2, C14-9:1) before our switches see it (ibsim
    itself takes hop pointer 0)
  * a MAD for the client's own node (hop count 0, or its own LID) is answered there
  * once the fabric is idle, a request nobody answered comes back at once with status 110
    (ETIMEDOUT), as ibsim's do; one handed to another client (an SA query to the SM) waits
    for that client up to `forward_timeout` seconds
A packet the fabric delivers to a node's software (fw/ca.py: all but what the host's own
agents answer):
  * a response goes to the client whose slot is in its TID bits 48..63, if attached there
  * a request (SMInfo, SA, a trap) to the node's SM client, only in classes the SM registers
    (0x01, 0x81, 0x03): umad2sim crashes on a class its client never registered, so no tool
    client ever gets an unsolicited MAD
  * a trap's TID is remembered: umad2sim overwrites bits 32..47 of the SM's TrapRepress, so
    the server puts the trap's own TID back before the repress goes to the switch
Bad input (a datagram of the wrong size or magic, an unknown client, a second SM on a node,
a client that went away) is a log line and a count in `stats`, never an exception.
"""
from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import queue
import select
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass

from contracts.config import CONFIGS, SwitchConfig
from fabric.ibsim_proto import (
    CTL_BYTES,
    ETIMEDOUT,
    MAD_BYTES,
    ClientInfo,
    Ctl,
    CtlType,
    ProtocolError,
    Request,
    Vendor,
    sock_name,
)
from fabric.mad_fabric import MadFabric
from fabric.pcap import PcapWriter
from fabric.topology import Topology, read_netfile
from fw.ca import CA_DEVICE_ID, CA_VENDOR_ID
from fw.mad import MADError, Method, MgmtClass
from fw.ud import QP1_QKEY, UDPacket, build_ud, parse_ud

__all__ = ["IbsimServer", "config_for"]

SM_CLASSES = (MgmtClass.SUBN_LID, MgmtClass.SUBN_DR, 0x03)     # what OpenSM's umad agents take
VL15 = 15
POLL_SLICE = 32                 # switches polled at a time


def config_for(topo: Topology) -> SwitchConfig:
    """The smallest of the project's configs whose switches have the topology's ports and
    whose LFT holds a LID for every node; for larger fabrics, one made to measure (the MAD
    fabric has no buffers or datapath to size)."""
    need = max((s.nports for s in topo.switches()), default=1)
    lids = len(topo.nodes) + 1
    fits = [c for c in CONFIGS.values() if c.ports >= need and c.lft_entries > lids and not c.ext_lid_bits]
    if fits:
        return min(fits, key=lambda c: (c.ports, c.data_vls))
    lft = 64
    while lft <= lids:
        lft *= 2
    return SwitchConfig(name=f"mad{need}", ports=need, data_width=64, data_vls=2, mtu=256, buffer_blocks_per_vl=16,
                        lft_entries=lft)


@dataclass
class Client:
    slot: int
    pid: int
    node: str
    issm: bool
    sock: socket.socket


@dataclass
class _Pending:
    slot: int
    req: Request               # as sent into the fabric (TID stamped): bounced as it is
    at_client: bool = False    # handed to another client (an SA query to the SM)
    deadline: float = 0.0
    born: int = 0              # the fabric's cycle count when it went in


class IbsimServer:
    def __init__(self, fab: MadFabric, base: str | None = None, default_node: str | None = None, *,
                 log=None, forward_timeout: float = 1.0, poll_interval: float = 1.0,
                 udp: tuple[str, int] | None = None):
        """udp: (address, port) to serve ibsim's remote mode instead of the local sockets:
        the control socket on `port`, client slot i's data socket on port + 1 + i (as
        ibsim -r); clients set IBSIM_SERVER_NAME and IBSIM_SERVER_PORT."""
        self.fab = fab
        fab.deliver = self._deliver
        self.settle_cycles = getattr(fab, "settle_cycles", 0)
        if not fab.cas:
            raise ValueError("IbsimServer: the fabric has no channel adapter agents (MadFabric(ca_agents=True))")
        self.base = base or os.environ.get("IBSIM_SOCKNAME", "sim")
        self.default_node = default_node or fab.sm_ca
        if self.default_node not in fab.cas:
            raise ValueError(f"IbsimServer: {self.default_node!r} is not a channel adapter of the fabric")
        self.by_desc = {ca.id.description: name for name, ca in fab.cas.items()}
        self.log = log or (lambda s: print(s, file=sys.stderr, flush=True))
        self.forward_timeout, self.poll_interval = forward_timeout, poll_interval
        self.clients: dict[int, Client] = {}
        self.slot_socks: dict[int, socket.socket] = {}
        self.pending: dict[tuple[int, int], _Pending] = {}
        self.traps: dict[tuple[str, int], int] = {}          # (SM node, TID low 32) -> the trap's TID
        self.stats = {k: 0 for k in ("ctl", "ctl_bad", "connects", "refused", "mads_in", "mads_out", "bad_mads",
                                     "bounced", "dropped", "local", "client_gone")}
        self.capture = None                  # callable(packet): every MAD carried, as the IB packet
        self.udp = udp
        if udp:
            self.ctl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.ctl.bind(udp)
        else:
            self.ctl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.ctl.bind(sock_name(self.base, "ctl"))
        self._from = None                                   # the control message's sender
        self._stop = False
        self._calls: queue.SimpleQueue = queue.SimpleQueue()

    # ---------------------------------------------------------------- sockets
    def close(self):
        for s in [self.ctl, *self.slot_socks.values()]:
            s.close()

    def stop(self):
        self._stop = True

    def call(self, fn):
        """Run fn() (a coroutine function too) in the server's loop: from another thread,
        the one safe way to touch the fabric while the server runs (e.g. cut a cable)."""
        self._calls.put(fn)

    def _slot_sock(self, i: int) -> socket.socket:
        s = self.slot_socks.get(i)
        if s is None:
            if self.udp:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind((self.udp[0], self.udp[1] + 1 + i))
            else:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                s.bind(sock_name(self.base, f"out{i}"))
            self.slot_socks[i] = s
        return s

    # ---------------------------------------------------------------- the loop
    async def serve(self, *, until=None):
        """Serve until stop() (or `until()` is true). Polls the switches' firmware every
        `poll_interval` seconds (port changes become traps)."""
        next_poll = time.monotonic() + self.poll_interval
        poll_at = 0
        while not self._stop and not (until and until()):
            socks = [self.ctl] + [c.sock for c in self.clients.values()]
            # a fabric that runs in simulated time (the RTL's) must not wait on the sockets
            # while a MAD is inside it
            busy = self.settle_cycles and any(not p.at_client for p in self.pending.values())
            timeout = 0.0 if busy else max(0.0, min(next_poll - time.monotonic(), 0.05))
            ready, _, _ = select.select(socks, [], [], timeout)
            for s in ready:
                if s is self.ctl:
                    self._on_ctl()
                else:
                    c = next((c for c in self.clients.values() if c.sock is s), None)
                    if c is not None:
                        await self._on_data(c)
            while not self._calls.empty():
                r = self._calls.get()()
                if inspect.isawaitable(r):
                    await r
            if time.monotonic() >= next_poll:
                # a round over every switch per poll_interval, a slice at a time, so a large
                # fabric's round does not stall the clients' MADs
                nsw = len(self.fab.fws)
                await self.fab.poll(poll_at, POLL_SLICE)
                poll_at = 0 if poll_at + POLL_SLICE >= nsw else poll_at + POLL_SLICE
                next_poll = time.monotonic() + self.poll_interval * min(1.0, POLL_SLICE / max(1, nsw))
            await self.fab.run_until_idle()
            self._expire()

    # ---------------------------------------------------------------- control
    def _on_ctl(self):
        try:
            b, frm = self.ctl.recvfrom(4096)
        except OSError:
            return
        self.stats["ctl"] += 1
        try:
            m = Ctl.unpack(b)
        except ProtocolError as e:
            self.stats["ctl_bad"] += 1
            self.log(f"ibsim-server: control datagram from {frm!r} ignored: {e}")
            if len(b) == CTL_BYTES:           # a header to answer: the client waits for it
                _magic, cid, _typ, ln = struct.unpack_from("<IIII", b)
                self._ctl_send(Ctl(CtlType.ERROR, cid, min(ln, 64), b[16:80]), frm)
            return
        self._from = frm
        reply = self._ctl(m)
        self._ctl_send(reply, frm)

    def _ctl_send(self, m: Ctl, to):
        try:
            self.ctl.sendto(m.pack(), to)
        except OSError as e:
            self.log(f"ibsim-server: control reply to {to!r} lost: {e}")

    def _ctl(self, m: Ctl) -> Ctl:
        name = CtlType.NAMES.get(m.type, str(m.type))
        if m.type == CtlType.CONNECT:
            return self._connect(m)
        c = self.clients.get(m.clientid)
        if c is None:
            self.stats["ctl_bad"] += 1
            self.log(f"ibsim-server: {name} from unknown client {m.clientid}: refused")
            return m.reply(ok=False)
        ca = self.fab.cas[c.node]
        if m.type == CtlType.DISCONNECT:
            self._drop(c, "disconnected")
            return m.reply()
        if m.type == CtlType.GET_VENDOR:
            return m.reply(Vendor(CA_VENDOR_ID, CA_DEVICE_ID, ca.id.revision).pack())
        if m.type == CtlType.GET_NODEINFO:
            return m.reply(ca.node_info())
        if m.type == CtlType.GET_PORTINFO:
            return m.reply(ca.port_info())
        if m.type == CtlType.GET_PKEYS:
            return m.reply(ca.pkey_block(0))
        if m.type == CtlType.GET_PORT:
            return m.reply(struct.pack("<HBx", ca.port.lid, int(ca.port.state)))
        if m.type == CtlType.GET_GID:
            return m.reply(ca.port.gid_prefix.to_bytes(8, "big") + struct.pack("<Q", ca.id.node_guid))
        if m.type == CtlType.GET_GUID:
            return m.reply(struct.pack("<Q", ca.id.node_guid))
        if m.type == CtlType.SET_ISSM:
            on = bool(struct.unpack_from("<i", m.data)[0])
            if on and any(o.issm and o.node == c.node and o is not c for o in self.clients.values()):
                self.log(f"ibsim-server: client {c.slot} (pid {c.pid}): a second SM on {c.node}: refused")
                return m.reply(ok=False)
            c.issm = on
            ca.set_issm(on)
            return m.reply()
        self.stats["ctl_bad"] += 1
        self.log(f"ibsim-server: client {c.slot}: unknown control message type {m.type}: refused")
        return m.reply(ok=False)

    def _connect(self, m: Ctl) -> Ctl:
        info = ClientInfo.unpack(m.data)
        node = self.default_node if not info.nodeid else (
            info.nodeid if info.nodeid in self.fab.cas else self.by_desc.get(info.nodeid))
        why = None
        if node is None:
            why = f"no channel adapter {info.nodeid!r} in the fabric"
        elif info.issm and any(c.issm and c.node == node for c in self.clients.values()):
            why = f"{node} already has an SM client"
        if why:
            self.stats["refused"] += 1
            self.log(f"ibsim-server: CONNECT from pid {info.id} refused: {why}")
            return m.reply(ok=False)
        slot = next(i for i in range(len(self.clients) + 1) if i not in self.clients)
        s = self._slot_sock(slot)
        try:
            if self.udp:                                    # remote mode: id is the client's data port
                s.connect((self._from[0] if self._from else "127.0.0.1", info.id))
            else:
                s.connect(sock_name(self.base, f"in{info.id}"))
        except OSError as e:
            self.stats["refused"] += 1
            self.log(f"ibsim-server: CONNECT from pid {info.id}: its socket in{info.id}: {e}")
            return m.reply(ok=False)
        self.clients[slot] = Client(slot, info.id, node, bool(info.issm), s)
        if info.issm:
            self.fab.cas[node].set_issm(True)
        self.stats["connects"] += 1
        self.log(f"ibsim-server: client {slot} (pid {info.id}) attached to {node}{' as SM' if info.issm else ''}")
        return Ctl(m.type, m.clientid, m.length, ClientInfo(slot, info.qp, info.issm, node).pack(), m.magic)

    def _drop(self, c: Client, why: str):
        if self.clients.pop(c.slot, None) is None:
            return
        if c.issm:
            self.fab.cas[c.node].set_issm(False)
        for k in [k for k in self.pending if k[0] == c.slot]:
            del self.pending[k]
        self.log(f"ibsim-server: client {c.slot} (pid {c.pid}, {c.node}) {why}")

    # ---------------------------------------------------------------- MADs from clients
    async def _on_data(self, c: Client):
        while True:
            try:
                b = c.sock.recv(4096, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self.stats["client_gone"] += 1
                self._drop(c, f"gone ({e})")
                return
            try:
                req = Request.unpack(b)
                await self._from_client(c, req)
            except (ProtocolError, MADError) as e:
                self.stats["bad_mads"] += 1
                self.log(f"ibsim-server: client {c.slot} ({c.node}): MAD datagram ignored: {e}")

    async def _from_client(self, c: Client, req: Request):
        self.stats["mads_in"] += 1
        mad = bytearray(req.mad)
        cls, method = mad[1], mad[3]
        if mad[0] != 1:
            raise MADError(f"BaseVersion {mad[0]}")
        tid = int.from_bytes(mad[8:16], "big")
        ca = self.fab.cas[c.node]
        is_req = not method & 0x80 and method != Method.TRAP_REPRESS
        if is_req:
            tid = (tid & 0x0000_FFFF_FFFF_FFFF) | c.slot << 48
        elif method == Method.TRAP_REPRESS:
            tid = self.traps.pop((c.node, tid & 0xFFFFFFFF), tid)
        mad[8:16] = tid.to_bytes(8, "big")
        smp = cls in (MgmtClass.SUBN_LID, MgmtClass.SUBN_DR)
        dlid, slid = req.dlid, req.slid
        local = False
        if cls == MgmtClass.SUBN_DR:
            dlid = slid = 0xFFFF
            n, h, direction = mad[7], mad[6], mad[4] >> 7
            if not direction:
                if n == 0:
                    local = True
                elif h == 0 and mad[128 + 1] == 1:
                    mad[6] = 1                          # the sender's SMI: C14-9:1
                else:
                    self._bounce(c, Request(req.dlid, req.slid, req.dqp, req.sqp, 0, req.length, bytes(mad)),
                                 f"directed route: hop pointer {h}, first port {mad[129]} (this node has port 1)")
                    return
        else:
            if slid == 0:
                slid = ca.port.lid
            local = dlid == ca.port.lid and dlid != 0
        sent = Request(req.dlid, req.slid, req.dqp, req.sqp, 0, req.length, bytes(mad))
        if is_req:
            self.pending[(c.slot, tid)] = _Pending(c.slot, sent, born=self.fab.cycles)
        ud = UDPacket(vl=VL15 if smp else 0, sl=0, dlid=dlid, slid=slid, dest_qp=req.dqp & 0xFFFFFF,
                      src_qp=req.sqp & 0xFFFFFF, qkey=0 if smp else QP1_QKEY, pkey=0xFFFF, mad=bytes(mad))
        pkt = build_ud(ud, self.fab.cfg.crc_msb_first)
        if self.capture:
            self.capture(pkt)
        if local:
            self.stats["local"] += 1
            replies, up = ca.receive(pkt)
            for r in replies:
                self._deliver(c.node, r)
            if up is not None:
                self._deliver(c.node, up)
        else:
            self.fab.inject(c.node, pkt)

    # ---------------------------------------------------------------- MADs to clients
    def _deliver(self, node: str, pkt: bytes):
        if self.capture:
            self.capture(pkt)
        try:
            ud = parse_ud(pkt, self.fab.cfg.crc_msb_first)
        except MADError as e:
            self.stats["dropped"] += 1
            self.log(f"ibsim-server: a malformed packet reached {node}: {e}")
            return
        mad = ud.mad
        cls, method = mad[1], mad[3]
        tid = int.from_bytes(mad[8:16], "big")
        req = Request(ud.dlid, ud.slid, ud.dest_qp, ud.src_qp, 0, MAD_BYTES, mad)
        if method & 0x80:
            slot = tid >> 48
            c = self.clients.get(slot)
            p = self.pending.pop((slot, tid), None)
            if c is None or c.node != node or p is None:
                self.stats["dropped"] += 1
                self.log(f"ibsim-server: response (class {cls:#04x}, TID {tid:#018x}) at {node} for no waiting "
                         f"client: dropped")
                return
            self._send(c, req)
            return
        sm = next((c for c in self.clients.values() if c.issm and c.node == node), None)
        if sm is None or cls not in SM_CLASSES:
            self.stats["dropped"] += 1
            why = "no SM client there" if sm is None else f"class {cls:#04x} is no SM class"
            self.log(f"ibsim-server: request (class {cls:#04x} method {method:#04x} attr "
                     f"{int.from_bytes(mad[16:18], 'big'):#06x}) at {node}: {why}: dropped")
            return
        if method == Method.TRAP:
            self.traps[(node, tid & 0xFFFFFFFF)] = tid
        p = self.pending.get((tid >> 48, tid))
        if p is not None:
            p.at_client, p.deadline = True, time.monotonic() + self.forward_timeout
        self._send(sm, req)

    def _send(self, c: Client, req: Request):
        try:
            c.sock.send(req.pack())
            self.stats["mads_out"] += 1
        except OSError as e:
            self.stats["client_gone"] += 1
            self._drop(c, f"gone ({e})")

    def _bounce(self, c: Client, req: Request, why: str | None = None):
        self.stats["bounced"] += 1
        if why:
            self.log(f"ibsim-server: client {c.slot} ({c.node}): {why}: status 110")
        self._send(c, Request(req.dlid, req.slid, req.dqp, req.sqp, ETIMEDOUT, req.length, req.mad))

    def _expire(self):
        """The fabric is idle: what nobody answered bounces (a request waiting at another
        client, once its deadline passed). A fabric in simulated time (`settle_cycles`, the
        RTL's) is never idle: a request bounces once it has been inside that many cycles."""
        now = time.monotonic()
        for k, p in list(self.pending.items()):
            if p.at_client and now < p.deadline:
                continue
            if not p.at_client and self.fab.cycles - p.born < self.settle_cycles:
                continue
            del self.pending[k]
            c = self.clients.get(p.slot)
            if c is not None:
                self._bounce(c, p.req)


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fabric.ibsim_server", description=__doc__.split("\n\n")[0])
    ap.add_argument("netfile")
    ap.add_argument("--sock", default=os.environ.get("IBSIM_SOCKNAME", "sim"),
                    help="socket base name (IBSIM_SOCKNAME of the clients; default %(default)s)")
    ap.add_argument("--sm-node", help="channel adapter a client without SIM_HOST attaches to")
    ap.add_argument("--udp", metavar="ADDR:PORT", help="serve ibsim's remote (UDP) mode there instead of the local "
                                                       "sockets (clients: IBSIM_SERVER_NAME, IBSIM_SERVER_PORT)")
    ap.add_argument("--config", help="switch config (contracts/config.py CONFIGS; default: the smallest "
                                     "with enough ports)")
    ap.add_argument("--log", help="log file (default stderr)")
    ap.add_argument("--pcap", help="write every MAD carried to this capture (ERF type 21: Wireshark, tshark)")
    a = ap.parse_args(argv)
    topo = read_netfile(a.netfile)
    cfg = CONFIGS[a.config] if a.config else config_for(topo)
    cas = [n.name for n in topo.hcas()]
    if not cas:
        print(f"{a.netfile}: no channel adapter to attach clients to", file=sys.stderr)
        return 2
    out = open(a.log, "a") if a.log else sys.stderr
    log = lambda s: print(s, file=out, flush=True)    # noqa: E731
    fab = MadFabric(topo, cfg, a.sm_node or cas[0], ca_agents=True, count=True)
    udp = None
    if a.udp:
        host, _, port = a.udp.rpartition(":")
        udp = (host or "0.0.0.0", int(port))
    srv = IbsimServer(fab, a.sock, a.sm_node or cas[0], log=log, udp=udp)
    cap = PcapWriter(a.pcap) if a.pcap else None
    if cap:
        srv.capture = cap.write
    signal.signal(signal.SIGTERM, lambda *_: srv.stop())
    signal.signal(signal.SIGINT, lambda *_: srv.stop())
    log(f"ibsim-server: {len(topo.switches())} switches ({cfg.name}), {len(cas)} channel adapters; "
        f"listening on {f'udp {udp[0]}:{udp[1]}' if udp else f'@{a.sock}:ctl@'}")
    try:
        asyncio.run(srv.serve())
    finally:
        srv.close()
        if cap:
            cap.close()
        log(f"ibsim-server: stopped; {srv.stats}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
