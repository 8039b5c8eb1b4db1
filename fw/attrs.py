"""MAD attribute layouts used by the switch's agents, field by field in wire order.

Each layout lists its fields as IBA's attribute tables do, most significant bit first
(IBA §13.4.2: bit and byte order of MAD fields); `None` marks reserved bits. A record is
a plain dict of field name -> int (bytes for the NodeDescription string).

  NodeInfo                IBA §14.2.5.3 (table 147)
  SwitchInfo              IBA §14.2.5.4 (table 148)
  PortInfo                IBA §14.2.5.6 (table 151; CapabilityMask2 and the extended speeds
                          of later releases are reserved here: we report none)
  PortCounters            IBA §16.1.3.5 (table 226)
  PortCountersExtended    IBA §16.1.4.11 (table 247)
  ClassPortInfo           IBA §13.4.8.1 (table 118)
  Notice                  IBA §13.4.8.2; in an SMP's 64 data bytes the 16-byte IssuerGID
                          does not fit and is left out (the layout of OpenSM's ib_types.h
                          and Linux's ib_mad.h: DataDetails end at byte 64)
Congestion control (IBA Annex A10, class 0x21; the attribute at the CC MAD's byte 64, but
CongestionLog, which starts at byte 32 over the log data and the management data):
  CongestionInfo          A10.4.3.3
  CongestionKeyInfo       A10.4.3.4
  CongestionLog (switch)  A10.4.3.5 (15 event entries of 12 bytes after the port map)
  SwitchCongestionSetting A10.4.3.6
  SwitchPortCongestionSettingElement  A10.4.3.7 (32 per block, AttributeModifier = block)
Tables of entries (LFT, MFT, SL2VL, VLArb) are in fw.tables.
"""
from __future__ import annotations

from fw.mad import MADError

__all__ = ["Layout", "NODE_INFO", "SWITCH_INFO", "PORT_INFO", "PORT_COUNTERS", "PORT_COUNTERS_EXT",
           "PORT_XMIT_DISCARD_DETAILS",
           "CLASS_PORT_INFO", "NOTICE", "TRAP_LINK_STATE", "NodeType", "node_description",
           "CONGESTION_INFO", "CONGESTION_KEY_INFO", "CONGESTION_LOG_SWITCH", "SWITCH_CONGESTION_SETTING",
           "SWITCH_PORT_CONGESTION_ELEMENT"]


class NodeType:
    CA = 1
    SWITCH = 2
    ROUTER = 3


class Layout:
    """Fields (name or None, bits) packed most significant bit first into `size` bytes."""

    def __init__(self, name: str, fields: list[tuple[str | None, int]], size: int):
        self.name = name
        self.fields = fields
        bits = sum(b for _n, b in fields)
        if bits > 8 * size:
            raise AssertionError(f"{name}: {bits} bits do not fit {size} bytes")
        self.size = size
        self.names = [n for n, _b in fields if n]
        self.width = {n: b for n, b in fields if n}

    def pack(self, values: dict) -> bytes:
        unknown = set(values) - set(self.names)
        if unknown:
            raise KeyError(f"{self.name} has no field {sorted(unknown)[0]!r}")
        v = 0
        for n, b in self.fields:
            x = values.get(n, 0) if n else 0
            if not 0 <= x < (1 << b):
                raise ValueError(f"{self.name}.{n}={x} does not fit {b} bits")
            v = (v << b) | x
        total = sum(b for _n, b in self.fields)
        return (v << (8 * self.size - total)).to_bytes(self.size, "big")

    def unpack(self, data: bytes) -> dict:
        if len(data) < self.size:
            raise MADError(f"{self.name} needs {self.size} bytes, got {len(data)}")
        v = int.from_bytes(data[:self.size], "big")
        pos = 8 * self.size
        out = {}
        for n, b in self.fields:
            pos -= b
            if n:
                out[n] = (v >> pos) & ((1 << b) - 1)
        return out


