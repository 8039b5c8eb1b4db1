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

from contracts import endpoint as ep_specs
from contracts import link as link_specs
from contracts.config import SwitchConfig
from contracts.counters import CHECK_COUNTERS, LINK_RX_COUNTERS, LINK_TX_COUNTERS
from contracts.defs import PortState
from contracts.endpoint import GEN_CONFIG
from contracts.streams import FC_FIELDS, FLIT, LINK_FLIT
from models.compose import Composite
from models.credit import packet_blocks
from models.link_rx import LinkRxModel
from models.link_tx import LinkTxModel
from models.port_state import PortStateModel
from models.traffic_check import TrafficCheckModel
from models.traffic_gen import TrafficGenModel

__all__ = ["EndpointModel"]

_RX = ["valid", *LINK_FLIT, "up"]
_TX = ["valid", *LINK_FLIT]
_FLIT = ["valid", *FLIT]
_FC = ["valid", *FC_FIELDS]


class EndpointModel:
    def __init__(self, cfg: SwitchConfig, max_dests: int = 4, max_srcs: int = 4, check_icrc: bool = True):
        self.cfg = cfg
        nvl = cfg.data_vls
        self.gen = TrafficGenModel(cfg, max_dests)
        self.chk = TrafficCheckModel(cfg, max_srcs, check_icrc=check_icrc)
        blocks = {"psm": PortStateModel(), "lrx": LinkRxModel(cfg, buffered=False), "ltx": LinkTxModel(cfg),
                  "gen": self.gen, "chk": self.chk}
        declared = {
            "psm": link_specs.port_state().ports()[:2],
            "lrx": link_specs.link_rx(cfg, buffered=False).ports()[:2],
            "ltx": link_specs.link_tx(cfg).ports()[:2],
            "gen": ep_specs.traffic_gen(cfg, max_dests).ports()[:2],
            "chk": ep_specs.traffic_check(cfg, max_srcs, check_icrc).ports()[:2],
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
            wires[("ltx", f"src__{v}__blocks")] = self._blocks(g)
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

    def _blocks(self, g):
        """A source's credit blocks, from the PktLen of the LRH in the flit offered (as the
        endpoint's RTL derives them; LinkTx's model reads a packet's own LRH instead)."""
        shift, vcrc = self.cfg.data_width - 64 + 16, self.cfg.credit_vcrc
        return lambda o: packet_blocks(g(o, "gen", "o__data") >> shift & 0x7FF, vcrc)

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
