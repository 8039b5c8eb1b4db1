"""verif/coverage.py: Verilator's coverage points read and mapped back to Amaranth lines, on
a hand-written Verilog file in the shape yosys's write_verilog gives Amaranth's output (src
attributes inline on cell assigns, on the line above a declaration, none on process
statements) and a coverage.dat written here in Verilator's format."""
from __future__ import annotations

import pytest

from verif.coverage import SourceMap, merge, read_dat, summarize


def _verilog(root):
    src = root / "hw" / "blk.py"
    return f'''module blk(clk, a, y);
  (* src = "{src}:10" *)
  input a;
  (* src = "{src}:11" *)
  output y;
  (* src = "{src}:12" *)
  reg r;
  wire \\$1 ;
  assign \\$1  = a & (* src = "{src}:20" *) r;
  always @* begin
    if (\\$1 ) begin
      r = 1'h1;
    end
  end
  assign y = r;
endmodule
'''


def _point(f, line, kind, comment, count):
    kv = {"f": str(f), "l": str(line), "n": "1", "t": kind, "page": f"v_{kind}/blk", "o": comment, "h": "blk"}
    return "C '" + "".join(f"\x01{k}\x02{v}" for k, v in kv.items()) + f"' {count}\n"


def test_points_map_to_the_amaranth_lines(tmp_path):
    root = tmp_path
    v = tmp_path / "build" / "blk.v"
    v.parent.mkdir(parents=True)
    v.write_text(_verilog(root))
    sm = SourceMap(v, root)
    assert sm.source(3) == "hw/blk.py:10"              # a declaration: the attribute above it
    assert sm.source(9) == "hw/blk.py:20"              # an assign: its inline attribute
    assert sm.source(11) == "hw/blk.py:20"             # if (\$1 ): the assign that drives \$1
    assert sm.source(12) == "hw/blk.py:12"             # r = ...: r's declaration
    dats = []
    for k, hits in enumerate([(0, 1), (2, 0)]):        # two runs: each covers one arm
        d = tmp_path / f"run{k}" / "coverage.dat"
        d.parent.mkdir()
        d.write_text("# SystemC::Coverage-3\n" + _point(v, 11, "branch", "cond_then", hits[0])
                     + _point(v, 11, "branch", "cond_else", hits[1]) + _point(v, 3, "toggle", "a:0->1", 0))
        dats.append(d)
    assert len(read_dat(dats[0])) == 3
    table = summarize(merge(dats, root))
    assert table["hw/blk.py"]["branch"] == (2, 2)      # each arm covered by one of the runs
    assert table["hw/blk.py"]["toggle"] == (0, 1)


def test_a_malformed_point_is_named(tmp_path):
    d = tmp_path / "coverage.dat"
    d.write_text("# SystemC::Coverage-3\nC 'broken\n")
    with pytest.raises(ValueError, match=r"coverage.dat:2: not a coverage point"):
        read_dat(d)
