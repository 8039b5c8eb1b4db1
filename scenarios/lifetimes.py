"""The HOQLife scenario (docs/reliability.md) shared by the Amaranth-simulator lock-step
(tests/test_switch_pysim.py) and the cocotb test on Icarus and Verilator (tb/test_switch.py):
output 2's peer stops giving credit after its first grant (a receiver that never frees its
buffer: the case HOQLife exists for); its HOQLife is 2 (2^2 units of 2^lifetime_unit_log2
cycles); inputs 0 and 1 send to every output, output 2's packets among them.

The switch's promises: what output 2 could take with the credit it had is delivered; every
other packet for output 2 is discarded at the head of its queue and counted in
PortXmitDiscards of port 2; the inputs are never wedged: every packet for the other outputs
is delivered, in order per flow, and the senders get their credit back."""
from __future__ import annotations

import random

from models.packet import LRH
from scenarios.failover import check_flow_order

STUCK = 2                                    # the output whose peer stops giving credit
HOQ_LIFE = 2


def program(env) -> None:
    n = env.cfg.ports
    env.program({d: d % n for d in range(1, 17)}, {sl: sl % env.cfg.data_vls for sl in range(4)})
    env.write("HOQ_LIFE", STUCK, HOQ_LIFE)
    env.peers[STUCK].credit_frozen = True


def send(env, rng: random.Random, packets: int = 48) -> None:
    for k in range(packets):
        dlid = rng.choice([1, 2, 3, 4, 6, 5, 7, 10])      # a third for output 2
        env.send(k % 2, dlid, rng.randrange(4), rng.choice([16, 64, 104, 200]))


def check(env, discards: int) -> dict:
    """`discards`: PortXmitDiscards of port STUCK. Returns what was measured."""
    n = env.cfg.ports
    got = {p: list(env.got[p]) for p in range(n)}
    assert not any(env.got_bad[p] for p in range(n)), "a packet arrived bad"
    assert not any(env.pending), "a sender still holds packets: an input is wedged"
    sent = {p: [b for _i, b, _o in env.sb.sent if LRH.unpack(b).dlid % n == p] for p in range(n)}
    for p in range(n):
        if p != STUCK:
            assert len(got[p]) == len(sent[p]), f"output {p}: {len(got[p])} of {len(sent[p])} delivered"
    stuck_got = len(got[STUCK])
    assert stuck_got + discards == len(sent[STUCK]), \
        f"output {STUCK}: {stuck_got} delivered + {discards} discarded != {len(sent[STUCK])} sent"
    assert discards > 0, "nothing outlived HOQLife: the test shows nothing"
    check_flow_order(env, got)
    return {"sent_to_stuck": len(sent[STUCK]), "delivered": stuck_got, "discarded": discards}


# ---- VLStalled (IBA §18.2.5.4): VLStallCount HOQLife discards in a row on one VL of an
# output stall that VL: for 8 HOQLife periods everything queued for it is discarded, even
# when its peer gives credit again.
STALL_COUNT = 3
STALL_VL = 0                                  # the VL of output STUCK that stalls (SL 0)
# (cycle, phase): the stall is built, tried, and ends during a trickle of packets
STALL_SCHEDULE = [(600, 0), (1150, 1)] + [(1300 + 32 * k, 2) for k in range(16)]


def program_stall(env) -> None:
    """As `program`, with VLStallCount STALL_COUNT on output STUCK (HOQ_LIFE carries both, as
    PortInfo's byte does)."""
    program(env)
    env.write("HOQ_LIFE", STUCK, HOQ_LIFE | STALL_COUNT << 5)


