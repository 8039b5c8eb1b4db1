"""The PMA-style counters of one port, as the management block reads them
(contracts/regmap.py PORT_COUNTERS_LIST; docs/registers.md), formed from the events and
counts of the blocks that see them (IBA §16.1.3.5 PortCounters):

  PortXmitData / PortXmitPkts / PortXmitWait   LinkTx (`tx`)
  PortXmitDiscards         LinkTx's (`tx.xmit_discards`: drained in state Down, a cut tail)
                           plus the queue heads for this output that outlived HOQLife
                           (`hoq_discard`: a count per cycle from the request builder; this
                           block keeps their sum) or the switch lifetime (`life_discard`)
  details[0], details[1]   the last two apart (PortXmitDiscardDetails:
                           PortSwLifetimeLimitDiscards, PortSwHOQLifetimeLimitDiscards; IBA
                           §16.1.4.3), 32-bit saturating (register LIFE_DISCARDS)
  PortRcvData / PortRcvPkts / ExcessiveBufferOverrunErrors        LinkRx (`rx`)
  PortRcvErrors            the sum of the receiver's local error counts
                           (contracts.defs.RX_ERROR_COUNTERS: CRCs, malformed packets,
                           overruns, ...; not EBP)
  PortRcvRemotePhysicalErrors  packets that arrived marked EBP (`rx.ebp`)
  VL15Dropped              VL15 packets the receiver had no room for, plus SMPs for the
                           switch the management queue had no room for (`mgmt.v15_dropped`)
  LinkDownedCounter        the port state machine's count (`link_downed`)
  PortRcvSwitchRelayErrors packets from this port the switch could not relay: refused by
                           the route lookup (`route_drop` pulses), multicast copies read
                           out into the void (`discard` pulses), and the management port's
                           relay errors (`mgmt.relay_err`); this block keeps the count of
                           the first two
  VL15ForSwitch, MgmtRcvPkts, MgmtXmitPkts, MgmtXmitDiscards   the management port
Sums of counters saturate at 2^32 - 1, as each counter does. The values are registered
where a count is kept here (the relay errors), combinational otherwise.
"""
from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.counters import COUNTERS_PER_PORT, PORT_COUNTERS_LIST
from contracts.defs import RX_ERROR_COUNTERS
from hw.common.ports import signature

__all__ = ["PortCounters"]

_SAT = 0xFFFFFFFF


def sat_sum(*xs):
    """The sum of 32-bit counts, saturating at 2^32 - 1."""
    t = sum(xs)
    return Mux(t > _SAT, _SAT, t)[:32]


class PortCounters(wiring.Component):
    def __init__(self, cfg=None):
        super().__init__(signature(specs.port_counters(cfg)))

    def elaborate(self, platform):
        m = Module()
        rx, tx, mp = self.rx, self.tx, self.mgmt
        relay = Signal(32)                       # route drops + discarded multicast copies
        m.d.sync += relay.eq(sat_sum(relay, self.route_drop, self.discard))
        hoq = Signal(32)                         # expired queue heads of this output discarded
        m.d.sync += hoq.eq(sat_sum(hoq, self.hoq_discard))
        life = Signal(32)                        # queue heads of this output past the switch lifetime
        m.d.sync += life.eq(sat_sum(life, self.life_discard))
        m.d.comb += [self.details[0].eq(life), self.details[1].eq(hoq)]
        vals = {
            "PortXmitData": tx.xmit_words, "PortRcvData": rx.rcv_words, "PortXmitPkts": tx.xmit_pkts,
            "PortRcvPkts": rx.rcv_pkts, "PortXmitWait": tx.xmit_wait,
            "PortRcvErrors": sat_sum(*(getattr(rx, c) for c in RX_ERROR_COUNTERS)),
            "PortXmitDiscards": sat_sum(tx.xmit_discards, hoq, life), "ExcessiveBufferOverrunErrors": rx.overrun,
            "VL15Dropped": sat_sum(rx.vl15_dropped, mp.v15_dropped),
            "LinkDownedCounter": self.link_downed,
            "PortRcvSwitchRelayErrors": sat_sum(relay, mp.relay_err),
            "VL15ForSwitch": mp.for_switch, "PortRcvRemotePhysicalErrors": rx.ebp,
            "MgmtRcvPkts": mp.rcv, "MgmtXmitPkts": mp.xmit, "MgmtXmitDiscards": mp.xmit_discards,
        }
        for k in range(COUNTERS_PER_PORT):
            name = PORT_COUNTERS_LIST[k] if k < len(PORT_COUNTERS_LIST) else None
            m.d.comb += self.counters[k].eq(vals[name] if name else 0)
        return m
