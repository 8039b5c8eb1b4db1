"""cocotb scenarios on the whole switch (`ib_switch`), run by `make demo` (demos/switch.py) and
`make bench-switch` (bench/switch.py). Parameters come in $SCENARIO (JSON), results
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
import random
import time

import cocotb

from contracts.counters import PORT_COUNTERS_LIST
from models.switch import idle_inputs, switch_ports
from verif.env.switch_env import MixedTraffic, SwitchEnv
from verif.lockstep import cocotb_lockstep
from verif.tb import TB, tb_params

HEADER_BYTES = 8 + 12 + 4 + 2          # LRH + BTH + ICRC + VCRC around the payload
_TBS: dict = {}


def _params() -> dict:
    return tb_params()


def _save(res: dict):
    path = tb_params().get("results")
    if path:
        with open(path, "w") as f:
            json.dump(res, f, indent=1)


async def _start(dut, cfg, seed, **kw):
    ins, outs, qual = switch_ports(cfg)
    tb = _TBS.get("tb") or TB(dut, idle_inputs(cfg))                 # one clock for all scenarios of a run
    _TBS["tb"] = tb
    await tb.reset()
    return tb, SwitchEnv(cfg, random.Random(seed), **kw), outs, qual


def _counters(env) -> dict:
    return {p: {c: env.reads.get(env.counter_addr(p, c)) for c in PORT_COUNTERS_LIST} for p in range(env.n)}


# ---------------------------------------------------------------------------- demo
@cocotb.test()
async def demo(dut):
    """Out of reset, the switch is brought up in-band by an SM's node on port 1 (directed-
    route discovery, LID, LFT, MFT, SL2VL, VLArb, ports Active) while its firmware runs on
    the management port; then MixedTraffic's packets through the tables the SM wrote, the
    counters read by the processor over AXI4-Lite and by the SM over PMA GMPs."""
    from verif.env.bringup import InbandSM, bring_up, start_managed
    prm = _params()
    cfg = TB.peek_config()
    tb = _TBS.get("tb") or TB(dut, idle_inputs(cfg))
    _TBS["tb"] = tb
    lockstep = prm.get("lockstep", True)
    t0 = time.perf_counter()
    stb = await start_managed(dut, cfg, prm.get("seed", 1), model=lockstep, tb=tb, ready_p=0.95, rx_p=0.95)
    env, fw, fw_log = stb.env, stb.fw, stb.fw_log
    mix = MixedTraffic(cfg, env, packets=prm.get("packets", 160), rate=prm.get("rate", 0.06),
                       max_cycles=prm.get("max_cycles", 20000), program=False)
    t = mix.tables()
    sm = InbandSM(dut, env, lid=1)                   # LID 1 lives behind port 1 in MixedTraffic
    steps = []
    await bring_up(sm, cfg, lft=t["lft"], mft=t["mft"], sl2vl=t["sl2vl"], switch_lid=t["switch_lid"],
                   say=steps.append)
    bring_cycles = env.cycle
    mads = len(sm.wire) // 2
    await mix.run_observed(dut, fw.regs)
    # the scoreboard and the counters as read now (the PMA's traffic below comes after)
    env.mgmt_rx = [(pkt, port, bad) for k, pkt, port, bad in fw_log if k == "rx"]
    copies = mix.check()
    pma = {}
    for p in range(1, cfg.ports + 1):
        r = await sm.port_counters(p, t["switch_lid"])
        pma[p] = {f: sm.pc(r, f"IB_PC_{f}_F") for f in ("XMT_PKTS", "RCV_PKTS", "XMT_BYTES", "RCV_BYTES",
                                                          "ERR_RCV", "XMT_DISCARDS", "VL15_DROPPED")}
    await stb.finish()
    wall = time.perf_counter() - t0
    lat = [x[2] for x in env.latency]
    _save({"config": cfg.to_dict(), "cycles": env.cycle, "bring_up_cycles": bring_cycles, "bring_up": steps,
           "mads": mads, "wall_s": wall, "lockstep": stb.obs is not None, "kinds": mix.kinds, "copies": copies,
           "ebp_copies": sum(len(g) for g in env.got_bad), "bad_copies": sum(len(o) for _, _, o in env.sent_bad),
           "counters": _counters(env), "latency": lat, "pma": pma, "fw_stats": dict(fw.stats),
           "latency_by_size": [(x[3], x[2]) for x in env.latency], "vcd": tb.vcd})


# ---------------------------------------------------------------------------- bench
def _pattern_dest(pattern, i, n, rng):
    if pattern in ("uniform", "uniform-2vl"):
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
    queues of at most 64 packets; load >= 1: saturated sources that always have a packet);
    after `warmup` cycles, count the data flits leaving each output for `window` cycles and
    the rx sop -> tx sop latency of the packets leaving then. `vls` (default 1): the traffic
    is spread over that many data VLs (SL = VL), the peers keeping one send queue per VL."""
    n = cfg.ports
    nb = cfg.bytes_per_flit
    vls = sc.get("vls", 1)
    tb, env, outs, qual = await _start(dut, cfg, sc.get("seed", 1), ready_p=1.0, rx_p=1.0,
                                       fc_every=sc.get("fc_every", 512), per_vl_queues=vls > 1)
    rng = env.rng
    env.program({p + 1: p for p in range(n)}, {v: v for v in range(vls)})
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
            if t_on is None and not env.registers_busy and all(env.fccl[p][0] for p in range(n)):
                t_on = c                                 # tables programmed, credit granted
            if t_on is not None:
                for i in senders:
                    if (load >= 1.0 and len(env.pending[i]) < 2 * vls) or \
                            (rng.random() < load / flits and len(env.pending[i]) < 64):
                        v = rng.randrange(vls)
                        env.send(i, _pattern_dest(sc["pattern"], i, n, rng) + 1, v, payload, vl=v)
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
    from cocotb.triggers import FallingEdge
    await FallingEdge(dut.clk)                           # leave the ReadOnly phase before the next reset
    lat = sorted(x[2] for x in env.latency)
    outs_used = [0] if sc["pattern"] == "incast" else list(range(n))
    return {**sc, "wire_bytes": wire, "flits_per_packet": flits,
            "offered": load * len(senders) if sc["pattern"] == "incast" else load,
            "accepted": sum(stats["flits"][p] for p in outs_used) / (window * len(outs_used)),
            "per_output": [f / window for f in stats["flits"]],
            "lat_min": lat[0] if lat else None, "lat_mean": sum(lat) / len(lat) if lat else None,
            "lat_p99": lat[int(0.99 * (len(lat) - 1))] if lat else None, "packets": len(lat),
            "cycles_per_s": (warm + window) / wall}
