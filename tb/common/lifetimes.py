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
from tb.common.failover import check_flow_order

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
