"""The DP16KD block-RAM model the gate-level simulation uses (verif/gate/dp16kd_sim.v) against
yosys's own mapping: memories shaped like the switch's (verif/gate/memtop.py: x36 pseudo dual
port with byte enables and initial contents, x18 and x9 true dual port, transparent and
plain read ports) are synthesized with `synth_ecp5`, and the netlist runs beside the RTL on
Icarus for 20,000 cycles of random writes and reads (verif/gate/mem_equiv_tb.v). The model is
right only if every compared read agrees; a copy of the model with its two 18-bit halves
swapped must disagree, so the comparison is known to see a wrong model."""
import re
import shutil
import subprocess

import pytest
from amaranth.back import verilog

from tools.gate import DP16KD_MODEL, cell_library, synth_netlist
from verif.gate.memtop import MemTop
from verif.runner import ROOT

pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")


def _run(d, lib, tag):
    vvp = d / f"{tag}.vvp"
    subprocess.run(["iverilog", "-g2012", "-o", str(vvp), str(ROOT / "verif" / "gate" / "mem_equiv_tb.v"),
                    str(d / "mem_rtl.v"), str(d / "mem_gate_gate.v"), str(lib)], check=True, capture_output=True)
    out = subprocess.run(["vvp", "-n", str(vvp)], check=True, capture_output=True, text=True).stdout
    mm = re.search(r"DONE cycles (\d+) mismatches (\d+) collisions skipped (\d+)", out)
    assert mm, out[-2000:]
    return int(mm.group(1)), int(mm.group(2)), int(mm.group(3)), out


def test_dp16kd_model_matches_yosys_mapping(tmp_path):
    (tmp_path / "mem_rtl.v").write_text(verilog.convert(MemTop(), name="mem_rtl", emit_src=False))
    (tmp_path / "mem_gate.v").write_text(verilog.convert(MemTop(), name="mem_gate", emit_src=False))
    net = synth_netlist(tmp_path, "mem_gate", "mem_gate.v", force=True, log=lambda *_: None)
    text = net.read_text()
    widths = set(re.findall(r"DATA_WIDTH_[AB]\(32'd(\d+)\)", text))
    assert len(re.findall(r"\bDP16KD\b", text)) >= 6 and {"9", "18", "36"} <= widths, \
        f"yosys did not map the memories to block RAM in x9/x18/x36 modes: widths {widths}"
    lib = cell_library(tmp_path / "cells.v")
    cycles, bad, coll, out = _run(tmp_path, lib, "good")
    assert cycles == 20000 and coll > 100, out[-1000:]
    assert bad == 0, f"netlist and RTL disagree in {bad} cycles:\n{out[-3000:]}"

    # the same netlist with a model whose x36 read returns its halves swapped
    model = DP16KD_MODEL.read_text()
    assert "qa <= lo; qb <= hi;" in model
    broken = lib.read_text().replace("qa <= lo; qb <= hi;", "qa <= hi; qb <= lo;")
    lib_bad = tmp_path / "cells_broken.v"
    lib_bad.write_text(broken)
    _, bad2, _, _ = _run(tmp_path, lib_bad, "broken")
    assert bad2 > 100, "a wrong block-RAM model went unnoticed: the comparison is blind"
