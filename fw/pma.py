"""The performance management agent (PMA, IBA §16.1): ClassPortInfo, PortCounters,
PortCountersExtended and PortXmitDiscardDetails, Get and Set (Set clears the selected
counters).

The switch counts in 32-bit saturating registers (COUNTERS in docs/registers.md). A Set
cannot clear a read-only register, so the PMA keeps, per port and counter, the register
value at the last clear and answers the difference, saturated to the MAD field's width
(PortCounters fields stop at their maximum, IBA §16.1.3.5). Consequences, documented in
docs/management.md: a hardware counter that saturated stays saturated until reset; the
64-bit PortCountersExtended counters are the same 32-bit registers (at most 2^32 - 1), and
ClassPortInfo does not claim the unicast/multicast counters (CapabilityMask bits 9, 10).

Port 0 (the management port) is counted by the firmware itself: the MAD packets it
received and sent, and their words.
Counters that the core cannot observe are answered as 0 with the reason in
docs/management.md: SymbolErrorCounter, LinkErrorRecoveryCounter and
LocalLinkIntegrityErrors are PHY/PCS events (no PHY in the core), constraint errors need
partition enforcement (not implemented, SwitchInfo:PartitionEnforcementCap 0).
PortXmitDiscardDetails (IBA §16.1.4.3): PortSwLifetimeLimitDiscards and
PortSwHOQLifetimeLimitDiscards are register LIFE_DISCARDS (a switch built with lifetimes;
0 otherwise); PortInactiveDiscards and PortNeighborMTUDiscards are 0: the switch counts the
packets drained at a Down port together with cut tails (PortXmitDiscards), and forwards
nothing larger than its MTU.
"""
from __future__ import annotations

from contracts.counters import PORT_COUNTERS_LIST, counter_index
from fw.attrs import CLASS_PORT_INFO, PORT_COUNTERS, PORT_COUNTERS_EXT, PORT_XMIT_DISCARD_DETAILS
from fw.hw import SwitchRegs
from fw.mad import Method, PerfMAD, PMAttr, Status

__all__ = ["PMA", "CAP_XMIT_WAIT"]

CAP_XMIT_WAIT = 1 << 12       # ClassPortInfo:CapabilityMask PortXmitWait supported

# PortCounters field <- hardware counter, and its CounterSelect bit (IBA table 226)
_PC = [("symbol_error_counter", None, 0), ("link_error_recovery_counter", None, 1),
       ("link_downed_counter", "LinkDownedCounter", 2), ("port_rcv_errors", "PortRcvErrors", 3),
       ("port_rcv_remote_physical_errors", "PortRcvRemotePhysicalErrors", 4),
       ("port_rcv_switch_relay_errors", "PortRcvSwitchRelayErrors", 5),
       ("port_xmit_discards", "PortXmitDiscards", 6), ("port_xmit_constraint_errors", None, 7),
       ("port_rcv_constraint_errors", None, 8), ("local_link_integrity_errors", None, 9),
       ("excessive_buffer_overrun_errors", "ExcessiveBufferOverrunErrors", 10),
       ("vl15_dropped", "VL15Dropped", 11), ("port_xmit_data", "PortXmitData", 12),
       ("port_rcv_data", "PortRcvData", 13), ("port_xmit_pkts", "PortXmitPkts", 14),
       ("port_rcv_pkts", "PortRcvPkts", 15), ("port_xmit_wait", "PortXmitWait", 16)]   # 16: CounterSelect2 bit 0
_PCX = [("port_xmit_data", "PortXmitData", 0), ("port_rcv_data", "PortRcvData", 1),
        ("port_xmit_pkts", "PortXmitPkts", 2), ("port_rcv_pkts", "PortRcvPkts", 3)]
_XDD = [("port_inactive_discards", None, 0), ("port_neighbor_mtu_discards", None, 1),
        ("port_sw_lifetime_limit_discards", "SwLifetimeLimitDiscards", 2),
        ("port_sw_hoq_lifetime_limit_discards", "SwHOQLifetimeLimitDiscards", 3)]
