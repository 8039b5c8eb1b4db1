"""Every block's port specification by name: the one registry the RTL components (hw/blocks.py),
the golden models (models/blocks.py), the switch's connection table (contracts/ib_switch.py)
and tests/test_port_specs.py read."""
from __future__ import annotations

from contracts import common, endpoint, link, mgmt, switch

__all__ = ["SPECS"]

SPECS = {
    # link layer
    "rx_parser": link.rx_parser, "link_rx": link.link_rx, "link_tx": link.link_tx, "port_state": link.port_state,
    "link_register": link.link_register, "link_port": link.link_port, "crc_bank": link.crc_bank,
    "link_pair": link.link_pair,
    # primitives
    "block_ram": common.block_ram,
    # switch core
    "voq": switch.voq, "requests": switch.requests, "ingress": switch.ingress, "crossbar": switch.crossbar,
    "egress": switch.egress, "vlarb": switch.vlarb, "allocator": switch.allocator,
    "port_counters": switch.port_counters, "mgmt_port": switch.mgmt_port, "mgmt_queue": switch.mgmt_queue,
    "port_groups": switch.port_groups, "congestion": switch.congestion, "lifetime_clock": switch.lifetime_clock,
    "route": switch.route,
    # management
    "mgmt": mgmt.mgmt,
    # endpoint
    "traffic_gen": endpoint.traffic_gen, "traffic_check": endpoint.traffic_check, "endpoint": endpoint.endpoint,
}
