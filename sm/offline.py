"""Route a fabric offline: a net file, or a generated topology, through one of our engines;
print the time, peak memory, balance, unrouted pairs, VLs and the deadlock verdict, and
optionally write OpenSM-format dumps for outside checkers (ibdmchk).

    python -m sm.offline fabric.net --engine updn --dump build/sm/run1
    python -m sm.offline --gen ft3:32 --engine ftree --check
    python -m sm.offline --gen torus:8x8:1 --engine layered --check
    python -m sm.offline --gen ft3:8 --engine minhop --check --scope ca-ca

Balance is OpenSM's path distribution: the number of destination LIDs a switch sends out of
each of its ports (dump_ucast_path_distribution); we give the maximum over every switch
port toward another switch, and the mean.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from fabric.topology import GENERATORS, NetFileError, read_netfile
from sm.fabric import Fabric, FabricError
from sm.opensm import vm_hwm_kb
from sm.routing import ENGINES, NO_ROUTE, Routes, route

__all__ = ["generate", "summarise", "main"]


def generate(spec: str):
    """'ft2:8', 'ft3:32', 'torus:8x8[:hosts]', 'mesh:4x4[:hosts]', 'dragonfly:a:p:h'."""
    kind, _, rest = spec.partition(":")
    try:
        if kind in ("ft2", "ft3"):
            return GENERATORS[kind](int(rest))
        if kind in ("torus", "mesh"):
            dims, _, hosts = rest.partition(":")
            x, y = (int(v) for v in dims.split("x"))
            return GENERATORS["torus"](x, y, int(hosts or 1), wrap=kind == "torus")
        if kind == "dragonfly":
            a, p, h = (int(v) for v in rest.split(":"))
            return GENERATORS["dragonfly"](a, p, h)
    except ValueError as e:
        raise SystemExit(f"--gen {spec}: {e}") from None
    raise SystemExit(f"--gen {spec}: unknown (ft2:K, ft3:K, torus:XxY[:H], mesh:XxY[:H], dragonfly:A:P:H)")


def summarise(fab: Fabric, r: Routes) -> dict:
    """Balance and unrouted pairs of a routing."""
    lft = r.lft
    sw_port = fab.nbr >= 0
    per_port = np.zeros_like(fab.nbr, dtype=np.int64)
    for s in range(fab.S):
        per_port[s] = np.bincount(lft[s, 1:], minlength=256)[:fab.P + 1]
    loads = per_port[sw_port]
    ca_sources = np.array([bool(c) for c in fab.cas_at])
    dst_ok = fab.lid_dst[1:] >= 0
    unrouted_ca = int((lft[ca_sources][:, 1:][:, dst_ok] == NO_ROUTE).sum())
    unrouted_all = int((lft[:, 1:][:, dst_ok] == NO_ROUTE).sum())
    return {"max_lids_per_link": int(loads.max()) if loads.size else 0,
            "mean_lids_per_link": float(loads.mean()) if loads.size else 0.0,
            "unrouted_from_ca_switches": unrouted_ca, "unrouted_switch_lid_pairs": unrouted_all, "vls": r.vls}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("netfile", nargs="?")
    ap.add_argument("--gen", help="a generated topology instead of a net file (see generate())")
    ap.add_argument("--engine", default="updn", choices=sorted(ENGINES))
    ap.add_argument("--check", action="store_true", help="prove deadlock freedom on the channel dependency graph")
    ap.add_argument("--scope", choices=("ca-ca", "ca-all", "all"),
                    help="--check's paths (sm.cdg): CA to CA (ibdmchk's default), CAs to every LID, or every "
                         "switch to every LID (ibdmchk -a); default all, or ca-all for a routing with SLs")
    ap.add_argument("--dump", help="write opensm-subnet.lst and opensm.fdbs (and, for a routing with SLs, "
                                   "path-sl.txt and opensm-sl2vl.dump for ibdmchk -c/-d) into this directory")
    ap.add_argument("--json", action="store_true", help="one JSON line of results")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    try:
        topo = generate(a.gen) if a.gen else read_netfile(a.netfile) if a.netfile else None
    except NetFileError as e:
        print(f"sm.offline: {e}", file=sys.stderr)
        return 2
    if topo is None:
        ap.error("a net file or --gen")
    t_load = time.perf_counter() - t0
    try:
        fab = Fabric.from_topology(topo)
        r = route(fab, a.engine)
    except FabricError as e:
        print(f"sm.offline: {e}", file=sys.stderr)
        return 1
    res = {"topology": topo.name, "switches": fab.S, "cas": fab.C, "max_lid": fab.max_lid,
           "extended_lids": fab.extended_lids, "engine": r.engine, "load_s": round(t_load, 2),
           "route_s": round(r.info["seconds"], 2), **summarise(fab, r)}
    if a.check:
        from sm.cdg import check
        t1 = time.perf_counter()
        c = check(fab, r, scope=a.scope)
        res.update(cdg_acyclic=c.acyclic, cdg_s=round(time.perf_counter() - t1, 2), cdg_mode=c.mode,
                   cdg_scope=c.scope,
                   cdg_channels=c.channels, cdg_edges=c.edges)
        if not c.acyclic:
            res["cdg_cycle"] = [f"{s}:{p}/VL{v}" for s, p, v in c.cycle]
    if a.dump:
        from sm.dumps import write_dumps
        res["dumps"] = [str(p) for p in write_dumps(fab, r, a.dump)]
    res["peak_rss_mb"] = round(vm_hwm_kb() / 1024)          # this process's own, not its parent's
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k:>26}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