def send_stall(env, rng: random.Random, phase: int) -> list:
    """Phase 0: while output STUCK's peer gives no credit, inputs 0 and 1 send it 12 packets on
    SL 0 (VL STALL_VL) among packets for the other outputs: its heads outlive HOQLife, and
    STALL_COUNT discards in a row stall the VL. Phase 1 (the VL still stalled): the peer
    gives credit again; 3 packets on SL 0 and 3 on SL 1 for STUCK. Phase 2, called once per
    packet of a trickle across the end of the stall: one packet on SL 0. Returns the keys
    (bytes but the VL nibble and VCRC) of the packets sent to STUCK, with their SL."""
    if phase == 1:
        env.peers[STUCK].credit_frozen = False
    before = len(env.sb.sent)
    sls = {0: [0] * 12, 1: [0, 1] * 3, 2: [0]}[phase]
    others = [1, 3, 4, 5, 7]
    for k, sl in enumerate(sls):
        env.send(k % 2, 2, sl, rng.choice([16, 64, 104, 200]))
        if phase == 0:
            env.send(k % 2, rng.choice(others), rng.randrange(4), rng.choice([16, 64, 104]))
    return [(b[1:-2], LRH.unpack(b).sl) for _i, b, _o in env.sb.sent[before:]
            if LRH.unpack(b).dlid % env.cfg.ports == STUCK]


def check_stall(env, phases: list, discards: int) -> dict:
    """`phases`: what send_stall returned, per phase (phase 2's calls joined in order);
    `discards`: PortXmitDiscards of STUCK. The promises: the packets for STUCK on the
    stalled VL while it was stalled are all discarded though the peer had credit for them,
    those on the other VL all delivered; the stall ends: of the trickle, the first are
    discarded and, from some packet on, every one is delivered; what was discarded is
    counted. (When exactly the stall ends, 8 to 9 HOQLife periods after it began, the
    lock-step with the model checks: the trickle makes it visible.)"""
    n = env.cfg.ports
    assert not any(env.got_bad[p] for p in range(n)), "a packet arrived bad"
    assert not any(env.pending), "a sender still holds packets: an input is wedged"
    got = {b[1:-2] for b in env.got[STUCK]}
    sent = {p: [b for _i, b, _o in env.sb.sent if LRH.unpack(b).dlid % n == p] for p in range(n)}
    for p in range(n):
        if p != STUCK:
            assert len(env.got[p]) == len(sent[p]), f"output {p}: {len(env.got[p])} of {len(sent[p])} delivered"
    keys = [k for ph in phases for k, _sl in ph]
    assert len(set(keys)) == len(keys), "two packets for the stuck output look alike: the test cannot tell them"
    p0 = sum(k in got for k, _ in phases[0])
    stalled_vl = [k for k, sl in phases[1] if sl % env.cfg.data_vls == STALL_VL]
    other_vl = [k for k, sl in phases[1] if sl % env.cfg.data_vls != STALL_VL]
    assert p0 < len(phases[0]), "nothing for the stuck output was discarded: no stall could start"
    assert not any(k in got for k in stalled_vl), \
        f"{sum(k in got for k in stalled_vl)} packets left on the stalled VL while it was stalled"
    assert all(k in got for k in other_vl), "a packet on the other VL was held up by the stall"
    trickle = [k in got for k, _ in phases[2]]
    assert not trickle[0] and trickle[-1], f"the trickle should cross the end of the stall: {trickle}"
    first = trickle.index(True)
    assert all(trickle[first:]), f"a packet after the stall ended was discarded: {trickle}"
    delivered = len(env.got[STUCK])
    assert delivered + discards == len(keys), \
        f"output {STUCK}: {delivered} delivered + {discards} discarded != {len(keys)} sent"
    check_flow_order(env, {p: list(env.got[p]) for p in range(n)})
    return {"phase0_delivered": p0, "phase0_sent": len(phases[0]), "stalled_vl_discarded": len(stalled_vl),
            "other_vl_delivered": len(other_vl), "trickle_discarded": first,
            "trickle_delivered": len(trickle) - first, "discarded": discards}


# ---- SwitchLifetime (IBA §18.2.5.4, SwitchInfo:LifeTimeValue): a packet in the switch for
# longer than 2^SWITCH_LIFE units is discarded at the head of its queue, however short its
# time at the head; HOQLife stays infinite (the reset value), so nothing else discards.
SWITCH_LIFE = 5                               # 2^5 units: 512 cycles in small-rxreg
# (cycle, phase): the burst while STUCK's peer gives no credit; the peer gives credit again;
# a second burst, all delivered
LIFE_SCHEDULE = [(600, 0), (2400, 1), (2500, 2)]


