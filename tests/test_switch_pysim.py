"""Whole switch, small config, in the Amaranth simulator: RTL in lock-step with the composed
SwitchModel; tables programmed over AXI4-Lite; link peers granting credit; scoreboard.

The feature scenarios (failover, lifetimes, VLStalled, adaptive routing, congestion
marking) run in `make sim-long`: in `make sim`, tb/test_switch.py::test_switch_rxreg runs
the same scenarios (scenarios/failover.py, lifetimes.py, adaptive.py, congestion.py) with
the same model in lock-step on Icarus and on Verilator."""
import random

import pytest

from contracts.config import CONFIGS
from hw.top.switch import IBSwitch
from models.switch import SwitchModel, switch_ports
from scenarios import adaptive, congestion, failover, lifetimes
from verif.env.switch_env import SwitchEnv
from verif.pysim import pysim_lockstep


# small and small-rxreg (two VLs) run in sim-long: tb/test_switch.py runs the same model in
# lock-step with both configs on Icarus and Verilator in `make sim`; the one-VL switch and
# the two readings of IBA run only here
@pytest.mark.parametrize("vls, base", [pytest.param(2, "small", marks=pytest.mark.long), (1, "small"),
                                       (2, "small-msb"), (2, "small-novcrc"),
                                       pytest.param(2, "small-rxreg", marks=pytest.mark.long)])
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
        for c in range(1000):                 # set-up writes, then 12 packets, drained by ~800
            if c == 400:
                for _ in range(12):
                    env.send(rng.randrange(cfg.ports), rng.randrange(1, 17), rng.randrange(4),
                             rng.choice([0, 16, 40, 64, 104]))
            yield env.inputs()

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=env.observe)
    assert env.check() == 12


@pytest.mark.long           # in `make sim`: tb/test_switch.py's mixed traffic (every multicast kind)
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


@pytest.mark.long
def test_switch_failover_lockstep():
    """Failover in the switch (docs/reliability.md), config small-rxreg, the scenario of
    scenarios.failover: the cable of output 2 is cut while a packet leaves on it and more
    are queued; the rest leave on its alternate 3, within 64 cycles of the cut; the model
    and RTL agree on every cycle."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.failover
    rng = random.Random(11)
    env = SwitchEnv(cfg, rng, ready_p=1.0, rx_p=1.0)
    failover.program(env)
    ins, outs, qual = switch_ports(cfg)
    first = failover.FirstOnAlternate(env)

    def stim():
        for c in range(3000):
            if c == 600:                             # the ports are Active by then
                failover.send(env, rng)
            if first.cut_at is None and c > 600 and failover.cut_now(env, 600):
                env.peers[failover.FAILED].up = False
                first.cut_at = c
            if c == 2700:
                env.read_counters(("PortXmitDiscards",))
            yield env.inputs()

    def on_cycle(i, o):
        env.observe(i, o)
        first.observe(o)

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=on_cycle)
    assert first.cut_at is not None, "the cable was never cut"
    failover.check(env, env.counter(failover.FAILED, "PortXmitDiscards"))
    assert first.cycles is not None and first.cycles <= 64, first.cycles


@pytest.mark.long
def test_switch_hoq_lifetime_lockstep():
    """HOQLife (docs/reliability.md), config small-rxreg, the scenario of scenarios.lifetimes:
    output 2's peer stops giving credit; the packets that cannot leave are discarded at the
    head of their queues once their HOQLife has passed, counted in PortXmitDiscards; nothing
    else is held up; the model and RTL agree on every cycle."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.lifetimes
    rng = random.Random(13)
    env = SwitchEnv(cfg, rng, ready_p=1.0, rx_p=1.0)
    lifetimes.program(env)
    ins, outs, qual = switch_ports(cfg)

    def stim():
        for c in range(4000):
            if c == 600:
                lifetimes.send(env, rng)
            if c == 3700:
                env.read_counters(("PortXmitDiscards",))
            yield env.inputs()

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=env.observe)
    got = lifetimes.check(env, env.counter(lifetimes.STUCK, "PortXmitDiscards"))
    print(f"HOQLife: {got}")


