"""`make timing`: the longest path of every block in LUT levels on the ECP5 netlist, against
the budget recorded in hw/timing_budget.json (docs/fpga.md, "Timing check"). Seconds to a
minute per block, no place and route: a check as fast and as binding as a lock-step test.

    python -m tools.timing [--config small] [--top ib_vlarb ...] [--check] [--json out.json]
    python -m tools.timing --netlist build/fpga/small/ib_switch/ib_switch.json --top ib_switch

Each top is synthesised flat by `synth_ecp5` (the flow of tools/fpga.py, native yosys when
installed) and its JSON netlist read back here. A path runs from a path start to a path end:

  starts  TRELLIS_FF Q (0), the top's inputs (0: the rule is that every block output comes
          from a flip-flop, so a path that crosses a block starts fresh), DP16KD/PDPW16KD
          data outputs (BRAM_OUTREG with REGMODE OUTREG, BRAM_NOREG without: yosys maps
          every block RAM without its output register, and the read then takes most of a
          150 MHz cycle, 5.6-5.8 ns of 6.67, before any logic)
  ends    every TRELLIS_FF input (data, enable, set/reset), every block-RAM and LUT-RAM write
          input and block-RAM address, the top's outputs
  levels  LUT4 and a LUT-RAM read 1; PFUMX / L6MUX21 (the wide-LUT muxes inside a slice)
          0.25; a carry chain 1 to enter (CCU2C A/B/C/D) plus 1/8 per CCU2C the carry
          ripples through (a 32-bit add: 1 + 2); and a fan-out term on every net of the path,
          FANOUT_WEIGHT * log2(loads / FANOUT_FREE) for a net with more than FANOUT_FREE
          loads (nextpnr does not duplicate drivers: a select that fans out to hundreds of
          LUTs costs routing that depth alone does not show)

`synth_ecp5` already is the truth about LUT depth; nextpnr's Fmax (`make fpga-blocks`) is the
truth about time. docs/fpga.md ranks the blocks by both.

The path reported for a block names its start and end cells and the Amaranth source lines of
the named signals it passes through (the netlist's `src` attributes).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["analyse", "Path_", "load_budgets", "check", "synth_netlist", "ROOT_BUILD", "BRAM_NOREG", "BRAM_OUTREG",
           "FANOUT_FREE",
           "FANOUT_WEIGHT", "TIMING_TOPS", "main"]

_ROOT = Path(__file__).resolve().parent.parent
BUDGETS = _ROOT / "hw" / "timing_budget.json"
ROOT_BUILD = _ROOT / "build" / "timing"

BRAM_NOREG = 5.0          # levels a DP16KD read without OUTREG costs before its first LUT
BRAM_OUTREG = 1.0         # ... with OUTREG (0.93 ns clock-to-out against an FF's 0.48 ns)
LUT = 1.0
WIDE_MUX = 0.25           # PFUMX, L6MUX21
CARRY_ENTER = 1.0
CARRY_HOP = 0.125         # per CCU2C (2 bits) the carry ripples through
FANOUT_FREE = 16          # loads a net drives at no extra cost
FANOUT_WEIGHT = 0.5       # levels per doubling of the loads above FANOUT_FREE
MULT = 4.0                # MULT18X18D / ALU54B, combinational (the switch has none)

# the blocks of the switch checked in `make timing` (hw.verilog.TOPS), smallest first
TIMING_TOPS = ["ib_vlarb", "ib_islip", "ib_route", "ib_egress", "ib_rx_parser", "ib_link_tx", "ib_voq",
               "ib_ingress", "ib_requests", "ib_crossbar", "ib_port_counters", "ib_mgmt_port", "ib_link_rx",
               "ib_mgmt"]

_AUTONAME = re.compile(r"_(LUT4|TRELLIS_FF|TRELLIS_DPR16X4|CCU2C|PFUMX|L6MUX21|DP16KD|PDPW16KD)_")
_CLOCKS = {"CLK", "CLKA", "CLKB", "CLKR", "CLKW", "WCK"}


@dataclass
class Path_:
    """The longest path of a netlist: its depth in levels, where it starts and ends, the
    signals it passes through and their Amaranth source lines."""
    levels: float
    start: str
    end: str
    signals: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    comb_outputs: int = 0            # the top's output bits driven through logic (not from a flip-flop)
    worst_output: float = 0.0        # the deepest of them

    def describe(self) -> str:
        via = " -> ".join(self.signals[:12]) + (" ..." if len(self.signals) > 12 else "")
        return (f"{self.levels:.2f} levels from {self.start} to {self.end}"
                + (f" through {via}" if via else "")
                + (f" (Amaranth: {', '.join(self.sources[:8])})" if self.sources else ""))


def _cell_arcs(ctype: str, cell: dict):
    """(role, arcs): role 'comb' with arcs {output port: [(input port, delay)]}, 'seq' (a path
    end on its inputs; its outputs start paths at the delay given in arcs {output: delay})."""
    if ctype == "LUT4":
        return "comb", {"Z": [(p, LUT) for p in "ABCD"]}
    if ctype in ("PFUMX",):
        return "comb", {"Z": [("ALUT", WIDE_MUX), ("BLUT", WIDE_MUX), ("C0", WIDE_MUX)]}
    if ctype == "L6MUX21":
        return "comb", {"Z": [("D0", WIDE_MUX), ("D1", WIDE_MUX), ("SD", WIDE_MUX)]}
    if ctype == "CCU2C":
        ins = [(f"{x}{i}", CARRY_ENTER) for x in "ABCD" for i in (0, 1)] + [("CIN", CARRY_HOP)]
        return "comb", {"S0": ins, "S1": ins, "COUT": ins}
    if ctype == "TRELLIS_DPR16X4":               # asynchronous read: RAD -> DO; the write side ends paths
        return "lutram", {f"DO{i}": [(f"RAD{j}", LUT) for j in range(4)] for i in range(4)}
    if ctype == "TRELLIS_FF":
        return "seq", {"Q": 0.0}
    if ctype in ("DP16KD", "PDPW16KD"):
        params = cell.get("parameters", {})
        outs = {}
        for p in cell["connections"]:
            if cell["port_directions"].get(p) == "output":
                side = "B" if p.startswith("DOB") else "A"
                reg = str(params.get(f"REGMODE_{side}", params.get("REGMODE", "NOREG")))
                outs[p] = BRAM_OUTREG if "OUTREG" in reg else BRAM_NOREG
        return "seq", outs
    if ctype in ("MULT18X18D", "ALU54B"):
        outs = [p for p, d in cell["port_directions"].items() if d == "output"]
        ins = [p for p, d in cell["port_directions"].items() if d == "input" and p not in _CLOCKS]
        return "comb", {o: [(i, MULT) for i in ins] for o in outs}
    return None, {}


def _fanout_cost(loads: int) -> float:
    return FANOUT_WEIGHT * math.log2(loads / FANOUT_FREE) if loads > FANOUT_FREE else 0.0


def _short_src(src: str) -> list[str]:
    out = []
    for part in src.split("|"):
        m = re.search(r"((?:hw|contracts|tb|models)/[\w/]+\.py:\d+)", part)
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def analyse(netlist: dict, top: str | None = None) -> Path_:
    """The longest register-to-register path (inputs and outputs of the top included) of a
    flat yosys JSON netlist of ECP5 cells, in levels (module docstring)."""
    mods = netlist["modules"]
    if top is None:
        top = next((n for n, m in mods.items() if str(m.get("attributes", {}).get("top", "0")).strip("0") != ""),
                   next(iter(mods)))
    mod = mods[top]
    cells = mod.get("cells", {})
    driver: dict[int, tuple[str, str]] = {}        # bit -> (cell, port)
    loads: dict[int, int] = {}
    names: dict[int, tuple[str, str]] = {}         # bit -> (a signal's name, its src)
    hints: dict[int, str] = {}                     # bit -> the signal yosys named a cell pin's net after
    for nname, n in mod.get("netnames", {}).items():
        if n.get("hide_name", 0):
            continue
        auto = _AUTONAME.search(nname)
        src = n.get("attributes", {}).get("src", "")
        for b in n["bits"]:
            if not isinstance(b, int):
                continue
            if auto:
                root = nname[:auto.start()] + "~"
                if b not in hints or len(root) < len(hints[b]):
                    hints[b] = root
            elif _short_src(src) and (b not in names or len(nname) < len(names[b][0])):
                # the signals of the design (an Amaranth source), not yosys's names for cell pins
                names[b] = (nname, src)
    inputs: set[int] = set()
    outputs: list[tuple[str, int]] = []
    for pname, p in mod.get("ports", {}).items():
        for b in p["bits"]:
            if not isinstance(b, int):
                continue
            if p["direction"] == "input":
                inputs.add(b)
            else:
                outputs.append((pname, b))
                loads[b] = loads.get(b, 0) + 1
    info = {}
    for cname, c in cells.items():
        if c["type"] == "$scopeinfo":               # the hierarchy's names after flattening: no logic
            continue
        role, arcs = _cell_arcs(c["type"], c)
        if role is None:
            raise ValueError(f"timing: {top}: cell {cname} of type {c['type']} is not an ECP5 cell this "
                             "check knows (run synth_ecp5 first)")
        info[cname] = (role, arcs)
        for p, bits in c["connections"].items():
            d = c["port_directions"].get(p)
            for b in bits:
                if not isinstance(b, int):
                    continue
                if d == "output":
                    driver[b] = (cname, p)
                elif p not in _CLOCKS:
                    loads[b] = loads.get(b, 0) + 1

    arrival: dict[int, float] = {}
    came: dict[int, tuple[int | None, str]] = {}   # bit -> (the input bit it came from, the cell)
    for b in inputs:
        arrival[b] = 0.0
        came[b] = (None, f"input {names.get(b, ('?',))[0]}")
    for cname, (role, arcs) in info.items():
        if role == "seq":
            c = cells[cname]
            for p, delay in arcs.items():
                for b in c["connections"][p]:
                    if isinstance(b, int):
                        arrival[b] = delay
                        came[b] = (None, f"{c['type']} {cname}")

    # combinational cells in dependency order (iterative: the graph is deep)
    state: dict[int, int] = {}
    constant = {"0", "1", "x", "z"}

    def visit(bit0: int):
        stack = [(bit0, False)]
        while stack:
            b, done = stack.pop()
            if b in arrival and not done:
                continue
            if b not in driver:
                arrival.setdefault(b, 0.0)           # undriven (an unused input of the netlist)
                came.setdefault(b, (None, f"undriven {names.get(b, ('?',))[0]}"))
                continue
            cname, port = driver[b]
            role, arcs = info[cname]
            c = cells[cname]
            ins = []
            for ip, delay in arcs.get(port, []):
                for ib in c["connections"].get(ip, []):
                    if isinstance(ib, int):
                        ins.append((ib, delay))
                    elif ib not in constant:
                        raise ValueError(f"timing: {top}: {cname}.{ip}: unexpected bit {ib!r}")
            if not done:
                if state.get(b) == 1:
                    raise ValueError(f"timing: {top}: combinational loop through {cname} ({c['type']})")
                state[b] = 1
                stack.append((b, True))
                for ib, _d in ins:
                    if ib not in arrival:
                        stack.append((ib, False))
                continue
            best, frm = 0.0, None
            for ib, delay in ins:
                t = arrival[ib] + _fanout_cost(loads.get(ib, 1)) + delay
                if frm is None or t > best:
                    best, frm = t, ib
            arrival[b] = best
            came[b] = (frm, f"{c['type']} {cname}")
            state[b] = 2

    ends: list[tuple[float, int, str]] = []
    for cname, (role, _arcs) in info.items():
        c = cells[cname]
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input" or p in _CLOCKS:
                continue
            if role == "comb" or (role == "lutram" and p.startswith("RAD")):
                continue
            for b in bits:
                if isinstance(b, int):
                    visit(b)
                    ends.append((arrival[b] + _fanout_cost(loads.get(b, 1)), b, f"{c['type']} {cname}.{p}"))
    comb_out, worst_out = 0, 0.0
    for pname, b in outputs:
        visit(b)
        t = arrival[b] + _fanout_cost(loads.get(b, 1))
        ends.append((t, b, f"output {pname}"))
        if b in driver and info[driver[b][0]][0] != "seq":
            comb_out += 1
            worst_out = max(worst_out, t)
    if not ends:
        return Path_(0.0, "-", "-")
    t, b, end = max(ends, key=lambda e: e[0])
    sigs, srcs = [], []
    cur = b
    start = "?"
    while cur is not None:
        frm, via = came.get(cur, (None, "?"))
        n, s = names.get(cur, (hints.get(cur), ""))
        if cur in driver:
            s = s + "|" + cells[driver[cur][0]].get("attributes", {}).get("src", "")
        if n and (not sigs or sigs[-1] != n):
            sigs.append(n)
        for x in _short_src(s):
            if x not in srcs:
                srcs.append(x)
        if frm is None:
            start = via
        cur = frm
    sigs.reverse()
    srcs.reverse()
    return Path_(round(t, 3), start, end, sigs, srcs, comb_out, round(worst_out, 3))


def load_budgets(path: Path = BUDGETS) -> dict:
    """hw/timing_budget.json: {top: {"levels": the budget, "outputs_through_logic": the output
    bits it may drive through logic, "why": ...}}, and "_target"."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: {e.msg}") from e
    for top, v in data.items():
        if top.startswith("_"):
            continue
        if not isinstance(v, dict) or not isinstance(v.get("levels"), (int, float)):
            raise ValueError(f"{path}: {top}: expected {{\"levels\": <number>, \"why\": ...}}, got {v!r}")
    return data


