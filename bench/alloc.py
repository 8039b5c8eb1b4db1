"""`make bench-alloc`: accepted vs offered load of an input-queued switch scheduled by the
iSLIP allocator model (models/allocator.py, held in lock-step with the RTL by the tests).

Uniform random traffic: every input starts a packet with probability load/L per cycle, to
a uniformly random output; packets take L cycles to cross (one flit per cycle). With
virtual output queues the allocator sees every (input, output) with a packet; the FIFO
baseline lets each input request only the output of its head-of-line packet (the 58.6 %
saturation of Karol et al.). Permutation traffic: input i always sends to output
(i + 1) mod N.

Second table: packet-granular matching with a bounded input buffer, as in the switch (the
credit window bounds what an input holds): saturated sources fill each input's buffer of B
packets in order (uniform destinations, the VOQs share the buffer, a packet's room is freed
at its tail); plain iSLIP against iSLIP with depth priority (deep = the VOQ holds more than
its head packet; every K-th match of an output a plain grant).
"""
from __future__ import annotations

import argparse
import random
from collections import deque

from models.allocator import ISlipModel


def simulate(n, load, plen, cycles, *, voq=True, iterations=1, pattern="uniform", seed=1):
    rng = random.Random(seed)
    alloc = ISlipModel(n, iterations)
    queues = [[deque() for _ in range(n)] for _ in range(n)] if voq else [deque() for _ in range(n)]
    sending = {}                 # input -> remaining flits
    delivered = 0
    offered = 0
    warm = cycles // 5
    for cyc in range(cycles):
        for i in range(n):
            if rng.random() < load / plen:
                o = rng.randrange(n) if pattern == "uniform" else (i + 1) % n
                if cyc >= warm:
                    offered += plen
                (queues[i][o] if voq else queues[i]).append((o, cyc))
        # matches registered last cycle: the datapath sends their first flit now
        for o, i in alloc.match.items():
            (queues[i][o] if voq else queues[i]).popleft()
            sending[i] = plen
        done = {}
        for i in list(sending):
            sending[i] -= 1
            if cyc >= warm:
                delivered += 1
            if sending[i] == 0:               # tail this cycle: the input is free again
                done[i] = 1
                del sending[i]
        inp = {f"done__{i}": done.get(i, 0) for i in range(n)}
        for i in range(n):
            if i in sending:
                inp[f"req__{i}"] = 0
            elif voq:
                inp[f"req__{i}"] = sum(1 << o for o in range(n) if queues[i][o])
            else:
                inp[f"req__{i}"] = (1 << queues[i][0][0]) if queues[i] else 0
        alloc.step(inp)
    measured = cycles - warm
    return delivered / (n * measured), offered / (n * measured)


def simulate_buffered(n, plen, cycles, buffer_pkts, *, iterations=2, fair_every=1, seed=1):
    """Accepted load (fraction of line rate) with saturated sources and B-packet input buffers."""
    rng = random.Random(seed)
    alloc = ISlipModel(n, iterations, fair_every)
    queues = [[0] * n for _ in range(n)]
    held = [0] * n                           # packets in each input's buffer (queued + being sent)
    sending = {}
    delivered = 0
    warm = cycles // 4
    for cyc in range(cycles):
        for i in range(n):
            while held[i] < buffer_pkts:
                queues[i][rng.randrange(n)] += 1
                held[i] += 1
        for o, i in alloc.match.items():
            queues[i][o] -= 1
            sending[i] = plen
        done = {}
        for i in list(sending):
            sending[i] -= 1
            delivered += cyc >= warm
            if sending[i] == 0:
                done[i] = 1
                held[i] -= 1
                del sending[i]
        inp = {f"done__{i}": done.get(i, 0) for i in range(n)}
        for i in range(n):
            idle = i not in sending or i in done
            inp[f"req__{i}"] = sum(1 << o for o in range(n) if queues[i][o]) if idle else 0
            inp[f"deep__{i}"] = sum(1 << o for o in range(n) if queues[i][o] >= 2) if idle else 0
        alloc.step(inp)
    return delivered / (n * (cycles - warm))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ports", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=20000)
    ap.add_argument("--plen", type=int, default=4, help="flits per packet")
    a = ap.parse_args(argv)
    n = a.ports
    print(f"{n} ports, packets of {a.plen} flits, {a.cycles} cycles; accepted load (fraction of line rate)")
    print(f"{'offered':>8} {'FIFO':>8} {'VOQ iSLIP-1':>12} {'VOQ iSLIP-2':>12} {'VOQ iSLIP-3':>12} {'permutation':>12}")
    for load in (0.5, 0.7, 0.8, 0.9, 0.95, 1.0):
        fifo, _ = simulate(n, load, a.plen, a.cycles, voq=False)
        r = [simulate(n, load, a.plen, a.cycles, iterations=k)[0] for k in (1, 2, 3)]
        perm, _ = simulate(n, load, a.plen, a.cycles, pattern="perm")
        print(f"{load:>8.2f} {fifo:>8.3f} {r[0]:>12.3f} {r[1]:>12.3f} {r[2]:>12.3f} {perm:>12.3f}")
    plen, cyc = 32, 5 * a.cycles
    print(f"\npacket-granular, saturated sources, input buffer of B packets (uniform, {n} ports, packets of "
          f"{plen} flits, iSLIP-2, {cyc} cycles); accepted load")
    print(f"{'B':>4} {'plain iSLIP':>12} {'depth prio K=8':>15}")
    for b in (7, 14, 28):
        plain = simulate_buffered(n, plen, cyc, b, fair_every=1)
        prio = simulate_buffered(n, plen, cyc, b, fair_every=8)
        print(f"{b:>4} {plain:>12.3f} {prio:>15.3f}")


if __name__ == "__main__":
    main()
