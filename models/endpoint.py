"""Golden model of the hardware endpoint (hw/endpoint/endpoint.py, docs/endpoint.md),
composed with models.compose.Composite of the link models (LinkRx without data buffers,
LinkTx, the port state machine), the traffic generator and the traffic checker.

The glue is written from docs/endpoint.md: the generator feeds LinkTx's source for its
VL; every packet LinkRx accepts goes to the checker, and its blocks are released in the
cycle its sop is accepted; `auto_active` requests Armed in Init and Active in Armed.
Every wire is checked against the ports each block model declares: a misspelt name is an
error at construction, never a silent 0.
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.defs import PortState
from models.compose import Composite
from models.link_rx import LINK_RX_COUNTERS, LinkRxModel, link_rx_ports
from models.link_tx import LINK_TX_COUNTERS, LinkTxModel, link_tx_ports
from models.port_state import PortStateModel, port_state_ports
from models.traffic_check import CHECK_COUNTERS, TrafficCheckModel, traffic_check_ports
from models.traffic_gen import GEN_CONFIG, TrafficGenModel, traffic_gen_ports

__all__ = ["EndpointModel", "endpoint_ports"]

_RX = ["valid", "data", "sop", "eop", "bytes", "link", "bad", "up"]
_TX = ["valid", "data", "sop", "eop", "bytes", "link", "bad"]
_FLIT = ["valid", "data", "sop", "eop", "bytes", "bad"]
_FC = ["valid", "op", "fctbs", "vl", "fccl"]


def endpoint_ports(cfg: SwitchConfig):
    """(inputs, outputs, qualifiers) of hw.endpoint.Endpoint, flattened as in its Verilog."""
    ins = [f"rx__{k}" for k in _RX] + ["tx__ready", "now", "auto_active", "mgmt__req", "mgmt__state"]
    ins += [f"gen__{k}" for k in GEN_CONFIG if k != "now"] + [f"chk__{k}" for k in ("src_base", "len_min", "len_mask")]
    outs = [f"tx__{k}" for k in _TX] + ["state", "sent_pkts", "gen_done"]
    outs += [f"counters__{n}" for n in CHECK_COUNTERS] + [f"crx__{n}" for n in LINK_RX_COUNTERS]
    outs += [f"ctx__{n}" for n in LINK_TX_COUNTERS]
    qual = {f"tx__{k}": "tx__valid" for k in _TX[1:]}
    return ins, outs, qual


class EndpointModel:
    def __init__(self, cfg: SwitchConfig, max_dests: int = 4, max_srcs: int = 4, check_icrc: bool = True):
        self.cfg = cfg
        nvl = cfg.data_vls
        self.gen = TrafficGenModel(cfg, max_dests)
        self.chk = TrafficCheckModel(cfg, max_srcs, check_icrc=check_icrc)
        blocks = {"psm": PortStateModel(), "lrx": LinkRxModel(cfg, buffered=False), "ltx": LinkTxModel(cfg),
                  "gen": self.gen, "chk": self.chk}
        declared = {
            "psm": tuple(set(x) for x in port_state_ports()[:2]),
            "lrx": tuple(set(x) for x in link_rx_ports(cfg, buffered=False)[:2]),
            "ltx": tuple(set(x) for x in link_tx_ports(cfg)[:2]),
            "gen": tuple(set(x) for x in traffic_gen_ports()[:2]),
            "chk": tuple(set(x) for x in traffic_check_ports()[:2]),
        }
        g = lambda o, b, k: o.get(b, {}).get(k, 0)  # noqa: E731   (first settling pass: nothing yet)
        st = lambda o: g(o, "psm", "state")  # noqa: E731
        auto = lambda o: self._auto and st(o) in (PortState.INIT, PortState.ARMED)  # noqa: E731
        gvl = lambda o: self._gen_vl  # noqa: E731
        wires = {
            ("psm", "req"): lambda o: int(self._mreq or auto(o)),
            ("psm", "want"): lambda o: self._mstate if self._mreq or not auto(o) else st(o) + 1,
            ("lrx", "state"): ("psm", "state"), ("ltx", "state"): ("psm", "state"),
            ("psm", "data_rx"): ("lrx", "data_rx"),
            ("lrx", "vl15__ready"): lambda o: 1,
            ("ltx", "src15__valid"): lambda o: 0,
            ("gen", "o__ready"): lambda o: g(o, "ltx", f"src__{gvl(o)}__ready"),
        }
        for k in _FC:
            wires[("ltx", f"fc_rx__{k}")] = ("lrx", f"fc_rx__{k}")
        for v in range(nvl):
            wires[("ltx", f"local_fccl__{v}")] = ("lrx", f"fccl__{v}")
            wires[("ltx", f"src__{v}__valid")] = self._src_valid(g, v)
            for k in _FLIT[1:]:
                wires[("ltx", f"src__{v}__{k}")] = ("gen", f"o__{k}")
            wires[("lrx", f"release__{v}")] = self._release(g, v)
        for k in _FLIT:
            wires[("chk", f"i__{k}")] = ("lrx", f"acc__{k}")
        self.comp = Composite(blocks, wires, ports=declared)
        self._auto = self._mreq = 0
        self._mstate = 0
        self._gen_vl = 0

    def _src_valid(self, g, v):
        """LinkTx source v is offered the generator's flit when the generator sends on VL v."""
        return lambda o: int(g(o, "gen", "o__valid") and self._gen_vl == v)

    @staticmethod
    def _release(g, v):
        """Blocks of VL v back to LinkRx in the cycle a packet's sop is accepted."""
        return lambda o: (g(o, "lrx", "acc__blocks") if g(o, "lrx", "acc__valid") and g(o, "lrx", "acc__sop")
                          and g(o, "lrx", "acc__vl") == v else 0)

    def step(self, inp: dict) -> dict:
        self._auto, self._mreq, self._mstate = inp["auto_active"], inp["mgmt__req"], inp["mgmt__state"]
        self._gen_vl = inp["gen__vl"]
        top = {
            "psm": {"up": inp["rx__up"]},
            "lrx": {f"rx__{k}": inp[f"rx__{k}"] for k in _RX},
            "ltx": {"tx__ready": inp["tx__ready"]} | {f"src15__{k}": 0 for k in _FLIT[1:]},
            "gen": {k: inp[f"gen__{k}"] for k in GEN_CONFIG if k != "now"} | {"now": inp["now"]},
            "chk": {k: inp[f"chk__{k}"] for k in ("src_base", "len_min", "len_mask")} | {"now": inp["now"]},
        }
        o = self.comp.step(top)
        out = {f"tx__{k}": o["ltx"][f"tx__{k}"] for k in _TX}
        out.update({"state": o["psm"]["state"], "sent_pkts": o["gen"]["sent_pkts"], "gen_done": o["gen"]["done"]})
        out.update({f"counters__{n}": o["chk"][f"counters__{n}"] for n in CHECK_COUNTERS})
        out.update({f"crx__{n}": o["lrx"][f"counters__{n}"] for n in LINK_RX_COUNTERS})
        out.update({f"ctx__{n}": o["ltx"][f"counters__{n}"] for n in LINK_TX_COUNTERS})
        return out
