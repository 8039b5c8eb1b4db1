"""Counter lists, written once: the counters each block keeps (their names are its `counters`
ports, contracts/blocks.py), and how the management block lays the per-port PMA-style counters
out in its COUNTERS register (docs/registers.md): port p's counter `name` is entry
p * COUNTERS_PER_PORT + PORT_COUNTERS_LIST.index(name) (`counter_index`).

Every counter is 32 bits and saturates at 2^32 - 1 unless COUNTER_WIDTHS says otherwise.
"""
from __future__ import annotations

from contracts.defs import RxError

__all__ = ["PARSER_COUNTERS", "LINK_RX_COUNTERS", "LINK_TX_COUNTERS", "PORT_STATE_COUNTERS", "MGMT_PORT_COUNTERS",
           "CHECK_COUNTERS", "CHECK_COUNTER_WIDTHS", "PORT_COUNTERS_LIST", "COUNTERS_PER_PORT", "counter_index"]

# the receive parser (hw/link/rx_parser.py): good packets, and one count per error class
PARSER_COUNTERS = ["good_data", "good_link"] + [e.name.lower() for e in RxError if e != RxError.NONE]
# a link's receive side (hw/link/link_rx.py): the parser's, then what LinkRx itself counts
LINK_RX_COUNTERS = PARSER_COUNTERS + ["rcv_pkts", "rcv_words", "state_drop", "vl15_dropped", "vl_invalid",
                                      "overrun", "fc_vl_invalid"]
# a link's transmit side (hw/link/link_tx.py)
LINK_TX_COUNTERS = ["xmit_pkts", "xmit_words", "xmit_wait", "fc_sent", "xmit_discards"]
# the port state machine (hw/link/port_state.py), as LinkPort's host shows them
PORT_STATE_COUNTERS = ["link_downed", "state_req_bad"]
# the management port (hw/switch/mgmt_port.py), per physical port
MGMT_PORT_COUNTERS = ["for_switch", "relay_err", "v15_dropped", "rcv", "xmit", "xmit_discards"]
# the endpoint's traffic checker (hw/endpoint/traffic_check.py)
CHECK_COUNTERS = ["rcv_pkts", "rcv_good", "rcv_bad", "rcv_errors", "icrc_err", "format_err", "pattern_err",
                  "unknown_src", "seq_gap", "seq_lost", "seq_dup", "lat_min", "lat_max", "lat_sum"]
CHECK_COUNTER_WIDTHS = {"lat_sum": 48}          # the others 32 bits

# per-port counters visible over management (IBA PMA PortCounters names where they exist)
PORT_COUNTERS_LIST = ["PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait",
                      "PortRcvErrors", "PortXmitDiscards", "ExcessiveBufferOverrunErrors", "VL15Dropped",
                      "LinkDownedCounter", "PortRcvSwitchRelayErrors", "VL15ForSwitch",
                      "PortRcvRemotePhysicalErrors",
                      # the management port (docs/management.md): packets from this port taken
                      # into the management queue; the processor's packets sent out of it, and
                      # dropped for it (port not in a state to send, VL not configured)
                      "MgmtRcvPkts", "MgmtXmitPkts", "MgmtXmitDiscards"]
# entries of the COUNTERS register per port (room for the list above)
COUNTERS_PER_PORT = 16
assert len(PORT_COUNTERS_LIST) <= COUNTERS_PER_PORT


def counter_index(port: int, name: str) -> int:
    """Index of counter `name` of port `port` (0-based, Verilog numbering) in COUNTERS."""
    return port * COUNTERS_PER_PORT + PORT_COUNTERS_LIST.index(name)
