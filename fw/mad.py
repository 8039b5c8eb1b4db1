"""IBA management datagrams (MADs) as the switch's firmware reads and writes them.

Pure Python, big-endian as on the wire (IBA §13.4.2: fields are transmitted most
significant byte first). A MAD is 256 bytes (IBA §13.4.1). Layouts:

  common MAD header, 24 bytes (IBA §13.4.3)
    0 BaseVersion  1 MgmtClass  2 ClassVersion  3 R(1) Method(7)  4 Status(16)
    6 ClassSpecific(16)  8 TransactionID(64)  16 AttributeID(16)  18 Reserved(16)
    20 AttributeModifier(32)
  LID-routed SMP (IBA §14.2.1.1): 24 M_Key(64), 32 reserved(32 bytes), 64 SMP data
    (64 bytes), 128 reserved (128 bytes)
  directed-route SMP (IBA §14.2.1.2): ClassSpecific = HopPointer(8) HopCount(8); Status bit
    15 is D (0 outgoing, 1 returning) and the status proper is bits 14:0; 24 M_Key(64),
    32 DrSLID(16), 34 DrDLID(16), 36 reserved (28 bytes), 64 SMP data (64 bytes),
    128 InitialPath (64 bytes), 192 ReturnPath (64 bytes)
  PMA GMP (IBA §16.1.1): 24 reserved (40 bytes), 64 data (192 bytes)

Every decoder raises MADError naming the field that does not fit; nothing here trusts its
input.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

__all__ = ["MAD_BYTES", "SMP_DATA_BYTES", "PMA_DATA_BYTES", "MADError", "MgmtClass", "Method", "Status",
           "SMAttr", "PMAttr", "CCAttr", "MADHeader", "SMP", "PerfMAD", "CCMAD", "PERMISSIVE_LID"]

MAD_BYTES = 256
SMP_DATA_BYTES = 64
PMA_DATA_BYTES = 192
PERMISSIVE_LID = 0xFFFF


class MADError(ValueError):
    """A MAD (or a packet around it) that cannot be decoded: the message names the field."""


class MgmtClass:
    SUBN_LID = 0x01          # LID-routed SMP (IBA §13.4.4 table 110)
    SUBN_DR = 0x81           # directed-route SMP
    PERF = 0x04              # performance management (PMA)
    CC = 0x21                # congestion control (IBA Annex A10)


class Method:
    GET = 0x01
    SET = 0x02
    GET_RESP = 0x81
    TRAP = 0x05
    TRAP_REPRESS = 0x07


class Status:
    """MAD status (IBA §13.4.7 table 112): bit 0 busy, bit 1 redirect, bits 4:2 the code."""
    OK = 0x0000
    BUSY = 0x0001
    BAD_VERSION = 1 << 2                 # class/base version not supported
    UNSUP_METHOD = 2 << 2                # method not supported
    UNSUP_METHOD_ATTR = 3 << 2           # method/attribute combination not supported
    INVALID_FIELD = 7 << 2               # one or more fields of the attribute or modifier invalid


class SMAttr:
    """Subnet management attribute IDs (IBA §14.2.5 table 145)."""
    NOTICE = 0x0002
    NODE_DESC = 0x0010
    NODE_INFO = 0x0011
    SWITCH_INFO = 0x0012
    GUID_INFO = 0x0014
    PORT_INFO = 0x0015
    PKEY_TABLE = 0x0016
    SL2VL = 0x0017
    VLARB = 0x0018
    LFT = 0x0019
    RFT = 0x001A
    MFT = 0x001B
    SM_INFO = 0x0020
    # vendor-specific (IBA §14.2.5: 0xFF00-0xFFFF), this switch's (docs/reliability.md)
    PORT_FAILOVER = 0xFF10
    AR_GROUP = 0xFF11
    AR_LFT = 0xFF12


class CCAttr:
    """Congestion control attribute IDs (IBA Annex A10.4.3, table A10-5)."""
    CLASS_PORT_INFO = 0x0001
    NOTICE = 0x0002
    CONGESTION_INFO = 0x0011
    CONGESTION_KEY_INFO = 0x0012
    CONGESTION_LOG = 0x0013
    SWITCH_CONGESTION_SETTING = 0x0014
    SWITCH_PORT_CONGESTION_SETTING = 0x0015
    CA_CONGESTION_SETTING = 0x0016
    CONGESTION_CONTROL_TABLE = 0x0017
    TIME_STAMP = 0x0018


class PMAttr:
    """Performance management attribute IDs (IBA §16.1.2 table 222)."""
    CLASS_PORT_INFO = 0x0001
    PORT_SAMPLES_CONTROL = 0x0010
    PORT_COUNTERS = 0x0012
    PORT_XMIT_DISCARD_DETAILS = 0x0016
    PORT_COUNTERS_EXT = 0x001D


_HDR = struct.Struct(">BBBBHHQHHI")            # 24 bytes


@dataclass
class MADHeader:
    base_version: int = 1
    mgmt_class: int = MgmtClass.SUBN_LID
    class_version: int = 1
    method: int = Method.GET
    status: int = 0
    class_specific: int = 0
    tid: int = 0
    attr_id: int = 0
    attr_mod: int = 0

    def pack(self) -> bytes:
        return _HDR.pack(self.base_version, self.mgmt_class, self.class_version, self.method, self.status,
                         self.class_specific, self.tid, self.attr_id, 0, self.attr_mod)

    @classmethod
    def unpack(cls, b: bytes) -> MADHeader:
        if len(b) < _HDR.size:
            raise MADError(f"MAD of {len(b)} bytes is shorter than the 24-byte common header")
        bv, mc, cv, meth, st, cs, tid, aid, _r, amod = _HDR.unpack_from(b)
        return cls(bv, mc, cv, meth, st, cs, tid, aid, amod)


@dataclass
class SMP:
    """A subnet management packet's MAD: LID-routed or directed route (`dr`)."""
    hdr: MADHeader = field(default_factory=MADHeader)
    m_key: int = 0
    data: bytes = bytes(SMP_DATA_BYTES)
    # directed route only
    dr_slid: int = PERMISSIVE_LID
    dr_dlid: int = PERMISSIVE_LID
    initial_path: list[int] = field(default_factory=lambda: [0] * 64)
    return_path: list[int] = field(default_factory=lambda: [0] * 64)

    @property
    def dr(self) -> bool:
        return self.hdr.mgmt_class == MgmtClass.SUBN_DR

    # directed-route views of the header (IBA §14.2.1.2)
    @property
    def direction(self) -> int:
        return self.hdr.status >> 15

    @direction.setter
    def direction(self, d: int):
        self.hdr.status = (self.hdr.status & 0x7FFF) | (d & 1) << 15

    @property
    def hop_ptr(self) -> int:
        return self.hdr.class_specific >> 8

    @hop_ptr.setter
    def hop_ptr(self, v: int):
        self.hdr.class_specific = (self.hdr.class_specific & 0xFF) | (v & 0xFF) << 8

    @property
    def hop_count(self) -> int:
        return self.hdr.class_specific & 0xFF

    @hop_count.setter
    def hop_count(self, v: int):
        self.hdr.class_specific = (self.hdr.class_specific & 0xFF00) | (v & 0xFF)

    @property
    def status(self) -> int:
        """The status proper (without a DR SMP's D bit)."""
        return self.hdr.status & 0x7FFF if self.dr else self.hdr.status

    @status.setter
    def status(self, v: int):
        self.hdr.status = (self.hdr.status & 0x8000 | v & 0x7FFF) if self.dr else v & 0xFFFF

    def pack(self) -> bytes:
        if len(self.data) != SMP_DATA_BYTES:
            raise MADError(f"SMP data must be {SMP_DATA_BYTES} bytes, got {len(self.data)}")
        out = bytearray(MAD_BYTES)
        out[0:24] = self.hdr.pack()
        struct.pack_into(">Q", out, 24, self.m_key)
        if self.dr:
            struct.pack_into(">HH", out, 32, self.dr_slid, self.dr_dlid)
            out[128:192] = bytes(self.initial_path)
            out[192:256] = bytes(self.return_path)
        out[64:128] = self.data
        return bytes(out)

    @classmethod
    def unpack(cls, b: bytes) -> SMP:
        if len(b) != MAD_BYTES:
            raise MADError(f"SMP must be {MAD_BYTES} bytes, got {len(b)}")
        hdr = MADHeader.unpack(b)
        if hdr.mgmt_class not in (MgmtClass.SUBN_LID, MgmtClass.SUBN_DR):
            raise MADError(f"MgmtClass {hdr.mgmt_class:#04x} is not a subnet management class")
        smp = cls(hdr=hdr, m_key=struct.unpack_from(">Q", b, 24)[0], data=bytes(b[64:128]))
        if smp.dr:
            smp.dr_slid, smp.dr_dlid = struct.unpack_from(">HH", b, 32)
            smp.initial_path = list(b[128:192])
            smp.return_path = list(b[192:256])
        return smp