def program_life(env) -> None:
    """Routes as `program`; SWITCH_LIFE SWITCH_LIFE; HOQLife left infinite; output STUCK's peer
    gives no credit after its first grant."""
    n = env.cfg.ports
    env.program({d: d % n for d in range(1, 17)}, {sl: sl % env.cfg.data_vls for sl in range(4)})
    env.write("SWITCH_LIFE", 0, SWITCH_LIFE)
    env.peers[STUCK].credit_frozen = True


def send_life(env, rng: random.Random, phase: int) -> list:
    """Phase 0: inputs 0 and 1 send 36 packets, every other one for STUCK (more than its
    peer's last credit covers); phase 1: STUCK's peer gives credit again; phase 2: 24 packets,
    a third for STUCK. Returns the keys (bytes but the VL nibble and VCRC) of the packets
    sent to STUCK."""
    if phase == 1:
        env.peers[STUCK].credit_frozen = False
        return []
    before = len(env.sb.sent)
    for k in range(36 if phase == 0 else 24):
        if phase == 0 and k % 4 < 2:
            dlid = rng.choice([2, 6, 10, 14])
        else:
            dlid = rng.choice([1, 2, 3, 4, 6, 5, 7, 10] if phase else [1, 3, 4, 5, 7])
        env.send(k % 2, dlid, rng.randrange(4), rng.choice([16, 64, 104, 200]))
    return [b[1:-2] for _i, b, _o in env.sb.sent[before:] if LRH.unpack(b).dlid % env.cfg.ports == STUCK]


def read_life(env) -> None:
    """Queue the reads `check_life` needs: PortXmitDiscards and LIFE_DISCARDS of STUCK."""
    env.read_counters(("PortXmitDiscards",))
    for k in range(2):
        env.read("LIFE_DISCARDS", 2 * STUCK + k)


def check_life(env, phases: list) -> dict:
    """`phases`: what send_life returned for phases 0 and 2. The promises: every packet for the
    other outputs is delivered; of phase 0's packets for STUCK, what its peer's credit took is
    delivered and the rest discarded (some are); every one of phase 2 is delivered (nothing
    outlived the lifetime); every discard is counted in PortXmitDiscards and, as a switch
    lifetime discard, in LIFE_DISCARDS (PortSwLifetimeLimitDiscards), none as HOQLife's."""
    n = env.cfg.ports
    assert not any(env.got_bad[p] for p in range(n)), "a packet arrived bad"
    assert not any(env.pending), "a sender still holds packets: an input is wedged"
    sent = {p: [b for _i, b, _o in env.sb.sent if LRH.unpack(b).dlid % n == p] for p in range(n)}
    for p in range(n):
        if p != STUCK:
            assert len(env.got[p]) == len(sent[p]), f"output {p}: {len(env.got[p])} of {len(sent[p])} delivered"
    got = {b[1:-2] for b in env.got[STUCK]}
    first, second = phases
    assert len(set(first + second)) == len(first + second), "two packets for STUCK look alike: the test cannot tell"
    p0 = sum(k in got for k in first)
    assert 0 < p0 < len(first), f"phase 0: {p0} of {len(first)} delivered: the scenario shows nothing"
    assert all(k in got for k in second), f"phase 2: {sum(k in got for k in second)} of {len(second)} delivered"
    discards = env.counter(STUCK, "PortXmitDiscards")
    life, hoq = (env.reads[env.rm["LIFE_DISCARDS"].addr(2 * STUCK + k)] for k in range(2))
    assert discards == len(first) - p0, f"PortXmitDiscards {discards}, {len(first) - p0} packets not delivered"
    assert (life, hoq) == (discards, 0), f"LIFE_DISCARDS: switch lifetime {life}, HOQLife {hoq}; {discards} discarded"
    check_flow_order(env, {p: list(env.got[p]) for p in range(n)})
    return {"phase0_sent": len(first), "phase0_delivered": p0, "discarded": discards,
            "phase2_delivered": len(second)}


