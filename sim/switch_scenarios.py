"""cocotb scenarios on the whole switch (`ib_switch`), run by `make demo` (sim/demo.py) and
`make bench-switch` (tools/bench_switch.py). Parameters come in $SCENARIO (JSON), results
go to $RESULTS_JSON; the calling script prints the tables.

demo   an 8-port switch: tables programmed over AXI4-Lite; unicast, multicast, several
       VLs and malformed packets from link peers that honour the switch's credit; random tx
       backpressure; optionally the golden model in lock-step; scoreboard; counters read
       back over AXI4-Lite; latency of every delivered copy.
bench  accepted vs offered load per traffic pattern and packet size, and the uncontended
       latency (RTL only, no model: benchmarks measure the RTL).
"""
from __future__ import annotations

import json
import os
import random
import time

import cocotb

from hw.mgmt.regmap import PORT_COUNTERS_LIST
from models.switch import SwitchModel, switch_ports
from tb.common.lockstep import cocotb_lockstep
from tb.common.switch_env import SwitchEnv
from tb.common.tb import TB

HEADER_BYTES = 8 + 12 + 4 + 2          # LRH + BTH + ICRC + VCRC around the payload
_TBS: dict = {}


def _params() -> dict:
    return json.loads(os.environ.get("SCENARIO", "{}"))


def _save(res: dict):
    path = os.environ.get("RESULTS_JSON")
    if path:
        with open(path, "w") as f:
            json.dump(res, f, indent=1)


async def _start(dut, cfg, seed, **kw):
    ins, outs, qual = switch_ports(cfg)
    idle = {k: 0 for k in ins}
    idle.update({f"rx__{p}__up": 1 for p in range(cfg.ports)})
    tb = _TBS.get("tb") or TB(dut, idle)                 # one clock for all scenarios of a run
    _TBS["tb"] = tb
    await tb.reset()
    return tb, SwitchEnv(cfg, random.Random(seed), **kw), outs, qual


def _counters(env) -> dict:
    return {p: {c: env.reads.get(env.counter_addr(p, c)) for c in PORT_COUNTERS_LIST} for p in range(env.n)}


# ---------------------------------------------------------------------------- demo
@cocotb.test()
async def demo(dut):
    prm = _params()
    cfg = TB.peek_config()
    n = cfg.ports
    tb, env, outs, qual = await _start(dut, cfg, prm.get("seed", 1), ready_p=0.95, rx_p=0.95)
    rng = env.rng
    hosts = 4 * n                                        # DLID d lives behind port (d - 1) % n
    routes = {d: (d - 1) % n for d in range(1, hosts + 1)}
    routes[hosts + 1] = 255                              # a LID the subnet manager blocks
    env.program(routes, {sl: sl % cfg.data_vls for sl in range(16)})
    groups = {0: (1 << n) - 1, 1: sum(1 << p for p in range(0, n, 2)), 2: 0b10 | (1 << (n - 1)), 3: 0b10}
    for g, mask in groups.items():
        env.program_mft(g, mask)
    kinds = {"unicast": 0, "multicast": 0, "LFT 255": 0, "DLID beyond LFT": 0, "DLID 0": 0,
             "multicast, only the input in the mask": 0, "EBP at tail": 0, "bad VCRC": 0}
    expect_relay = [0] * n
    npk = prm.get("packets", 160)
    sizes = [0, 16, 64, 256, min(1024, cfg.mtu), cfg.mtu]

    def one():
        p = rng.randrange(n)
        r = rng.random()
        size = rng.choice(sizes)
        if r < 0.62:
            kinds["unicast"] += 1
            env.send(p, rng.randrange(1, hosts + 1), rng.randrange(16), size)
        elif r < 0.80:
            kinds["multicast"] += 1
            env.send(p, 0xC000 + rng.randrange(3), rng.randrange(16), size)
        else:
            k = rng.choice(["LFT 255", "DLID beyond LFT", "DLID 0", "multicast, only the input in the mask",
                            "EBP at tail", "bad VCRC"])
            kinds[k] += 1
            if k == "EBP at tail":
                env.send(p, rng.randrange(1, hosts + 1), 0, size, bad="ebp")
            elif k == "bad VCRC":
                env.send(p, rng.randrange(1, hosts + 1), 0, size, bad="vcrc")
            else:
                if k == "multicast, only the input in the mask":
                    p, dlid = 1, 0xC003                      # group 3 is port 1 alone
                else:
                    dlid = {"LFT 255": hosts + 1, "DLID beyond LFT": cfg.lft_entries + 5, "DLID 0": 0}[k]
                env.send(p, dlid, 0, size)
                expect_relay[p] += 1

    done = {}

    def stim():
        c = 0
        sent = 0
        quiet = 0
        while c < prm.get("max_cycles", 20000):
            if not env.axi and sent < npk and rng.random() < prm.get("rate", 0.06):
                one()
                sent += 1
            busy = any(env.pending) or any(not f.link for q in env.rxq for f in q)
            quiet = 0 if (busy or sent < npk or env.axi) else quiet + 1
            if quiet == 400 and "read" not in done:          # drained: read every counter back
                env.read_counters(PORT_COUNTERS_LIST)
                done["read"] = c
            if "read" in done and not env.axi and c > done["read"] + 2 * 11 * n + 20:
                break
            c += 1
            yield env.inputs()
        done["cycles"] = c

    model = SwitchModel(cfg) if prm.get("lockstep", True) else None
    t0 = time.perf_counter()
    await cocotb_lockstep(dut, model, stim(), outs, qual, on_cycle=env.observe, vcd=tb.vcd, start_now=True)
    wall = time.perf_counter() - t0
    copies = env.check()
    env.check_counters({p: expect_relay[p] for p in range(n)})
    lat = [x[2] for x in env.latency]
    _save({"config": cfg.to_dict(), "cycles": done["cycles"], "wall_s": wall, "lockstep": model is not None,
           "kinds": kinds, "copies": copies, "ebp_copies": sum(len(g) for g in env.got_bad),
           "counters": _counters(env), "latency": lat,
           "latency_by_size": [(x[3], x[2]) for x in env.latency], "vcd": tb.vcd})