@dataclass
class PerfMAD:
    """A performance management GMP (class 0x04)."""
    hdr: MADHeader = field(default_factory=lambda: MADHeader(mgmt_class=MgmtClass.PERF))
    data: bytes = bytes(PMA_DATA_BYTES)

    def pack(self) -> bytes:
        if len(self.data) > PMA_DATA_BYTES:
            raise MADError(f"PMA data must be at most {PMA_DATA_BYTES} bytes, got {len(self.data)}")
        return self.hdr.pack() + bytes(40) + self.data + bytes(PMA_DATA_BYTES - len(self.data))

    @classmethod
    def unpack(cls, b: bytes) -> PerfMAD:
        if len(b) != MAD_BYTES:
            raise MADError(f"PMA MAD must be {MAD_BYTES} bytes, got {len(b)}")
        hdr = MADHeader.unpack(b)
        if hdr.mgmt_class != MgmtClass.PERF:
            raise MADError(f"MgmtClass {hdr.mgmt_class:#04x} is not performance management")
        return cls(hdr=hdr, data=bytes(b[64:256]))


@dataclass
class CCMAD:
    """A congestion control GMP (class 0x21, IBA Annex A10.4.1): the common header, CC_Key
    (bytes 24-31), 32 bytes of log data (32-63, CongestionLog only) and 192 of management
    data (64-255)."""
    hdr: MADHeader = field(default_factory=lambda: MADHeader(mgmt_class=MgmtClass.CC, class_version=2))
    cc_key: int = 0
    log_data: bytes = bytes(32)
    data: bytes = bytes(192)

    def pack(self) -> bytes:
        if len(self.log_data) != 32 or len(self.data) != 192:
            raise MADError(f"CC MAD log data and data must be 32 and 192 bytes, got {len(self.log_data)} "
                           f"and {len(self.data)}")
        return self.hdr.pack() + struct.pack(">Q", self.cc_key) + self.log_data + self.data

    @classmethod
    def unpack(cls, b: bytes) -> CCMAD:
        if len(b) != MAD_BYTES:
            raise MADError(f"CC MAD must be {MAD_BYTES} bytes, got {len(b)}")
        hdr = MADHeader.unpack(b)
        if hdr.mgmt_class != MgmtClass.CC:
            raise MADError(f"MgmtClass {hdr.mgmt_class:#04x} is not congestion control")
        return cls(hdr=hdr, cc_key=struct.unpack_from(">Q", b, 24)[0], log_data=bytes(b[32:64]),
                   data=bytes(b[64:256]))
