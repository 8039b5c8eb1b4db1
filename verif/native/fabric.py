"""The RTL fabric (hw/fabric/fabric.py) as a native Verilator binary: hierarchical, one
compiled `ib_switch` and one `ib_endpoint` however many instances there are, each behind a
wrapper that registers its reset (verif/native: reset_wrapper), so that a block's
input-combinational region, which Verilator runs at every evaluation of a hierarchical
block, holds only the paths from its real inputs.

    exe = build_fabric(cfg, plan, threads=2, los=True, monitor=True)

Measured on fat_tree_2(8) (12 eight-port switches, 31 endpoints; docs/fabric.md, `make
bench-fabric`): a flat build took 25 minutes to compile and ran slower than this one, which
builds in about 2.5 minutes.
"""
from __future__ import annotations

from pathlib import Path

from contracts.config import SwitchConfig

__all__ = ["build_fabric", "fabric_dir"]

ROOT = Path(__file__).resolve().parents[2]


def fabric_dir(cfg: SwitchConfig, plan, *, threads: int = 1, los: bool = False, monitor: bool = False,
               cxx_opt: str = "-O2") -> Path:
    return ROOT / "build" / "native" / (f"fabric-{cfg.name}-{len(plan.switches)}sw-{len(plan.endpoints)}ep"
                                        f"{'-los' if los else ''}{'-mon' if monitor else ''}-t{threads}"
                                        f"{'' if cxx_opt == '-O2' else cxx_opt}")


def build_fabric(cfg: SwitchConfig, plan, *, threads: int = 1, los: bool = False, monitor: bool = False,
                 cxx_opt: str = "-O2", say=None) -> Path:
    from hw.endpoint.endpoint import Endpoint
    from hw.fabric.fabric import FabricTop, module_ports
    from hw.top.switch import IBSwitch
    from verif.native import build, reset_wrapper
    from verif.runner import generate_verilog
    out = fabric_dir(cfg, plan, threads=threads, los=los, monitor=monitor, cxx_opt=cxx_opt)
    out.mkdir(parents=True, exist_ok=True)
    top = FabricTop(cfg, plan, los=los, monitor=monitor)
    sw, ep = IBSwitch(cfg), Endpoint(cfg)

    def clk_rst(c):
        return [("clk", True, 1), ("rst", True, 1)] + module_ports(c)
    srcs = [generate_verilog(top, "ib_fabric", out / "ib_fabric.v"),
            generate_verilog(sw, "ib_switch_core", out / "ib_switch_core.v"),
            generate_verilog(ep, "ib_endpoint_core", out / "ib_endpoint_core.v")]
    wrappers = out / "wrappers.v"
    text = (reset_wrapper("ib_switch_core", clk_rst(sw), "ib_switch")
            + reset_wrapper("ib_endpoint_core", clk_rst(ep), "ib_endpoint"))
    if not wrappers.exists() or wrappers.read_text() != text:
        wrappers.write_text(text)
    srcs.append(wrappers)
    vlt = out / "hier.vlt"
    vlt.write_text('`verilator_config\nhier_block -module "ib_switch"\nhier_block -module "ib_endpoint"\n')
    return build("ib_fabric", srcs, out, cxx_opt=cxx_opt, threads=threads, ports=module_ports(top),
                 extra_args=["--hierarchical", str(vlt.resolve())], say=say)
