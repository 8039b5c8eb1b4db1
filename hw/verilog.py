"""Generate Verilog for a configuration: `make verilog CONFIG=<name|file.json>`.

Writes build/verilog/<config>/<top>.v for every top-level block that exists so far, plus the
config as JSON beside it, and prints the paths.
"""
from __future__ import annotations

import argparse
import re
from pathlib import Path

from contracts.config import get_config

__all__ = ["TOPS", "generate", "convert", "time0_trigger", "switch_verilog"]

_DUMP_TRIGGER = re.compile(r"^(\s*)reg (\\\$auto\$verilog_backend\.cc:\d+:dump_module\$\d+) +=\s*0;$", re.M)


def time0_trigger(text: str) -> str:
    """Yosys's Verilog backend makes every `always @*` block sensitive to a `dump_module`
    register declared with the initial value 0, so that simulators evaluate the blocks at
    time 0 (YosysHQ/yosys#3862). Icarus Verilog applies a declaration's initial value
    without an event, so a block whose real inputs never change after time 0 is never
    evaluated and its outputs stay X: in the switch, logic fed only by registers at their
    reset values and by inputs a testbench ties to constants (docs/verification.md,
    "Icarus and the time-0 evaluation"). An `initial #0` that sets the register to 1
    gives every such block its event once the blocks wait on it (the inactive region of
    time 0, after every process started); the logic is unchanged, synthesis ignores it.
    Verilator settles all logic at time 0 by itself and would need --timing for the delay,
    so the line is left out for it (`ifndef VERILATOR)."""
    return _DUMP_TRIGGER.sub(lambda mt: f"{mt.group(1)}reg {mt.group(2)} = 0;\n`ifndef VERILATOR\n"
                                        f"{mt.group(1)}initial #0 {mt.group(2)} = 1;\n`endif", text)


def convert(component, name: str, *, emit_src: bool = False, time0_fix: bool = True) -> str:
    """The project's Verilog for an Amaranth component: what `make verilog` writes and every
    simulation reads (with the time-0 trigger unless `time0_fix` is False)."""
    from amaranth.back import verilog
    text = verilog.convert(component, name=name, emit_src=emit_src)
    return time0_trigger(text) if time0_fix else text


def switch_verilog(cfg, out_dir: Path, *, time0_fix: bool = True) -> Path:
    """ib_switch.v for `cfg` in `out_dir` (rewritten only when it changed)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    p = out_dir / "ib_switch.v"
    text = convert(TOPS["ib_switch"](cfg), "ib_switch", time0_fix=time0_fix)
    if not p.exists() or p.read_text() != text:
        p.write_text(text)
    return p


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
    "ib_mgmt_queue": lambda cfg: __import__("hw.switch.mgmt_queue", fromlist=["x"]).MgmtQueue(cfg),
    "ib_mgmt_port": lambda cfg: __import__("hw.switch.mgmt_port", fromlist=["x"]).MgmtPort(cfg),
    "ib_ingress": lambda cfg: __import__("hw.switch.ingress", fromlist=["x"]).Ingress(cfg, 0),
    "ib_requests": lambda cfg: __import__("hw.switch.requests", fromlist=["x"]).RequestBuilder(cfg),
    "ib_crossbar": lambda cfg: __import__("hw.switch.crossbar", fromlist=["x"]).Crossbar(cfg),
    "ib_port_counters": lambda cfg: __import__("hw.switch.counters", fromlist=["x"]).PortCounters(),
    "ib_loopback": lambda cfg: __import__("hw.top.loopback", fromlist=["x"]).Loopback(cfg),
}


def generate(cfg, out_dir: Path, tops=None) -> list[Path]:
    out_dir = Path(out_dir) / cfg.name
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(cfg.to_json() + "\n")
    paths = []
    for name in tops or TOPS:
        p = out_dir / f"{name}.v"
        p.write_text(convert(TOPS[name](cfg), name))
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
