"""The socket protocol of ibsim 0.10 (linux-rdma/ibsim `include/ibsim.h`), which Debian's
`libumad2sim.so` speaks for every umad client (OpenSM, infiniband-diags): the messages as
data, packed and unpacked here and nowhere else (fabric/ibsim_server.py serves them).

Sockets: datagrams, abstract AF_UNIX names `<base>:<suffix>` with a trailing NUL in the
address (`<base>` = $IBSIM_SOCKNAME, default "sim"):
  <base>:ctl          the server's control socket; clients connect() to it
  <base>:out<slot>    the server's data socket of client slot <slot>; the client connect()s
                      its data socket to it after CONNECT, so it accepts data only from there
  <base>:ctl<pid>     a client's control socket
  <base>:in<pid>      a client's data socket (the server connect()s out<slot> to it)

Control message (struct sim_ctl, 80 bytes, host order = little-endian here):
  magic u32 (0xdeadbeef), clientid u32, type u32, len u32, data[64]
The client blocks until the reply (same header; type ERROR on failure; its own `len` bytes of
data copied back), so every control message is answered.

Data message (struct sim_request, 288 bytes, network order):
  dlid (a big-endian 16-bit LID in 4 bytes), slid (likewise), dqp u32, sqp u32, status u32,
  4 bytes pad, length u64 (MAD bytes, at most 256), mad[256]
No SL, P_Key, Q_Key or GRH travels: umad2sim drops them.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["MAGIC", "Ctl", "CtlType", "ProtocolError", "Request", "ClientInfo", "Vendor", "CTL_BYTES",
           "REQ_BYTES", "MAD_BYTES", "sock_name", "ETIMEDOUT"]

MAGIC = 0xDEADBEEF
ETIMEDOUT = 110                 # the status of a MAD the fabric could not deliver (as ibsim)
MAD_BYTES = 256
CTL_DATA = 64

_CTL = struct.Struct("<IIII64s")
_REQ = struct.Struct(">H2xH2xIII4xQ256s")
_INFO = struct.Struct("<III32s")
_VENDOR = struct.Struct("<III4xQ")
CTL_BYTES, REQ_BYTES = _CTL.size, _REQ.size
assert (CTL_BYTES, REQ_BYTES, _INFO.size, _VENDOR.size) == (80, 288, 44, 24)


class CtlType:
    ERROR = 0
    CONNECT = 1
    DISCONNECT = 2
    GET_PORT = 3
    GET_VENDOR = 4
    GET_GID = 5
    GET_GUID = 6
    GET_NODEINFO = 7
    GET_PORTINFO = 8
    SET_ISSM = 9
    GET_PKEYS = 10
    NAMES = {0: "ERROR", 1: "CONNECT", 2: "DISCONNECT", 3: "GET_PORT", 4: "GET_VENDOR", 5: "GET_GID",
             6: "GET_GUID", 7: "GET_NODEINFO", 8: "GET_PORTINFO", 9: "SET_ISSM", 10: "GET_PKEYS"}


class ProtocolError(ValueError):
    """A datagram that is not a message of the protocol (the text says which field)."""


def sock_name(base: str, suffix: str) -> bytes:
    """The abstract socket address of `<base>:<suffix>` as ibsim's make_name() builds it: a
    leading NUL, the name, and the trailing NUL that is part of the name's length."""
    return b"\0" + f"{base}:{suffix}".encode() + b"\0"


@dataclass
class Ctl:
    type: int
    clientid: int = 0
    length: int = 0
    data: bytes = bytes(CTL_DATA)
    magic: int = MAGIC

    def pack(self) -> bytes:
        return _CTL.pack(self.magic, self.clientid, self.type, self.length, self.data[:CTL_DATA].ljust(CTL_DATA, b"\0"))

    @classmethod
    def unpack(cls, b: bytes) -> Ctl:
        if len(b) != CTL_BYTES:
            raise ProtocolError(f"control message: {len(b)} bytes, not {CTL_BYTES}")
        magic, cid, typ, ln, data = _CTL.unpack(b)
        if magic != MAGIC:
            raise ProtocolError(f"control message: magic {magic:#010x}, not {MAGIC:#010x}")
        if ln > CTL_DATA:
            raise ProtocolError(f"control message: len {ln} beyond the {CTL_DATA} data bytes")
        return cls(typ, cid, ln, data, magic)

    def reply(self, data: bytes | None = None, ok: bool = True) -> Ctl:
        """The answer: the header echoed, type ERROR if not ok, `data` in place of the request's."""
        return Ctl(self.type if ok else CtlType.ERROR, self.clientid, self.length,
                   self.data if data is None else data, self.magic)


@dataclass
class ClientInfo:
    """struct sim_client_info: CONNECT's data. id: the client's pid (its socket names);
    nodeid: the node to attach to (SIM_HOST: a node name or its NodeDescription; empty: the
    server's default); in the reply id is the slot and nodeid the node attached."""
    id: int
    qp: int = 0
    issm: int = 0
    nodeid: str = ""

    def pack(self) -> bytes:
        return _INFO.pack(self.id, self.qp, self.issm, self.nodeid.encode()[:31].ljust(32, b"\0"))

    @classmethod
    def unpack(cls, b: bytes) -> ClientInfo:
        i, qp, issm, nid = _INFO.unpack_from(b)
        try:
            name = nid.split(b"\0", 1)[0].decode()
        except UnicodeDecodeError as e:
            raise ProtocolError(f"CONNECT: nodeid {nid!r} is not text") from e
        return cls(i, qp, issm, name)


@dataclass
class Vendor:
    vendor_id: int
    vendor_part_id: int
    hw_ver: int
    fw_ver: int = 1

    def pack(self) -> bytes:
        return _VENDOR.pack(self.vendor_id, self.vendor_part_id, self.hw_ver, self.fw_ver)


@dataclass
class Request:
    """One MAD between a client and the server."""
    dlid: int
    slid: int
    dqp: int
    sqp: int
    status: int = 0
    length: int = MAD_BYTES
    mad: bytes = bytes(MAD_BYTES)

    def pack(self) -> bytes:
        return _REQ.pack(self.dlid & 0xFFFF, self.slid & 0xFFFF, self.dqp, self.sqp, self.status,
                         self.length, self.mad[:MAD_BYTES].ljust(MAD_BYTES, b"\0"))

    @classmethod
    def unpack(cls, b: bytes) -> Request:
        if len(b) != REQ_BYTES:
            raise ProtocolError(f"MAD message: {len(b)} bytes, not {REQ_BYTES}")
        dlid, slid, dqp, sqp, status, length, mad = _REQ.unpack(b)
        if length > MAD_BYTES:
            raise ProtocolError(f"MAD message: length {length} beyond {MAD_BYTES}")
        return cls(dlid, slid, dqp, sqp, status, length, mad)
