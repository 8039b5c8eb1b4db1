"""Read VCD waveforms without a GUI: print chosen signals as a text table over cycles.

    python -m verif.waves build/sim/.../dump.vcd --signals rx__valid,out__valid --from 10 --to 30
    python -m verif.waves --latest                  # newest VCD under build/

Values are sampled just before each rising edge of the clock (what the flops capture), so
row N is clock cycle N after time 0. Signal names match by suffix, so `out__data` finds
`TOP.ib_rx_parser.out__data`. Also writes GTKWave save files (`--gtkw`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["load", "table", "window_around", "write_gtkw", "latest_vcd"]

ROOT = Path(__file__).resolve().parents[1]


def load(path):
    from vcdvcd import VCDVCD
    return VCDVCD(str(path), store_tvs=True)


def _find(vcd, name: str) -> str:
    names = vcd.references_to_ids.keys()
    hits = [n for n in names if n == name or n.split(".")[-1].split("[")[0] == name]
    if not hits:
        hits = [n for n in names if n.endswith(name) or name in n]
    if not hits:
        raise KeyError(f"signal {name!r} not in VCD (some names: {sorted(names)[:8]})")
    return min(hits, key=len)


def _edges(vcd, clock: str) -> list[int]:
    sig = vcd[_find(vcd, clock)]
    return [t for (t, v), (_, p) in zip(sig.tv[1:], sig.tv[:-1], strict=False) if v == "1" and p == "0"]


def _val(sig, t) -> str:
    v = sig[t]
    if v is None:
        return "x"
    if all(c in "01" for c in v):
        n = int(v, 2)
        return str(n) if n < 10 else hex(n)
    return v


def table(path, signals: list[str], start: int = 0, end: int | None = None,
          clock: str = "clk", mark: int | None = None) -> str:
    """Signals at cycles [start, end] as a text table (one row per clock cycle)."""
    vcd = load(path)
    edges = _edges(vcd, clock)
    end = len(edges) - 1 if end is None else min(end, len(edges) - 1)
    start = max(0, start)
    cols = [(s, vcd[_find(vcd, s)]) for s in signals]
    head = ["cycle", "time"] + [s for s, _ in cols]
    rows = []
    for c in range(start, end + 1):
        t = edges[c] - 1 if edges[c] > 0 else 0
        rows.append([str(c) + (" <<" if c == mark else ""), str(edges[c])] + [_val(sig, t) for _, sig in cols])
    w = [max(len(r[k]) for r in [head] + rows) for k in range(len(head))]
    out = ["  ".join(h.rjust(x) for h, x in zip(head, w, strict=True))]
    out += ["  ".join(v.rjust(x) for v, x in zip(r, w, strict=True)) for r in rows]
    return "\n".join(out)


def window_around(path, report: dict, top: str | None = None, before: int = 6, after: int = 2) -> str:
    """The VCD window around a lock-step divergence report (verif.lockstep)."""
    vcd = load(path)
    edges = _edges(vcd, "clk")
    # sim_time "1234.0 ns" -> the cycle whose rising edge follows it (timescale 1ps)
    t_ps = float(str(report.get("sim_time", "0")).split()[0]) * 1000
    cyc = next((k for k, e in enumerate(edges) if e >= t_ps), len(edges) - 1)
    sigs = [report["signal"]] + [s for s in ("rx__valid", "rx__sop", "rx__eop", "out__valid",
                                             "out__sop", "out__eop") if s != report["signal"]]
    present = []
    for s in sigs:
        try:
            _find(vcd, s)
            present.append(s)
        except KeyError:
            pass
    return f"VCD window ({path}), divergence at cycle {cyc} of the VCD:\n" + \
        table(path, present, cyc - before, cyc + after, mark=cyc)


def write_gtkw(vcd_path, signals: list[str], out_path) -> Path:
    """A GTKWave save file showing `signals` (full hierarchical names from the VCD)."""
    vcd = load(vcd_path)
    lines = [f'[dumpfile] "{Path(vcd_path).resolve()}"', "[timestart] 0", "@28"]
    for s in ["clk", "rst"] + signals:
        try:
            full = _find(vcd, s)
        except KeyError:
            continue
        width = int(vcd[full].size) if str(vcd[full].size).isdigit() else 1
        lines.append("@22" if width > 1 else "@28")
        lines.append(full)
    Path(out_path).write_text("\n".join(lines) + "\n")
    return Path(out_path)


def latest_vcd() -> Path:
    vcds = sorted((ROOT / "build").rglob("*.vcd"), key=lambda p: p.stat().st_mtime)
    if not vcds:
        raise SystemExit("no VCD under build/ (run `make waves` or a test with WAVES=1)")
    return vcds[-1]


DEFAULT_SIGNALS = ["rst", "rx__up", "rx__valid", "rx__sop", "rx__eop", "rx__link", "rx__bad",
                   "rx__bytes", "out__valid", "out__sop", "out__eop", "out__bad", "out__err",
                   "fc__valid", "counters__good_data"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vcd", nargs="?")
    ap.add_argument("--latest", action="store_true", help="newest VCD under build/")
    ap.add_argument("--signals", default=",".join(DEFAULT_SIGNALS))
    ap.add_argument("--from", dest="start", type=int, default=0)
    ap.add_argument("--to", dest="end", type=int, default=40)
    ap.add_argument("--clock", default="clk")
    ap.add_argument("--gtkw", help="also write a GTKWave save file here (default: beside the VCD)")
    a = ap.parse_args(argv)
    path = latest_vcd() if a.latest or not a.vcd else Path(a.vcd)
    sigs = [s for s in a.signals.split(",") if s]
    vcd = load(path)
    present = []
    for s in sigs:
        try:
            _find(vcd, s)
            present.append(s)
        except KeyError:
            print(f"(signal {s} not in this VCD; skipped)", file=sys.stderr)
    print(f"VCD: {path}")
    gtkw = write_gtkw(path, present, a.gtkw or path.with_suffix(".gtkw"))
    print(f"GTKWave save file: {gtkw}   (gtkwave {path} {gtkw})")
    print(table(path, present, a.start, a.end, clock=a.clock))


if __name__ == "__main__":
    main()
