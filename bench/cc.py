"""`make bench-cc`: the hotspot on the switch RTL with and without congestion control (IBA
Annex A10; docs/reliability.md, "Congestion control").

    python -m bench.cc [--window 20000] [--warmup 30000]

Config `b8` with congestion marking built in (b8-cc: 8 ports, W=128, 128 KB of buffer per
VL and input), Verilator, the scenario of scenarios/cc.py: every endpoint offers victim
traffic (1 KB packets to ports 1..7, 0.5 flits/cycle), endpoints 1..7 also saturate a hot
flow to port 0. Run twice: CC off (CC_PORT 0: no marking, no throttling) and on (every port
marks from threshold 15, every eligible packet; sources throttle by a linear CCT). Prints the
victim throughput per endpoint against its offered load (its fair share: no victim output is
oversubscribed) and the hot port's throughput; writes build/bench-cc/result.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from contracts.config import CONFIGS
from verif.runner import run_cocotb

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--window", type=int, default=20000, help="cycles measured (after the warm-up)")
    ap.add_argument("--warmup", type=int, default=30000, help="cycles before the window (buffers fill)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threshold", type=int, default=15, help="CC_PORT Threshold of every port (1..15)")
    ap.add_argument("--marking-rate", type=int, default=0, help="CC_PORT Marking_Rate (marks every n+1-th)")
    ap.add_argument("--ccti-timer", type=int, default=1024, help="sources: cycles between CCTI decrements")
    ap.add_argument("--cct-step", type=int, default=8, help="sources: CCT entry k delays k * step cycles")
    ap.add_argument("--only", choices=("off", "on"), help="run one of the two")
    a = ap.parse_args(argv)
    if a.window < 1000 or a.warmup < 0:
        ap.error("--window must be >= 1000 and --warmup >= 0")
    if not 1 <= a.threshold <= 15 or not 0 <= a.marking_rate < 1 << 16 or a.ccti_timer < 1 or a.cct_step < 1:
        ap.error("--threshold must be 1..15, --marking-rate 0..65535, --ccti-timer and --cct-step >= 1")
    cfg = CONFIGS["b8"].replace(name="b8-cc", cc=True)
    out = ROOT / "build" / "bench-cc"
    out.mkdir(parents=True, exist_ok=True)

    def top(c):
        from hw.top.switch import IBSwitch
        return IBSwitch(c)

    runs = {}
    for cc in [c for c in (False, True) if a.only in (None, "on" if c else "off")]:
        res = (out / f"cc-{int(cc)}.json").resolve()
        res.unlink(missing_ok=True)
        t0 = time.perf_counter()
        scen = {"cc": cc, "window": a.window, "warmup": a.warmup, "seed": a.seed, "threshold": a.threshold,
                "marking_rate": a.marking_rate, "ccti_timer": a.ccti_timer, "cct_step": a.cct_step}
        run_cocotb(top=top, name="ib_switch", test_module="scenarios.cc", sim="verilator", cfg=cfg,
                   testcase="hotspot_cc", waves=False, rerun_with_waves=False, tag=f"bench-{cfg.name}",
                   cxx_opt="-Os", params={**scen, "results": str(res)})
        runs["on" if cc else "off"] = {**json.loads(res.read_text()), "wall_s": round(time.perf_counter() - t0)}
    print(f"\nhotspot on b8-cc (8 ports, RTL in Verilator): {a.window} cycles measured after {a.warmup}")
    print(f"{'CC':>4} | {'victim offered':>14} {'victim got':>10} {'of fair share':>13} | {'hot port':>8} | "
          f"{'FECN marked':>11} {'mean CCTI':>9}")
    for k, r in runs.items():
        cct = r["ccti_mean"].values()
        mean = sum(cct) / len(cct) if cct else 0.0
        print(f"{k:>4} | {r['victim_offered_per_endpoint']:>14.3f} {r['victim_per_endpoint']:>10.3f} "
              f"{r['victim_of_fair_share']:>13.2f} | {r['hot_port']:>8.3f} | {r['marked']:>11} {mean:>9.1f}")
    print("flits per cycle; victim: per endpoint, delivered at ports 1..7; hot port: port 0's data flits")
    (out / "result.json").write_text(json.dumps(runs, indent=1))
    print(f"written {out / 'result.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