def check(top: str, path: Path_, budgets: dict) -> str | None:
    """None if `top`'s longest path is within its budget, else the failure naming the path."""
    b = budgets.get(top)
    if b is None:
        return f"{top}: no budget in hw/timing_budget.json (longest path {path.describe()})"
    if path.levels > b["levels"] + 1e-9:
        return f"{top}: {path.levels:.2f} levels > budget {b['levels']}: {path.describe()}"
    if path.comb_outputs > b.get("outputs_through_logic", 0):
        return (f"{top}: {path.comb_outputs} output bits driven through logic > budget "
                f"{b.get('outputs_through_logic', 0)} (every block output from a flip-flop; the deepest "
                f"{path.worst_output:.2f} levels)")
    return None


def synth_netlist(cfg, top: str, out: Path, yosys: str | None = None) -> tuple[dict, float]:
    """synth_ecp5 (flattened) of `top` at `cfg`; (the JSON netlist, synthesis seconds)."""
    from hw.verilog import TOPS, convert
    from tools.fpga import _synth
    d = out / cfg.name / top
    d.mkdir(parents=True, exist_ok=True)
    # with the Amaranth source locations: the netlist's signals name their lines
    (d / f"{top}.v").write_text(convert(TOPS[top](cfg), top, emit_src=True, time0_fix=False))
    res = {}
    _synth(d, top, f"read_verilog -sv {top}.v", True, res, lambda *a: None, yosys)
    return json.loads((d / f"{top}.json").read_text()), res["synth_s"]


