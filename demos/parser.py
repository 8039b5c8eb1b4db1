"""`make demo`: the receive parser/checker of the default switch config at work.

Elaborates the default SwitchConfig, pushes a mixed stream of good packets, flow-control
packets and every malformed class through the RTL (Amaranth simulator) in lock-step with the
golden model, then prints what happened to each class of packet and the error counters,
and writes the VCD and the Verilog. (Until the switch core exists, the parser is the main
job; see the README.)
"""
from __future__ import annotations

import argparse
import random
import time
from collections import Counter, defaultdict
from pathlib import Path

from contracts.config import get_config
from contracts.defs import RxError
from contracts.link import rx_parser
from hw.link.rx_parser import RxParser
from hw.verilog import generate
from models.rx_parser import RxParserModel
from verif.ib.rx_scoreboard import check_rx_parser
from verif.ib.stimulus import MALFORMED_KINDS, RX_IDLE, cycles, expected_verdicts, idle_random, make_item, mixed_items
from verif.monitors import FCMonitor, ParsedMonitor
from verif.pysim import pysim_lockstep


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--config", default="default")
    ap.add_argument("--packets", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", default="build/demo")
    a = ap.parse_args(argv)
    cfg = get_config(a.config)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(a.seed)

    print(f"config {cfg.name}: {cfg.ports} ports, W={cfg.data_width} bits, {cfg.data_vls} data VLs, "
          f"MTU {cfg.mtu}, largest packet {cfg.max_packet_bytes} B")
    # every malformed class at least twice, then a random mix
    items = [make_item(k, cfg, rng) for k in MALFORMED_KINDS * 2]
    items = [x for it in items for x in ([it, make_item("good", cfg, rng)] if it.kind == "truncated" else [it])]
    items += mixed_items(cfg, rng, a.packets)
    items.append(make_item("good", cfg, rng))
    stim = list(cycles(items, idle_random(0.15, rng))) + [dict(RX_IDLE)] * 4

    mon, fcmon = ParsedMonitor(cfg.data_width), FCMonitor()
    latency = []
    rx_sop_cycle = []

    def observe(i, o):
        n = len(latency_log)
        if i["rx__valid"] and i["rx__sop"] and not i["rx__link"]:
            rx_sop_cycle.append(n)
        if o["out__valid"] and o["out__sop"]:
            latency.append(n)
        latency_log.append(1)
        mon(i, o)
        fcmon(i, o)

    latency_log: list[int] = []
    vcd = out / "rx_parser.vcd"
    model = RxParserModel(cfg)
    t0 = time.time()
    _, outs, qual = rx_parser(cfg).ports()
    pysim_lockstep(RxParser(cfg), model, stim, outs, qual, vcd=str(vcd), on_cycle=observe)
    dt = time.time() - t0
    counters = dict(model.counters)
    check_rx_parser(cfg, items, mon, fcmon, counters)

    # ---- what happened to each class
    verdicts = expected_verdicts(items)
    per = defaultdict(Counter)
    fwd_iter = iter(mon.packets)
    for it, (v, f) in zip(items, verdicts, strict=True):
        kind = it.kind if not (v == RxError.FRAMING and it.kind in ("good", "link")) else f"{it.kind} (lost)"
        per[kind]["sent"] += 1
        if f:
            p = next(fwd_iter)
            per[kind]["fwd good" if not p.bad else "fwd bad (EBP)"] += 1
        elif it.link and v == RxError.NONE:
            per[kind]["fc pulse"] += 1
        else:
            per[kind]["dropped"] += 1
        per[kind][f"verdict {v.name}"] += 1
    print(f"\n{len(stim)} cycles in lock-step with the golden model, no divergence "
          f"({len(stim) / dt:.0f} cycles/s in the Amaranth simulator); scoreboard clean.\n")
    cols = ["sent", "fwd good", "fwd bad (EBP)", "dropped", "fc pulse"]
    print(f"{'packet class':<20}" + "".join(f"{c:>15}" for c in cols) + "   verdict")
    for kind in ["good", "link"] + MALFORMED_KINDS + ["good (lost)", "link (lost)"]:
        if kind not in per:
            continue
        c = per[kind]
        vs = ", ".join(k.split()[1] for k in c if k.startswith("verdict"))
        print(f"{kind:<20}" + "".join(f"{c[x]:>15}" for x in cols) + f"   {vs}")
    print("\nerror counters (RTL, equal to the model's and to the scoreboard's):")
    for name, v in counters.items():
        print(f"  {name:<12} {v:>6}")
    lat = [o - i for i, o in zip(rx_sop_cycle_forwarded(items, verdicts, rx_sop_cycle), latency, strict=False)]
    if lat:
        print(f"\nrx sop -> out sop latency: {min(lat)}..{max(lat)} cycle(s) over {len(lat)} forwarded packets")
    vpaths = generate(cfg, out / "verilog", ["ib_rx_parser"])
    print(f"\nVCD:     {vcd}   (python -m verif.waves {vcd})")
    print(f"Verilog: {vpaths[0]}")


def rx_sop_cycle_forwarded(items, verdicts, rx_sops):
    """rx sop cycles of the data items that were forwarded, in order."""
    data_items = [(it, f) for it, (v, f) in zip(items, verdicts, strict=True)
                  if not it.link and it.kind != "stray"]
    return [c for (it, f), c in zip(data_items, rx_sops, strict=False) if f]


if __name__ == "__main__":
    main()
