"""`make demo`: the 8-port switch at work.

Builds `ib_switch` for the chosen config (default: 8 ports, 128-bit datapath, 4 data VLs),
runs it in a simulator (Verilator by default) with the golden model in lock-step, and:
brings it up in-band from reset, as a subnet manager does (directed-route discovery, LID,
LFT, MFT, SL2VL, VLArb, ports Armed then Active; the switch's firmware answering on its
management port); sends
unicast and multicast packets on all VLs plus malformed and unroutable ones from link peers
that honour the switch's credit, with random tx backpressure; checks every delivered copy
(port, VL, bytes, ICRC, VCRC, order); reads every port counter back over AXI4-Lite; prints
what happened to each kind of packet, the counters and the latency; writes the VCD and the
Verilog.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

from contracts.config import get_config
from hw.verilog import generate
from verif.env.switch_env import OUTCOME
from verif.runner import SIMS, CocotbFailure, run_cocotb

SHOW = ["PortRcvPkts", "PortXmitPkts", "PortRcvData", "PortXmitData", "PortRcvErrors",
        "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "VL15ForSwitch", "MgmtRcvPkts", "PortXmitWait",
        "PortXmitDiscards"]


def _top(cfg):
    from hw.top.switch import IBSwitch
    return IBSwitch(cfg)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="default", help="a name from CONFIGS or a .json file")
    ap.add_argument("--sim", default="verilator", choices=SIMS)
    ap.add_argument("--packets", type=int, default=160)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--no-lockstep", action="store_true", help="RTL and scoreboard only, without the model")
    ap.add_argument("--out", default="build/demo")
    a = ap.parse_args(argv)
    cfg = get_config(a.config)
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    res_path = out / "demo.json"
    res_path.unlink(missing_ok=True)
    print(f"ib_switch, config {cfg.name}: {cfg.ports} ports, W={cfg.data_width} bits, {cfg.data_vls} data VLs + VL15, "
          f"MTU {cfg.mtu}, {cfg.buffer_blocks_per_vl} x 64 B buffer per input VL; simulator {a.sim}"
          f"{'' if a.no_lockstep else ', golden model in lock-step'}")
    scen = {"seed": a.seed, "packets": a.packets, "lockstep": not a.no_lockstep}
    t0 = time.time()
    try:
        run = run_cocotb(top=_top, name="ib_switch", test_module="scenarios.switch", sim=a.sim, cfg=cfg,
                         testcase="demo", waves=True, tag=f"demo-{cfg.name}", rerun_with_waves=False,
                         params={**scen, "results": str(res_path)}, quiet=True, say=lambda s: print(f"  {s}"))
    except CocotbFailure as e:
        print(f"\nDEMO FAILED:\n{e}", file=sys.stderr)
        return 1
    r = json.loads(res_path.read_text())
    n = cfg.ports

    print(f"\nin-band bring-up by a subnet manager's node on port 1 ({r['mads']} MADs, {r['bring_up_cycles']} "
          f"cycles); the switch's firmware (fw/) answers on the management port:")
    for line in r["bring_up"]:
        print(f"  {line}")
    print(f"\n{r['cycles']} cycles in {time.time() - t0:.0f} s (build included)"
          f"{', RTL and model agreed on every output every cycle' if r['lockstep'] else ''}; scoreboard clean.")
    print("\npackets sent, by kind                          outcome")
    for k, v in r["kinds"].items():
        print(f"  {k:<40} {v:>5}   {OUTCOME[k]}")
    print(f"  good copies delivered: {r['copies']}; bad packets: {r['ebp_copies']} copies left marked bad (EBP) "
          f"after cut-through began, {r['bad_copies'] - r['ebp_copies']} dropped before forwarding")

    print("\nport counters, read over AXI4-Lite (equal to what the link peers sent and saw):")
    short = [c.replace("Port", "").replace("SwitchRelayErrors", "RelayErrors")
             .replace("RemotePhysicalErrors", "RemotePhys") for c in SHOW]
    print("port " + "".join(f"{c:>15}" for c in short))
    for p in range(n):
        c = r["counters"][str(p)]
        print(f"{p:>4} " + "".join(f"{c[x]:>15}" for x in SHOW))
    print("     (Data in 4-byte words; RelayErrors = PortRcvSwitchRelayErrors)")

    print("\nthe same counters read by the SM over PMA (PortCounters GMPs on VL 0 to the switch's LID; "
          "Data in bytes / 4, 32-bit):")
    keys = ["XMT_PKTS", "RCV_PKTS", "XMT_BYTES", "RCV_BYTES", "ERR_RCV", "XMT_DISCARDS", "VL15_DROPPED"]
    print("IBA port " + "".join(f"{k:>14}" for k in keys))
    for p, c in sorted(r["pma"].items(), key=lambda x: int(x[0])):
        print(f"{p:>8} " + "".join(f"{c[k]:>14}" for k in keys))
    st = r["fw_stats"]
    print(f"firmware: {st['responses_sent']} answers sent; {st['malformed']} packets for the switch that were "
          f"not MADs dropped (the traffic's VL15/LFT-0 packets carry random payloads)")

    lat = r["latency"]
    if lat:
        q = statistics.quantiles(lat, n=100) if len(lat) > 1 else [lat[0]] * 99
        print(f"\nrx sop -> tx sop latency over {len(lat)} delivered copies (cycles; includes queueing behind "
              f"other packets and tx backpressure):\n  min {min(lat)}  median {statistics.median(lat):.0f}  "
              f"mean {statistics.mean(lat):.1f}  p99 {q[98]:.0f}  max {max(lat)}")
    with warnings.catch_warnings():                # Amaranth's notes on the elaboration: the build log has them
        warnings.simplefilter("ignore")
        vpaths = generate(cfg, out / "verilog", ["ib_switch"])
    print(f"\nVCD:     {r['vcd']}\n         python -m verif.waves {r['vcd']} --signals 'tx__0__valid,tx__0__sop'"
          f"   (or open it in GTKWave)")
    print(f"Verilog: {vpaths[0]}  ({vpaths[0].stat().st_size // 1024} KiB)")
    return 0 if run["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