# ---------------------------------------------------------------------------- bench
def _pattern_dest(pattern, i, n, rng):
    if pattern == "uniform":
        return rng.randrange(n)
    if pattern == "permutation":
        return (i + 1) % n
    if pattern == "incast":                              # every input to port 0 (port 0 itself idle)
        return 0
    if pattern == "hotspot":                             # half the traffic to port 0, the rest uniform
        return 0 if rng.random() < 0.5 else rng.randrange(n)
    raise ValueError(f"unknown traffic pattern {pattern!r}")


@cocotb.test()
async def bench(dut):
    prm = _params()
    cfg = TB.peek_config()
    results = []
    for sc in prm["scenarios"]:
        results.append(await _bench_one(dut, cfg, sc))
        _save({"config": cfg.to_dict(), "results": results})


async def _bench_one(dut, cfg, sc) -> dict:
    """One traffic point: Bernoulli packet arrivals at `load` flits/cycle per input (source
    queues of at most 64 packets), after `warmup` cycles count the data flits leaving each
    output for `window` cycles, and the rx sop -> tx sop latency of the packets leaving then."""
    n = cfg.ports
    nb = cfg.bytes_per_flit
    tb, env, outs, qual = await _start(dut, cfg, sc.get("seed", 1), ready_p=1.0, rx_p=1.0)
    rng = env.rng
    env.program({p + 1: p for p in range(n)}, {0: 0})
    payload = max(0, (sc["size"] - HEADER_BYTES) // 4 * 4)
    wire = payload + HEADER_BYTES
    flits = -(-wire // nb)
    load = sc["load"]
    senders = [i for i in range(n) if not (sc["pattern"] == "incast" and i == 0)]
    warm, window = sc["warmup"], sc["window"]
    stats = {"flits": [0] * n, "start": None}

    def stim():
        c = 0
        t_on = None
        while True:
            if t_on is None and not env.axi and all(env.fccl[p][0] for p in range(n)):
                t_on = c                                 # tables programmed, credit granted
            if t_on is not None:
                for i in senders:
                    if rng.random() < load / flits and len(env.pending[i]) < 64:
                        env.send(i, _pattern_dest(sc["pattern"], i, n, rng) + 1, 0, payload, vl=0)
                if c == t_on + warm:
                    stats["start"] = c
                    env.latency.clear()
                if c == t_on + warm + window:
                    break
            c += 1
            yield env.inputs()

    def observe(i, o):
        env.observe(i, o)
        if stats["start"] is not None:
            for p in range(n):
                if o[f"tx__{p}__valid"] and i[f"tx__{p}__ready"] and not o[f"tx__{p}__link"]:
                    stats["flits"][p] += 1

    t0 = time.perf_counter()
    await cocotb_lockstep(dut, None, stim(), outs, qual, on_cycle=observe, start_now=True)
    wall = time.perf_counter() - t0
    lat = sorted(x[2] for x in env.latency)
    outs_used = [0] if sc["pattern"] == "incast" else list(range(n))
    return {**sc, "wire_bytes": wire, "flits_per_packet": flits,
            "offered": load * len(senders) if sc["pattern"] == "incast" else load,
            "accepted": sum(stats["flits"][p] for p in outs_used) / (window * len(outs_used)),
            "per_output": [f / window for f in stats["flits"]],
            "lat_min": lat[0] if lat else None, "lat_mean": sum(lat) / len(lat) if lat else None,
            "lat_p99": lat[int(0.99 * (len(lat) - 1))] if lat else None, "packets": len(lat),
            "cycles_per_s": (warm + window) / wall}