NODE_INFO = Layout("NodeInfo", [
    ("base_version", 8), ("class_version", 8), ("node_type", 8), ("num_ports", 8),
    ("system_image_guid", 64), ("node_guid", 64), ("port_guid", 64),
    ("partition_cap", 16), ("device_id", 16), ("revision", 32),
    ("local_port_num", 8), ("vendor_id", 24)], 40)

SWITCH_INFO = Layout("SwitchInfo", [
    ("linear_fdb_cap", 16), ("random_fdb_cap", 16), ("multicast_fdb_cap", 16), ("linear_fdb_top", 16),
    ("default_port", 8), ("default_mcast_primary_port", 8), ("default_mcast_not_primary_port", 8),
    ("life_time_value", 5), ("port_state_change", 1), ("optimized_sl2vl_programming", 2),
    ("lids_per_port", 16), ("partition_enforcement_cap", 16),
    ("inbound_enforcement_cap", 1), ("outbound_enforcement_cap", 1), ("filter_raw_inbound_cap", 1),
    ("filter_raw_outbound_cap", 1), ("enhanced_port0", 1), (None, 3), (None, 8),
    ("multicast_fdb_top", 16)], 20)

PORT_INFO = Layout("PortInfo", [
    ("m_key", 64), ("gid_prefix", 64), ("lid", 16), ("master_sm_lid", 16), ("capability_mask", 32),
    ("diag_code", 16), ("m_key_lease_period", 16), ("local_port_num", 8),
    ("link_width_enabled", 8), ("link_width_supported", 8), ("link_width_active", 8),
    ("link_speed_supported", 4), ("port_state", 4), ("port_phys_state", 4), ("link_down_default_state", 4),
    ("m_key_protect_bits", 2), (None, 3), ("lmc", 3),
    ("link_speed_active", 4), ("link_speed_enabled", 4), ("neighbor_mtu", 4), ("master_sm_sl", 4),
    ("vl_cap", 4), ("init_type", 4), ("vl_high_limit", 8), ("vl_arb_high_cap", 8), ("vl_arb_low_cap", 8),
    ("init_type_reply", 4), ("mtu_cap", 4), ("vl_stall_count", 3), ("hoq_life", 5),
    ("operational_vls", 4), ("partition_enforcement_inbound", 1), ("partition_enforcement_outbound", 1),
    ("filter_raw_inbound", 1), ("filter_raw_outbound", 1),
    ("m_key_violations", 16), ("p_key_violations", 16), ("q_key_violations", 16), ("guid_cap", 8),
    ("client_reregister", 1), ("multicast_pkey_trap_suppression", 2), ("subnet_timeout", 5),
    (None, 3), ("resp_time_value", 5), ("local_phy_errors", 4), ("overrun_errors", 4),
    ("max_credit_hint", 16), (None, 8), ("link_round_trip_latency", 24)], 64)

PORT_COUNTERS = Layout("PortCounters", [
    (None, 8), ("port_select", 8), ("counter_select", 16),
    ("symbol_error_counter", 16), ("link_error_recovery_counter", 8), ("link_downed_counter", 8),
    ("port_rcv_errors", 16), ("port_rcv_remote_physical_errors", 16), ("port_rcv_switch_relay_errors", 16),
    ("port_xmit_discards", 16), ("port_xmit_constraint_errors", 8), ("port_rcv_constraint_errors", 8),
    ("counter_select2", 8), ("local_link_integrity_errors", 4), ("excessive_buffer_overrun_errors", 4),
    (None, 16), ("vl15_dropped", 16),
    ("port_xmit_data", 32), ("port_rcv_data", 32), ("port_xmit_pkts", 32), ("port_rcv_pkts", 32),
    ("port_xmit_wait", 32)], 44)

