"""The hotspot with and without congestion control (IBA Annex A10), on the whole switch RTL
(`make bench-cc`, bench/cc.py; docs/reliability.md, "Congestion control"). Parameters
in $SCENARIO (JSON), results in $RESULTS_JSON. RTL only (no model), Verilator.

Output 0 is the hot port. The link peers are endpoints with LID p + 1:

  every endpoint      offers victim traffic: packets to a uniformly chosen port 1..N-1 (LID
                      2..N), Bernoulli arrivals of `victim_load` flits per cycle, a queue of at
                      most 64 packets;
  endpoints 1..N-1    also have a hot flow to LID 1 that always has a packet (saturated);
  the endpoint's NIC  sends one packet at a time: BECN notifications first, then round robin
                      between its victim queue and its hot flow, the hot flow only when its
                      congestion control throttle lets it (models.cc_source.CCFlow);
  a destination       answers every packet that arrives with BTH.FECN set with a BECN
                      notification to its source (a UD packet, BTH.BECN set, 8 bytes of DETH);
                      a source that receives one throttles that flow.

With `cc` false the switch's CC_PORT registers stay 0 (no marking) and nothing is
throttled: the hot packets fill the inputs' buffers, whose credit the victim packets of the
same inputs then wait for. With `cc` true, every CC_PORT gets `threshold`, `packet_size`,
`marking_rate`. Measured over `window` cycles after `warmup`: victim flits delivered per
cycle per endpoint (their fair share is their offered load: no victim output is
oversubscribed), and the hot port's data flits per cycle.
"""
from __future__ import annotations

import json
import random
from collections import deque

import cocotb

from models.cc_source import CCFlow, CCSettings, linear_cct
from models.packet import BTH, LRH, build_data_packet
from models.switch import idle_inputs, switch_ports
from verif.env.switch_env import SwitchEnv
from verif.lockstep import cocotb_lockstep
from verif.tb import TB, tb_params

HOT = 0
UD_SEND = 0x64
CC_QP = 0x77                                   # the sources' QP that takes BECN notifications


def _packet(cfg, dlid: int, slid: int, payload: int, *, qp: int = 0x11, becn: int = 0, seq: int = 0) -> bytes:
    deth = (0x11111111).to_bytes(4, "big") + qp.to_bytes(4, "big")
    return build_data_packet(LRH(vl=0, sl=0, dlid=dlid, slid=slid),
                             deth + bytes(payload), BTH(opcode=UD_SEND, destqp=qp, becn=becn, psn=seq & 0xFFFFFF),
                             msb_first=cfg.crc_msb_first)


def _fecn(b: bytes) -> bool:
    return bool(b[12] & 0x80)                  # LRH (8) + BTH byte 4 bit 7 (no GRH here)


def _becn(b: bytes) -> bool:
    return bool(b[12] & 0x40)


