"""Every memory of the switch is read synchronously, so that it can become block RAM
(docs/fpga.md): read from yosys's own view of the design (tools/mem_check.py runs the first
part of synth_ecp5 on the generated Verilog of `ib_switch`, config small).

Memories whose conversion is still open are listed in NOT_YET by (block, memory); the test
fails on an asynchronous read port anywhere else, and on an entry of NOT_YET that has become
synchronous (so the list can only shrink)."""
import re

from contracts.config import CONFIGS
from tools.mem_check import memory_report

# (block instance without its port number, memory): still read asynchronously (none left:
# the LFT and MFT lookups became registered reads, SL2VL registers)
NOT_YET: set[tuple[str, str]] = set()


def _kind(module: str, name: str):
    """Per-port instances and banks without their numbers: lrx0 -> lrx, mem_sl2vl3 -> mem_sl2vl."""
    block = re.sub(r"\.(lrx|ltx|voq|egress|route|vlarb|psm)\d+(?=\.|$)", r".\1", module)
    return block, re.sub(r"(mem_sl2vl)\d+$", r"\1", name)


def test_switch_memories_read_synchronously(tmp_path):
    # one test (not three sharing a fixture): pytest-xdist would run the yosys report per worker
    report = memory_report(CONFIGS["small"], "ib_switch", tmp_path)
    assert len(report) >= 8, f"yosys found only {len(report)} memories: the report is not reading the design"
    still = {_kind(m.module, m.name) for m in report if m.async_rd}
    bad = sorted(still - NOT_YET)
    assert not bad, f"memories with asynchronous read ports (become LUT-RAM, cap Fmax): {bad}"
    stale = sorted(NOT_YET - still)
    assert not stale, f"now synchronous, remove from NOT_YET: {stale}"
    voq = [m for m in report if ".voq" in m.module]
    assert voq and all(m.async_rd == 0 for m in voq), [m for m in voq if m.async_rd]
    assert len([m for m in voq if m.name == "flits"]) == CONFIGS["small"].ports
