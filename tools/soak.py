"""`make soak`: the fault-injection soak at 10^7 packets on Verilator (docs/reliability.md).

    python -m tools.soak [--packets 10000000] [--rate-log2 10] [--seed 0x2545F491]

Builds `ib_soak` (hw/top/soak.py: the switch, config small-rxreg, a hardware endpoint on
every port, a fault injector on every wire) and runs tb/test_soak.py's `soak` with the
given number of packets and a fault every 2^rate_log2 cycles on average. Prints the books
(tb/common/soak_books.py): what was injected, what every counter saw, and whether they
balance; writes build/soak/result.json. Exits 1 if the books do not balance, a packet was
delivered corrupted or twice, or the switch wedged.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=10_000_000, help="packets the generators send in all")
    ap.add_argument("--rate-log2", type=int, default=10, help="a fault every 2^N cycles on average (0..24)")
    ap.add_argument("--seed", type=lambda s: int(s, 0), default=None, help="the fault scheduler's seed (nonzero)")
    ap.add_argument("--threads", type=int, default=1, help="Verilator model threads (--threads N)")
    a = ap.parse_args(argv)
    if a.packets < 1:
        ap.error(f"--packets: at least 1, got {a.packets}")
    if not 0 <= a.rate_log2 <= 24:
        ap.error(f"--rate-log2: 0..24, got {a.rate_log2}")
    from tb.common.runner import CocotbFailure
    from tb.common.soak_books import table
    from tb.test_soak import CFG, PLAN, run_soak
    plan = PLAN if a.seed is None else PLAN.__class__(**{**PLAN.__dict__, "seed": a.seed})
    try:
        plan.check(CFG)
    except ValueError as e:
        ap.error(str(e))
    out = ROOT / "build" / "soak"
    out.mkdir(parents=True, exist_ok=True)
    res = out / "result.json"
    res.unlink(missing_ok=True)
    t0 = time.perf_counter()
    failed = None
    try:
        run_soak("verilator", a.packets, rate_log2=a.rate_log2, plan=plan, json_out=res, cxx_opt="-O2",
                 threads=a.threads)
    except CocotbFailure as e:
        failed = e
    wall = time.perf_counter() - t0
    if not res.exists():
        print(f"soak: no result (the test failed before the books): {failed}", file=sys.stderr)
        return 1
    raw = json.loads(res.read_text())
    raw["wall_seconds"] = round(wall)
    res.write_text(json.dumps(raw, indent=1))
    print()
    print(table(raw))
    print(f"\nconfig {CFG.name}, fault every 2^{a.rate_log2} cycles, seed {plan.seed:#x}; build + run {wall:.0f} s; "
          f"written {res}")
    if failed is not None:
        print(f"soak FAILED: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
