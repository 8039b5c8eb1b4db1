"""The test side of management: an SM's node that builds SMP / PMA requests and reads the
answers, written apart from the firmware (fw/): MAD fields through libibmad
(verif.outside.ibmad_ref), packets through the golden packet model (models.packet).

    sm = RefSM(port=1)                       # the SM's node sits on the switch's port 1
    pkt = sm.dr_get(NODE_INFO, path=[1])     # a DR SubnGet(NodeInfo) one hop out
    ...                                      # the switch answers with `rsp`
    m = sm.parse(rsp); sm.field(m, "IB_NODE_TYPE_F")
"""
from __future__ import annotations

from dataclasses import dataclass

from models.packet import BTH, LNH, LRH, build_data_packet, parse_data_packet
from verif.outside.ibmad_ref import IBMad

__all__ = ["RefSM", "RefMAD", "ATTR", "PERM"]

PERM = 0xFFFF
ATTR = {"NodeDescription": 0x10, "NodeInfo": 0x11, "SwitchInfo": 0x12, "PortInfo": 0x15, "SL2VL": 0x17,
        "VLArb": 0x18, "LFT": 0x19, "MFT": 0x1B, "PortFailover": 0xFF10,
        "ARGroup": 0xFF11, "ARLinearForwardingTable": 0xFF12, "ClassPortInfo": 0x01, "PortCounters": 0x12,
        "PortCountersExtended": 0x1D, "PortXmitDiscardDetails": 0x16,
        # congestion control, class 0x21 (IBA Annex A10)
        "CongestionInfo": 0x11, "CongestionKeyInfo": 0x12, "CongestionLog": 0x13, "SwitchCongestionSetting": 0x14,
        "SwitchPortCongestionSetting": 0x15, "CACongestionSetting": 0x16}
CC_DATA, CC_LOG_DATA = 64, 32        # CC MAD: the management data; CongestionLog starts at the log data
SMP_DATA, PMA_DATA = 64, 64          # byte offsets of the data in an SMP / a PMA MAD
DR_PATH, DR_RPATH = 128, 192


@dataclass
class RefMAD:
    mad: bytes            # the 256 bytes
    lrh: LRH
    bth: BTH
    deth: bytes
    icrc_ok: bool
    vcrc_ok: bool

    @property
    def data(self) -> bytes:
        return self.mad[SMP_DATA:SMP_DATA + 64]