@pytest.mark.long
def test_switch_vl_stalled_lockstep():
    """VLStalled (docs/reliability.md), config small-rxreg, the scenario of
    scenarios.lifetimes (send_stall): VLStallCount 3 HOQLife discards in a row stall VL 0 of
    output 2; while stalled, its packets are discarded though the peer gives credit again,
    VL 1's are delivered; after 8 HOQLife periods VL 0 delivers again (a trickle of packets
    across the end); every discard counted; the model and RTL agree on every cycle."""
    cfg = CONFIGS["small-rxreg"]
    rng = random.Random(17)
    env = SwitchEnv(cfg, rng, ready_p=1.0, rx_p=1.0)
    lifetimes.program_stall(env)
    ins, outs, qual = switch_ports(cfg)
    phases = [[], [], []]
    schedule = dict(lifetimes.STALL_SCHEDULE)

    def stim():
        for c in range(3600):
            if c in schedule:
                phases[schedule[c]] += lifetimes.send_stall(env, rng, schedule[c])
            if c == 3300:
                env.read_counters(("PortXmitDiscards",))
            yield env.inputs()

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=env.observe)
    got = lifetimes.check_stall(env, phases, env.counter(lifetimes.STUCK, "PortXmitDiscards"))
    print(f"VLStalled: {got}")


@pytest.mark.long
def test_switch_switch_lifetime_lockstep():
    """SwitchLifetime (docs/reliability.md), config small-rxreg, the scenario of
    scenarios.lifetimes (send_life): output 2's peer gives no credit; its packets are
    discarded once they have been in the switch longer than 2^SWITCH_LIFE units, HOQLife
    being infinite; counted in PortXmitDiscards and LIFE_DISCARDS; later packets delivered;
    the model and RTL agree on every cycle (the model keeps each packet's age without wrap)."""
    cfg = CONFIGS["small-rxreg"]
    rng = random.Random(19)
    env = SwitchEnv(cfg, rng, ready_p=1.0, rx_p=1.0)
    lifetimes.program_life(env)
    ins, outs, qual = switch_ports(cfg)
    phases = {0: [], 2: []}
    schedule = dict(lifetimes.LIFE_SCHEDULE)

    def stim():
        for c in range(4200):
            if c in schedule:
                keys = lifetimes.send_life(env, rng, schedule[c])
                if schedule[c] != 1:
                    phases[schedule[c]] += keys
            if c == 3900:
                lifetimes.read_life(env)
            yield env.inputs()

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=env.observe)
    got = lifetimes.check_life(env, [phases[0], phases[2]])
    print(f"SwitchLifetime: {got}")


@pytest.mark.long
@pytest.mark.parametrize("pinned", [False, True], ids=["per-packet", "flow-pinned"])
def test_switch_adaptive_lockstep(pinned):
    """Adaptive routing (docs/reliability.md), config small-rxreg, the scenario of
    scenarios.adaptive: outputs 1 and 2 form an AR group; a burst routed to output 1 leaves
    on both, in less time than output 1 alone needs; nothing lost or duplicated; per queue
    in order; flow-pinned: each (SLID, DLID) on one port, in order; the model and RTL agree
    on every cycle."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.adaptive
    rng = random.Random(19)
    env = SwitchEnv(cfg, rng, ready_p=1.0, rx_p=1.0)
    adaptive.program(env, pinned=pinned)
    dep = adaptive.Departures(env)
    ins, outs, qual = switch_ports(cfg)

    def stim():
        for c in range(3000):
            if c == 400:
                adaptive.send(env, rng)
            yield env.inputs()

    def on_cycle(i, o):
        env.observe(i, o)
        dep.observe(o)

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=on_cycle)
    got = adaptive.check(env, dep, pinned=pinned)
    print(f"adaptive ({'flow-pinned' if pinned else 'per packet'}): {got}")


@pytest.mark.long
def test_switch_congestion_marking_lockstep():
    """Congestion marking (IBA Annex A10, docs/reliability.md), config small-rxreg, the
    scenario of scenarios.congestion: a 3:1 burst fills output 0's queue and it marks
    eligible packets with FECN (every second), VCRC regenerated and ICRC intact; a quiet
    output and one with marking off mark nothing; CC_MARKED counts the marks; the model and
    RTL agree on every cycle."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.cc
    rng = random.Random(23)
    env = SwitchEnv(cfg, rng, ready_p=1.0, rx_p=1.0)
    congestion.program(env)
    ins, outs, qual = switch_ports(cfg)
    sent = []

    def stim():
        for c in range(3200):
            if c == 400:
                sent.extend(congestion.send(env, rng))
            if c == 3000:
                for p in range(cfg.ports):
                    env.read("CC_MARKED", p)
            yield env.inputs()

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=env.observe)
    got = congestion.check(env, sent, {p: env.reads[env.rm["CC_MARKED"].addr(p)] for p in range(cfg.ports)})
    print(f"congestion marking: {got}")
