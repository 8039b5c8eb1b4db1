"""Our subnet manager's transport over the ibsim protocol (fabric/ibsim_proto.py): the SM
attaches to a channel adapter of a fabric served by fabric/ibsim_server.py as OpenSM does
through libumad2sim.so, so both SMs reach the switches by the same path (`make bench-sm`).

    t = UmadTransport("sock-name", host="H0")
    sm = InbandSM(t, ...)                    # sm.inband: send / recv / cycles
    await sm.bring_up("ftree")

`cycles` are microseconds of wall time here (timeouts passed to `recv` too). Packets are
whole UD packets, as on the MAD fabric: what goes out is reduced to what umad carries (LIDs,
QPs, the MAD: SL, P_Key and Q_Key do not travel), what comes in is rebuilt as a packet. A
directed-route SMP leaves as the SM's software hands it to its HCA (hop pointer 0: the
sending node's SMI advances it, IBA §14.2.2, C14-9:1). `local_port` is true: an SMP with hop
count 0 is answered by the SM's own node (its PortInfo: LID, state). A MAD the server bounces
(status 110: undeliverable) is counted in `bounced` and dropped: the SM sees no answer.
"""
from __future__ import annotations

import itertools
import os
import select
import socket
import time

from fabric.ibsim_proto import CTL_BYTES, ClientInfo, Ctl, CtlType, ProtocolError, Request, sock_name
from fw.mad import MgmtClass
from fw.ud import QP1_QKEY, UDPacket, build_ud, parse_ud

__all__ = ["UmadTransport", "UmadError"]

_ids = itertools.count(1)


class UmadError(RuntimeError):
    pass


class UmadTransport:
    local_port = True

    def __init__(self, base: str, host: str = "", *, issm: bool = True, crc_msb_first: bool = False,
                 connect_timeout: float = 30.0):
        self.base, self.msb = base, crc_msb_first
        self.id = (os.getpid() & 0xFFFFF) << 8 | next(_ids) & 0xFF
        self.ctl = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.ctl.bind(sock_name(base, f"ctl{self.id}"))
        self.data = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.data.bind(sock_name(base, f"in{self.id}"))
        t0 = time.monotonic()
        while True:
            try:
                self.ctl.connect(sock_name(base, "ctl"))
                break
            except (ConnectionRefusedError, FileNotFoundError):
                if time.monotonic() - t0 > connect_timeout:
                    raise UmadError(f"no ibsim server on @{base}:ctl@ within {connect_timeout} s") from None
                time.sleep(0.05)
        self.ctl.settimeout(connect_timeout)
        r = self._ctl(Ctl(CtlType.CONNECT, 0, 44, ClientInfo(self.id, 0, int(issm), host).pack()))
        info = ClientInfo.unpack(r.data)
        self.slot, self.node = info.id, info.nodeid
        self.data.connect(sock_name(base, f"out{self.slot}"))
        self.t0 = time.monotonic_ns()
        self.inbox: list[bytes] = []
        self.sent = self.received = self.bounced = 0

    def _ctl(self, m: Ctl) -> Ctl:
        self.ctl.send(m.pack())
        try:
            r = Ctl.unpack(self.ctl.recv(CTL_BYTES * 2))
        except (TimeoutError, ProtocolError) as e:
            raise UmadError(f"ibsim server @{self.base}:ctl@: {CtlType.NAMES.get(m.type)}: {e}") from e
        if r.type == CtlType.ERROR:
            raise UmadError(f"ibsim server @{self.base}:ctl@ refused {CtlType.NAMES.get(m.type)}")
        return r

    def close(self):
        try:
            self._ctl(Ctl(CtlType.DISCONNECT, self.slot))
        except (UmadError, OSError):
            pass
        self.ctl.close()
        self.data.close()

    # ---- the SM's transport
    @property
    def cycles(self) -> int:
        return (time.monotonic_ns() - self.t0) // 1000

    def send(self, pkt: bytes):
        ud = parse_ud(pkt, self.msb)
        mad = bytearray(ud.mad)
        dr = mad[1] == MgmtClass.SUBN_DR
        if dr and not mad[4] >> 7 and mad[6] == 1:
            mad[6] = 0                                   # as handed to the HCA: its SMI advances it
        req = Request(dlid=ud.dlid, slid=0xFFFF if dr else ud.slid, dqp=ud.dest_qp, sqp=ud.src_qp, mad=bytes(mad))
        self.data.send(req.pack())
        self.sent += 1

    def _take(self, wait_s: float) -> bool:
        r, _, _ = select.select([self.data], [], [], max(0.0, wait_s))
        if not r:
            return False
        while True:
            try:
                b = self.data.recv(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return True
            try:
                req = Request.unpack(b)
            except ProtocolError:
                continue
            if req.status:
                self.bounced += 1
                continue
            self.received += 1
            smp = req.mad[1] in (MgmtClass.SUBN_LID, MgmtClass.SUBN_DR)
            self.inbox.append(build_ud(UDPacket(vl=15 if smp else 0, sl=0, dlid=req.dlid, slid=req.slid,
                                                dest_qp=req.dqp, src_qp=req.sqp, qkey=0 if smp else QP1_QKEY,
                                                pkey=0xFFFF, mad=req.mad), self.msb))

    async def recv(self, match=lambda b: True, timeout: int = 3000) -> bytes | None:
        end = self.cycles + timeout
        while True:
            for k, b in enumerate(self.inbox):
                if match(b):
                    return self.inbox.pop(k)
            left = end - self.cycles
            if left <= 0:
                return None
            self._take(left / 1e6)
