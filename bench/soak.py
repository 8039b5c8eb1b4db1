"""`make soak`: the fault-injection soak on the native Verilator binary (docs/reliability.md).

    python -m bench.soak [--packets 10000000] [--rate-log2 10] [--seeds 5] [--seed 0x2545F491 ...]
                         [--jobs 2] [--threads 1] [--kinds corrupt,flap]

Builds `ib_soak` (hw/top/soak.py: the switch, config small-rxreg, a hardware endpoint on
every port, a fault injector on every wire) with Verilator and our C++ main (verif/native),
and runs scenarios/soak.py's procedure on it, the same code the cocotb test runs, once
per fault-scheduler seed (`--jobs` at a time, one process each). Prints the books of every
seed (scenarios/soak_books.py) and a summary table; writes build/soak/result.json (a list,
one entry per seed, with wall times). Exits 1 if any seed's books do not balance exactly,
a packet was delivered corrupted or twice, or the switch wedged.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "soak"
# the seeds `--seeds N` takes, in order (any nonzero 32-bit values: the scheduler's xorshift
# state); past these, seed k is (k + 1) * 0x9E3779B1 mod 2^32
SEEDS = [0x2545F491, 0x9E3779B9, 0x6C8E9CF5, 0x1B873593, 0xCC9E2D51, 0x85EBCA6B, 0xC2B2AE35, 0x27D4EB2F]


def seeds(n: int) -> list[int]:
    return [SEEDS[k] if k < len(SEEDS) else ((k + 1) * 0x9E3779B1) & 0xFFFFFFFF or 1 for k in range(n)]


def summary(results: list[dict]) -> str:
    from scenarios.soak_books import books, faults
    rows = ["| seed | packets sent | cycles | faults | delivered | counted | counted twice | balance | corrupted "
            "| dup/reorder | longest wait | wall s | cycles/s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        t = books(r)
        rows.append(f"| {r['seed']:#010x} | {t['sent']:,} | {r['cycles']:,} | {faults(r):,} | {t['delivered']:,} "
                    f"| {t['counted']:,} | {t['counted_twice']:,} | "
                    f"{'exact' if t['in'] == t['out'] else '%+d' % (t['out'] - t['in'])} | "
                    f"{t['corrupted_delivered']} | {t['duplicates']} | {r['max_stall']:,} | {r['wall_seconds']:.0f} "
                    f"| {r['cycles'] / max(r['seconds'], 1e-9):,.0f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=10_000_000, help="packets the generators send in all, per seed")
    ap.add_argument("--rate-log2", type=int, default=10, help="a fault every 2^N cycles on average (0..24)")
    ap.add_argument("--seeds", type=int, default=5, help="how many seeds (the list SEEDS first)")
    ap.add_argument("--seed", type=lambda s: int(s, 0), action="append", help="a seed (nonzero); repeatable; "
                    "replaces --seeds")
    ap.add_argument("--jobs", type=int, default=2, help="seeds run at once (one process each)")
    ap.add_argument("--threads", type=int, default=1, help="Verilator model threads (--threads N)")
    ap.add_argument("--kinds", default="", help="only these fault kinds (comma-separated; default all)")
    a = ap.parse_args(argv)
    from scenarios.soak import CFG, PLAN, build_soak, kind_mask, run_one
    from scenarios.soak_books import table
    if a.packets < 1:
        ap.error(f"--packets: at least 1, got {a.packets}")
    if not 0 <= a.rate_log2 <= 24:
        ap.error(f"--rate-log2: 0..24, got {a.rate_log2}")
    if a.seed is None and a.seeds < 1:
        ap.error(f"--seeds: at least 1, got {a.seeds}")
    chosen = a.seed or seeds(a.seeds)
    try:
        kinds = kind_mask(a.kinds)
        plans = [replace(PLAN, seed=s) for s in chosen]
        for p in plans:
            p.check(CFG)
    except ValueError as e:
        ap.error(str(e))
    OUT.mkdir(parents=True, exist_ok=True)
    res = OUT / "result.json"
    res.unlink(missing_ok=True)
    t0 = time.perf_counter()
    # one build for every seed: the scheduler's seed is an input of ib_soak
    exe = build_soak(PLAN, a.threads, out=OUT)
    t_build = time.perf_counter() - t0
    print(f"soak: built in {t_build:.0f} s; {len(chosen)} seed(s) x {a.packets:,} packets, {a.jobs} at a time")
    with ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = [ex.submit(run_one, str(exe), p, a.packets, a.rate_log2, kinds) for p in plans]
        results = [f.result() for f in futs]
    wall = time.perf_counter() - t0
    for r in results if len(results) <= 8 else [r for r in results if r["problems"]]:
        print(f"\n== seed {r['seed']:#010x}\n{table(r)}")
        for p in r["problems"]:
            print(f"  PROBLEM: {p}")
    print()
    print(summary(results))
    print(f"\nconfig {CFG.name}, fault every 2^{a.rate_log2} cycles, {a.threads} Verilator thread(s), "
          f"{a.jobs} seed(s) at a time; build {t_build:.0f} s, build + runs {wall:.0f} s; written {res}")
    res.write_text(json.dumps({"build_seconds": round(t_build, 1), "wall_seconds": round(wall, 1),
                               "jobs": a.jobs, "threads": a.threads, "seeds": results}, indent=1))
    bad = [r for r in results if r["problems"]]
    if bad:
        print(f"soak FAILED on {len(bad)} of {len(results)} seed(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
