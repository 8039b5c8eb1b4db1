"""Fold block RAM output registers into the DP16KD (REGMODE "OUTREG") in a `synth_ecp5` JSON
netlist: the step after synthesis in every flow (tools/fpga.py, tools/timing.py, tools/gate.py).

yosys maps an Amaranth memory's synchronous read port to a DP16KD with REGMODE "NOREG"
(techlibs/lattice/brams_map_16kd.v writes no other), whose clock-to-out is ~5.7 ns on speed 6;
the block RAM primitive (hw/common/bram.py) puts a plain register behind the read data, which
yosys leaves as TRELLIS_FF cells. This pass moves those registers into the block RAM, where
the same register costs ~0.93 ns clock-to-out, when it is exactly that register:

  * every DO pin of the read side that drives anything drives one TRELLIS_FF's DI and
    nothing else (no other cell, no module port);
  * those flip-flops are clocked by the block RAM's clock net, not inverted (CLKMUX "CLK"),
    have no set/reset (LSR tied to 0), power up at 0 (REGSET "RESET", as the DP16KD's output
    register does) and share one clock enable (or none: CEMUX "1");
  * the read side's output enable (OCE) is tied to 1 and its RST to 0, as yosys leaves them
    (the x36 mode's read side is port B: its clock and OCE those of B, both RSTs 0; its
    DOA and DOB both read, so OCEA and OCEB both get the flip-flops' enable).

Then REGMODE becomes "OUTREG" (both sides in the pseudo-dual-port x36 mode, whose read side
uses DOA and DOB), OCE takes the flip-flops' clock enable, each DO pin drives the net the
flip-flop's Q drove, and the flip-flops go. A DP16KD that fails a condition is left alone and
reported. The register sits in the same place in time, so the netlist's behaviour is the
RTL's: `make gate` simulates the folded netlist with verif/gate/dp16kd_sim.v.

    python -m tools.outreg in.json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

__all__ = ["fold_output_registers", "fold_file"]

_CONST0 = ("0",)


def _param(cell: dict, name: str, default: str = "") -> str:
    """A cell parameter as text: yosys's JSON writes numbers as binary digits (a string of 0s
    and 1s that is text gets a trailing space), e.g. DATA_WIDTH_A 36 as ...00100100."""
    v = cell.get("parameters", {}).get(name, default)
    if isinstance(v, str) and v and set(v) <= {"0", "1"}:
        return str(int(v, 2))
    return v.strip() if isinstance(v, str) else str(v)


def _is_const0(bits) -> bool:
    return all(b in _CONST0 for b in bits)


def _side_pins(cell: dict, side: str) -> list[str]:
    return [f"DO{side}{k}" for k in range(18) if f"DO{side}{k}" in cell["connections"]]


def _fold_module(mod: dict, name: str) -> tuple[int, int, list[str]]:
    cells = mod.get("cells", {})
    loads: dict = defaultdict(list)               # net bit -> [(cell, pin)] of its inputs
    for cname, c in cells.items():
        dirs = c.get("port_directions", {})
        for pin, bits in c["connections"].items():
            if dirs.get(pin, "input") == "input":
                for b in bits:
                    if isinstance(b, int):
                        loads[b].append((cname, pin))
    for pname, p in mod.get("ports", {}).items():
        if p["direction"] in ("output", "inout"):
            for b in p["bits"]:
                if isinstance(b, int):
                    loads[b].append(("$port", pname))

    folded, removed, refused = 0, 0, []
    for cname, c in list(cells.items()):
        if c["type"] != "DP16KD":
            continue
        conn = c["connections"]
        pdp = "36" in (_param(c, "DATA_WIDTH_A"), _param(c, "DATA_WIDTH_B"))
        sides = ["A", "B"]
        used = {s: [(pin, conn[pin][0]) for pin in _side_pins(c, s)
                    if isinstance(conn[pin][0], int) and loads.get(conn[pin][0])] for s in sides}
        # the sides whose data is read: both in the x36 mode (one read side, clock B)
        groups = [("AB", "B")] if pdp else [(s, s) for s in sides]
        for outs, clkside in groups:
            pins = [pc for s in outs for pc in used[s]]
            if not pins:
                continue
            why = None
            if any(_param(c, f"REGMODE_{s}", "NOREG") != "NOREG" for s in outs):
                why = "REGMODE already set"
            elif any(not _is_const0(conn.get(f"RST{s}", ["0"])) for s in outs):
                why = "RST is driven"
            elif conn.get(f"OCE{clkside}", ["1"]) != ["1"]:
                why = f"OCE{clkside} is driven"
            ffs = []
            for pin, bit in pins:
                if why:
                    break
                ld = loads[bit]
                if len(ld) != 1 or ld[0][1] != "DI" or cells.get(ld[0][0], {}).get("type") != "TRELLIS_FF":
                    why = f"{pin} drives {len(ld)} loads, not one flip-flop's DI"
                    break
                ffs.append((pin, ld[0][0]))
            if not why:
                clk = conn.get(f"CLK{clkside}")
                ce = None
                for _pin, f in ffs:
                    ff = cells[f]
                    fc = ff["connections"]
                    if fc.get("CLK") != clk or _param(ff, "CLKMUX", "CLK") != "CLK":
                        why = f"flip-flop {f}: another clock"
                    elif not _is_const0(fc.get("LSR", ["0"])):
                        why = f"flip-flop {f}: has a set/reset"
                    elif _param(ff, "REGSET", "RESET") != "RESET":
                        why = f"flip-flop {f}: powers up at 1"
                    else:
                        mux = _param(ff, "CEMUX", "1")
                        this = ["1"] if mux == "1" else fc.get("CE") if mux == "CE" else None
                        if this is None:
                            why = f"flip-flop {f}: inverted clock enable"
                        elif ce is not None and this != ce:
                            why = f"flip-flop {f}: another clock enable"
                        ce = this
                    if why:
                        break
            if why:
                refused.append(f"{name}.{cname} ({outs}): {why}")
                continue
            # the read side's output enable; in the x36 mode both OCEA and OCEB (yosys ties
            # OCEA to 0 there: which of them enables DOA's register is not documented, so
            # both get the same enable, and neither can hold a half back)
            for s in outs:
                c["parameters"][f"REGMODE_{s}"] = "OUTREG"
                conn[f"OCE{s}"] = list(ce)
            for pin, f in ffs:
                conn[pin] = list(cells[f]["connections"]["Q"])
                del cells[f]
            folded += 1
            removed += len(ffs)
    return folded, removed, refused


def fold_output_registers(netlist: dict) -> tuple[int, int, list[str]]:
    """Fold in place; (read sides folded, flip-flops removed, the DP16KD read sides left
    alone with the reason)."""
    total, ffs, refused = 0, 0, []
    for name, mod in netlist.get("modules", {}).items():
        n, f, r = _fold_module(mod, name)
        total, ffs = total + n, ffs + f
        refused += r
    return total, ffs, refused


def fold_file(src: Path, dst: Path | None = None) -> tuple[int, int, list[str]]:
    """fold_output_registers on a JSON netlist file, written to `dst` (default: in place)."""
    net = json.loads(Path(src).read_text())
    res = fold_output_registers(net)
    Path(dst or src).write_text(json.dumps(net))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst", nargs="?")
    a = ap.parse_args(argv)
    n, ffs, refused = fold_file(Path(a.src), Path(a.dst) if a.dst else None)
    print(f"{n} block RAM read side(s) folded into OUTREG ({ffs} flip-flops); {len(refused)} left alone")
    for r in refused:
        print(f"  {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