class RefSM:
    def __init__(self, lid: int = PERM, tid0: int = 0x1000):
        self.m = IBMad()
        self.lid = lid
        self.tid = tid0

    # ---- building
    def _mad(self, mgmt_class: int, method: int, attr: int, mod: int, data: bytes, data_at: int,
             class_version: int = 1) -> bytearray:
        b = bytearray(256)
        self.tid += 1
        for f, v in (("IB_MAD_BASEVER_F", 1), ("IB_MAD_MGMTCLASS_F", mgmt_class), ("IB_MAD_CLASSVER_F", class_version),
                     ("IB_MAD_METHOD_F", method), ("IB_MAD_ATTRID_F", attr), ("IB_MAD_ATTRMOD_F", mod)):
            self.m.set(b, f, v)
        self.m.set(b, "IB_MAD_TRID_F", self.tid, wide=True)
        b[data_at:data_at + len(data)] = data
        return b

    def wrap(self, mad: bytes, *, dlid: int, slid: int, qp: int, vl: int = 15, sl: int = 0) -> bytes:
        """LRH BTH DETH MAD ICRC VCRC through the golden packet model."""
        qkey = 0 if qp == 0 else 0x80010000
        deth = qkey.to_bytes(4, "big") + qp.to_bytes(4, "big")           # SrcQP = our QP (0 or 1)
        return build_data_packet(LRH(vl=vl, sl=sl, lnh=LNH.IBA_LOCAL, dlid=dlid, slid=slid),
                                 deth + bytes(mad), BTH(opcode=0x64, destqp=qp))

    def dr_smp(self, method: int, attr: str, mod: int = 0, path: list[int] = (1,), data: bytes = b"",
               hop_ptr: int | None = None, dr_slid: int = PERM, dr_dlid: int = PERM) -> bytes:
        """A DR SMP as the SM's node sends it on the wire: the SM's own SMI has advanced
        the hop pointer to 1 (C14-9:1) and it leaves by path[0]."""
        b = self._mad(0x81, method, ATTR[attr], mod, data, SMP_DATA)
        self.m.set(b, "IB_DRSMP_HOPCNT_F", len(path))
        self.m.set(b, "IB_DRSMP_HOPPTR_F", 1 if hop_ptr is None else hop_ptr)
        self.m.set(b, "IB_DRSMP_DRSLID_F", dr_slid)
        self.m.set(b, "IB_DRSMP_DRDLID_F", dr_dlid)
        for k, p in enumerate(path):
            b[DR_PATH + 1 + k] = p
        return self.wrap(b, dlid=PERM, slid=PERM, qp=0)

    def lid_smp(self, method: int, attr: str, mod: int = 0, data: bytes = b"", *, dlid: int) -> bytes:
        b = self._mad(0x01, method, ATTR[attr], mod, data, SMP_DATA)
        return self.wrap(b, dlid=dlid, slid=self.lid, qp=0)

    def pma(self, method: int, attr: str, data: bytes = b"", *, dlid: int, vl: int = 0) -> bytes:
        b = self._mad(0x04, method, ATTR[attr], 0, data, PMA_DATA)
        return self.wrap(b, dlid=dlid, slid=self.lid, qp=1, vl=vl)

    def cc(self, method: int, attr: str, mod: int = 0, data: bytes = b"", *, dlid: int, cc_key: int = 0,
           vl: int = 0) -> bytes:
        """A congestion control GMP (class 0x21, class version 2 as libibmad sends it) on QP1."""
        b = self._mad(0x21, method, ATTR[attr], mod, data, CC_DATA, class_version=2)
        self.m.set(b, "IB_CC_CCKEY_F", cc_key, wide=True)
        return self.wrap(b, dlid=dlid, slid=self.lid, qp=1, vl=vl)

    # ---- reading
    def parse(self, pkt: bytes) -> RefMAD:
        p = parse_data_packet(pkt)
        return RefMAD(mad=p.payload[8:], lrh=p.lrh, bth=p.bth, deth=p.payload[:8], icrc_ok=bool(p.icrc_ok),
                      vcrc_ok=p.vcrc_ok)

    def field(self, r: RefMAD | bytes, name: str, *, at: int = 0, wide: bool = False) -> int:
        mad = r.mad if isinstance(r, RefMAD) else r
        return self.m.get(mad[at:], name, wide)

    def data_field(self, r: RefMAD, name: str, wide: bool = False) -> int:
        return self.field(r, name, at=SMP_DATA, wide=wide)

    def hdr(self, r: RefMAD) -> dict:
        g = lambda f: self.field(r, f)        # noqa: E731
        return {"method": g("IB_MAD_METHOD_F") | g("IB_MAD_RESPONSE_F") << 7, "status": g("IB_MAD_STATUS_F"),
                "dr_status": g("IB_DRSMP_STATUS_F"), "d": g("IB_DRSMP_DIRECTION_F"),
                "hop_ptr": g("IB_DRSMP_HOPPTR_F"), "hop_cnt": g("IB_DRSMP_HOPCNT_F"),
                "attr": g("IB_MAD_ATTRID_F"), "mod": g("IB_MAD_ATTRMOD_F"),
                "tid": self.field(r, "IB_MAD_TRID_F", wide=True),
                "rpath": list(r.mad[DR_RPATH:DR_RPATH + 8]), "ipath": list(r.mad[DR_PATH:DR_PATH + 8])}
