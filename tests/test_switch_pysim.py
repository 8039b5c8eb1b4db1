"""Whole switch, small config, in the Amaranth simulator: RTL in lock-step with the composed
SwitchModel; tables programmed over AXI4-Lite; link peers granting credit; scoreboard."""
import random

import pytest

from hw.common.config import CONFIGS
from hw.top.switch import IBSwitch
from models.switch import SwitchModel, switch_ports
from tb.common.pysim import pysim_lockstep
from models.packet import LRH
from tb.common.switch_env import SwitchEnv


@pytest.mark.parametrize("vls, base", [(2, "small"), (1, "small"), (2, "small-msb"), (2, "small-novcrc"),
                                       (2, "small-rxreg")])
def test_switch_unicast_lockstep(vls, base):
    """Also with one data VL: the paths that pick a VL by index collapse to constants there
    (the egress takes LinkTx source 0's ready), and only a switch of one VL runs them. And
    with each of the two readings of IBA the config makes options (docs/link-layer.md):
    the VCRC/LPCRC sent most-significant byte first, credit blocks that leave out the VCRC."""
    cfg = CONFIGS[base].replace(name=f"{base}-vl{vls}", data_vls=vls)
    rng = random.Random(3)
    env = SwitchEnv(cfg, rng, ready_p=0.7)
    routes = {d: d % cfg.ports for d in range(1, 17)}
    env.program(routes, {sl: sl % vls for sl in range(4)})
    ins, outs, qual = switch_ports(cfg)

    def stim():
        for c in range(1500):
            if c == 400:
                for _ in range(12):
                    env.send(rng.randrange(cfg.ports), rng.randrange(1, 17), rng.randrange(4),
                             rng.choice([0, 16, 40, 64, 104]))
            yield env.inputs()

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=env.observe)
    assert env.check() == 12


def test_switch_multicast_lockstep():
    """Unicast and multicast mixed: every copy once per port of the MFT mask but the input."""
    cfg = CONFIGS["small"]
    rng = random.Random(5)
    env = SwitchEnv(cfg, rng)
    env.program({d: d % cfg.ports for d in range(1, 9)}, {0: 0, 1: 1, 2: 0, 3: 1})
    env.program_mft(0, 0b1111)                       # every port
    env.program_mft(1, 0b0110)
    env.program_mft(2, 0b0001)                       # only port 0: empty when sent from port 0
    ins, outs, qual = switch_ports(cfg)
    copies = 0

    def stim():
        nonlocal copies
        for c in range(1800):
            if c == 400:
                for _ in range(14):
                    inp = rng.randrange(cfg.ports)
                    dlid = rng.choice([0xC000, 0xC001, rng.randrange(1, 9)])
                    env.send(inp, dlid, rng.randrange(4), rng.choice([0, 16, 40, 64, 104]))
                env.send(0, 0xC002, 0, 8)               # mask only the input port: dropped
                copies = sum(len(s[2]) for s in env.sent)
            yield env.inputs()

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=env.observe)
    assert env.check() == copies
    assert copies > 20


def test_switch_failover_lockstep():
    """Failover in the switch (docs/reliability.md), config small-rxreg: output 2 has output 3
    as its alternate (ALT_PORT). Traffic from inputs 0 and 1 to DLIDs on every output; the
    cable of port 2 is cut while packets for it are queued and one is leaving. From then on
    the packets routed to 2, the queued ones first, leave on 3; nothing is lost but the packet
    that was on the wire of port 2 (counted in PortXmitDiscards or cut at the peer); the
    model and RTL agree on every cycle."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.failover
    rng = random.Random(11)
    env = SwitchEnv(cfg, rng, ready_p=1.0, rx_p=1.0)
    env.program({d: d % cfg.ports for d in range(1, 17)}, {sl: sl % cfg.data_vls for sl in range(4)})
    env.write("ALT_PORT", 2, 4)                      # IBA port 4 = Verilog port 3
    ins, outs, qual = switch_ports(cfg)
    sent = []
    cut_at = None
    first_alt = None

    def stim():
        nonlocal cut_at
        for c in range(3000):
            if c == 600:
                for k in range(40):
                    inp = k % 2
                    dlid = rng.choice([2, 6, 10, 14, 3, 1, 6, 2])   # mostly for output 2
                    env.send(inp, dlid, rng.randrange(4), rng.choice([16, 64, 104, 200]))
                    sent.append((inp, dlid))
            if cut_at is None and c > 600 and env.tx_sop[2] > 600 and c - env.tx_sop[2] == 3:
                env.peers[2].up = False              # mid-packet on port 2, more queued
                cut_at = c
            if c == 2700:
                env.read_counters(("PortXmitDiscards",))
            yield env.inputs()

    def on_cycle(i, o):
        nonlocal first_alt
        env.observe(i, o)
        if cut_at is not None and first_alt is None and o["tx__3__valid"] and o["tx__3__sop"] \
                and not o["tx__3__link"]:
            dlid = (o["tx__3__data"] >> (cfg.data_width - 32)) & 0xFFFF
            if dlid % cfg.ports == 2:
                first_alt = env.cycle - 1 - cut_at

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=on_cycle)
    assert cut_at is not None, "the cable was never cut"
    got = {p: [b for b in env.got[p]] for p in range(cfg.ports)}
    to2 = [b for b in got[3] if LRH.unpack(b).dlid % cfg.ports == 2]
    assert to2, "no packet for output 2 left on its alternate"
    assert first_alt is not None and first_alt <= 64, first_alt
    delivered = sum(len(v) for v in got.values())
    lost = len(sent) - delivered
    assert not any(env.got_bad[p] for p in range(cfg.ports))
    assert lost == env.peers[2].cut <= 1, (lost, env.peers[2].cut)
    # the rest of the packet cut on the wire was drained and counted at port 2
    assert env.counter(2, "PortXmitDiscards") == lost
    # per flow (input, DLID, SL: IBA orders packets within an SL) the packets arrive in the order they were sent
    # (a packet is known by its bytes but the VL nibble and the VCRC, which the switch rewrites)
    order = {b[1:-2]: k for k, (_i, b, _o) in enumerate(env.sb.sent)}
    src = {b[1:-2]: i for i, b, _o in env.sb.sent}
    for p, bodies in got.items():
        last = {}
        for b in bodies:
            flow = (src[b[1:-2]], LRH.unpack(b).dlid, LRH.unpack(b).sl)
            assert order[b[1:-2]] > last.get(flow, -1), f"flow {flow} reordered at output {p}"
            last[flow] = order[b[1:-2]]
    # everything else went where the tables say, or (for output 2, after the cut) to 3
    for p, bodies in got.items():
        for b in bodies:
            want = LRH.unpack(b).dlid % cfg.ports
            assert p == want or (want == 2 and p == 3), (p, want)
