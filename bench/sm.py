"""`make bench-sm`: our subnet manager's routing engines beside OpenSM's, on the same net
files (3-level k-ary fat trees by default), one table.

For each net file and engine:
  ours     `python -m sm.offline <net> --engine E --check --json` in its own process: the
           routing time (LIDs assigned, tables computed; the net file's parse not included),
           the process's peak RSS (Python, numpy, the fabric, routing and the CDG check);
  OpenSM   `opensm --once -R E` against `ibsim` on the same net file (sm.opensm): wall time
           of the whole run (discovery through ibsim, routing, programming the simulated
           switches) and the routing part from OpenSM's log ("Entering MASTER state" to
           "tables configured"), OpenSM's peak RSS, and the engine OpenSM says it used.
  both     balance (the most and the mean destination LIDs a switch sends out of one
           switch-to-switch port: OpenSM's own path-distribution measure), unrouted (switch,
           LID) pairs from switches with CAs and in all, VLs the routing needs, and our CDG
           checker's verdict on the tables (OpenSM's read back from its dump).

    python -m bench.sm                       # k = 16, 24, 32; ftree, minhop, updn
    python -m bench.sm --k 16 --engines ftree --no-opensm

Results: build/bench/sm.json and build/bench/sm.md (the table). Measurements of this run on
this machine; nothing here is a test.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from fabric.topology import fat_tree_3, read_netfile
from sm.cdg import check
from sm.fabric import Fabric
from sm.offline import summarise
from sm.opensm import OpenSMError, run_opensm

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "bench"


def ours(net: Path, engine: str) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "sm.offline", str(net), "--engine", engine, "--check", "--json"],
                       capture_output=True, text=True, cwd=ROOT)
    if p.returncode:
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1][:120]}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return {"route_s": r["route_s"], "wall_s": round(time.perf_counter() - t0, 2), "rss_mb": r["peak_rss_mb"],
            "used": r["engine"], "max_lids": r["max_lids_per_link"], "mean_lids": round(r["mean_lids_per_link"], 1),
            "unrouted_ca": r["unrouted_from_ca_switches"], "unrouted_all": r["unrouted_switch_lid_pairs"],
            "vls": r["vls"], "acyclic": r.get("cdg_acyclic")}


def opensm(net: Path, engine: str, work: Path) -> dict:
    try:
        run = run_opensm(net, engine, work)
    except OpenSMError as e:
        return {"error": str(e)[:120]}
    topo = read_netfile(net)
    fab = Fabric.from_topology(topo)
    r = run.routes(fab)
    s = summarise(fab, r)
    c = check(fab, r)
    return {"route_s": round(run.route_seconds, 2), "wall_s": round(run.seconds, 2), "rss_mb": round(run.peak_rss_mb),
            "used": run.engine_used, "max_lids": s["max_lids_per_link"], "mean_lids": round(s["mean_lids_per_link"], 1),
            "unrouted_ca": s["unrouted_from_ca_switches"], "unrouted_all": s["unrouted_switch_lid_pairs"],
            "vls": 1, "acyclic": c.acyclic}


COLS = [("route_s", "route s"), ("wall_s", "wall s"), ("rss_mb", "peak MB"), ("used", "engine used"),
        ("max_lids", "max LIDs/link"), ("mean_lids", "mean"), ("unrouted_ca", "unrouted (CA sw)"),
        ("unrouted_all", "unrouted (all)"), ("vls", "VLs"), ("acyclic", "CDG acyclic")]


def table(rows: list[dict]) -> str:
    head = ["net", "hosts", "switches", "engine", "SM"] + [c[1] for c in COLS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["net"], str(r["hosts"]), str(r["switches"]), r["engine"], r["sm"]]
        if "error" in r:
            cells += [r["error"]] + [""] * (len(COLS) - 1)
        else:
            cells += [str(r[k]) for k, _ in COLS]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", default="16,24,32", help="3-level fat-tree radixes (comma-separated)")
    ap.add_argument("--net", action="append", default=[], help="a net file (instead of / beside --k)")
    ap.add_argument("--engines", default="ftree,minhop,updn")
    ap.add_argument("--no-opensm", action="store_true")
    a = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    nets = [Path(x).resolve() for x in a.net]
    for k in [int(x) for x in a.k.split(",") if x] if not a.net or a.k != "16,24,32" else []:
        p = ROOT / "build" / "bench" / "nets" / f"ft3-k{k}.net"
        if not p.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
            fat_tree_3(k).write(p)
        nets.append(p)
    rows = []
    for net in nets:
        topo = read_netfile(net)
        base = {"net": net.stem, "hosts": len(topo.hcas()), "switches": len(topo.switches())}
        for eng in a.engines.split(","):
            r = {**base, "engine": eng, "sm": "ours", **ours(net, eng)}
            rows.append(r)
            print(table([r]).splitlines()[-1], flush=True)
            if not a.no_opensm:
                r = {**base, "engine": eng, "sm": "OpenSM", **opensm(net, eng, OUT / "opensm" / f"{net.stem}-{eng}")}
                rows.append(r)
                print(table([r]).splitlines()[-1], flush=True)
    (OUT / "sm.json").write_text(json.dumps(rows, indent=1))
    md = table(rows)
    (OUT / "sm.md").write_text(md + "\n")
    print()
    print(md)
    # the headline: our time against OpenSM's, per net and engine
    for net in {r["net"] for r in rows}:
        for eng in a.engines.split(","):
            o = [r for r in rows if r["net"] == net and r["engine"] == eng and r["sm"] == "ours" and "error" not in r]
            s = [r for r in rows if r["net"] == net and r["engine"] == eng and r["sm"] == "OpenSM" and "error" not in r]
            if o and s:
                print(f"{net} {eng}: ours {o[0]['route_s']} s (routing) / {o[0]['wall_s']} s (process), "
                      f"OpenSM {s[0]['wall_s']} s (opensm --once) / {s[0]['route_s']} s (routing in its log): "
                      f"{s[0]['wall_s'] / max(o[0]['wall_s'], 1e-3):.1f}x on wall time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
