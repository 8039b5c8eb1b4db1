"""The timing check (tools/timing.py): its path model on netlists built by hand, where the
longest path is known by construction, then on a netlist synth_ecp5 makes of a small circuit
whose depth is known."""
from __future__ import annotations

import json

import pytest

from tools.timing import BRAM_NOREG, BRAM_OUTREG, CARRY_ENTER, CARRY_HOP, FANOUT_WEIGHT, analyse, check, load_budgets


class Net:
    """A flat netlist of ECP5 cells in yosys's JSON form, built a cell at a time."""

    def __init__(self):
        self.cells, self.ports, self.netnames, self._bit = {}, {}, {}, 10

    def bit(self, name=None):
        self._bit += 1
        if name:
            self.netnames[name] = {"hide_name": 0, "bits": [self._bit], "attributes": {"src": f"hw/x.py:{self._bit}"}}
        return self._bit

    def cell(self, name, ctype, ins: dict, outs: dict, **params):
        conns = {**{p: [b] for p, b in ins.items()}, **{p: [b] for p, b in outs.items()}}
        dirs = {**{p: "input" for p in ins}, **{p: "output" for p in outs}}
        self.cells[name] = {"type": ctype, "connections": conns, "port_directions": dirs, "parameters": params,
                            "attributes": {}}

    def ff(self, name, d, q=None):
        q = q or self.bit()
        self.cell(name, "TRELLIS_FF", {"DI": d, "CLK": self.clk}, {"Q": q})
        return q

    def lut(self, name, *ins):
        z = self.bit()
        self.cell(name, "LUT4", dict(zip("ABCD"[:len(ins)], ins, strict=True)), {"Z": z})
        return z

    def json(self):
        return {"modules": {"t": {"attributes": {"top": "1"}, "ports": self.ports, "cells": self.cells,
                                  "netnames": self.netnames}}}


def _net():
    n = Net()
    n.clk = n.bit()
    n.ports["clk"] = {"direction": "input", "bits": [n.clk]}
    return n


def test_two_luts_between_flip_flops():
    n = _net()
    q0 = n.bit("start")
    n.ff("f0", n.bit(), q0)
    z = n.lut("l2", n.lut("l1", q0))
    n.ff("f1", z)
    p = analyse(n.json(), "t")
    assert p.levels == 2 and p.start == "TRELLIS_FF f0" and p.end == "TRELLIS_FF f1.DI"
    assert p.signals[0] == "start" and "hw/x.py:12" in p.sources[0]


def test_inputs_start_and_outputs_end_paths():
    n = _net()
    a = n.bit("a")
    n.ports["a"] = {"direction": "input", "bits": [a]}
    y = n.lut("l3", n.lut("l2", n.lut("l1", a)))
    n.ports["y"] = {"direction": "output", "bits": [y]}
    p = analyse(n.json(), "t")
    assert p.levels == 3 and p.end == "output y"
    assert p.comb_outputs == 1 and p.worst_output == 3          # an output through logic
    assert "1 output bits driven through logic > budget 0" in check("t", p, {"t": {"levels": 3}})
    assert check("t", p, {"t": {"levels": 3, "outputs_through_logic": 1}}) is None


def test_carry_chain_one_level_to_enter_and_a_hop_per_cell():
    n = _net()
    q = n.ff("f0", n.bit())
    cin = None
    for k in range(8):
        cout, s0 = n.bit(), n.bit()
        ins = {"A0": q} if cin is None else {"CIN": cin}
        n.cell(f"c{k}", "CCU2C", ins, {"COUT": cout, "S0": s0})
        cin = cout
    n.ff("f1", s0)                                               # the last cell's sum
    p = analyse(n.json(), "t")
    assert p.levels == pytest.approx(CARRY_ENTER + 7 * CARRY_HOP)


@pytest.mark.parametrize("regmode, start", [("NOREG", BRAM_NOREG), ("OUTREG", BRAM_OUTREG)])
def test_block_ram_read_costs_most_of_a_cycle_without_its_output_register(regmode, start):
    n = _net()
    do = n.bit()
    n.cell("ram", "DP16KD", {"ADA0": n.ff("fa", n.bit()), "CLKA": n.clk}, {"DOA0": do}, REGMODE_A=regmode)
    n.ff("f1", n.lut("l1", do))
    p = analyse(n.json(), "t")
    assert p.levels == start + 1 and p.start == "DP16KD ram"


def test_fanout_costs_levels():
    n = _net()
    q = n.ff("f0", n.bit())
    for k in range(64):                                          # 64 loads: two doublings past 16
        n.ff(f"g{k}", n.lut(f"l{k}", q))
    p = analyse(n.json(), "t")
    assert p.levels == pytest.approx(1 + FANOUT_WEIGHT * 2)


