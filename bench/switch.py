"""`make bench-switch`: the switch RTL's latency, throughput and simulation speed, as tables
and PNG plots (build/bench/).

1. Uncontended latency: one packet at a time through an idle switch (permutation traffic at
   1 % load), rx sop -> tx sop in cycles, per config.
2. Accepted vs offered load on the 8-port benchmark config `b8` (W=128, MTU 4096, 2 data
   VLs of 128 KB buffer each): uniform random on VL 0, uniform random over both VLs
   (uniform-2vl; the peers keep a send queue per VL), permutation (i -> i+1), hotspot (half
   of all traffic to port 0) and incast (every input to port 0), packet sizes 64 B to 4 KB.
   Offered load is per input in flits/cycle (1.0 = saturated sources: every input always has
   a packet waiting); accepted is the data flits leaving per output per cycle (incast: on
   port 0). Link peers honour credit; tx is always ready. Points at load >= 0.9 first fill
   the input buffers (warm-up of twice a VL buffer) and measure over >= 400 packet times
   (shorter windows scatter by +-1.5 % at 4 KB).
3. Simulator speed on the 8-port `default` config: cycles/s of Icarus and Verilator driven
   by cocotb (RTL alone), with the golden model in lock-step, and the model alone.

RTL in Verilator, measured over a window after a warm-up; numbers are measurements of this
run, not targets. Tests never check them.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from contracts.config import CONFIGS
from verif.runner import run_cocotb

OUT = Path("build/bench")
PATTERNS = ["uniform", "uniform-2vl", "permutation", "hotspot", "incast"]
SIZES = [64, 256, 1024, 4096]


def _top(cfg):
    from hw.top.switch import IBSwitch
    return IBSwitch(cfg)


def _run(cfg, testcase, scen, sim="verilator", tag=None) -> dict:
    OUT.mkdir(parents=True, exist_ok=True)
    res = (OUT / f"{tag or testcase}-{cfg.name}-{sim}.json").resolve()
    res.unlink(missing_ok=True)
    run_cocotb(top=_top, name="ib_switch", test_module="scenarios.switch", sim=sim, cfg=cfg,
               testcase=testcase, waves=False, rerun_with_waves=False, tag=f"bench-{cfg.name}", cxx_opt="-Os",
               params={**scen, "results": str(res)})
    return json.loads(res.read_text())


def latency(configs) -> list[dict]:
    rows = []
    for name in configs:
        cfg = CONFIGS[name]
        r = _run(cfg, "bench", {"scenarios": [
            {"pattern": "permutation", "size": 64, "load": 0.01, "warmup": 200, "window": 3000},
            {"pattern": "permutation", "size": min(1024, cfg.mtu), "load": 0.01, "warmup": 200, "window": 6000}]},
            tag="latency")["results"]
        for x in r:
            rows.append({"config": name, "ports": cfg.ports, "W": cfg.data_width, "size": x["size"],
                         "min": x["lat_min"], "mean": x["lat_mean"], "packets": x["packets"]})
    return rows


def throughput(quick: bool, saturation: bool = False, patterns=PATTERNS, sizes=SIZES) -> list[dict]:
    cfg = CONFIGS["b8"]
    loads = [0.3, 0.6, 0.9, 1.0] if quick else [0.2, 0.4, 0.6, 0.8, 0.9, 0.95, 1.0]
    if saturation:
        loads = [1.0]
    scen = []
    buffer_flits = cfg.buffer_blocks_per_vl * 64 // cfg.bytes_per_flit
    for pat in patterns:
        for size in sizes:
            flits = -(-size // cfg.bytes_per_flit)
            for load in (loads if pat in ("uniform", "hotspot") or saturation else [0.5, 1.0]):
                if load >= 0.9 and not quick:            # fill the buffers, long window
                    warm, window = 2 * buffer_flits + 10 * flits, max(6000, 400 * flits)
                elif load >= 0.9:
                    warm, window = buffer_flits + 4 * flits, max(3000, 30 * flits)
                else:
                    warm, window = max(500, 4 * flits), max(1500, (30 if not quick else 12) * flits)
                scen.append({"pattern": pat, "size": size, "load": load, "warmup": warm, "window": window,
                             "seed": 7, "vls": 2 if pat == "uniform-2vl" else 1})
    t0 = time.time()
    r = _run(cfg, "bench", {"scenarios": scen}, tag="throughput")["results"]
    print(f"({len(scen)} traffic points in {time.time() - t0:.0f} s)")
    return r


def speed() -> list[dict]:
    cfg = CONFIGS["default"]
    rows = []
    for sim in ("icarus", "verilator"):
        for lock in (False, True):
            r = _run(cfg, "demo", {"packets": 40, "lockstep": lock, "seed": 3}, sim=sim, tag=f"speed-{lock}")
            rows.append({"what": f"{sim}, {'lock-step with the model' if lock else 'RTL driven by cocotb'}",
                         "cycles": r["cycles"], "cycles_per_s": r["cycles"] / r["wall_s"]})
    # the model alone on the same traffic
    from models.switch import SwitchModel
    from verif.env.switch_env import MixedTraffic, SwitchEnv
    env = SwitchEnv(cfg, random.Random(3), ready_p=0.95, rx_p=0.95)
    mix = MixedTraffic(cfg, env, packets=40)
    model = SwitchModel(cfg)
    t0 = time.perf_counter()
    for i in mix.stim():
        env.observe(i, model.step(i))
    rows.append({"what": "golden model alone (SwitchModel, Python)", "cycles": mix.cycles,
                 "cycles_per_s": mix.cycles / (time.perf_counter() - t0)})
    return rows


def _curves(ax, rows, pattern, key):
    for size in SIZES:
        pts = sorted((r["offered"], r[key]) for r in rows
                     if r["pattern"] == pattern and r["size"] == size and r[key] is not None)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{size} B")
    ax.grid(alpha=0.3)


def plots(rows):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plots)")
        return []
    out = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, pat in zip(axes, ["uniform", "hotspot"], strict=True):       # uniform-2vl: saturation only
        _curves(ax, rows, pat, "accepted")
        ax.plot([0, 1], [0, 1], color="grey", lw=0.6, ls="--")
        ax.set(title=f"b8 switch, {pat} traffic", xlabel="offered load per input (flits/cycle)",
               ylabel="accepted per output (flits/cycle)", xlim=(0, 1.05), ylim=(0, 1.05))
        ax.legend()
    fig.tight_layout()
    out.append(OUT / "switch_throughput.png")
    fig.savefig(out[-1], dpi=110)
    fig, ax = plt.subplots(figsize=(6, 4.2))
    _curves(ax, rows, "uniform", "lat_mean")
    ax.set(title="b8 switch, uniform traffic: mean rx sop -> tx sop", xlabel="offered load per input",
           ylabel="cycles", yscale="log")
    ax.legend()
    fig.tight_layout()
    out.append(OUT / "switch_latency.png")
    fig.savefig(out[-1], dpi=110)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer load points, shorter windows")
    ap.add_argument("--saturation", action="store_true", help="throughput at offered load 1.0 only")
    ap.add_argument("--only", choices=["latency", "throughput", "speed"], action="append")
    ap.add_argument("--patterns", default=",".join(PATTERNS), help="throughput: comma-separated subset")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="throughput: packet sizes in bytes")
    a = ap.parse_args(argv)
    parts = a.only or ["latency", "throughput", "speed"]
    OUT.mkdir(parents=True, exist_ok=True)
    if "latency" in parts:
        lat = latency(["small", "default", "b8"])
        print("\nuncontended latency, rx sop -> tx sop (cycles)")
        print(f"{'config':>8} {'ports':>6} {'W':>5} {'bytes':>6} {'min':>5} {'mean':>6} {'packets':>8}")
        for r in lat:
            print(f"{r['config']:>8} {r['ports']:>6} {r['W']:>5} {r['size']:>6} {r['min']:>5} {r['mean']:>6.1f} "
                  f"{r['packets']:>8}")
    if "throughput" in parts:
        pats = a.patterns.split(",")
        bad = sorted(set(pats) - set(PATTERNS))
        if bad:
            ap.error(f"--patterns: unknown {', '.join(bad)} (known: {', '.join(PATTERNS)})")
        rows = throughput(a.quick, a.saturation, pats, [int(x) for x in a.sizes.split(",")])
        (OUT / "switch_throughput.json").write_text(json.dumps(rows, indent=1))
        print("\naccepted vs offered load, config b8 (8 ports, W=128, 2 data VLs of 2048 blocks; flits/cycle "
              "per port)")
        print(f"{'pattern':>12} {'bytes':>6} {'offered':>8} {'accepted':>9} {'min out':>8} {'lat mean':>9} "
              f"{'lat p99':>8} {'kcyc/s':>7}")
        for r in rows:
            used = [r["per_output"][0]] if r["pattern"] == "incast" else r["per_output"]
            print(f"{r['pattern']:>12} {r['size']:>6} {r['offered']:>8.2f} {r['accepted']:>9.3f} {min(used):>8.3f} "
                  f"{(r['lat_mean'] or 0):>9.1f} {(r['lat_p99'] or 0):>8} {r['cycles_per_s'] / 1000:>7.1f}")
        for p in plots(rows):
            print(f"plot: {p}")
    if "speed" in parts:
        print("\nsimulation speed, config default (8 ports, W=128, 4 data VLs), mixed traffic")
        for r in speed():
            print(f"  {r['what']:<45} {r['cycles_per_s']:>9.0f} cycles/s   ({r['cycles']} cycles)")


if __name__ == "__main__":
    main()
