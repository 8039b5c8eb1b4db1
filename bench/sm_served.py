"""`make bench-sm`: our subnet manager and OpenSM bring up the same fabric of our switches
over the same MAD transport, one after the other; and their routing phases on equal work.

For each 3-level k-ary fat tree (default k = 16, 24, 32) and engine, each SM gets a fresh
served fabric (fabric/ibsim_server.py in this process: our switches' firmware on the
MAD-level fabric, a host's agents on every channel adapter) and runs in a process of its
own, attached to host H0 by the ibsim protocol:
  ours    `python -m sm.umad_run` (sm/umad.py: the protocol spoken by our SM itself)
  OpenSM  `opensm --once -R engine` through Debian's libumad2sim.so (ibsim-run)
Both start from the same state (every link up, every port Init, no LIDs) and exit when the
subnet is up. Measured the same way for both:
  wall s      the SM process from start to exit (connect, discovery, LIDs, routing,
              programming, every port Active; OpenSM also writes its dump files)
  MADs        the MADs the server received from the SM process
  peak MB     the SM process's peak resident memory (VmHWM, sampled every 50 ms)
  Active      ports Active afterwards / cabled ports (switch ports and host ports), read
              from the fabric: both SMs must reach all
  unrouted    (switch, LID) pairs among the LIDs assigned whose LFT entry is 255, read
              from the switches' registers
  engine used what each SM says it routed with (OpenSM: its log)
The server is the same Python process for both and dominates both wall times: the ratio
compares the SMs on one transport, not the SMs' own speed.

And the routing phase on equal work (a second table), after OpenSM's run:
  OpenSM s    its osm_ucast_mgr_process, from its log: the "LID ASSIGNMENT COMPLETE -
              STARTING SWITCH TABLE CONFIG" message (osm_state_mgr.c, logged at VERBOSE for
              that file alone by a per-module logging file: no cost elsewhere) to "<engine>
              tables configured on all switches": the engine on the discovered subnet
              (for ftree: its fabric construction, a min-hop matrix and the LFTs), then
              every LFT block queued as a SubnSet (queued, not sent)
  ours s      the median of 5 runs (and their min-max) of our engine (sm.routing) on the same
              fabric with the LIDs OpenSM assigned (read from the switches and hosts), and
              every LFT block encoded as an SM sends it
              (after one untimed run on a small fabric: Python's imports and first calls
              are not routing, and OpenSM's process is warm by then too)
  unrouted    (switch, LID) pairs without an LFT entry among the LIDs assigned: OpenSM's
              from the switches' registers, ours from our tables; equal work when equal

    python -m bench.sm_served [--k 16,24,32] [--engines ftree]

Results: build/bench/sm_served.json and build/bench/sm_served.md. Nothing here is a test.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from contracts.defs import PortState
from fabric.ibsim_host import ServedFabric, have_ib_tools
from fabric.topology import fat_tree_3
from sm.opensm import _stamp, _watch_hwm

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "bench"


def _fabric_state(sf: ServedFabric) -> dict:
    topo, fab = sf.topo, sf.fab
    active = cabled = 0
    for s in topo.switches():
        k = fab.index[s.name]
        for p in s.ports:
            cabled += 1
            active += fab.regs[k].state[p - 1] == PortState.ACTIVE
    lids = []
    for ca in fab.cas.values():
        cabled += 1
        active += ca.port.state == PortState.ACTIVE
        lids.append(ca.port.lid)

    async def read():
        sw_lids = [await fab.regs[k].read("SWITCH_LID") for k in range(len(fab.regs))]
        all_lids = [x for x in lids + sw_lids if x]
        bad = 0
        for k, name in enumerate(fab.names):
            for lid in all_lids:
                if lid != sw_lids[k] and await fab.lft_entry(name, lid) == 255:
                    bad += 1
        return bad, len(all_lids), sw_lids
    unrouted, n_lids, sw_lids = asyncio.run(read())
    lid_of = dict(zip(fab.cas, lids, strict=True)) | dict(zip(fab.names, sw_lids, strict=True))
    return {"active": active, "cabled": cabled, "unrouted": unrouted, "lids": n_lids, "lid_of": lid_of}


def our_routing_phase(topo, lid_of: dict[str, int], engine: str, runs: int = 5) -> dict:
    """Our engine on the work OpenSM's routing phase does: the fabric as discovered, with
    the LIDs OpenSM assigned (read from the switches and hosts after its run), every
    switch's LFT computed and encoded as the LinearForwardingTable blocks an SM sends
    (OpenSM's osm_ucast_mgr_process: the engine, then each block queued as a SubnSet).
    Timed: route() and the blocks' bytes, `runs` times. Returns the median seconds (min,
    max) and the unrouted (switch, LID) pairs among the LIDs assigned (a switch's own LID
    aside)."""
    from fabric.topology import fat_tree_2
    from sm.fabric import Fabric
    from sm.inband import _lft_block, _lft_blocks, _low_top
    from sm.routing import NO_ROUTE, route
    route(Fabric.from_topology(fat_tree_2(4)), engine)     # the modules' first-call costs, not timed
    fab = Fabric.from_topology(topo)
    fab.set_lids([lid_of[n] for n in fab.sw_names], [lid_of[n] for n in fab.ca_names])
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        r = route(fab, engine)
        blocks = _lft_blocks(fab, _low_top(fab))
        nbytes = sum(len(_lft_block(r.lft[k], b)) for k in range(fab.S) for b in blocks)
        times.append(time.perf_counter() - t0)
    lids = np.array(sorted(lid_of.values()), dtype=np.int64)
    sub = r.lft[:, lids]
    unrouted = int(((sub == NO_ROUTE) & (lids[None, :] != fab.lid_sw[:, None])).sum())
    return {"seconds": round(float(np.median(times)), 3), "min": round(min(times), 3), "max": round(max(times), 3),
            "unrouted": unrouted, "blocks": nbytes // 64, "used": r.engine}


def run_one(topo, sm: str, engine: str, work: Path, timeout: float) -> dict:
    with ServedFabric(topo, work) as sf:
        t0 = time.monotonic()
        if sm == "ours":
            p = subprocess.Popen([sys.executable, "-m", "sm.umad_run", "--sock", sf.sock, "--host", sf.sm_node,
                                  "--engine", engine, "--json"], cwd=ROOT, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        else:
            log = sf.dir / "opensm.log"
            (sf.dir / "per-module-logging.conf").write_text("osm_state_mgr.c 0x04\n")
            (sf.dir / "opensm.conf").write_text(f"per_module_logging_file {sf.dir / 'per-module-logging.conf'}\n")
            p = sf.popen("opensm", "--once", "-R", engine, "-f", str(log), "-F", str(sf.dir / "opensm.conf"),
                         host=sf.sm_node, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        hwm = _watch_hwm(p)
        wall = time.monotonic() - t0
        out = p.stdout.read() if p.stdout else ""
        err = p.stderr.read() if sm == "ours" and p.stderr else ""
        if wall > timeout:
            return {"error": f"over {timeout:.0f} s"}
        sf.sync()
        mads = sf.srv.stats["mads_in"]
        sf.stop()
        rec = {"wall_s": round(wall, 2), "mads": mads, "rss_mb": round(hwm / 1024), **_fabric_state(sf)}
        if sm == "ours":
            if p.returncode:
                return {**rec, "error": (err or out).strip().splitlines()[-1][:120] if (err or out) else "failed"}
            r = json.loads(out.strip().splitlines()[-1])
            rec.update(used=r["engine"])
        else:
            text = log.read_text(errors="replace") if log.exists() else ""
            used = re.findall(r"osm_ucast_mgr_process: (\S+) tables configured", text)
            rec.update(used=used[-1] if used else "none", route_s=_osm_routing_phase(text))
            if "SUBNET UP" not in text:
                rec["error"] = f"no SUBNET UP (exit {p.returncode})"
        return rec


def _osm_routing_phase(text: str) -> float | None:
    """Seconds of OpenSM's osm_ucast_mgr_process in its log (the last sweep's): from the
    message box that starts it (its time on the line before the box) to "tables configured"."""
    start, last, done = None, None, None
    for line in text.splitlines():
        last = _stamp(line) or last
        if "STARTING SWITCH TABLE CONFIG" in line:
            start = last
        elif "tables configured on all switches" in line and start is not None:
            done = last
    return round((done - start) % 86400, 3) if start is not None and done is not None else None


COLS = [("wall_s", "wall s"), ("mads", "MADs"), ("rss_mb", "peak MB"), ("active", "Active"),
        ("unrouted", "unrouted"), ("used", "engine used")]


def table(rows: list[dict]) -> str:
    head = ["net", "switches", "hosts", "engine", "SM"] + [c[1] for c in COLS]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["net"], str(r["switches"]), str(r["hosts"]), r["engine"], r["sm"]]
        for k, _ in COLS:
            v = r.get(k, "")
            if k == "active" and "cabled" in r:
                v = f"{r['active']}/{r['cabled']}"
            cells.append(str(v))
        if "error" in r:
            cells[-1] += f" ({r['error']})"
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def phase_table(rows: list[dict]) -> str:
    head = ["net", "engine", "LIDs", "LFT blocks", "OpenSM s", "ours s (median of 5)", "ours min-max",
            "OpenSM / ours", "unrouted OpenSM", "unrouted ours"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ratio = f"{r['osm_s'] / max(r['ours_s'], 1e-3):.2f}x" if r["osm_s"] is not None else "—"
        out.append("| " + " | ".join(str(x) for x in (
            r["net"], r["engine"], r["lids"], r["blocks"], r["osm_s"], r["ours_s"], r["ours_range"], ratio,
            r["osm_unrouted"],
            r["ours_unrouted"])) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", default="16,24,32", help="3-level fat-tree radixes (comma-separated)")
    ap.add_argument("--engines", default="ftree")
    ap.add_argument("--sms", default="ours,OpenSM")
    ap.add_argument("--timeout", type=float, default=3600)
    a = ap.parse_args(argv)
    missing = have_ib_tools()
    if missing:
        print(missing, file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    rows, phase = [], []
    for k in [int(x) for x in a.k.split(",") if x]:
        topo = fat_tree_3(k)
        base = {"net": topo.name, "switches": len(topo.switches()), "hosts": len(topo.hcas())}
        for eng in a.engines.split(","):
            for sm in a.sms.split(","):
                work = OUT / "sm-served" / f"{topo.name}-{eng}-{sm}"
                r = {**base, "engine": eng, "sm": sm, **run_one(topo, sm, eng, work, a.timeout)}
                rows.append(r)
                print(table([r]).splitlines()[-1], flush=True)
                if sm == "OpenSM" and "error" not in r:
                    ours = our_routing_phase(topo, r["lid_of"], eng)
                    phase.append({**base, "engine": eng, "lids": r["lids"], "osm_s": r["route_s"],
                                  "osm_unrouted": r["unrouted"], "ours_s": ours["seconds"],
                                  "ours_range": f"{ours['min']}-{ours['max']}",
                                  "ours_unrouted": ours["unrouted"], "ours_used": ours["used"],
                                  "blocks": ours["blocks"]})
                    print(phase_table(phase[-1:]).splitlines()[-1], flush=True)
    for r in rows:
        r.pop("lid_of", None)
    (OUT / "sm_served.json").write_text(json.dumps({"bring_up": rows, "routing_phase": phase}, indent=1))
    md = table(rows)
    lines = [md, "", "Routing phase on equal work (OpenSM's LIDs, the same pairs):", "", phase_table(phase), ""]
    for net in dict.fromkeys(r["net"] for r in rows):
        for eng in a.engines.split(","):
            o = [r for r in rows if r["net"] == net and r["engine"] == eng and r["sm"] == "ours" and "error" not in r]
            s = [r for r in rows if r["net"] == net and r["engine"] == eng and r["sm"] == "OpenSM" and "error" not in r]
            if o and s:
                lines.append(f"{net} {eng}: OpenSM / ours, wall {s[0]['wall_s'] / max(o[0]['wall_s'], 1e-3):.2f}x, "
                             f"MADs {s[0]['mads'] / max(o[0]['mads'], 1):.2f}x, peak memory "
                             f"{s[0]['rss_mb'] / max(o[0]['rss_mb'], 1):.2f}x")
    (OUT / "sm_served.md").write_text("\n".join(lines) + "\n")
    print()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
