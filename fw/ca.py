"""A host channel adapter's management agents, for fabrics at the MAD level
(fabric/mad_fabric.py): what a host's HCA and its kernel answer on QP0 and QP1, so that a
subnet manager (ours, or OpenSM through fabric/ibsim_server.py) discovers, addresses and
activates hosts as it would on real hardware.

    ca = CAAgent(CAIdentity(node_guid=..., description="h1"))
    replies, up = ca.receive(wire_bytes)    # replies: packets to send out of port 1;
                                            # up: the packet for the host's software (or None)

One port (1). What it answers itself (IBA §14.2.5, §16.1; the attribute layouts of fw.attrs):
  SMA (VL15, QP0), LID-routed and directed route:
    NodeInfo (NodeType CA, PortGUID = NodeGUID + 1, as Linux and ibsim give), NodeDescription,
    PortInfo (Get; Set of LID, LMC, MasterSMLID/SL, M_Key fields, SubnetTimeout,
      ClientReregister, NeighborMTU, OperationalVLs and the PortState steps Init -> Armed ->
      Active, Down; PhysState LinkUp while the link is up), P_KeyTable (PartitionCap
      entries, index 0 = 0xFFFF at reset), GUIDInfo (one GUID: the port's), SL2VL and VLArb
      (kept, VL0 only: VLCap 1)
  PMA (QP1): ClassPortInfo, PortCounters (its own MAD packets and words; Set clears),
    PortCountersExtended
Anything else on QP0/QP1 (SMInfo, SA, a response, a trap, a TrapRepress) is for the host's
software: `receive` returns it as `up` (fabric/ibsim_server.py hands it to the SM client).
Directed route at an endpoint (IBA §14.2.2, the same C14 rules as fw/agent.py): an outgoing
SMP arriving with hop pointer = hop count is for us (the response goes back out of port 1
with D = 1 and the hop pointer at the hop count); a returning SMP arriving with hop pointer 1
is for the host (the pointer goes to 0); others are discarded and counted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from contracts.defs import PortState
from fw.attrs import CLASS_PORT_INFO, NODE_INFO, PORT_COUNTERS, PORT_COUNTERS_EXT, PORT_INFO, NodeType, node_description
from fw.mad import PERMISSIVE_LID, SMP, MADError, Method, MgmtClass, PerfMAD, PMAttr, SMAttr, Status
from fw.ud import QP1_QKEY, UDPacket, build_ud, parse_ud

__all__ = ["CAAgent", "CAIdentity", "CA_VENDOR_ID", "CA_DEVICE_ID", "IS_SM"]

CA_VENDOR_ID = 0x000000
CA_DEVICE_ID = 0x0002
VL15 = 15
IS_SM = 1 << 1                     # PortInfo:CapabilityMask.IsSM
IS_TRAP_SUPPORTED = 1 << 3
IS_SM_DISABLED = 1 << 10
PHYS_POLLING, PHYS_LINKUP = 2, 5
LINK_WIDTH_4X, LINK_SPEED_SDR = 2, 1
MTU_4096 = 5


class _Reject(Exception):
    def __init__(self, status: int, why: str):
        self.status = status
        super().__init__(why)


@dataclass
class CAIdentity:
    node_guid: int
    description: str = "host"
    system_image_guid: int = 0
    revision: int = 0x00000001
    partition_cap: int = 32
    crc_msb_first: bool = False

    @property
    def port_guid(self) -> int:
        return self.node_guid + 1


@dataclass
class _PortState:
    state: PortState = PortState.INIT
    link_up: bool = True
    lid: int = 0
    lmc: int = 0
    sm_lid: int = 0
    sm_sl: int = 0
    m_key: int = 0
    m_key_protect: int = 0
    m_key_lease: int = 0
    gid_prefix: int = 0xFE80000000000000
    subnet_timeout: int = 0
    client_reregister: int = 0
    neighbor_mtu: int = MTU_4096
    operational_vls: int = 1
    vl_high_limit: int = 0
    link_down_default_state: int = 2
    capability_mask: int = IS_TRAP_SUPPORTED
    m_key_violations: int = 0
    pkeys: list[int] = field(default_factory=list)
    sl2vl: bytes = bytes(8)
    vlarb: dict = field(default_factory=dict)


class CAAgent:
    def __init__(self, ident: CAIdentity):
        self.id = ident
        self.port = _PortState(pkeys=[0xFFFF] + [0] * (ident.partition_cap - 1))
        self.counts = {"xmit_pkts": 0, "rcv_pkts": 0, "xmit_words": 0, "rcv_words": 0}
        self.base = dict(self.counts)
        self.stats = {"malformed": 0, "dr_discarded": 0, "up": 0, "answered": 0, "m_key_violations": 0, "data": 0}

    # ---- the link (the fabric calls these as its cable comes and goes)
    def link(self, up: bool):
        p = self.port
        p.link_up = up
        p.state = PortState.INIT if up else PortState.DOWN

    def set_issm(self, on: bool):
        p = self.port
        p.capability_mask = (p.capability_mask | IS_SM) if on else (p.capability_mask & ~IS_SM)

    # ---- attributes as bytes (also for ibsim's control messages)
    def node_info(self) -> bytes:
        i = self.id
        return NODE_INFO.pack({"base_version": 1, "class_version": 1, "node_type": NodeType.CA, "num_ports": 1,
                               "system_image_guid": i.system_image_guid or i.node_guid, "node_guid": i.node_guid,
                               "port_guid": i.port_guid, "partition_cap": i.partition_cap,
                               "device_id": CA_DEVICE_ID, "revision": i.revision, "local_port_num": 1,
                               "vendor_id": CA_VENDOR_ID}) + bytes(24)

    def port_info(self, hide_m_key: bool = False) -> bytes:
        p = self.port
        return PORT_INFO.pack({
            "m_key": 0 if hide_m_key else p.m_key, "gid_prefix": p.gid_prefix, "lid": p.lid,
            "master_sm_lid": p.sm_lid, "capability_mask": p.capability_mask, "m_key_lease_period": p.m_key_lease,
            "local_port_num": 1, "link_width_enabled": LINK_WIDTH_4X, "link_width_supported": LINK_WIDTH_4X,
            "link_width_active": LINK_WIDTH_4X, "link_speed_supported": LINK_SPEED_SDR,
            "port_state": int(p.state), "port_phys_state": PHYS_LINKUP if p.link_up else PHYS_POLLING,
            "link_down_default_state": p.link_down_default_state, "m_key_protect_bits": p.m_key_protect,
            "lmc": p.lmc, "link_speed_active": LINK_SPEED_SDR, "link_speed_enabled": LINK_SPEED_SDR,
            "neighbor_mtu": p.neighbor_mtu, "master_sm_sl": p.sm_sl, "vl_cap": 1, "vl_high_limit": p.vl_high_limit,
            "vl_arb_high_cap": 8, "vl_arb_low_cap": 8, "mtu_cap": MTU_4096, "vl_stall_count": 7, "hoq_life": 0x13,
            "operational_vls": p.operational_vls, "m_key_violations": p.m_key_violations, "guid_cap": 1,
            "client_reregister": p.client_reregister, "subnet_timeout": p.subnet_timeout, "resp_time_value": 8})

    def pkey_block(self, block: int) -> bytes:
        ks = self.port.pkeys[32 * block:32 * block + 32]
        return b"".join(k.to_bytes(2, "big") for k in ks).ljust(64, b"\0")

    # ---- a packet from the wire
    def receive(self, pkt: bytes) -> tuple[list[bytes], bytes | None]:
        self.counts["rcv_pkts"] += 1
        self.counts["rcv_words"] += len(pkt) // 4
        try:
            ud = parse_ud(pkt, self.id.crc_msb_first)
        except MADError:
            self.stats["malformed"] += 1
            return [], None
        if ud.dest_qp > 1:                                  # data for the host's other QPs
            self.stats["data"] += 1
            return [], None
        cls, method = ud.mad[1], ud.mad[3]
        try:
            if cls == MgmtClass.PERF:
                if ud.dest_qp != 1 or method & 0x80:
                    return [], self._up(ud, pkt)
                return [self._gmp_reply(ud, self._pma(PerfMAD.unpack(ud.mad)))], None
            if cls not in (MgmtClass.SUBN_LID, MgmtClass.SUBN_DR):
                return [], self._up(ud, pkt)                # SA, other GMPs: the host's software
            if ud.dest_qp != 0 or ud.vl != VL15:
                self.stats["malformed"] += 1
                return [], None
            smp = SMP.unpack(ud.mad)
        except MADError:
            self.stats["malformed"] += 1
            return [], None
        if smp.dr and smp.direction:                        # a response on its way back
            if smp.hop_ptr != 1:
                self.stats["dr_discarded"] += 1
                return [], None
            smp.hop_ptr = 0
            return [], self._up(ud, self._rebuild(ud, smp.pack()))
        if method & 0x80 or method in (Method.TRAP, Method.TRAP_REPRESS) or smp.hdr.attr_id == SMAttr.SM_INFO:
            return [], self._up(ud, pkt)                    # for the SM on this host
        if smp.dr:
            n, h = smp.hop_count, smp.hop_ptr
            if h != n or smp.dr_dlid != PERMISSIVE_LID:
                self.stats["dr_discarded"] += 1
                return [], None
            smp.return_path[n] = 1
            smp.hop_ptr = n + 1
        rsp = self.process_smp(smp)
        if rsp is None:
            return [], None
        if smp.dr:
            rsp.direction = 1
            rsp.hop_ptr = smp.hop_count
            return [self._send(UDPacket(vl=VL15, sl=0, dlid=ud.slid, slid=ud.dlid, dest_qp=0, src_qp=0, qkey=0,
                                        pkey=ud.pkey, mad=rsp.pack()))], None
        return [self._send(UDPacket(vl=VL15, sl=0, dlid=ud.slid, slid=self.port.lid, dest_qp=0, src_qp=0, qkey=0,
                                    pkey=ud.pkey, mad=rsp.pack()))], None

    def _up(self, ud: UDPacket, pkt: bytes) -> bytes:
        self.stats["up"] += 1
        return pkt

    def _rebuild(self, ud: UDPacket, mad: bytes) -> bytes:
        return build_ud(UDPacket(**{**vars(ud), "mad": mad}), self.id.crc_msb_first)

    def _send(self, ud: UDPacket) -> bytes:
        pkt = build_ud(ud, self.id.crc_msb_first)
        self.counts["xmit_pkts"] += 1
        self.counts["xmit_words"] += len(pkt) // 4
        self.stats["answered"] += 1
        return pkt

    def _gmp_reply(self, ud: UDPacket, rsp: PerfMAD) -> bytes:
        return self._send(UDPacket(vl=ud.vl, sl=ud.sl, dlid=ud.slid, slid=self.port.lid, dest_qp=ud.src_qp,
                                   src_qp=1, qkey=QP1_QKEY, pkey=ud.pkey, mad=rsp.pack()))

    # ---- the SMA
    def process_smp(self, smp: SMP) -> SMP | None:
        """The GetResp to `smp` (a Get or Set), or None (an M_Key violation: dropped)."""
        h, p = smp.hdr, self.port
        if p.m_key and smp.m_key != p.m_key and (h.method == Method.SET or p.m_key_protect > 1):
            p.m_key_violations += 1
            self.stats["m_key_violations"] += 1
            return None
        rsp = SMP(hdr=type(h)(**vars(h)), m_key=smp.m_key, data=bytes(64), dr_slid=smp.dr_slid,
                  dr_dlid=smp.dr_dlid, initial_path=list(smp.initial_path), return_path=list(smp.return_path))
        rsp.hdr.method = Method.GET_RESP
        rsp.status = 0
        set_ = h.method == Method.SET
        try:
            if h.base_version != 1 or h.class_version != 1:
                raise _Reject(Status.BAD_VERSION, "version")
            if h.method not in (Method.GET, Method.SET):
                raise _Reject(Status.UNSUP_METHOD, f"method {h.method:#x}")
            a, mod = h.attr_id, h.attr_mod
            if a == SMAttr.NODE_INFO and not set_:
                rsp.data = self.node_info()
            elif a == SMAttr.NODE_DESC and not set_:
                rsp.data = node_description(self.id.description)
            elif a == SMAttr.PORT_INFO:
                if mod not in (0, 1):
                    raise _Reject(Status.INVALID_FIELD, f"PortInfo port {mod}")
                if set_:
                    self._set_port_info(PORT_INFO.unpack(smp.data))
                rsp.data = self.port_info(hide_m_key=smp.m_key != p.m_key)
            elif a == SMAttr.PKEY_TABLE:
                block = mod & 0xFFFF
                if 32 * block >= len(p.pkeys):
                    raise _Reject(Status.INVALID_FIELD, f"P_KeyTable block {block}")
                if set_:
                    for k in range(min(32, len(p.pkeys) - 32 * block)):
                        p.pkeys[32 * block + k] = int.from_bytes(smp.data[2 * k:2 * k + 2], "big")
                rsp.data = self.pkey_block(block)
            elif a == SMAttr.GUID_INFO:
                if mod != 0:
                    raise _Reject(Status.INVALID_FIELD, f"GUIDInfo block {mod}")
                rsp.data = self.id.port_guid.to_bytes(8, "big") + bytes(56)
            elif a == SMAttr.SL2VL:
                if set_:
                    if any(b >> 4 not in (0, 15) or b & 0xF not in (0, 15) for b in smp.data[:8]):
                        raise _Reject(Status.INVALID_FIELD, "SL2VL: this CA has VL0 only")
                    p.sl2vl = bytes(smp.data[:8])
                rsp.data = p.sl2vl + bytes(56)
            elif a == SMAttr.VLARB:
                block = mod >> 16
                if block not in (1, 2, 3, 4):
                    raise _Reject(Status.INVALID_FIELD, f"VLArb block {block}")
                if set_:
                    p.vlarb[block] = bytes(smp.data)
                rsp.data = p.vlarb.get(block, bytes(64))
            else:
                raise _Reject(Status.UNSUP_METHOD_ATTR, f"attribute {a:#06x}")
        except _Reject as e:
            rsp.status = e.status
            rsp.data = smp.data if set_ else bytes(64)
        return rsp

    def _set_port_info(self, v: dict):
        p = self.port
        want = v["port_state"]
        if not (want in (0, PortState.DOWN) or (want == PortState.ARMED and p.state == PortState.INIT)
                or (want == PortState.ACTIVE and p.state == PortState.ARMED)
                or (want == p.state and want in (PortState.ARMED, PortState.ACTIVE))):
            raise _Reject(Status.INVALID_FIELD, f"PortState {p.state.name} -> {want}")
        if v["lid"] >= 0xC000:
            raise _Reject(Status.INVALID_FIELD, f"LID {v['lid']:#x}")
        if v["operational_vls"] > 1:
            raise _Reject(Status.INVALID_FIELD, f"OperationalVLs {v['operational_vls']} (VLCap 1)")
        if v["neighbor_mtu"] > MTU_4096:
            raise _Reject(Status.INVALID_FIELD, f"NeighborMTU {v['neighbor_mtu']}")
        p.lid, p.lmc, p.sm_lid, p.sm_sl = v["lid"], v["lmc"], v["master_sm_lid"], v["master_sm_sl"]
        p.m_key, p.m_key_protect, p.m_key_lease = v["m_key"], v["m_key_protect_bits"], v["m_key_lease_period"]
        p.gid_prefix, p.subnet_timeout = v["gid_prefix"], v["subnet_timeout"]
        p.client_reregister = v["client_reregister"]
        p.neighbor_mtu = v["neighbor_mtu"] or p.neighbor_mtu
        p.operational_vls = v["operational_vls"] or p.operational_vls
        p.vl_high_limit = v["vl_high_limit"]
        if v["link_down_default_state"]:
            p.link_down_default_state = v["link_down_default_state"]
        if want == PortState.DOWN:
            p.state = PortState.DOWN if not p.link_up else PortState.INIT     # the link retrains
        elif want:
            p.state = PortState(want)

    # ---- the PMA
    def _pma(self, mad: PerfMAD) -> PerfMAD:
        h = mad.hdr
        rsp = PerfMAD(hdr=type(h)(**vars(h)), data=bytes(192))
        rsp.hdr.method, rsp.hdr.status = Method.GET_RESP, 0
        if h.method not in (Method.GET, Method.SET):
            rsp.hdr.status = Status.UNSUP_METHOD
        elif h.attr_id == PMAttr.CLASS_PORT_INFO and h.method == Method.GET:
            rsp.data = CLASS_PORT_INFO.pack({"base_version": 1, "class_version": 1, "resp_time_value": 18})
        elif h.attr_id in (PMAttr.PORT_COUNTERS, PMAttr.PORT_COUNTERS_EXT):
            lay = PORT_COUNTERS if h.attr_id == PMAttr.PORT_COUNTERS else PORT_COUNTERS_EXT
            req = lay.unpack(mad.data)
            if req["port_select"] not in (1, 0xFF):
                rsp.hdr.status = Status.INVALID_FIELD
                rsp.data = mad.data
                return rsp
            if h.method == Method.SET:
                self.base = dict(self.counts)
            names = {"port_xmit_pkts": "xmit_pkts", "port_rcv_pkts": "rcv_pkts", "port_xmit_data": "xmit_words",
                     "port_rcv_data": "rcv_words"}
            vals = {"port_select": req["port_select"], "counter_select": req["counter_select"]}
            for f, k in names.items():
                vals[f] = min(self.counts[k] - self.base[k], (1 << lay.width[f]) - 1)
            rsp.data = lay.pack(vals)
        else:
            rsp.hdr.status = Status.UNSUP_METHOD_ATTR
        return rsp
