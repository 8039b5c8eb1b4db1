"""The fabric simulator against the RTL fabric, longer than `make sim`'s check
(`make bench-netsim-rtl`): fat_tree_2(8) of the fabric config (12 switches, 31 hardware
endpoints), our SM's ftree LFTs, the endpoints' generators sending fixed-length packets
back to back, every packet timed on the RTL (the native Verilator binary, its monitors
recorded cycle by cycle) and on the simulator's fast core with the RTL's parameters
(scenarios/netsim_rtl.py: rtl_params). Beside it, the same simulator without the RTL's link
layer and allocator (credits free of wire time, a plain round robin: what the fast core did
before), to show what each part of the model is worth.

Workloads: random permutations (SEEDS of them), every leaf to the next leaf (its senders
meeting at each receiver in turn), 4:1 incasts (SEEDS of them), each at several packet
lengths (--words), COUNT packets per sender.

Prints a table (cycles; throughput in payload bytes per cycle over the span from the first
packet's start to the last one's tail) and writes docs/netsim/rtl_validation.md and a PNG.
Each side's wall time is its own: the RTL's is its native run (bring-up, traffic, counters;
the build is not counted), the simulator's its simulate() call.

    python -m bench.netsim_rtl [--count 200] [--seeds 3] [--words 16,32,64]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(count: int, seeds: int, words: list[int], say=print) -> dict:
    import subprocess

    from scenarios.netsim_rtl import (
        compare,
        incast_workload,
        leaf_workload,
        permutation_workload,
        plain_params,
        rtl_fabric,
        rtl_measure,
        rtl_params,
        sim_measure,
    )
    FAB_CFG, plan, fab, routes, exe = rtl_fabric(say)
    wls = []
    for w in words:
        wls += [permutation_workload(plan, fab, count, w, seed=s) for s in range(1, seeds + 1)]
        wls += [leaf_workload(plan, count, w)]
        wls += [incast_workload(plan, fab, max(8, count // 4), w, seed=s) for s in range(1, seeds + 1)]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        rtl_rows = rtl_measure(exe, FAB_CFG, plan, fab, routes, wls, Path(tmp), say=say)
    rtl_s = time.perf_counter() - t0
    sim_measure(plan, fab, routes, wls[0], rtl_params(FAB_CFG, wls[0].words))     # numba's compile, untimed
    sim_measure(plan, fab, routes, wls[0], plain_params(FAB_CFG, wls[0].words))
    rows = []
    sim_s = 0.0
    for wl, r in zip(wls, rtl_rows, strict=True):
        c = r["counters"]
        assert r["done"] and c["rcv_good"] == r["packets"] == wl.count * len(wl.flows), (wl.name, c)
        t1 = time.perf_counter()
        s = sim_measure(plan, fab, routes, wl, rtl_params(FAB_CFG, wl.words))
        sim_s += time.perf_counter() - t1
        plain = sim_measure(plan, fab, routes, wl, plain_params(FAB_CFG, wl.words))
        rows.append({"workload": wl.name, "words": wl.words, "packets": r["packets"], "rtl": r, "sim": s,
                     "d": compare(r, s), "plain": plain, "d_plain": compare(r, plain)})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip() or "?"
    return {"rows": rows, "rtl_s": rtl_s, "sim_s": sim_s, "commit": commit, "count": count,
            "rtl_cycles": sum(r["rtl"]["run_cycles"] for r in rows)}


def table(res: dict) -> str:
    head = ("| workload | words | packets | RTL B/cycle | sim | diff | RTL mean | sim | diff | RTL p99 | sim | diff "
            "| plain model: thr / mean / p99 diff |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    out = []
    for x in res["rows"]:
        r, s, d, dp = x["rtl"], x["sim"], x["d"], x["d_plain"]
        out.append(f"| {x['workload']} | {x['words']} | {x['packets']:,} | {r['throughput']:.2f} | "
                   f"{s['throughput']:.2f} | {d['throughput']:+.1%} | {r['mean']:.1f} | {s['mean']:.1f} | "
                   f"{d['mean']:+.1%} | {r['p99']:.1f} | {s['p99']:.1f} | {d['p99']:+.1%} | "
                   f"{dp['throughput']:+.1%} / {dp['mean']:+.1%} / {dp['p99']:+.1%} |")
    return head + "\n".join(out) + "\n"


def summary(res: dict) -> str:
    lines = ["| metric | tolerance | worst, RTL model | median abs | worst, plain model | within |",
             "|---|---|---|---|---|---|"]
    ok = True
    from scenarios.netsim_rtl import TOLERANCE
    for k, tol in TOLERANCE.items():
        v = [abs(x["d"][k]) for x in res["rows"]]
        vp = [abs(x["d_plain"][k]) for x in res["rows"]]
        within = sum(a <= tol for a in v)
        ok &= within == len(v)
        lines.append(f"| {k} | {tol:.0%} | {max(v):.1%} | {statistics.median(v):.1%} | {max(vp):.1%} | "
                     f"{within}/{len(v)} |")
    return "\n".join(lines) + "\n", ok


def plot(res: dict, path: Path):
    import matplotlib

    from scenarios.netsim_rtl import TOLERANCE
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 3, figsize=(13, 4))
    for ax, k, unit in zip(axs, ("throughput", "mean", "p99"), ("payload B/cycle", "cycles", "cycles"),
                           strict=True):
        xs = [x["rtl"][k] for x in res["rows"]]
        ax.scatter(xs, [x["sim"][k] for x in res["rows"]], label="RTL model (fc packets, iSLIP)", s=18)
        ax.scatter(xs, [x["plain"][k] for x in res["rows"]], label="plain model", s=18, marker="x")
        lo, hi = min(xs) * 0.8, max(xs) * 1.2
        tol = TOLERANCE[k]
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        ax.fill_between([lo, hi], [lo * (1 - tol), hi * (1 - tol)], [lo * (1 + tol), hi * (1 + tol)], alpha=0.15)
        ax.set_xlabel(f"RTL {k} ({unit})")
        ax.set_ylabel(f"simulator {k}")
        ax.set_title(f"{k}: +/-{tol:.0%} band")
    axs[0].legend(fontsize=7)
    fig.suptitle(f"netsim against the RTL fabric, fat_tree_2(8) ({res['commit']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=200, help="packets per sender (incasts: a quarter)")
    ap.add_argument("--seeds", type=int, default=3, help="permutations and incasts per packet length")
    ap.add_argument("--words", default="16,32,64", help="payload words per packet, comma-separated")
    ap.add_argument("--out", default=str(ROOT / "docs" / "netsim"), help="where the table and PNG go")
    a = ap.parse_args(argv)
    try:
        words = [int(x) for x in a.words.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--words: comma-separated integers, got {a.words!r}")
    if a.count < 4 or a.seeds < 1:
        ap.error("--count >= 4 and --seeds >= 1")
    res = run(a.count, a.seeds, words)
    summ, ok = summary(res)
    text = (f"# netsim against the RTL fabric (`make bench-netsim-rtl`, code {res['commit']})\n\n"
            f"fat_tree_2(8), our SM's ftree LFTs, {a.count} packets per sender (incasts: "
            f"{max(8, a.count // 4)}), back to back. Cycles; throughput in payload bytes per cycle over the "
            "span from the first packet's start to the last one's tail. diff = simulator / RTL - 1. The plain "
            "model: credits free of wire time and a plain round robin.\n\n" + summ + "\n" + table(res) +
            f"\nWall: the RTL {res['rtl_s']:.1f} s for {res['rtl_cycles']:,} fabric cycles of traffic (plus "
            f"bring-ups), the simulator {res['sim_s']:.2f} s for the same workloads.\n")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rtl_validation.md").write_text(text)
    plot(res, out / "rtl_validation.png")
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