PORT_COUNTERS_EXT = Layout("PortCountersExtended", [
    (None, 8), ("port_select", 8), ("counter_select", 16), (None, 32),
    ("port_xmit_data", 64), ("port_rcv_data", 64), ("port_xmit_pkts", 64), ("port_rcv_pkts", 64),
    ("port_unicast_xmit_pkts", 64), ("port_unicast_rcv_pkts", 64),
    ("port_multicast_xmit_pkts", 64), ("port_multicast_rcv_pkts", 64)], 72)

# IBA §16.1.4.3 (CounterSelect bits 0..3 select the four counters in this order)
PORT_XMIT_DISCARD_DETAILS = Layout("PortXmitDiscardDetails", [
    (None, 8), ("port_select", 8), ("counter_select", 16),
    ("port_inactive_discards", 16), ("port_neighbor_mtu_discards", 16),
    ("port_sw_lifetime_limit_discards", 16), ("port_sw_hoq_lifetime_limit_discards", 16)], 12)

CLASS_PORT_INFO = Layout("ClassPortInfo", [
    ("base_version", 8), ("class_version", 8), ("capability_mask", 16), ("capability_mask2", 27),
    ("resp_time_value", 5), ("redirect_gid", 128), ("redirect_tc", 8), ("redirect_sl", 4),
    ("redirect_fl", 20), ("redirect_lid", 16), ("redirect_pkey", 16), (None, 8), ("redirect_qp", 24),
    ("redirect_qkey", 32), ("trap_gid", 128), ("trap_tc", 8), ("trap_sl", 4), ("trap_fl", 20),
    ("trap_lid", 16), ("trap_pkey", 16), ("trap_hl", 8), ("trap_qp", 24), ("trap_qkey", 32)], 72)

NOTICE = Layout("Notice", [
    ("is_generic", 1), ("type", 7), ("producer_type", 24), ("trap_number", 16), ("issuer_lid", 16),
    ("notice_toggle", 1), ("notice_count", 15), ("lid_addr", 16), ("details", 416)], 64)
# Trap 128 (IBA §14.2.5.1, the SM class's traps): "link state of at least one port of the
# switch at LIDADDR has changed"; generic, producer Switch (2); its DataDetails start with
# LIDADDR (the `lid_addr` field above: OpenSM's ntc_128.sw_lid; other traps lay the details
# out differently).
TRAP_LINK_STATE = 128


CONGESTION_INFO = Layout("CongestionInfo", [("congestion_info", 16), ("control_table_cap", 8)], 3)

CONGESTION_KEY_INFO = Layout("CongestionKeyInfo", [
    ("cc_key", 64), ("cc_key_protect_bit", 1), (None, 15), ("cc_key_lease_period", 16),
    ("cc_key_violations", 16)], 14)

CONGESTION_LOG_SWITCH = Layout("CongestionLog", [
    ("log_type", 8), ("congestion_flags", 8), ("log_events_counter", 16), ("current_time_stamp", 32),
    ("port_map", 256), ("entries", 15 * 96)], 220)

SWITCH_CONGESTION_SETTING = Layout("SwitchCongestionSetting", [
    ("control_map", 32), ("victim_mask", 256), ("credit_mask", 256), ("threshold", 4), (None, 4),
    ("packet_size", 8), ("cs_threshold", 4), (None, 12), ("cs_return_delay", 16), ("marking_rate", 16)], 76)

SWITCH_PORT_CONGESTION_ELEMENT = Layout("SwitchPortCongestionSettingElement", [
    ("valid", 1), ("control_type", 1), (None, 2), ("threshold", 4), ("packet_size", 8), ("cong_parm", 16)], 4)


def node_description(text: str) -> bytes:
    """NodeDescription (IBA §14.2.5.2): 64 bytes of UTF-8, NUL padded."""
    b = text.encode("utf-8")
    if len(b) > 64:
        raise ValueError(f"NodeDescription {text!r} is longer than 64 bytes")
    return b + bytes(64 - len(b))
