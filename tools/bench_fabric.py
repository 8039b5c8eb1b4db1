"""`make bench-fabric`: the RTL fabric's simulation speed in Verilator.

    python -m tools.bench_fabric [--threads 1,2] [--opt -O2]

The fabric of the regression (tb/test_fabric.py: `fat_tree_2(8)`, 12 eight-port switches
and 31 hardware endpoints, hierarchical Verilator build) is built once per variant (a build
directory of its own each: C++ level, `--threads`) and runs tb/test_fabric.py::fabric_speed:
reset, every link up and trained, no traffic; the fabric cycles per second with cocotb woken
at every clock edge and with cocotb asleep for the whole run (the simulator alone). Prints a
table; writes build/bench-fabric/result.json. A build takes several CPU-minutes per variant
(the first one also converts the Verilog); nothing else should run beside it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_variant(threads: int, opt: str, out: Path) -> dict:
    from tb.common.fabric_tb import FABRIC_CXX_OPT, run_fabric_bench
    from tb.test_fabric import FAB_CFG, _plan
    src = ROOT / "build" / "sim" / f"ib_fabric-{FAB_CFG.name}-src"
    res = out / f"speed-t{threads}{opt}.json"
    # one thread at the regression's C++ level: the regression's own build (tb/test_fabric.py)
    tag = f"ib_fabric-{FAB_CFG.name}" + ("" if (threads, opt) == (1, FABRIC_CXX_OPT) else f"-bench-t{threads}{opt}")
    res.unlink(missing_ok=True)
    t0 = time.perf_counter()
    run_fabric_bench(FAB_CFG, _plan(), tag=tag, src=src, testcase="fabric_speed", env={"FABRIC_SPEED": str(res)},
                     verilator_args=["--threads", str(threads)] if threads > 1 else [], cxx_opt=opt)
    got = json.loads(res.read_text())
    return {"threads": threads, "cxx": opt, "build_and_run_s": round(time.perf_counter() - t0, 1), **got}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", default="1,2", help="Verilator --threads values, comma-separated")
    ap.add_argument("--opt", default="-O2", help="C++ optimisation level of the model (OPT_FAST)")
    a = ap.parse_args(argv)
    try:
        threads = [int(x) for x in a.threads.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--threads: comma-separated integers, got {a.threads!r}")
    if not threads or min(threads) < 1:
        ap.error(f"--threads: at least one value, each >= 1, got {a.threads!r}")
    out = ROOT / "build" / "bench-fabric"
    out.mkdir(parents=True, exist_ok=True)
    rows = [run_variant(t, a.opt, out) for t in threads]
    print("\nfat_tree_2(8): 12 switches (8 ports, 64-bit, 2 VLs) + 31 endpoints, Verilator, idle links")
    print("fabric cycles/s, median of five rounds (min-max)")
    print(f"{'threads':>7}  {'C++':>4}  {'cocotb woken each cycle':>24}  {'cocotb asleep':>18}  {'build+run s':>11}")

    def cell(r, how):
        lo, hi = r[f"{how} range"]
        return f"{r[how]:.0f} ({lo:.0f}-{hi:.0f})"
    for r in rows:
        print(f"{r['threads']:>7}  {r['cxx']:>4}  {cell(r, 'woken every cycle'):>24}  {cell(r, 'asleep'):>18}"
              f"  {r['build_and_run_s']:>11.0f}")
    (out / "result.json").write_text(json.dumps(rows, indent=1))
    print(f"target: >= 1,000 fabric cycles/s; written {out / 'result.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
