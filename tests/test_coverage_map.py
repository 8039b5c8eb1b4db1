"""make coverage's pieces: the arm markers (verif/covmarks.py) written into the Verilog of a
small Amaranth design, Verilator's coverage points read and mapped back to its Amaranth
statements and arms (verif/coverage.py), the waiver file, and the functional coverage
registry (verif/funcov.py) with the switch's model (verif/ib_funcov.py)."""
from __future__ import annotations

import inspect
import json
import re

import pytest
from amaranth import Elaboratable, Module, Signal
from amaranth.back import verilog

from contracts.config import get_config
from verif.coverage import VerilogMap, load_waivers, merge, read_dat, summarize
from verif.covmarks import arm_markers
from verif.funcov import Coverage
from verif.ib_funcov import declare

_HERE = __file__


class _Blk(Elaboratable):
    def __init__(self):
        self.a, self.b, self.o, self.c = Signal(), Signal(2), Signal(4), Signal()

    def elaborate(self, platform):
        m = Module()
        with m.If(self.a):                                   # IF
            m.d.sync += self.o.eq(1)                         # STMT_A
        with m.Elif(self.b == 2):                            # ELIF
            m.d.sync += self.o.eq(2)                         # STMT_B
            m.d.comb += self.c.eq(1)                         # STMT_C
        with m.Switch(self.b):
            with m.Case(0):                                  # CASE0
                m.d.sync += self.o.eq(3)                     # STMT_D
            with m.Default():                                # DEFAULT
                m.d.sync += self.o.eq(4)                     # STMT_E
        return m


def _line(tag: str) -> int:
    src = inspect.getsource(_Blk).splitlines()
    start = inspect.getsourcelines(_Blk)[1]
    return start + next(k for k, t in enumerate(src) if t.rstrip().endswith(f"# {tag}"))


def _verilog(tmp_path):
    blk = _Blk()
    with arm_markers():
        text = verilog.convert(blk, ports=[blk.a, blk.b, blk.o, blk.c], emit_src=True)
    v = tmp_path / "top.v"
    v.write_text(text)
    return v


def _root():
    from pathlib import Path
    return Path(_HERE).resolve().parents[1]


def test_markers_name_every_arm_and_its_statements(tmp_path):
    vm = VerilogMap(_verilog(tmp_path), _root())
    arms: dict = {}
    for arm, label, stmts in vm.markers.values():           # an arm is in every process it assigns in
        arms.setdefault((arm, label), []).extend(stmts)
    me = "tests/test_coverage_map.py"
    line = {t: f"{me}:{_line(t)}" for t in ("IF", "ELIF", "CASE0", "STMT_A", "STMT_B", "STMT_C", "STMT_D", "STMT_E")}
    assert line["STMT_A"] in arms[(line["IF"], "arm 1 of 2")]
    assert line["STMT_B"] in arms[(line["ELIF"], "arm 2 of 2")]
    assert any(line["STMT_C"] in s for (a, lbl), s in arms.items() if a == line["ELIF"])
    assert (line["IF"], "no arm taken") in arms                 # an If chain without Else
    assert line["STMT_D"] in arms[(line["CASE0"], "arm 1 of 2")]
    assert any(line["STMT_E"] in s and lbl.startswith("else") for (a, lbl), s in arms.items())
    assert not any(a == line["CASE0"] and lbl == "no arm taken" for a, lbl in arms)   # Default: exhaustive
    assert len(vm.set_at) >= 6


def _point(f, line, kind, comment, count, ranges=""):
    kv = {"f": str(f), "l": str(line), "n": "1", "t": kind, "page": f"v_{kind}/top", "o": comment}
    if ranges:
        kv["S"] = ranges
    kv["h"] = "top"
    return "C '" + "".join(f"\x01{k}\x02{v}" for k, v in kv.items()) + f"' {count}\n"


