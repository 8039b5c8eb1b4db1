"""Generate Verilog for a configuration: `make verilog CONFIG=<name|file.json>`.

Writes build/verilog/<config>/<top>.v for every top-level block that exists so far, plus the
config as JSON beside it, and prints the paths.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from hw.common.config import get_config

__all__ = ["TOPS", "generate"]


def _rx_parser(cfg):
    from hw.link.rx_parser import RxParser
    return RxParser(cfg)


def _crc_bank(cfg):
    from hw.common.crc import CRCBank
    return CRCBank(cfg.data_width)


def _link(cls_name):
    def make(cfg):
        import importlib
        mod = {"LinkRx": "hw.link.link_rx", "LinkTx": "hw.link.link_tx", "LinkPort": "hw.link.link_port"}[cls_name]
        return getattr(importlib.import_module(mod), cls_name)(cfg)
    return make


# Verilog module name -> constructor(cfg)
TOPS = {
    "ib_switch": lambda cfg: __import__("hw.top.switch", fromlist=["x"]).IBSwitch(cfg),
    "ib_rx_parser": _rx_parser,
    "ib_crc_bank": _crc_bank,
    "ib_link_rx": _link("LinkRx"),
    "ib_link_tx": _link("LinkTx"),
    "ib_link_port": _link("LinkPort"),
    "ib_islip": lambda cfg: __import__("hw.switch.allocator", fromlist=["x"]).ISlipAllocator(
        cfg.ports, cfg.islip_iterations, cfg.islip_fair_every),
    "ib_vlarb": lambda cfg: __import__("hw.switch.vlarb", fromlist=["x"]).VLArbiter(cfg.data_vls, cfg.vlarb_entries),
    "ib_voq": lambda cfg: __import__("hw.switch.voq", fromlist=["x"]).VOQBuffer(cfg),
    "ib_egress": lambda cfg: __import__("hw.switch.egress", fromlist=["x"]).Egress(cfg),
    "ib_route": lambda cfg: __import__("hw.switch.route", fromlist=["x"]).RouteLookup(cfg, 0),
    "ib_mgmt": lambda cfg: __import__("hw.mgmt.mgmt", fromlist=["x"]).SwitchMgmt(cfg, cfg.ports),
    "ib_traffic_gen": lambda cfg: __import__("hw.endpoint.traffic_gen", fromlist=["x"]).TrafficGen(cfg),
    "ib_traffic_check": lambda cfg: __import__("hw.endpoint.traffic_check", fromlist=["x"]).TrafficCheck(cfg),
    "ib_endpoint": lambda cfg: __import__("hw.endpoint.endpoint", fromlist=["x"]).Endpoint(cfg),
    "ib_mgmt_queue": lambda cfg: (lambda q: q.MgmtQueue(cfg, q.default_depth(cfg)))(
        __import__("hw.switch.mgmt_queue", fromlist=["x"])),
    "ib_mgmt_port": lambda cfg: __import__("hw.switch.mgmt_port", fromlist=["x"]).MgmtPort(cfg),
    "ib_ingress": lambda cfg: __import__("hw.switch.ingress", fromlist=["x"]).Ingress(cfg, 0),
    "ib_requests": lambda cfg: __import__("hw.switch.requests", fromlist=["x"]).RequestBuilder(cfg),
    "ib_crossbar": lambda cfg: __import__("hw.switch.crossbar", fromlist=["x"]).Crossbar(cfg),
    "ib_port_counters": lambda cfg: __import__("hw.switch.counters", fromlist=["x"]).PortCounters(),
    "ib_loopback": lambda cfg: __import__("hw.top.loopback", fromlist=["x"]).Loopback(cfg),
}


def generate(cfg, out_dir: Path, tops=None) -> list[Path]:
    from amaranth.back import verilog
    out_dir = Path(out_dir) / cfg.name
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(cfg.to_json() + "\n")
    paths = []
    for name in tops or TOPS:
        p = out_dir / f"{name}.v"
        p.write_text(verilog.convert(TOPS[name](cfg), name=name, emit_src=False))
        paths.append(p)
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", default="default", help="a name from CONFIGS or a .json file")
    ap.add_argument("--out", default="build/verilog")
    ap.add_argument("--top", action="append", choices=list(TOPS), help="only these tops")
    a = ap.parse_args(argv)
    cfg = get_config(a.config)
    for p in generate(cfg, Path(a.out), a.top):
        lines = p.read_text().count("\n")
        print(f"{p}  ({lines} lines)")


if __name__ == "__main__":
    main()