def test_lutram_read_is_logic_its_write_ends_a_path():
    n = _net()
    q = n.ff("f0", n.bit())
    do = n.bit()
    a = n.lut("l1", q)
    n.cell("lr", "TRELLIS_DPR16X4", {"RAD0": a, "DI0": n.lut("l2", n.lut("l3", q)), "WCK": n.clk}, {"DO0": do})
    n.ff("f1", n.lut("l4", do))
    p = analyse(n.json(), "t")
    assert p.levels == 3 and p.end == "TRELLIS_FF f1.DI"        # l1, the read, l4


def test_combinational_loop_is_an_error():
    n = _net()
    a, b = n.bit(), n.bit()
    n.cell("l1", "LUT4", {"A": b}, {"Z": a})
    n.cell("l2", "LUT4", {"A": a}, {"Z": b})
    n.ff("f1", a)
    with pytest.raises(ValueError, match="combinational loop"):
        analyse(n.json(), "t")


def test_unknown_cell_is_an_error():
    n = _net()
    n.cell("x", "$and", {"A": n.bit()}, {"Y": n.bit()})
    with pytest.raises(ValueError, match=r"cell x of type \$and"):
        analyse(n.json(), "t")


def test_budget_check_names_the_path(tmp_path):
    n = _net()
    q0 = n.bit("start")
    n.ff("f0", n.bit(), q0)
    n.ff("f1", n.lut("l2", n.lut("l1", q0)))
    p = analyse(n.json(), "t")
    assert check("t", p, {"t": {"levels": 2}}) is None
    err = check("t", p, {"t": {"levels": 1}})
    assert "2.00 levels > budget 1" in err and "TRELLIS_FF f0" in err and "hw/x.py:12" in err
    bad = tmp_path / "b.json"
    bad.write_text('{"t": {"levels": "six"}}')
    with pytest.raises(ValueError, match="b.json: t: expected"):
        load_budgets(bad)


def test_budgets_file_covers_every_checked_block():
    from tools.timing import TIMING_TOPS
    b = load_budgets()
    assert set(TIMING_TOPS) <= set(b), set(TIMING_TOPS) - set(b)


def _rebuilt() -> list[str]:
    """The blocks rebuilt for the clock: their budget is the target (hw/timing_budget.json)."""
    from tools.timing import TIMING_TOPS
    b = load_budgets()
    return [t for t in TIMING_TOPS if b[t]["levels"] <= b["_target"]["levels"]]


# every block of the switch synthesised (synth_ecp5, flat) and its longest path held to its
# budget in hw/timing_budget.json; `make timing` prints the table. The blocks rebuilt for
# the clock (at the target: a second or two of synthesis each) in `make sim`; the others
# (~90 s together) in `make timing` and `make sim-long` while they are ratchets (docs/fpga.md)
@pytest.mark.parametrize("top", [t if t in _rebuilt() else pytest.param(t, marks=pytest.mark.long)
                                 for t in __import__("tools.timing", fromlist=["x"]).TIMING_TOPS])
def test_block_within_its_timing_budget(top):
    from contracts.config import get_config
    from tools.timing import ROOT_BUILD, synth_netlist
    net, _s = synth_netlist(get_config("small"), top, ROOT_BUILD)
    p = analyse(net, top)
    err = check(top, p, load_budgets())
    assert err is None, err


def _two_stages(staged: bool):
    """A 64-bit register, 16 ANDs of 48 of its bits, their OR into a register: with the ANDs
    registered (two stages) or not (one stage doing both)."""
    from amaranth.hdl import Cat, Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    class TwoStages(wiring.Component):
        def __init__(self):
            super().__init__({"a": In(64), "y": Out(1)})

        def elaborate(self, platform):
            m = Module()
            ra, mid = Signal(64, name="ra"), Signal(16, name="mid")
            m.d.sync += ra.eq(self.a)
            ands = Cat(Cat(ra[(k * 5 + j) % 64] for j in range(48)).all() for k in range(16))
            if staged:
                m.d.sync += mid.eq(ands)
            else:
                m.d.comb += mid.eq(ands)
            m.d.sync += self.y.eq(mid.any())
            return m
    return TwoStages()


def test_the_check_fails_when_a_stage_is_removed(tmp_path):
    """synth_ecp5 of the same logic in two stages and in one: the budget the staged one meets
    fails the other, naming its path from the first register to the last."""
    from hw.verilog import convert
    from tools.fpga import _synth
    got = {}
    for staged in (True, False):
        d = tmp_path / str(staged)
        d.mkdir()
        (d / "t.v").write_text(convert(_two_stages(staged), "t", emit_src=True, time0_fix=False))
        _synth(d, "t", "read_verilog -sv t.v", True, {}, lambda *a: None)
        got[staged] = analyse(json.loads((d / "t.json").read_text()), "t")
    budget = {"t": {"levels": got[True].levels}}
    assert 2 <= got[True].levels < got[False].levels
    assert check("t", got[True], budget) is None
    err = check("t", got[False], budget)
    assert err and "levels > budget" in err and "from TRELLIS_FF ra" in err and "to TRELLIS_FF y" in err, err
