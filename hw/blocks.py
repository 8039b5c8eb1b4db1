"""Every RTL block by its kind (contracts/blocks.py names the same kinds with their port
specifications): what a connection table's `block(name, kind, **params)` instantiates, with the
same parameters the spec takes."""
from hw.common.bram import BlockRAM
from hw.common.crc import CRCBank
from hw.endpoint.endpoint import Endpoint
from hw.endpoint.traffic_check import TrafficCheck
from hw.endpoint.traffic_gen import TrafficGen
from hw.link.link_pair import LinkPair
from hw.link.link_port import LinkPort
from hw.link.link_rx import LinkRx
from hw.link.link_tx import LinkTx
from hw.link.port_state import PortStateMachine
from hw.link.rx_parser import RxParser
from hw.link.rx_register import RxRegister
from hw.mgmt.mgmt import SwitchMgmt
from hw.switch.allocator import ISlipAllocator
from hw.switch.congestion import CongestionMarker
from hw.switch.counters import PortCounters
from hw.switch.crossbar import Crossbar
from hw.switch.egress import Egress
from hw.switch.ingress import Ingress
from hw.switch.lifetime import LifetimeClock
from hw.switch.mgmt_port import MgmtPort
from hw.switch.mgmt_queue import MgmtQueue
from hw.switch.port_groups import PortGroups
from hw.switch.requests import RequestBuilder
from hw.switch.route import RouteLookup
from hw.switch.vlarb import VLArbiter
from hw.switch.voq import VOQBuffer

__all__ = ["RTL"]

RTL = {
    "rx_parser": RxParser, "link_rx": LinkRx, "link_tx": LinkTx, "port_state": PortStateMachine,
    "link_register": RxRegister, "link_port": LinkPort, "crc_bank": CRCBank, "link_pair": LinkPair,
    "block_ram": BlockRAM,
    "voq": VOQBuffer, "requests": RequestBuilder, "ingress": Ingress, "crossbar": Crossbar, "egress": Egress,
    "vlarb": VLArbiter, "allocator": ISlipAllocator, "port_counters": PortCounters, "mgmt_port": MgmtPort,
    "mgmt_queue": MgmtQueue, "port_groups": PortGroups, "congestion": CongestionMarker,
    "lifetime_clock": LifetimeClock, "route": RouteLookup,
    "mgmt": SwitchMgmt,
    "traffic_gen": TrafficGen, "traffic_check": TrafficCheck, "endpoint": Endpoint,
}
