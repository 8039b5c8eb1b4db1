"""The subnet management agent (SMA) of the switch: SubnGet / SubnSet of its attributes,
answered with SubnGetResp (IBA §14.2.5, §14.3). It keeps in firmware what the switch's
registers do not hold (GUIDs, M_Key, GID prefix, LMC, MTUs, VL limits, ...) and reads and
writes the rest through `fw.hw.SwitchRegs`; MAD tables are translated in `fw.tables`.

Rules it follows (each answered with the status named, and nothing applied):
  - BaseVersion / ClassVersion other than 1: BAD_VERSION (IBA §13.4.7)
  - a method other than Get / Set: UNSUP_METHOD; an attribute it does not have, or Set of a
    read-only one (NodeInfo, NodeDescription): UNSUP_METHOD_ATTR
  - an error response carries the request's data back (as the Linux SMI and ibsim do);
    the attribute is unchanged
  - a modifier or field out of range (port > N, a block beyond the table, a PortState
    transition the port cannot make, OperationalVLs above VLCap, NeighborMTU above MTUCap):
    INVALID_FIELD. A Set is validated whole before any register is written.
  - PortState: Set 0 keeps it, 1 takes the port Down (the link then retrains to Init),
    3 Armed only from Init, 4 Active only from Armed (IBA §14.2.5.6 table 151, §7.2).
  - M_Key (IBA §14.2.4): while the switch's M_Key is 0 every SMP is accepted. Otherwise an
    SMP whose M_Key differs is a violation if it is a Set, or a Get under protection bits
    2 or 3: counted (PortInfo:M_KeyViolations) and dropped without a response. A Get
    accepted under a wrong key is answered with the M_Key field zeroed.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from contracts.config import MTU_CODES, SwitchConfig
from contracts.defs import PortState
from fw import tables as T
from fw.attrs import NODE_INFO, PORT_INFO, SWITCH_INFO, NodeType, node_description
from fw.hw import SwitchRegs
from fw.mad import SMP, Method, SMAttr, Status

__all__ = ["SMA", "SMAError", "NodeIdentity"]

VENDOR_ID = 0x000000          # none registered: IEEE OUI 0 (documented in docs/management.md)
DEVICE_ID = 0x0001
LINK_WIDTH_4X = 2             # PortInfo LinkWidth bit 1 = 4x (IBA table 151)
LINK_SPEED_SDR = 1            # LinkSpeed bit 0 = 2.5 Gb/s
PHYS_POLLING, PHYS_LINKUP = 2, 5
PARTITION_CAP = 32            # NodeInfo:PartitionCap: P_Key entries of the management port


class SMAError(Exception):
    """A request answered with a non-zero status."""

    def __init__(self, status: int, why: str):
        self.status = status
        super().__init__(why)


@dataclass
class NodeIdentity:
    node_guid: int = 0x0002C90300000001
    system_image_guid: int = 0
    description: str = "openib-switch"
    revision: int = 0x00000100


@dataclass
class _PortSoft:
    """PortInfo fields the hardware does not hold (per IBA port, 0..N)."""
    neighbor_mtu: int = 1
    vl_high_limit: int = 0
    operational_vls: int = 1
    hoq_life: int = 0x13
    vl_stall_count: int = 7
    link_down_default_state: int = 2          # Polling
    m_key_violations: int = 0


@dataclass
class _SwitchSoft:
    m_key: int = 0
    m_key_protect: int = 0
    m_key_lease: int = 0
    gid_prefix: int = 0xFE80000000000000
    lmc: int = 0
    master_sm_lid: int = 0
    master_sm_sl: int = 0
    subnet_timeout: int = 0
    resp_time_value: int = 8
    client_reregister: int = 0
    linear_fdb_top: int = 0
    multicast_fdb_top: int = 0xBFFF           # IBA §14.2.5.4: below 0xC000 = no entry in use
    default_port: int = 0
    default_mcast_primary_port: int = 0xFF
    default_mcast_not_primary_port: int = 0xFF
    life_time_value: int = 0x13
    port_state_change: int = 0
    sl2vl_port0: dict = field(default_factory=dict)       # (in, out) with a 0 in it -> 8 bytes
    pkeys: list = field(default_factory=lambda: [0xFFFF] + [0] * (PARTITION_CAP - 1))   # port 0's P_KeyTable
    vlarb_port0: dict = field(default_factory=dict)


class SMA:
    def __init__(self, hw: SwitchRegs, ident: NodeIdentity | None = None):
        self.hw = hw
        self.cfg: SwitchConfig = hw.cfg
        self.id = ident or NodeIdentity()
        self.sw = _SwitchSoft()
        n = self.cfg.ports
        self.ports = [_PortSoft(operational_vls=self._vl_cap()) for _ in range(n + 1)]
        self.last_state = [None] * (n + 1)
        self.state_changed = False

    # ---- capabilities
    def _vl_cap(self) -> int:
        """PortInfo:VLCap (IBA table 151): 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7."""
        return {1: 1, 2: 2, 4: 3, 8: 4}[self.cfg.data_vls]

    def _mtu_cap(self) -> int:
        return MTU_CODES[self.cfg.mtu]

    # ---- dispatch
    async def process(self, smp: SMP, in_port: int) -> SMP | None:
        """The response to `smp` (a GetResp), or None where no response is due."""
        h = smp.hdr
        if h.method in (Method.GET_RESP, Method.TRAP_REPRESS):
            return None                                   # responses to nothing we asked
        if self.sw.m_key and smp.m_key != self.sw.m_key and (h.method == Method.SET or self.sw.m_key_protect > 1):
            self.ports[0].m_key_violations += 1              # PortInfo:M_KeyViolations
            return None
        rsp = SMP(hdr=type(h)(**vars(h)), m_key=smp.m_key, data=bytes(64), dr_slid=smp.dr_slid,
                  dr_dlid=smp.dr_dlid, initial_path=list(smp.initial_path), return_path=list(smp.return_path))
        rsp.hdr.method = Method.GET_RESP
        rsp.status = 0
        try:
            if h.base_version != 1 or h.class_version != 1:
                raise SMAError(Status.BAD_VERSION, f"version {h.base_version}/{h.class_version}")
            if h.method not in (Method.GET, Method.SET):
                raise SMAError(Status.UNSUP_METHOD, f"method {h.method:#x}")
            handler = {SMAttr.NODE_INFO: self._node_info, SMAttr.NODE_DESC: self._node_desc,
                       SMAttr.SWITCH_INFO: self._switch_info, SMAttr.PORT_INFO: self._port_info,
                       SMAttr.LFT: self._lft, SMAttr.MFT: self._mft, SMAttr.SL2VL: self._sl2vl,
                       SMAttr.VLARB: self._vlarb, SMAttr.PORT_FAILOVER: self._failover,
                       SMAttr.AR_GROUP: self._ar_group, SMAttr.AR_LFT: self._ar_lft,
                       SMAttr.PKEY_TABLE: self._pkey_table}.get(h.attr_id)
            if handler is None:
                raise SMAError(Status.UNSUP_METHOD_ATTR, f"attribute {h.attr_id:#06x}")
            rsp.data = await handler(h.method == Method.SET, h.attr_mod, smp.data, in_port)
        except SMAError as e:
            rsp.status = e.status
            rsp.data = smp.data if h.method == Method.SET else bytes(64)
        if smp.m_key != self.sw.m_key and h.attr_id == SMAttr.PORT_INFO:
            rsp.data = bytes(8) + rsp.data[8:]              # PortInfo:M_Key hidden
        return rsp

    # ---- attributes
    async def _node_info(self, set_, mod, data, in_port):
        if set_:
            raise SMAError(Status.UNSUP_METHOD_ATTR, "NodeInfo is read-only")
        i = self.id
        return NODE_INFO.pack({
            "base_version": 1, "class_version": 1, "node_type": NodeType.SWITCH, "num_ports": self.cfg.ports,
            "system_image_guid": i.system_image_guid or i.node_guid, "node_guid": i.node_guid,
            "port_guid": i.node_guid, "partition_cap": PARTITION_CAP, "device_id": DEVICE_ID, "revision": i.revision,
            "local_port_num": in_port, "vendor_id": VENDOR_ID}) + bytes(24)

    async def _node_desc(self, set_, mod, data, in_port):
        if set_:
            raise SMAError(Status.UNSUP_METHOD_ATTR, "NodeDescription is read-only")
        return node_description(self.id.description)

    async def _switch_info(self, set_, mod, data, in_port):
        c, s = self.cfg, self.sw
        if set_:
            v = SWITCH_INFO.unpack(data)
            if v["linear_fdb_top"] >= c.lft_entries:
                raise SMAError(Status.INVALID_FIELD, f"LinearFDBTop {v['linear_fdb_top']} beyond the LFT")
            mtop = v["multicast_fdb_top"]
            if not (mtop == 0 or 0xBFFF <= mtop < 0xC000 + c.mft_entries):
                raise SMAError(Status.INVALID_FIELD, f"MulticastFDBTop {mtop:#x} beyond the MFT")
            for k in ("default_port", "default_mcast_primary_port", "default_mcast_not_primary_port"):
                if v[k] > c.ports and v[k] != 0xFF:
                    raise SMAError(Status.INVALID_FIELD, f"{k} {v[k]}")
            s.linear_fdb_top, s.multicast_fdb_top = v["linear_fdb_top"], mtop
            for k in ("default_port", "default_mcast_primary_port", "default_mcast_not_primary_port",
                      "life_time_value"):
                setattr(s, k, v[k])
            if c.lifetimes:                                 # the switch enforces it (docs/reliability.md)
                await self.hw.write("SWITCH_LIFE", 0, v["life_time_value"])
            if v["port_state_change"]:
                s.port_state_change = 0                     # written 1 clears it (IBA table 148)
        await self._poll_states()
        life = (await self.hw.read("SWITCH_LIFE", 0)) & 0x1F if c.lifetimes else s.life_time_value
        return SWITCH_INFO.pack({
            "linear_fdb_cap": min(c.lft_entries, 0xC000), "random_fdb_cap": 0, "multicast_fdb_cap": c.mft_entries,
            "linear_fdb_top": s.linear_fdb_top, "default_port": s.default_port,
            "default_mcast_primary_port": s.default_mcast_primary_port,
            "default_mcast_not_primary_port": s.default_mcast_not_primary_port,
            "life_time_value": life, "port_state_change": s.port_state_change,
            "optimized_sl2vl_programming": 1, "lids_per_port": 0, "partition_enforcement_cap": 0,
            "enhanced_port0": 0, "multicast_fdb_top": s.multicast_fdb_top}) + bytes(44)

    async def _poll_states(self):
        await self.poll_states()

    async def poll_states(self):
        """PortStateChange (SwitchInfo, IBA §14.2.5.4) is set when the link state machine
        moved a physical port: to Down (from Init, Armed or Active) or from Down to Init.
        The SM's own Init -> Armed -> Active steps do not set it. `state_changed` is set
        with it (for the firmware's trap, which clears that one)."""
        down = PortState.DOWN
        for p in range(1, self.cfg.ports + 1):
            st = await self.hw.read("PORT_STATE", p - 1)
            old = self.last_state[p]
            if old is not None and st != old and down in (st, old):
                self.sw.port_state_change = 1
                self.state_changed = True
            self.last_state[p] = st

    async def _port_info(self, set_, mod, data, in_port):
        c, s = self.cfg, self.sw
        port = mod & 0xFF
        if mod >> 8 & 0x7FFFFF or port > c.ports:
            raise SMAError(Status.INVALID_FIELD, f"PortInfo port {mod:#x} (the switch has ports 0..{c.ports})")
        soft = self.ports[port]
        state = PortState.ACTIVE if port == 0 else PortState(await self.hw.read("PORT_STATE", port - 1))
        if set_:
            v = PORT_INFO.unpack(data)
            want = v["port_state"]
            if port == 0:
                if want not in (0, PortState.ACTIVE):       # the management port is always up
                    raise SMAError(Status.INVALID_FIELD, f"PortState {want} on the management port")
            elif not (want == 0 or want == PortState.DOWN
                      or (want == PortState.ARMED and state == PortState.INIT)
                      or (want == PortState.ACTIVE and state == PortState.ARMED)):
                raise SMAError(Status.INVALID_FIELD, f"PortState {state.name} -> {want}")
            if v["operational_vls"] > self._vl_cap():
                raise SMAError(Status.INVALID_FIELD, f"OperationalVLs {v['operational_vls']} above VLCap")
            if v["neighbor_mtu"] > self._mtu_cap() or (v["neighbor_mtu"] == 0 and port):
                raise SMAError(Status.INVALID_FIELD, f"NeighborMTU {v['neighbor_mtu']}")
            if port == 0 and v["lid"] >= 0xC000:
                raise SMAError(Status.INVALID_FIELD, f"LID {v['lid']:#x} is not a unicast LID")
            if v["port_phys_state"] not in (0, PHYS_POLLING):
                raise SMAError(Status.INVALID_FIELD, f"PortPhysicalState {v['port_phys_state']}")
            # valid as a whole: apply
            if port == 0:
                s.m_key, s.gid_prefix, s.lmc = v["m_key"], v["gid_prefix"], v["lmc"]
                s.master_sm_lid, s.master_sm_sl = v["master_sm_lid"], v["master_sm_sl"]
                s.m_key_lease, s.m_key_protect = v["m_key_lease_period"], v["m_key_protect_bits"]
                s.subnet_timeout, s.client_reregister = v["subnet_timeout"], v["client_reregister"]
                await self.hw.write("SWITCH_LID", 0, v["lid"])
            if v["operational_vls"]:
                soft.operational_vls = v["operational_vls"]
            soft.neighbor_mtu = v["neighbor_mtu"] or soft.neighbor_mtu
            soft.vl_high_limit, soft.hoq_life = v["vl_high_limit"], v["hoq_life"]
            soft.vl_stall_count = v["vl_stall_count"]
            if c.lifetimes and port:                     # the switch enforces both (docs/reliability.md)
                await self.hw.write("HOQ_LIFE", port - 1, v["hoq_life"] | v["vl_stall_count"] << 5)
            if v["link_down_default_state"]:
                soft.link_down_default_state = v["link_down_default_state"]
            if port and want in (PortState.DOWN, PortState.ARMED, PortState.ACTIVE):
                await self.hw.write("PORT_STATE", port - 1, want)
                state = PortState(await self.hw.read("PORT_STATE", port - 1))
        lid = await self.hw.read("SWITCH_LID", 0) if port == 0 else 0
        hoq_life, vl_stall_count = soft.hoq_life, soft.vl_stall_count
        if c.lifetimes and port:
            word = await self.hw.read("HOQ_LIFE", port - 1)
            hoq_life, vl_stall_count = word & 0x1F, word >> 5 & 7
        phys = PHYS_LINKUP if state != PortState.DOWN else PHYS_POLLING
        return PORT_INFO.pack({
            "m_key": s.m_key if port == 0 else 0, "gid_prefix": s.gid_prefix, "lid": lid,
            "master_sm_lid": s.master_sm_lid if port == 0 else 0, "capability_mask": 0,
            "m_key_lease_period": s.m_key_lease if port == 0 else 0, "local_port_num": in_port,
            "link_width_enabled": LINK_WIDTH_4X, "link_width_supported": LINK_WIDTH_4X,
            "link_width_active": LINK_WIDTH_4X, "link_speed_supported": LINK_SPEED_SDR,
            "port_state": int(state), "port_phys_state": phys,
            "link_down_default_state": soft.link_down_default_state,
            "m_key_protect_bits": s.m_key_protect if port == 0 else 0, "lmc": s.lmc if port == 0 else 0,
            "link_speed_active": LINK_SPEED_SDR, "link_speed_enabled": LINK_SPEED_SDR,
            "neighbor_mtu": soft.neighbor_mtu, "master_sm_sl": s.master_sm_sl if port == 0 else 0,
            "vl_cap": self._vl_cap(), "vl_high_limit": soft.vl_high_limit,
            "vl_arb_high_cap": c.vlarb_entries, "vl_arb_low_cap": c.vlarb_entries, "mtu_cap": self._mtu_cap(),
            "vl_stall_count": vl_stall_count, "hoq_life": hoq_life,
            "operational_vls": soft.operational_vls, "m_key_violations": soft.m_key_violations,
            "guid_cap": 1, "client_reregister": s.client_reregister if port == 0 else 0,
            "subnet_timeout": s.subnet_timeout if port == 0 else 0, "resp_time_value": s.resp_time_value})

    async def _pkey_table(self, set_, mod, data, in_port):
        """P_KeyTable (IBA §14.2.5.7): AttributeModifier bits 31:16 the port, 15:0 the block
        of 32 P_Keys. The management port's table (PartitionCap entries) is kept in
        firmware: the switch checks no P_Key (SwitchInfo:PartitionEnforcementCap 0), so
        its external ports have none (INVALID_FIELD)."""
        port, block = mod >> 16, mod & 0xFFFF
        keys = self.sw.pkeys
        if port != 0 or 32 * block >= len(keys):
            raise SMAError(Status.INVALID_FIELD, f"P_KeyTable port {port} block {block} (port 0, "
                                                 f"{len(keys)} entries)")
        if set_:
            for k in range(min(32, len(keys) - 32 * block)):
                keys[32 * block + k] = int.from_bytes(data[2 * k:2 * k + 2], "big")
        return b"".join(x.to_bytes(2, "big") for x in keys[32 * block:32 * block + 32]).ljust(64, b"\0")

    async def _lft(self, set_, mod, data, in_port):
        c = self.cfg
        block = mod
        base = T.lft_block_word(c, block)
        if base is None:
            raise SMAError(Status.INVALID_FIELD, f"LFT block {block} (LIDs {64 * block:#x}..): the LFT has "
                                                 f"no entries for them ({c.lft_entries} per page, "
                                                 f"{1 << c.ext_lid_bits} page(s))")
        if set_:
            for k, port in enumerate(data):
                if port > c.ports and port != T.LFT_DROP:
                    raise SMAError(Status.INVALID_FIELD, f"LFT entry for LID {64 * block + k}: port {port}")
            for idx, word in T.lft_words(base, data):
                await self.hw.write("LFT", idx, word)
        raw = T.lft_block([await self.hw.read("LFT", base + j) for j in range(16)])
        # adaptive routing keeps a flag in bit 7 of an entry (not 255): not part of the port
        return bytes(e & 0x7F if c.adaptive and e != T.LFT_DROP else e for e in raw)

    async def _ar_lft(self, set_, mod, data, in_port):
        """ARLinearForwardingTable (vendor-specific attribute 0xFF12, docs/reliability.md):
        which LIDs are adaptive. AttributeModifier: LFT block b (LIDs 64 b .. 64 b + 63, as
        for the LFT); byte k is 1 if LID 64 b + k is adaptive (a packet for it may leave on
        any Active port of its LFT port's AR group), else 0. Kept as bit 7 of the LID's LFT
        entry; an LFT Set writes the entries plain (not adaptive), so the SM sends this
        after the LFT. A LID whose entry is 255 (drop) or 0 (the management port) cannot be
        adaptive: its flag is ignored on a Set and 0 on a Get. A switch built without
        adaptive routing answers UNSUP_METHOD_ATTR."""
        c = self.cfg
        if not c.adaptive:
            raise SMAError(Status.UNSUP_METHOD_ATTR, "ARLinearForwardingTable: this switch has no adaptive routing")
        base = T.lft_block_word(c, mod)
        if base is None:
            raise SMAError(Status.INVALID_FIELD, f"ARLinearForwardingTable block {mod}: the LFT has no "
                                                 f"entries for LIDs {64 * mod:#x}..")
        if set_:
            for k, b in enumerate(data[:64]):
                if b > 1:
                    raise SMAError(Status.INVALID_FIELD, f"ARLinearForwardingTable: LID {64 * mod + k}: {b} "
                                                         f"(0 or 1)")
        words = [await self.hw.read("LFT", base + j) for j in range(16)]
        raw = bytearray(T.lft_block(words))
        if set_:
            for k, b in enumerate(data[:64]):
                e = raw[k]
                if e not in (0, T.LFT_DROP, 0x80):
                    raw[k] = (e & 0x7F) | (0x80 if b else 0)
            for (idx, word), old in zip(T.lft_words(base, bytes(raw)), words, strict=True):
                if word != old:
                    await self.hw.write("LFT", idx, word)
        return bytes(1 if e != T.LFT_DROP and e & 0x80 and e & 0x7F else 0 for e in raw)

    async def _mft(self, set_, mod, data, in_port):
        c = self.cfg
        pos, block = mod >> 28, mod & 0x1FF
        words = T.mft_words_per_mlid(c)
        if mod & 0x0FFFFE00 or 16 * pos > c.ports or 32 * block >= c.mft_entries:
            raise SMAError(Status.INVALID_FIELD, f"MFT modifier {mod:#010x} (position {pos}, block {block})")

        async def mask(m):
            v = 0
            for w in range(words):
                v |= await self.hw.read("MFT", m * words + w) << (32 * w)
            return v
        mlids = range(32 * block, min(32 * block + 32, c.mft_entries))
        if set_:
            for k, m in enumerate(mlids):
                new = T.mft_merge(c, await mask(m), pos, int.from_bytes(data[2 * k:2 * k + 2], "big"))
                for w in range(words):
                    await self.hw.write("MFT", m * words + w, (new >> (32 * w)) & 0xFFFFFFFF)
        masks = [await mask(m) for m in mlids]
        return T.mft_block(masks + [0] * (32 - len(masks)), pos)

    async def _sl2vl(self, set_, mod, data, in_port):
        """AttributeModifier: bits 15:8 the input port, 7:0 the output port; with
        SwitchInfo:OptimizedSLtoVLMappingProgramming (advertised) a Set may take bit 17 (every
        input port) and bit 16 (every output port), as OpenSM's use_optimized_slvl sends
        them (0x30000: one table for every pair; 0x20000 | out)."""
        c = self.cfg
        inp, out = (mod >> 8) & 0xFF, mod & 0xFF
        all_in, all_out = mod >> 17 & 1, mod >> 16 & 1
        if mod >> 18 or inp > c.ports or out > c.ports or ((all_in or all_out) and not set_):
            raise SMAError(Status.INVALID_FIELD, f"SL2VL modifier {mod:#x}")
        if set_:
            vls = [b >> 4 for b in data[:8]] + [b & 0xF for b in data[:8]]
            if any(v >= c.data_vls and v != 15 for v in vls):
                raise SMAError(Status.INVALID_FIELD, "SL2VL maps an SL to a VL the switch does not have")
        if all_in or all_out:
            w0, w1 = T.sl2vl_to_words(data)
            for i in (range(1, c.ports + 1) if all_in else [inp]):
                for o in (range(1, c.ports + 1) if all_out else [out]):
                    if i == 0 or o == 0:
                        self.sw.sl2vl_port0[(i, o)] = bytes(data[:8])
                        continue
                    idx = ((i - 1) * c.ports + (o - 1)) * 2
                    await self.hw.write("SL2VL", idx, w0)
                    await self.hw.write("SL2VL", idx + 1, w1)
            return bytes(data[:8]) + bytes(56)
        if inp == 0 or out == 0:                           # the management port: firmware state
            if set_:
                self.sw.sl2vl_port0[(inp, out)] = bytes(data[:8])
            return self.sw.sl2vl_port0.get((inp, out), bytes(8)) + bytes(56)
        idx = ((inp - 1) * c.ports + (out - 1)) * 2
        if set_:
            w0, w1 = T.sl2vl_to_words(data)
            await self.hw.write("SL2VL", idx, w0)
            await self.hw.write("SL2VL", idx + 1, w1)
        return T.sl2vl_from_words(await self.hw.read("SL2VL", idx), await self.hw.read("SL2VL", idx + 1)) + bytes(56)

    async def _failover(self, set_, mod, data, in_port):
        """PortFailover (vendor-specific attribute 0xFF10, docs/reliability.md): the alternate
        output port of each port, register ALT_PORT. AttributeModifier: block b, IBA ports
        64 b .. 64 b + 63; byte k the alternate of port 64 b + k, an IBA port number 1..N,
        or 0 / 255 for none (read back as 255). Port 0 (the management port) and ports beyond
        N have none: their bytes are ignored on a Set and 255 on a Get. A Set naming a port
        beyond N, or a port as its own alternate, is INVALID_FIELD (nothing written). A switch
        built without failover answers UNSUP_METHOD_ATTR."""
        c = self.cfg
        if not c.failover:
            raise SMAError(Status.UNSUP_METHOD_ATTR, "PortFailover: this switch has no failover")
        if mod > c.ports // 64:
            raise SMAError(Status.INVALID_FIELD, f"PortFailover block {mod}: the switch has {c.ports} ports")
        ports = [(k, 64 * mod + k) for k in range(64) if 1 <= 64 * mod + k <= c.ports]
        if set_:
            for k, port in ports:
                if data[k] not in (0, 0xFF) and (data[k] > c.ports or data[k] == port):
                    raise SMAError(Status.INVALID_FIELD, f"PortFailover: port {port}'s alternate {data[k]}")
            for k, port in ports:
                await self.hw.write("ALT_PORT", port - 1, data[k] or 0xFF)
        out = bytearray([0xFF] * 64)
        for k, port in ports:
            out[k] = await self.hw.read("ALT_PORT", port - 1) & 0xFF
        return bytes(out)

    async def _ar_group(self, set_, mod, data, in_port):
        """ARGroup (vendor-specific attribute 0xFF11, docs/reliability.md): the adaptive
        routing group of each port, register AR_GROUP. AttributeModifier: block b, IBA ports
        64 b .. 64 b + 63; byte k the group of port 64 b + k, 0 for none. A packet routed to
        a port of group g != 0 may leave on any Active port of group g (bit 7 of g set:
        flow-pinned, one port per (SLID, DLID); clear: per packet). Port 0 (the
        management port) and ports beyond N have none: their bytes are ignored on a Set and
        0 on a Get. A switch built without adaptive routing answers UNSUP_METHOD_ATTR."""
        c = self.cfg
        if not c.adaptive:
            raise SMAError(Status.UNSUP_METHOD_ATTR, "ARGroup: this switch has no adaptive routing")
        if mod > c.ports // 64:
            raise SMAError(Status.INVALID_FIELD, f"ARGroup block {mod}: the switch has {c.ports} ports")
        ports = [(k, 64 * mod + k) for k in range(64) if 1 <= 64 * mod + k <= c.ports]
        if set_:
            for k, port in ports:
                await self.hw.write("AR_GROUP", port - 1, data[k])
        out = bytearray(64)
        for k, port in ports:
            out[k] = await self.hw.read("AR_GROUP", port - 1) & 0xFF
        return bytes(out)

    async def _vlarb(self, set_, mod, data, in_port):
        c = self.cfg
        block, port = mod >> 16, mod & 0xFFFF
        where = T.vlarb_block_entries(block)
        if where is None or port > c.ports:
            raise SMAError(Status.INVALID_FIELD, f"VLArb modifier {mod:#010x}")
        table, first = where
        e = c.vlarb_entries
        have = range(first, min(first + 32, e))
        if set_:
            for k in range(32):
                vl = data[2 * k] & 0xF
                if first + k < e and data[2 * k + 1] and vl >= c.data_vls:
                    raise SMAError(Status.INVALID_FIELD, f"VLArb entry {first + k}: VL {vl}")
        if port == 0:
            if set_:
                self.sw.vlarb_port0[block] = bytes(data[:64])
            return self.sw.vlarb_port0.get(block, bytes(64))
        if set_:
            for j in have:
                await self.hw.write(table, (port - 1) * e + j, T.vlarb_element(data, j - first))
        out = b""
        for j in have:
            out += T.vlarb_from_reg(await self.hw.read(table, (port - 1) * e + j))
        return out + bytes(64 - len(out))
