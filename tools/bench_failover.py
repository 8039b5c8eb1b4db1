"""`make bench-failover`: failover in the RTL fabric at two sizes (docs/reliability.md).

    python -m tools.bench_failover [--radix 4,8]

For each radix k, a 2-level fat tree `fat_tree_2(k)` of our switches (SwitchConfig fab8:
8 ports, 64 bits, 2 VLs, failover) and hardware endpoints is built for Verilator (k = 8 is
the regression's build) and runs tb/test_fabric.py::failover_in_fabric: bring-up by our
SM, leaf L1's endpoints sending to the next leaf, one of L1's spine cables cut under that
traffic. Prints the cycles from the cut to the first packet on the alternate port, the
packets lost and delivered; writes build/bench-failover/result.json. A build takes several
CPU-minutes per size; nothing else should run beside it.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_size(k: int, out: Path) -> dict:
    from tb.common.fabric_tb import run_fabric_bench
    from tb.test_fabric import FAB_CFG, _plan
    tag = f"ib_fabric-{FAB_CFG.name}" + ("" if k == 8 else f"-k{k}")     # k = 8: the regression's build
    res = out / f"failover-k{k}.json"
    res.unlink(missing_ok=True)
    t0 = time.perf_counter()
    run_fabric_bench(FAB_CFG, _plan(k), tag=tag, src=ROOT / "build" / "sim" / f"{tag}-src",
                     testcase="failover_in_fabric", env={"FABRIC_FAILOVER": str(res), "FABRIC_K": str(k)})
    return {**json.loads(res.read_text()), "build_and_run_s": round(time.perf_counter() - t0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--radix", default="4,8", help="fat_tree_2 radixes, comma-separated (even, 4..8)")
    a = ap.parse_args(argv)
    try:
        ks = [int(x) for x in a.radix.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--radix: comma-separated integers, got {a.radix!r}")
    if not ks or any(k % 2 or not 4 <= k <= 8 for k in ks):
        ap.error(f"--radix: even values in 4..8 (the switches have 8 ports), got {a.radix!r}")
    out = ROOT / "build" / "bench-failover"
    out.mkdir(parents=True, exist_ok=True)
    rows = [run_size(k, out) for k in ks]
    print("\nfailover in the RTL fabric: one of leaf L1's spine cables cut under L1's traffic (Verilator)")
    print(f"{'fabric':>14} {'switches':>8} {'endpoints':>9} {'cycles to alternate':>19} {'sent':>5} "
          f"{'delivered':>9} {'lost':>4} {'XmitDiscards':>12} {'build+run s':>11}")
    for r in rows:
        print(f"{'fat_tree_2(' + str(r['radix']) + ')':>14} {r['switches']:>8} {r['endpoints']:>9} "
              f"{r['cycles_to_alternate']:>19} {r['sent']:>5} {r['delivered']:>9} {r['lost']:>4} "
              f"{r['xmit_discards_dead_port']:>12} {r['build_and_run_s']:>11}")
    (out / "result.json").write_text(json.dumps(rows, indent=1))
    print(f"target: <= 64 cycles, the same at both sizes; written {out / 'result.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
