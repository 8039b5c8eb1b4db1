"""Port specifications of the hardware endpoint's blocks (hw/endpoint/, docs/endpoint.md), from
each block's side (contracts/ports.py)."""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.counters import CHECK_COUNTER_WIDTHS, CHECK_COUNTERS, LINK_RX_COUNTERS, LINK_TX_COUNTERS
from contracts.link import counts, port_mgmt
from contracts.ports import In, Out, Sig, Spec
from contracts.streams import buffer, flit, link_rx, link_tx

__all__ = ["traffic_gen", "traffic_check", "endpoint", "GEN_CONFIG"]

# the generator's configuration inputs, in order
GEN_CONFIG = ["en", "slid", "dlid_base", "ndest", "sl", "vl", "qp", "len_min", "len_mask", "count", "gap", "now"]


def gen_config(cfg: SwitchConfig, max_dests: int) -> dict:
    """The generator's configuration, as shapes (docs/endpoint.md)."""
    return {"en": 1, "slid": 16, "dlid_base": 16, "ndest": range(max_dests + 1), "sl": 4,
            "vl": range(max(cfg.data_vls, 2)), "qp": 24, "len_min": 11, "len_mask": 11, "count": 32, "gap": 16,
            "now": 32}


def traffic_gen(cfg: SwitchConfig, max_dests: int = 4) -> Spec:
    """hw/endpoint/traffic_gen.py TrafficGen."""
    return Spec({**{k: In(s) for k, s in gen_config(cfg, max_dests).items()},
                 "o": Out(buffer(cfg)), "sent_pkts": Out(32), "done": Out(1)})


def _check_counts() -> Sig:
    return Sig({n: Out(CHECK_COUNTER_WIDTHS.get(n, 32), init=0xFFFFFFFF if n == "lat_min" else 0)
                for n in CHECK_COUNTERS})


def traffic_check(cfg: SwitchConfig, max_srcs: int = 4, check_icrc: bool = True) -> Spec:
    """hw/endpoint/traffic_check.py TrafficCheck."""
    return Spec({"i": In(flit(cfg)), "src_base": In(16), "len_min": In(11), "len_mask": In(11), "now": In(32),
                 "counters": Out(_check_counts())})


def endpoint(cfg: SwitchConfig, max_dests: int = 4, max_srcs: int = 4, check_icrc: bool = True) -> Spec:
    """hw/endpoint/endpoint.py Endpoint: generator + checker on the switch's link layer."""
    gen = {k: Out(s) for k, s in gen_config(cfg, max_dests).items() if k != "now"}
    return Spec({
        "rx": In(link_rx(cfg)), "tx": Out(link_tx(cfg)), "now": In(32),
        "gen": In(Sig(gen)),
        "chk": In(Sig({"src_base": Out(16), "len_min": Out(11), "len_mask": Out(11)})),
        "auto_active": In(1), "mgmt": In(port_mgmt()),
        "state": Out(3), "sent_pkts": Out(32), "gen_done": Out(1),
        "counters": Out(Sig({n: Out(CHECK_COUNTER_WIDTHS.get(n, 32)) for n in CHECK_COUNTERS})),
        "crx": Out(counts(LINK_RX_COUNTERS)), "ctx": Out(counts(LINK_TX_COUNTERS)),
    })