# ---- Every queue at once: the per-queue timers of HOQLife (an age per input, output and
# VL) and of VLStalled (a run of discards and the stall's ticks per output and VL) each run
# somewhere, with a different VLStallCount on each output (so that each run counts as high
# as its field lets it), and every output recovers.
ALL_STALL_COUNTS = (7, 5, 3, 6)               # VLStallCount of output p (ports beyond: 7)
# (cycle, phase): every peer without credit during the burst; the peers give credit again;
# after every stall has ended (8 to 9 HOQLife periods: at most 9 * 64 cycles in
# small-rxreg), one packet per input, output and VL, all delivered
ALL_SCHEDULE = [(600, 0), (2200, 1), (3400, 2)]


def program_all(env) -> None:
    """Routes DLID d -> port d % n, SL s -> VL s % VLs; on every output HOQLife HOQ_LIFE and
    its VLStallCount of ALL_STALL_COUNTS; every peer stops giving credit after its first
    grant."""
    n = env.cfg.ports
    env.program({d: d % n for d in range(1, 17)}, {sl: sl % env.cfg.data_vls for sl in range(4)})
    for p in range(n):
        stall = ALL_STALL_COUNTS[p] if p < len(ALL_STALL_COUNTS) else 7
        env.write("HOQ_LIFE", p, HOQ_LIFE | stall << 5)
        env.peers[p].credit_frozen = True


def send_all(env, rng: random.Random, phase: int) -> list:
    """Phase 0: every input sends 4 packets to every output on every VL, in a random order
    (more than any frozen peer's credit takes, so that heads expire on every queue and the
    discards in a row stall every output's VLs); phase 1: every peer gives credit again;
    phase 2: one short packet from every input to every output on every VL (an output's 8
    heads leave within one HOQLife period: none expires). Returns the packets' keys (bytes
    but the VL nibble and VCRC) with their output."""
    n, nvl = env.cfg.ports, env.cfg.data_vls
    if phase == 1:
        for p in range(n):
            env.peers[p].credit_frozen = False
        return []
    before = len(env.sb.sent)
    each = 4 if phase == 0 else 1
    order = [(i, o, v) for i in range(n) for o in range(n) for v in range(nvl) for _ in range(each)]
    rng.shuffle(order)
    for i, o, v in order:
        dlid = o + n * rng.randrange(o == 0, 16 // n)      # a LID routed to o (not 0)
        env.send(i, dlid, v, rng.choice([64, 104, 200]) if phase == 0 else 16)
    return [(b[1:-2], LRH.unpack(b).dlid % n) for _i, b, _o in env.sb.sent[before:]]


def check_all(env, phases: list, discards: dict) -> dict:
    """`phases`: what send_all returned for phases 0 and 2; `discards`: PortXmitDiscards per
    port. The promises: on every output, what was delivered and what was discarded add up
    to what was sent to it, and something was discarded (heads expired there); every packet
    of phase 2 is delivered (every stall ended, every queue drains again); no input wedged;
    order per flow kept."""
    n = env.cfg.ports
    assert not any(env.got_bad[p] for p in range(n)), "a packet arrived bad"
    assert not any(env.pending), "a sender still holds packets: an input is wedged"
    first, second = phases
    keys = [k for k, _o in first + second]
    assert len(set(keys)) == len(keys), "two packets look alike: the test cannot tell them"
    got = {p: {b[1:-2] for b in env.got[p]} for p in range(n)}
    per = {}
    for p in range(n):
        sent = [k for k, o in first + second if o == p]
        delivered = len(env.got[p])
        assert delivered + discards[p] == len(sent), \
            f"output {p}: {delivered} delivered + {discards[p]} discarded != {len(sent)} sent"
        assert discards[p] > 0, f"output {p}: nothing discarded: its heads never expired"
        late = [k for k, o in second if o == p]
        lost = sum(k not in got[p] for k in late)
        assert not lost, f"output {p}: {lost} of phase 2's {len(late)} packets lost: a stall never ended"
        per[p] = (delivered, discards[p])
    check_flow_order(env, {p: list(env.got[p]) for p in range(n)})
    return {"sent": len(keys), "delivered, discarded per output": per}
