"""Parameter sweeps of the fabric simulator on Dask (`make fabric-sweep`): every point of a
grid is a task; a local cluster by default (one worker process per core), an existing
cluster by its scheduler's address. Results as a table (median and range over the seeds)
and PNG plots.

    python -m netsim.sweep [--scheduler tcp://host:8786] [--workers 2] [--out DIR]
                           [--k 8] [--loads 0.3,0.5,0.7,0.9] [--modes ib,pfc,lossy]
                           [--engines ftree,updn] [--seeds 3] [--size 65536]
                           [--vary NAME=V1,V2,...]

The sweep: a k-ary 3-level fat tree; every host starts flows of SIZE bytes to random others
as a Poisson process offering LOAD of its link for 200 us (at 100 Gb/s); each (mode, routing
engine, load, value of the varied parameter, seed) one run of netsim.fast. Modes: ib, pfc,
lossy, and the congestion-controlled ib+cc (IBA Annex A10) and pfc+dcqcn (RoCE's DCQCN),
their parameters below (VARIANTS). --vary sweeps any field of netsim.common.Params (PFC's
xoff and xon, the CC and DCQCN thresholds and timers, buffer sizes, ...) over the values
given, on top of the mode's. Reported per point: flows done, mean and 99th percentile flow
completion time, and the slowdown (FCT over the flow's time alone on an idle fabric: its
serialisation plus the path's latency).
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "sweep"

# the modes: Params on top of the sweep's base (100 Gb/s, 100 ns links, 100 KB per input port)
VARIANTS = {
    "ib": dict(mode="ib"),
    "pfc": dict(mode="pfc"),
    "lossy": dict(mode="lossy"),
    # IB CC: congested at 25 KB queued, +4 per BECN, a 1 us timer, 150 ns per table step
    "ib+cc": dict(mode="ib", cc=True, cc_threshold=400, ccti_increase=4, ccti_timer=12_500, cct_step=1_875),
    # DCQCN: ECN from 5 KB, always from 50 KB, at most 10 % between; the paper's timers at 100 Gb/s
    "pfc+dcqcn": dict(mode="pfc", dcqcn=True, ecn_kmin=80, ecn_kmax=800, ecn_pmax=0.1),
}


class SweepError(ValueError):
    pass


def parse_vary(text: str | None) -> tuple[str | None, list]:
    """'NAME=V1,V2' -> (NAME, [values as the Params field's type]); a name that is no Params
    field, or a value that is not of its type, is an error naming it."""
    from netsim.common import Params
    if not text:
        return None, [None]
    name, sep, vals = text.partition("=")
    fields = {f.name: f for f in dataclasses.fields(Params)}
    if not sep or name not in fields:
        raise SweepError(f"--vary {text!r}: NAME=V1,V2,... with NAME a field of netsim.common.Params "
                         f"(e.g. xoff, cc_threshold, ecn_kmin, buf_blocks)")
    kind = type(getattr(Params(), name))
    kind = int if kind is type(None) else kind
    out = []
    for v in vals.split(","):
        try:
            out.append(v.strip().lower() in ("1", "true", "yes") if kind is bool else kind(v))
        except ValueError:
            raise SweepError(f"--vary {name}: {v!r}, expected {kind.__name__}") from None
    return name, out


def point(k: int, mode: str, engine: str, load: float, seed: int, size: int, vary: str | None = None,
          value=None) -> dict:
    """One run: what a worker does (imports here: a worker may be a fresh process). `mode`:
    a VARIANTS name; `vary`, `value`: a Params field set on top of it."""
    from fabric.topology import fat_tree_3
    from netsim import fast
    from netsim.common import Params
    from netsim.workload import poisson
    from sm.fabric import Fabric
    from sm.routing import route
    t0 = time.perf_counter()
    fab = Fabric.from_topology(fat_tree_3(k))
    lft = route(fab, engine).lft
    if mode not in VARIANTS:
        raise SweepError(f"mode {mode!r}: one of {', '.join(VARIANTS)}")
    extra = {vary: value} if vary else {}
    prm = Params(**VARIANTS[mode] | dict(prop=1_250, buf_blocks=1_600, transport="irn", rto=250_000) | extra)
    prm.check()
    duration = 2_500_000                                                # 200 us at 100 Gb/s
    flows = poisson(fab.C, load, size, duration, seed, prm.mtu, prm.header)
    prm = dataclasses.replace(prm, max_time=20 * duration)
    res = fast.simulate(fab, lft, flows, prm)
    done = res.fct >= 0
    pkts = -(-size // prm.mtu)
    ideal = size + pkts * prm.header + 6 * prm.prop + 5 * prm.sw_latency          # alone, 5 switches
    fct = res.fct[done]
    return {"mode": mode, "engine": engine, "load": load, "vary": vary, "value": value, "seed": seed,
            "flows": len(flows),
            "done": int(done.sum()), "fct_mean_us": prm.ns(fct.mean()) / 1e3 if len(fct) else float("nan"),
            "fct_p99_us": prm.ns(np.percentile(fct, 99)) / 1e3 if len(fct) else float("nan"),
            "slowdown_mean": float(fct.mean() / ideal) if len(fct) else float("nan"),
            "drops": res.drops, "pauses": res.pauses, "wall_s": time.perf_counter() - t0}


def run(client, k, modes, engines, loads, seeds, size, vary=None, values=(None,)):
    grid = list(itertools.product(modes, engines, loads, values, range(1, seeds + 1)))
    futs = [client.submit(point, k, m, e, ld, sd, size, vary, v, pure=False) for m, e, ld, v, sd in grid]
    return client.gather(futs)


def _value(r: dict):
    """A row's value of the varied parameter (0 when nothing is varied: one group per mode)."""
    return r["value"] if r["value"] is not None else 0


def summarize(rows: list[dict]) -> list[dict]:
    out = []
    keyf = lambda r: (r["mode"], r["engine"], r["load"], _value(r))          # noqa: E731
    for key in sorted({keyf(r) for r in rows}):
        rs = [r for r in rows if keyf(r) == key]
        m = np.array([r["fct_mean_us"] for r in rs])
        p = np.array([r["fct_p99_us"] for r in rs])
        varied = {rs[0]["vary"]: rs[0]["value"]} if rs[0]["vary"] else {}
        out.append({"mode": key[0], "engine": key[1], "load": key[2], **varied, "seeds": len(rs),
                    "done": f"{sum(r['done'] for r in rs)}/{sum(r['flows'] for r in rs)}",
                    "FCT mean us (median, range)": f"{np.median(m):.1f} ({m.min():.1f}-{m.max():.1f})",
                    "FCT p99 us (median, range)": f"{np.median(p):.1f} ({p.min():.1f}-{p.max():.1f})",
                    "drops": sum(r["drops"] for r in rs), "PAUSEs": sum(r["pauses"] for r in rs)})
    return out


def plot(rows: list[dict], out: Path, k: int, size: int):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    engines = sorted({r["engine"] for r in rows})
    fig, axes = plt.subplots(1, len(engines), figsize=(5 * len(engines), 3.8), sharey=True, squeeze=False)
    for ax, engine in zip(axes[0], engines, strict=True):
        for mode, value in sorted({(r["mode"], _value(r)) for r in rows}):
            mine = [r for r in rows if r["engine"] == engine and r["mode"] == mode
                    and _value(r) == value]
            pts = sorted({r["load"] for r in mine})
            vals = [[r["fct_p99_us"] for r in mine if r["load"] == ld] for ld in pts]
            med = [np.median(v) for v in vals]
            lo = [min(v) for v in vals]
            hi = [max(v) for v in vals]
            ax.errorbar(pts, med, yerr=[np.subtract(med, lo), np.subtract(hi, med)], marker="o", capsize=3,
                        label=f"{mode} {mine[0]['vary']}={value}" if mine[0]["vary"] else mode)
        ax.set_title(f"routed {engine}", fontsize=10)
        ax.set_xlabel("offered load")
        ax.set_yscale("log")
    axes[0][0].set_ylabel("99th percentile FCT (us)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"k = {k} fat tree, Poisson flows of {size >> 10} KB: median and range over seeds")
    fig.tight_layout()
    fig.savefig(out / "fabric_sweep.png", dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m netsim.sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--scheduler", help="an existing Dask scheduler's address (default: a local cluster)")
    ap.add_argument("--workers", type=int, default=2, help="local cluster: worker processes (default 2)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--loads", default="0.3,0.5,0.7,0.9")
    ap.add_argument("--modes", default="ib,pfc,lossy")
    ap.add_argument("--engines", default="ftree,updn")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--size", type=int, default=64 << 10)
    ap.add_argument("--vary", help="NAME=V1,V2,...: a Params field swept on top of each mode (e.g. xoff=600,1200)")
    a = ap.parse_args(argv)
    try:
        vary, values = parse_vary(a.vary)
    except SweepError as e:
        ap.error(str(e))
    for m in a.modes.split(","):
        if m not in VARIANTS:
            ap.error(f"--modes: {m!r} is not one of {', '.join(VARIANTS)}")
    from dask.distributed import Client, LocalCluster
    loads = [float(x) for x in a.loads.split(",")]
    t0 = time.perf_counter()
    if a.scheduler:
        client = Client(a.scheduler)
        cluster = None
    else:
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        rows = run(client, a.k, a.modes.split(","), a.engines.split(","), loads, a.seeds, a.size, vary, values)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    summary = summarize(rows)
    keys = list(summary[0])
    md = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    md += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in summary]
    text = (f"### Fabric sweep: k = {a.k} fat tree, Poisson flows of {a.size} B"
            + (f", {vary} over {', '.join(map(str, values))}" if vary else "") + f", {len(rows)} runs on Dask "
            f"({a.scheduler or f'local cluster, {a.workers} workers'}), {time.perf_counter() - t0:.0f} s\n\n"
            + "\n".join(md) + "\n")
    print(text)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "fabric_sweep.md").write_text(text)
    plot(rows, a.out, a.k, a.size)
    print(f"wrote {a.out / 'fabric_sweep.md'} and {a.out / 'fabric_sweep.png'}")


if __name__ == "__main__":
    main()
