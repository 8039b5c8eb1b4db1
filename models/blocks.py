"""Every block's golden model by its kind (contracts/blocks.py names the same kinds with their
port specifications): what a composed model instantiates for a connection table's
`block(name, kind, **params)`, with the same parameters. (RouteLookup's decisions are
models/route.py's functions, used inside the ingress model; LinkPort's model steps with its
wire's inputs apart and is composed by models/link_pair.py.)"""
from models.allocator import ISlipModel
from models.block_ram import BlockRAMModel
from models.congestion import CongestionModel
from models.counters import PortCountersModel
from models.crc_bank import CRCBankModel
from models.crossbar import CrossbarModel
from models.egress import EgressModel
from models.endpoint import EndpointModel
from models.ingress import IngressModel
from models.lifetime import LifetimeClockModel
from models.link_pair import LinkPairModel
from models.link_rx import LinkRxModel
from models.link_tx import LinkTxModel
from models.mgmt import MgmtModel
from models.mgmt_port import MgmtPortModel
from models.mgmt_queue import MgmtQueueModel
from models.port_groups import PortGroupsModel
from models.port_state import PortStateModel
from models.requests import RequestBuilderModel
from models.rx_parser import RxParserModel
from models.rx_register import RxRegisterModel
from models.traffic_check import TrafficCheckModel
from models.traffic_gen import TrafficGenModel
from models.vlarb import VLArbModel
from models.voq import VOQModel

__all__ = ["MODELS"]

MODELS = {
    "rx_parser": RxParserModel, "link_rx": LinkRxModel, "link_tx": LinkTxModel, "port_state": PortStateModel,
    "block_ram": BlockRAMModel,
    "link_register": RxRegisterModel, "crc_bank": CRCBankModel, "link_pair": LinkPairModel,
    "voq": VOQModel, "requests": RequestBuilderModel, "ingress": IngressModel, "crossbar": CrossbarModel,
    "egress": EgressModel, "vlarb": VLArbModel, "allocator": ISlipModel, "port_counters": PortCountersModel,
    "mgmt_port": MgmtPortModel, "mgmt_queue": MgmtQueueModel, "port_groups": PortGroupsModel,
    "congestion": CongestionModel, "lifetime_clock": LifetimeClockModel,
    "mgmt": MgmtModel,
    "traffic_gen": TrafficGenModel, "traffic_check": TrafficCheckModel, "endpoint": EndpointModel,
}