def test_statements_and_arms_are_covered_by_the_points_that_hold_their_markers(tmp_path):
    v = _verilog(tmp_path)
    vm = VerilogMap(v, _root())
    marks = {vm.markers[key][:2]: ln for ln, key in vm.set_at.items() if vm.markers[key][2]}
    me = "tests/test_coverage_map.py"
    a1 = marks[(f"{me}:{_line('IF')}", "arm 1 of 2")]
    a2 = marks[(f"{me}:{_line('ELIF')}", "arm 2 of 2")]
    dats = []
    for k, (ln, n) in enumerate([(a1, 5), (a2, 0)]):            # two runs: the If arm taken, the Elif not
        d = tmp_path / f"run{k}" / "coverage.dat"
        d.parent.mkdir()
        d.write_text("# SystemC::Coverage-3\n" + _point(v, ln - 1, "branch", "if", n, f"{ln - 1}-{ln}"))
        dats.append(d)
    assert len(read_dat(dats[0])) == 1
    cov = merge(dats, _root())
    assert cov.lines[f"{me}:{_line('STMT_A')}"] == 5
    assert cov.lines[f"{me}:{_line('STMT_B')}"] == 0
    table, holes, _w = summarize(cov)
    assert ("line", f"{me}:{_line('STMT_B')}") in holes
    assert ("branch", f"{me}:{_line('ELIF')}|arm 2 of 2") in holes
    assert ("branch", f"{me}:{_line('IF')}|arm 1 of 2") not in holes
    waived = {("line", f"{me}:{_line('STMT_B')}"): "test"}
    _t, holes2, w2 = summarize(cov, waived)
    assert ("line", f"{me}:{_line('STMT_B')}") not in holes2 and len(w2) == 1


def test_a_malformed_point_is_named(tmp_path):
    d = tmp_path / "coverage.dat"
    d.write_text("# SystemC::Coverage-3\nC 'broken\n")
    with pytest.raises(ValueError, match=r"coverage.dat:2: not a coverage point"):
        read_dat(d)


def test_a_waiver_needs_a_kind_and_a_reason(tmp_path):
    w = tmp_path / "w.txt"
    w.write_text("# comment\nline hw/x.py:3 -- never at these configs\nbranch hw/x.py:4|no arm taken\n")
    with pytest.raises(ValueError, match=r"w.txt:3: a waiver is"):
        load_waivers(w)
    w.write_text("lines hw/x.py:3 -- why\n")
    with pytest.raises(ValueError, match=r"w.txt:1: unknown kind 'lines'"):
        load_waivers(w)
    w.write_text("line hw/x.py:3 -- never at these configs\n")
    assert load_waivers(w) == {("line", "hw/x.py:3"): "never at these configs"}


def test_functional_bins_are_declared_and_a_bin_outside_them_is_an_error():
    cov = Coverage()
    declare(cov, get_config("small-rxreg"))
    assert ("cc" in cov.groups) and ("failover" in cov.groups)
    small = Coverage()
    declare(small, get_config("small"))
    assert "cc" not in small.groups                          # a feature's bins only where it is built
    cov.hit("packet", ("unicast", 1, 3))
    with pytest.raises(KeyError, match=r"group 'packet' has no bin 'unicast × 2 × 3'"):
        cov.hit("packet", ("unicast", 2, 3))                 # small-rxreg has 2 data VLs
    other = Coverage()
    other.merge(json.loads(json.dumps(cov.to_json())))
    other.merge(cov.to_json())
    assert other.groups["packet"]["bins"]["unicast × 1 × 3"] == 2
    assert re.fullmatch(r"\d+", str(sum(len(g["bins"]) for g in cov.groups.values())))


def test_the_credit_sampler_tells_a_wrap_from_a_link_restart():
    """FCTBS 4094 -> 0 after a 2-block packet is a wrap (IBA §7.9.4: 12 bits); 4094 -> 0 with
    the FC init owed again is a link restart, not a wrap."""
    from types import SimpleNamespace

    from verif.ib_funcov import _LinkTx
    cfg = get_config("small")
    cov = Coverage()
    declare(cov, cfg)
    s = _LinkTx(cov, cfg)
    tx = SimpleNamespace(fctbs=[4094, 0], fccl=[4096 - 1, 0], init=set())
    s._credit("", tx)
    tx.fctbs, tx.fccl = [0, 0], [4095, 0]                       # sent 2 blocks, the limit was 1 ahead
    s._credit("", tx)
    bins = cov.groups["credit"]["bins"]
    assert bins["FCTBS wraps × 0"] == 1
    tx.fctbs, tx.init = [4094, 0], set()
    s._credit("", tx)
    tx.fctbs, tx.fccl, tx.init = [0, 0], [0, 0], {0, 1}          # link down: both zeroed, FC init owed
    s._credit("", tx)
    assert bins["FCTBS wraps × 0"] == 1 and bins["FCCL wraps × 0"] == 0
