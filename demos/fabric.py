"""`make fabric-demo`: a fabric of our switches, brought up in-band by our subnet manager,
with traffic through it.

The fabric is `fat_tree_2(8)`: 8 leaf and 4 spine switches of radix 8, 32 channel adapters;
CA H0 is the SM's node, the other 31 are hardware endpoints (traffic generator + checker).
In Verilator (scenarios/fabric_inband.py::fabric_demo, the same build as the fabric test
of `make sim-long`): the SM discovers the fabric by directed-route SMPs, assigns LIDs, routes (ftree),
programs every switch and brings the ports Active; every endpoint of leaf g then sends
back-to-back packets to the CAs of leaf g + 1, so everything crosses the spines.

Printed: the bring-up steps, the traffic (packets, cycles, simulation speed), a table per
switch-to-switch link and direction (utilisation = data flits sent / cycles, PortXmitWait =
cycles a packet waited for credit or the link, packets), the endpoints' latency; written:
build/fabric-demo/fabric.png (the topology, each cable's width and colour by its load) and
build/fabric-demo/result.json.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(packets: int, out: Path) -> dict:
    from scenarios.fabric_inband import run_fabric
    from verif.runner import CocotbFailure
    res = out / "result.json"
    res.unlink(missing_ok=True)
    try:
        run_fabric("scenarios.fabric_inband", "fabric_demo", {"packets": packets, "out": str(res)}, quiet=True,
                   say=lambda s: print(f"  {s}"))
    except CocotbFailure as e:
        print(f"fabric-demo: the simulation failed:\n{e}", file=sys.stderr)
        raise SystemExit(1) from None
    return json.loads(res.read_text())


def links():
    """The demo's topology and its cables (a, pa, b, pb), from the net file."""
    from fabric.topology import fat_tree_2
    topo = fat_tree_2(8)
    return topo, topo.links()


def table(r: dict) -> list[dict]:
    topo, cab = links()
    cyc, nb = r["cycles"], r["bytes_per_flit"]
    rows = []
    for a, pa, b, pb in cab:
        for x, px, y, py in ((a, pa, b, pb), (b, pb, a, pa)):
            c = r["ports"].get(f"{x}:{px}")
            if c is None:
                continue                                  # from a CA: the endpoint's side
            flits = c["PortXmitData"] * 4 / nb
            rows.append({"from": f"{x}:{px}", "to": f"{y}:{py}", "util": flits / max(cyc, 1),
                         "wait": c["PortXmitWait"], "pkts": c["PortXmitPkts"],
                         "errors": c["PortRcvErrors"] + c["PortXmitDiscards"] + c["PortRcvSwitchRelayErrors"],
                         "sw_sw": topo.nodes[y].is_switch})
    return rows


def picture(r: dict, rows: list[dict], path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    topo, cab = links()
    sws = [n.name for n in topo.switches()]
    spines = [s for s in sws if s.startswith("S")]
    leaves = [s for s in sws if s.startswith("L")]
    hosts = [n.name for n in topo.hcas()]
    pos = {}
    for i, s in enumerate(spines):
        pos[s] = ((i + 0.5) * len(leaves) / len(spines), 2.0)
    for i, s in enumerate(leaves):
        pos[s] = (i + 0.5, 1.0)
    for i, h in enumerate(hosts):
        pos[h] = ((i + 0.5) * len(leaves) / len(hosts), 0.0)
    load = {}
    for x in rows:
        a, b = x["from"].split(":")[0], x["to"].split(":")[0]
        key = tuple(sorted((a, b)))
        load[key] = max(load.get(key, 0.0), x["util"])
    fig, ax = plt.subplots(figsize=(11, 5.5))
    cmap = matplotlib.colormaps["viridis"]
    for a, _pa, b, _pb in cab:
        u = load.get(tuple(sorted((a, b))), 0.0)
        (x0, y0), (x1, y1) = pos[a], pos[b]
        ax.plot([x0, x1], [y0, y1], color=cmap(min(u / 0.6, 1.0)), lw=0.6 + 6 * u, zorder=1)
    for names, colour, size in ((spines, "#d62728", 260), (leaves, "#1f77b4", 200), (hosts, "#7f7f7f", 40)):
        ax.scatter([pos[n][0] for n in names], [pos[n][1] for n in names], s=size, c=colour, zorder=2)
    for n in spines + leaves:
        ax.annotate(n, pos[n], ha="center", va="center", fontsize=7, color="white", zorder=3)
    sm = r["sm_ca"]
    ax.annotate("SM", pos[sm], xytext=(pos[sm][0], -0.35), ha="center", fontsize=8, color="#d62728")
    sc = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 0.6))
    fig.colorbar(sc, ax=ax, label="link utilisation (busier direction; data flits / cycle)")
    ax.set_title(f"fat_tree_2(8) in RTL: 12 switches, 31 endpoints + the SM's node; "
                 f"{r['cycles']} cycles of traffic leaf g -> leaf g+1")
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packets", type=int, default=240, help="packets per endpoint")
    ap.add_argument("--out", default="build/fabric-demo")
    ap.add_argument("--report-only", action="store_true", help="tables and picture from the last run's result.json")
    a = ap.parse_args(argv)
    out = (ROOT / a.out) if not Path(a.out).is_absolute() else Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    r = json.loads((out / "result.json").read_text()) if a.report_only else run(a.packets, out)
    print("\n== bring-up by our subnet manager (in-band, directed-route SMPs from the SM's node on H0)")
    for line in r["log"]:
        print("  " + line)
    rows = table(r)
    print(f"\n== switch-to-switch links, {r['cycles']} cycles of traffic "
          f"({r['cycles'] / max(r['wall_s'], 1e-9):.0f} fabric cycles/s in Verilator)")
    print(f"  {'from':>6} {'to':>6} {'util':>6} {'XmitWait':>9} {'packets':>8} {'errors':>7}")
    for x in sorted((x for x in rows if x["sw_sw"]), key=lambda x: (x["from"][0] != "L", x["from"])):
        print(f"  {x['from']:>6} {x['to']:>6} {x['util']:6.3f} {x['wait']:9d} {x['pkts']:8d} {x['errors']:7d}")
    up = [x["util"] for x in rows if x["sw_sw"] and x["from"].startswith("L")]
    print(f"  leaf -> spine utilisation: min {min(up):.3f}, max {max(up):.3f} "
          f"(ftree spreads each leaf's destinations over its 4 up ports)")
    eps = r["endpoints"]
    lat = [e["lat_sum"] / e["rcv_good"] for e in eps.values() if e["rcv_good"]]
    print(f"\n== endpoints: {sum(e['sent'] for e in eps.values())} packets sent, "
          f"{sum(e['rcv_good'] for e in eps.values())} received good, "
          f"{sum(e['rcv_pkts'] - e['rcv_good'] for e in eps.values())} bad; latency (generation to check, "
          f"cycles): mean {sum(lat) / len(lat):.0f}, min {min(e['lat_min'] for e in eps.values() if e['rcv_good'])}, "
          f"max {max(e['lat_max'] for e in eps.values())}")
    png = out / "fabric.png"
    picture(r, rows, png)
    (out / "table.json").write_text(json.dumps(rows, indent=1))
    print(f"\nwrote {png} and {out / 'result.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
