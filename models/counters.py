"""Golden model of a port's counters as management reads them (hw/switch/counters.py), from
the definitions of IBA §16.1.3.5 PortCounters (docs/registers.md): which events of which
block each counter counts (PortXmitDiscards: also the packets discarded at the head of
this output's queues for outliving HOQLife or the switch lifetime, docs/reliability.md; those two
also apart, as PortXmitDiscardDetails keeps them, IBA §16.1.4.3: `details__0` the switch
lifetime's, `details__1` HOQLife's). A counter that adds
several sources saturates at 2^32 - 1, as IBA counters do (they stop at all ones)."""
from __future__ import annotations

from contracts.counters import COUNTERS_PER_PORT, PORT_COUNTERS_LIST
from contracts.defs import RX_ERROR_COUNTERS

__all__ = ["PortCountersModel",]

_SAT = 0xFFFFFFFF


class PortCountersModel:
    peek_by_copy = True                 # its state copies faster than its cycle evaluates (models.compose)
    def __init__(self, cfg=None):
        self.relay = 0                           # packets this port's ingress could not relay
        self.hoq = 0                             # queue heads for this output past HOQLife, discarded
        self.life = 0                            # ... past the switch lifetime

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        rx = lambda k: inp[f"rx__{k}"]  # noqa: E731
        tx = lambda k: inp[f"tx__{k}"]  # noqa: E731
        mp = lambda k: inp[f"mgmt__{k}"]  # noqa: E731
        v = {
            "PortXmitData": tx("xmit_words"), "PortXmitPkts": tx("xmit_pkts"), "PortXmitWait": tx("xmit_wait"),
            "PortXmitDiscards": min(tx("xmit_discards") + self.hoq + self.life, _SAT),
            "PortRcvData": rx("rcv_words"), "PortRcvPkts": rx("rcv_pkts"),
            "PortRcvErrors": min(sum(rx(k) for k in RX_ERROR_COUNTERS), _SAT),
            "ExcessiveBufferOverrunErrors": rx("overrun"),
            "PortRcvRemotePhysicalErrors": rx("ebp"),
            "VL15Dropped": min(rx("vl15_dropped") + mp("v15_dropped"), _SAT),
            "LinkDownedCounter": inp["link_downed"],
            "PortRcvSwitchRelayErrors": min(self.relay + mp("relay_err"), _SAT),
            "VL15ForSwitch": mp("for_switch"), "MgmtRcvPkts": mp("rcv"), "MgmtXmitPkts": mp("xmit"),
            "MgmtXmitDiscards": mp("xmit_discards"),
        }
        out = {"details__0": self.life, "details__1": self.hoq}
        out |= {f"counters__{k}": v[name] if k < len(PORT_COUNTERS_LIST) and (name := PORT_COUNTERS_LIST[k]) else 0
               for k in range(COUNTERS_PER_PORT)}
        if commit:
            self.relay = min(self.relay + inp["route_drop"] + inp["discard"], _SAT)
            self.hoq = min(self.hoq + inp["hoq_discard"], _SAT)
            self.life = min(self.life + inp["life_discard"], _SAT)
        return out
