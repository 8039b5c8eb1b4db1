"""The failover scenario (docs/reliability.md) shared by the Amaranth-simulator lock-step
(tests/test_switch_pysim.py) and the cocotb test on Icarus and Verilator (tb/test_switch.py):
output 2's alternate is output 3; traffic from inputs 0 and 1, most of it for output 2; the
cable of port 2 is cut three cycles after a packet started leaving on it.

The checks are the switch's promises, from the outside: the packets routed to output 2 that
had not started leave on output 3; the one on the wire is the only loss, and what the switch
still had of it is counted in PortXmitDiscards of port 2; nothing arrives bad; everything
else goes where the LFT says; per flow (input, DLID, SL: IBA keeps order within an SL) the
packets arrive in the order they were sent."""
from __future__ import annotations

import random

from models.packet import LRH

FAILED, ALTERNATE = 2, 3                     # Verilog ports
CUT_AFTER = 3                                # cycles after a sop on the failed port


def program(env) -> None:
    n = env.cfg.ports
    env.program({d: d % n for d in range(1, 17)}, {sl: sl % env.cfg.data_vls for sl in range(4)})
    env.write("ALT_PORT", FAILED, ALTERNATE + 1)        # an IBA port number


def send(env, rng: random.Random, packets: int = 40) -> None:
    for k in range(packets):
        dlid = rng.choice([2, 6, 10, 14, 3, 1, 6, 2])    # mostly for output 2
        env.send(k % 2, dlid, rng.randrange(4), rng.choice([16, 64, 104, 200]))


def cut_now(env, since: int) -> bool:
    """Whether to cut port FAILED's cable this cycle: CUT_AFTER cycles into a packet that
    started leaving on it after cycle `since`."""
    return env.tx_sop[FAILED] > since and env.cycle - env.tx_sop[FAILED] == CUT_AFTER


class FirstOnAlternate:
    """Cycles from the cut to the first sop on ALTERNATE of a packet routed to FAILED."""

    def __init__(self, env):
        self.env, self.cut_at, self.cycles = env, None, None

    def observe(self, o: dict) -> None:
        n, w = self.env.cfg.ports, self.env.cfg.data_width
        p = ALTERNATE
        if self.cut_at is None or self.cycles is not None:
            return
        if o[f"tx__{p}__valid"] and o[f"tx__{p}__sop"] and not o[f"tx__{p}__link"]:
            if ((o[f"tx__{p}__data"] >> (w - 32)) & 0xFFFF) % n == FAILED:
                self.cycles = self.env.cycle - 1 - self.cut_at


def check(env, discards: int) -> dict:
    """The promises (module docstring); `discards`: PortXmitDiscards of port FAILED.
    Returns what was measured."""
    n = env.cfg.ports
    got = {p: list(env.got[p]) for p in range(n)}
    assert not any(env.got_bad[p] for p in range(n)), "a packet arrived bad"
    on_alt = [b for b in got[ALTERNATE] if LRH.unpack(b).dlid % n == FAILED]
    assert on_alt, f"no packet for output {FAILED} left on its alternate"
    lost = len(env.sb.sent) - sum(len(v) for v in got.values())
    assert lost == env.peers[FAILED].cut <= 1, f"{lost} lost, {env.peers[FAILED].cut} cut on the wire"
    assert discards == lost, f"PortXmitDiscards {discards}, lost {lost}"
    for p, bodies in got.items():
        for b in bodies:
            want = LRH.unpack(b).dlid % n
            assert p == want or (want == FAILED and p == ALTERNATE), f"DLID for {want} left on {p}"
    check_flow_order(env, got)
    return {"on_alternate": len(on_alt), "lost": lost}


def check_flow_order(env, got: dict) -> None:
    """Per flow (input, DLID, SL: IBA keeps order within an SL) the packets that arrived at
    each output (`got`: output -> bodies) came in the order they were sent."""
    # a packet is known by its bytes but the VL nibble and the VCRC, which the switch rewrites
    order = {b[1:-2]: k for k, (_i, b, _o) in enumerate(env.sb.sent)}
    src = {b[1:-2]: i for i, b, _o in env.sb.sent}
    for p, bodies in got.items():
        last = {}
        for b in bodies:
            lrh = LRH.unpack(b)
            flow = (src[b[1:-2]], lrh.dlid, lrh.sl)
            assert order[b[1:-2]] > last.get(flow, -1), f"flow {flow} reordered at output {p}"
            last[flow] = order[b[1:-2]]