_LIFE = {"SwLifetimeLimitDiscards": 0, "SwHOQLifetimeLimitDiscards": 1}     # LIFE_DISCARDS index 2 p + k
_PORT0 = {"PortXmitData": "tx_words", "PortRcvData": "rx_words", "PortXmitPkts": "tx_pkts",
          "PortRcvPkts": "rx_pkts"}


class PMA:
    def __init__(self, hw: SwitchRegs, port0_counts: dict):
        self.hw = hw
        self.cfg = hw.cfg
        self.port0 = port0_counts                     # the firmware's own management-port counts
        self.base: dict[tuple[int, str], int] = {}

    async def _raw(self, port: int, name: str) -> int:
        if port == 0:
            key = _PORT0.get(name)
            return self.port0.get(key, 0) if key else 0
        if name in _LIFE:
            return await self.hw.read("LIFE_DISCARDS", 2 * (port - 1) + _LIFE[name]) if self.cfg.lifetimes else 0
        if name not in PORT_COUNTERS_LIST:
            return 0
        return await self.hw.read("COUNTERS", counter_index(port - 1, name))

    async def _value(self, port: int, name: str | None, bits: int) -> int:
        if name is None:
            return 0
        v = (await self._raw(port, name) - self.base.get((port, name), 0)) & 0xFFFFFFFF
        return min(v, (1 << bits) - 1)

    async def process(self, mad: PerfMAD) -> PerfMAD | None:
        h = mad.hdr
        if h.method == Method.GET_RESP:
            return None
        rsp = PerfMAD(hdr=type(h)(**vars(h)), data=bytes(192))
        rsp.hdr.method = Method.GET_RESP
        rsp.hdr.status = 0
        if h.base_version != 1 or h.class_version != 1:
            rsp.hdr.status = Status.BAD_VERSION
        elif h.method not in (Method.GET, Method.SET):
            rsp.hdr.status = Status.UNSUP_METHOD
        elif h.attr_id == PMAttr.CLASS_PORT_INFO and h.method == Method.GET:
            rsp.data = CLASS_PORT_INFO.pack({"base_version": 1, "class_version": 1,
                                             "capability_mask": CAP_XMIT_WAIT, "resp_time_value": 18})
        elif h.attr_id in (PMAttr.PORT_COUNTERS, PMAttr.PORT_COUNTERS_EXT, PMAttr.PORT_XMIT_DISCARD_DETAILS):
            ext = h.attr_id != PMAttr.PORT_COUNTERS                 # no CounterSelect2
            lay, fields = {PMAttr.PORT_COUNTERS: (PORT_COUNTERS, _PC),
                           PMAttr.PORT_COUNTERS_EXT: (PORT_COUNTERS_EXT, _PCX),
                           PMAttr.PORT_XMIT_DISCARD_DETAILS: (PORT_XMIT_DISCARD_DETAILS, _XDD)}[h.attr_id]
            req = lay.unpack(mad.data)
            port = req["port_select"]
            if port > self.cfg.ports:                 # 0xFF (all ports) not supported: no AllPortSelect
                rsp.hdr.status = Status.INVALID_FIELD
                rsp.data = mad.data
                return rsp
            if h.method == Method.SET:
                sel = req["counter_select"] | (0 if ext else (req["counter_select2"] & 1) << 16)
                for _f, hwname, bit in fields:
                    if hwname and sel >> bit & 1:
                        self.base[(port, hwname)] = await self._raw(port, hwname)
            vals = {"port_select": port, "counter_select": req["counter_select"]}
            if not ext:
                vals["counter_select2"] = req["counter_select2"]
            for fname, hwname, _bit in fields:
                vals[fname] = await self._value(port, hwname, lay.width[fname])
            rsp.data = lay.pack(vals)
        else:
            rsp.hdr.status = Status.UNSUP_METHOD_ATTR
        return rsp