@cocotb.test()
async def hotspot_cc(dut):
    prm = tb_params()
    cfg = TB.peek_config()
    n, nb = cfg.ports, cfg.bytes_per_flit
    cc = bool(prm.get("cc", True))
    size, victim_load = prm.get("size", 1024), prm.get("victim_load", 0.5)
    warm, window = prm.get("warmup", 30000), prm.get("window", 20000)
    settings = CCSettings(cct=linear_cct(prm.get("cct_step", 8), prm.get("cct_limit", 127)),
                          ccti_increase=prm.get("ccti_increase", 1), ccti_timer=prm.get("ccti_timer", 1024))
    rng = random.Random(prm.get("seed", 1))
    tb = TB(dut, idle_inputs(cfg))
    await tb.reset()
    env = SwitchEnv(cfg, rng, ready_p=1.0, rx_p=1.0, fc_every=512)
    _, outs, qual = switch_ports(cfg)
    env.program({p + 1: p for p in range(n)}, {0: 0})
    if cc:
        for p in range(n):
            env.write("CC_PORT", p, prm.get("threshold", 15) | prm.get("packet_size", 1) << 8
                      | prm.get("marking_rate", 0) << 16)
    payload = max(0, size - (8 + 12 + 8 + 4 + 2))
    flits = -(-(payload + 34) // nb)
    victims = [deque() for _ in range(n)]
    hot = {i: CCFlow(settings) for i in range(1, n)}
    becn_q = [deque() for _ in range(n)]
    turn = [0] * n                                # round robin: 0 victim first, 1 hot first
    seq = [0] * n
    st = {"start": None, "victim": [0] * n, "hot_flits": 0, "marked": 0, "becns_sent": 0, "got": 0,
          "victim_offered": 0, "ccti": {i: [] for i in hot}}
    cur_class = [None] * n                        # the class of the packet leaving output p

    def nic(i: int, now: int):
        if env.pending[i]:
            return
        if becn_q[i]:
            env.send_raw(i, becn_q[i].popleft())
            st["becns_sent"] += 1
            return
        h = i in hot and (not cc or hot[i].ready(now))
        order = ("v", "h") if turn[i] == 0 else ("h", "v")
        for k in order:
            if k == "v" and victims[i]:
                env.send_raw(i, _packet(cfg, victims[i].popleft(), i + 1, payload, seq=seq[i]))
            elif k == "h" and h:
                env.send_raw(i, _packet(cfg, HOT + 1, i + 1, payload, seq=seq[i]))
                if cc:
                    hot[i].sent(now)
            else:
                continue
            seq[i] += 1
            turn[i] ^= 1
            return

    def stim():
        c = 0
        t_on = None
        while True:
            if t_on is None and not env.registers_busy and all(env.fccl[p][0] for p in range(n)):
                t_on = c
            if t_on is not None:
                for i in range(n):
                    if rng.random() < victim_load / flits:
                        if st["start"] is not None:
                            st["victim_offered"] += 1          # offered, whether the queue has room or not
                        if len(victims[i]) < 64:
                            victims[i].append(rng.randrange(1, n) + 1)
                # deliveries: a destination answers FECN with a BECN notification, a source
                # throttles on BECN
                for p in range(n):
                    got = env.got[p]
                    while got:
                        b = got.pop(0)
                        st["got"] += 1
                        lrh = LRH.unpack(b)
                        if _becn(b) and int.from_bytes(b[8 + 12 + 4:8 + 12 + 8], "big") & 0xFFFFFF == CC_QP:
                            if p in hot:
                                hot[p].on_becn()
                        elif _fecn(b):
                            st["marked"] += 1
                            becn_q[p].append(_packet(cfg, lrh.slid, p + 1, 0, qp=CC_QP, becn=1))
                for i in range(n):
                    if cc and i in hot:
                        hot[i].tick(c)
                    nic(i, c)
                if c == t_on + warm:
                    st["start"] = c
                if st["start"] is not None and c % 500 == 0:
                    for i in hot:
                        st["ccti"][i].append(hot[i].ccti)
                if c == t_on + warm + window:
                    break
            c += 1
            yield env.inputs()

    def observe(i, o):
        env.observe(i, o)
        w = cfg.data_width
        for p in range(n):
            if o[f"tx__{p}__valid"] and i[f"tx__{p}__ready"] and not o[f"tx__{p}__link"]:
                if o[f"tx__{p}__sop"]:
                    dlid = (o[f"tx__{p}__data"] >> (w - 32)) & 0xFFFF
                    b12 = (o[f"tx__{p}__data"] >> (w - 8 * 13)) & 0xFF if nb >= 13 else 0
                    cur_class[p] = "becn" if b12 & 0x40 else "hot" if dlid == HOT + 1 else "victim"
                if st["start"] is not None:
                    if cur_class[p] == "victim":
                        st["victim"][p] += 1
                    elif p == HOT and cur_class[p] == "hot":
                        st["hot_flits"] += 1

    await cocotb_lockstep(dut, None, stim(), outs, qual, on_cycle=observe, start_now=True)
    offered_per_ep = st["victim_offered"] * flits / window / n
    res = {"cc": cc, "ports": n, "packet_bytes": payload + 34, "flits_per_packet": flits, "window": window,
           "warmup": warm, "victim_offered_per_endpoint": offered_per_ep,
           "victim_per_endpoint": sum(st["victim"]) / window / n,
           "hot_port": st["hot_flits"] / window, "marked": st["marked"], "becns_sent": st["becns_sent"],
           "ccti_mean": {i: sum(v) / len(v) for i, v in st["ccti"].items() if v},
           "becns_per_flow": {i: f.becns for i, f in hot.items()}, "params": prm}
    res["victim_of_fair_share"] = res["victim_per_endpoint"] / offered_per_ep if offered_per_ep else 0.0
    dut._log.info(f"hotspot cc={cc}: {res}")
    path = tb_params().get("results")
    if path:
        with open(path, "w") as f:
            json.dump(res, f, indent=1)