def main(argv=None) -> int:
    from contracts.config import get_config
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="small")
    ap.add_argument("--top", action="append", help="only these tops (default: TIMING_TOPS)")
    ap.add_argument("--netlist", help="analyse this yosys JSON netlist (flat, ECP5 cells) instead of synthesising")
    ap.add_argument("--check", action="store_true", help="fail when a top is over its budget")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--out", default=str(ROOT_BUILD))
    ap.add_argument("--yosys", choices=["native", "wasm"])
    a = ap.parse_args(argv)
    budgets = load_budgets()
    tops = a.top or TIMING_TOPS
    rows, fails = [], []
    for top in tops:
        t0 = time.time()
        if a.netlist:
            net, synth_s = json.loads(Path(a.netlist).read_text()), 0.0
        else:
            net, synth_s = synth_netlist(get_config(a.config), top, Path(a.out), a.yosys)
        p = analyse(net, top)
        b = budgets.get(top, {}).get("levels")
        err = check(top, p, budgets)
        if err:
            fails.append(err)
        rows.append({"top": top, "levels": p.levels, "budget": b, "start": p.start, "end": p.end,
                     "signals": p.signals, "sources": p.sources, "comb_outputs": p.comb_outputs,
                     "worst_output": p.worst_output, "synth_s": synth_s, "total_s": round(time.time() - t0, 1)})
        r = rows[-1]
        print(f"{top:<18} {p.levels:>6.2f} levels (budget {b if b is not None else '-'})  "
              f"{p.comb_outputs:>4} outputs through logic (deepest {p.worst_output:.2f})  synth {synth_s:.0f} s\n"
              f"    {p.describe()}", flush=True)
    target = budgets.get("_target", {}).get("levels", 6)
    print("\n| block | levels | budget | target | outputs through logic | synth s |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['top']} | {r['levels']:.2f} | {r['budget']} | {target} | {r['comb_outputs']} "
              f"| {r['synth_s']:.0f} |")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    if fails and a.check:
        print("\ntiming: over budget:\n  " + "\n  ".join(fails), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
