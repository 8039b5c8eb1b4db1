"""Our in-band SM as a process of its own on a served fabric (fabric/ibsim_server.py), the
way OpenSM runs there: attached to a channel adapter by the ibsim protocol (sm/umad.py),
it discovers, routes, programs and activates the fabric once and exits.

    python -m sm.umad_run --sock NAME [--host H0] [--engine ftree] [--json]

With --json the last line is a JSON record: wall_s (connect to exit), route_s (the routing
engine alone: LIDs and tables from the discovered fabric), mads (SMPs sent), bounced,
switches, hosts, engine used, unrouted (switch, LID) pairs.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time

from sm.inband import InbandSM, SMError
from sm.routing import NO_ROUTE
from sm.umad import UmadError, UmadTransport


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sm.umad_run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sock", required=True, help="the server's socket base name (IBSIM_SOCKNAME)")
    ap.add_argument("--host", default="", help="channel adapter to attach to (default: the server's)")
    ap.add_argument("--engine", default="ftree")
    ap.add_argument("--timeout-us", type=int, default=200_000, help="SMP time-out (default 200 ms, as OpenSM's)")
    ap.add_argument("--min-timeout-us", type=int, default=200_000,
                    help="the adaptive time-out's floor (default 200 ms, OpenSM's transaction time-out: "
                         "wall-clock round trips vary)")
    ap.add_argument("--window", type=int, default=4, help="SMPs on the wire at once (default 4: OpenSM's "
                                                           "max_wire_smps)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        t = UmadTransport(a.sock, a.host)
    except UmadError as e:
        print(f"sm.umad_run: {e}", file=sys.stderr)
        return 2
    say = (lambda s: None) if a.json else (lambda s: print(s, flush=True))
    sm = InbandSM(t, timeout=a.timeout_us, say=say, failover=False, adaptive=False, lid_routed=True,
                  window=a.window, min_timeout=a.min_timeout_us)
    try:
        d, fab, r = asyncio.run(sm.bring_up(a.engine))
    except SMError as e:
        print(f"sm.umad_run: {e}", file=sys.stderr)
        return 1
    finally:
        t.close()
    wall = time.perf_counter() - t0
    rec = {"wall_s": round(wall, 3), "route_s": round(r.info.get("seconds", 0.0), 3), "mads": sm.mads,
           "bounced": t.bounced, "switches": fab.S, "hosts": fab.C, "engine": r.engine,
           "unrouted": int((r.lft[:, 1:fab.max_lid + 1] == NO_ROUTE).sum()) if fab.max_lid else 0}
    print(json.dumps(rec) if a.json else f"done: {rec}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
