"""The adaptive-routing scenario (docs/reliability.md) shared by the Amaranth-simulator
lock-step (tests/test_switch_pysim.py) and the cocotb test on Icarus and Verilator
(tb/test_switch.py): outputs 1 and 2 form AR group 1; the LFT routes DLIDs 1, 5, 9 and 13 to
output 1, and marks 1, 5 and 9 adaptive (bit 7 of the entry); inputs 0 and 3 each send a
burst of full-size packets to those DLIDs (twice what one link can carry), and a few
packets for output 2's own DLIDs.

The switch's promises, from the outside: every packet is delivered once, good, on its LFT
port or, if its DLID is adaptive, on another port of that port's group (DLID 13 only on
output 1); both ports of the group carry the burst;
the burst leaves in less time than output 1 alone would need to send it; per queue (input,
LFT port, VL) the packets start leaving in the order they came; everything else goes where
the LFT says.

Flow-pinned (`pinned=True`: the group number has bit 7, 0x81): each input sends from two
source LIDs (FLOWS); the switch picks one port of the group per (SLID, DLID) at the route.
Then, besides the above: every flow (SLID, DLID) leaves on one port only, and per SL arrives
in the order it was sent; the flows of the burst use both ports of the group."""
from __future__ import annotations

import random

from models.packet import LRH

GROUP = (1, 2)                               # Verilog ports of AR group 1
HOT = 1                                      # the LFT port of the burst's DLIDs
PAYLOAD = 200


ADAPTIVE_DLIDS = (1, 5, 9)                   # LFT entries with bit 7: adaptive; 13 is static
FLOWS = {0: (0x11, 0x13), 3: (0x21, 0x25)}     # flow-pinned run: the source LIDs of inputs 0 and 3
PINNED = 0x80                                # AR_GROUP bit 7: the group is flow-pinned


def program(env, group: int = 1, pinned: bool = False) -> None:
    """The LFT sends DLID d to port d % N, DLIDs ADAPTIVE_DLIDS marked adaptive (bit 7 of
    the entry); `group` 0 leaves the ports static; `pinned`: the group is flow-pinned."""
    n = env.cfg.ports
    env.program({d: d % n for d in range(1, 17)}, {sl: sl % env.cfg.data_vls for sl in range(4)})
    words = {}
    for d in ADAPTIVE_DLIDS:
        env.lft[d] |= 0x80
    for d in range(0, 17):
        words.setdefault(d // 4, 0)
        words[d // 4] |= env.lft.get(d, 0xFF) << (8 * (d % 4))
    for k, w in words.items():
        env.write("LFT", k, w)
    for p in GROUP:
        env.write("AR_GROUP", p, group | (PINNED if pinned and group else 0))


def send(env, rng: random.Random, packets: int = 24) -> None:
    for k in range(packets):
        for i in (0, 3):
            env.send(i, rng.choice([1, 5, 9, 13]), rng.randrange(4), PAYLOAD, slid=FLOWS[i][k % 2])
            if k % 6 == 5:
                env.send(i, rng.choice([2, 6]), rng.randrange(4), 64)


class Departures:
    """Per output, the cycle of each data packet's first flit and its DLID and length in
    flits; per input queue, the order the packets started leaving in."""

    def __init__(self, env):
        self.env = env
        self.sops = {p: [] for p in range(env.cfg.ports)}          # (cycle, dlid)
        self.eops = {p: [] for p in range(env.cfg.ports)}

    def observe(self, o: dict) -> None:
        w = self.env.cfg.data_width
        for p in range(self.env.cfg.ports):
            if o[f"tx__{p}__valid"] and not o[f"tx__{p}__link"]:
                if o[f"tx__{p}__sop"]:
                    self.sops[p].append((self.env.cycle - 1, (o[f"tx__{p}__data"] >> (w - 32)) & 0xFFFF))
                if o[f"tx__{p}__eop"]:
                    self.eops[p].append(self.env.cycle - 1)


def check(env, dep: Departures, pinned: bool = False) -> dict:
    """The promises (module docstring). Returns what was measured."""
    n = env.cfg.ports
    got = {p: list(env.got[p]) for p in range(n)}
    assert not any(env.got_bad[p] for p in range(n)), "a packet arrived bad"
    assert not any(env.pending), "a sender still holds packets"
    keys = [b[1:-2] for _i, b, _o in env.sb.sent]
    assert len(set(keys)) == len(keys), "two packets look alike: the test cannot tell them"
    arrived = [b[1:-2] for p in range(n) for b in got[p]]
    assert sorted(arrived) == sorted(keys), \
        f"{len(arrived)} packets arrived for {len(keys)} sent (lost or duplicated)"
    for p, bodies in got.items():
        for b in bodies:
            want = LRH.unpack(b).dlid % n
            dlid = LRH.unpack(b).dlid
            ok = p == want or (dlid in ADAPTIVE_DLIDS and want in GROUP and p in GROUP)
            assert ok, f"DLID {dlid} (LFT port {want}) left on port {p}"
    hot = {p: [b for b in got[p] if LRH.unpack(b).dlid % n == HOT] for p in GROUP}
    assert all(hot[p] for p in GROUP), f"the burst used only one port of the group: {[len(hot[p]) for p in GROUP]}"
    # the burst's span on the wire against what output 1 alone needs
    flits = -(-(len(next(iter(hot.values()))[0])) // env.cfg.bytes_per_flit)
    starts = [c for p in GROUP for c, d in dep.sops[p] if d % n == HOT]
    span = max(c for p in GROUP for c in dep.eops[p]) - min(starts) + 1
    alone = flits * sum(len(v) for v in hot.values())
    assert span < alone, f"the burst took {span} cycles, one port alone needs {alone}"
    # per (input, LFT port, VL) queue: the packets started leaving in the order they came
    # (flow-pinned: the packets of adaptive DLIDs are queued for the port chosen at the
    # route, the one they left on)
    order = {b[1:-2]: k for k, (_i, b, _o) in enumerate(env.sb.sent)}
    src = {b[1:-2]: i for i, b, _o in env.sb.sent}
    start, left_on = {}, {}
    for p in range(n):
        k = 0
        for b in got[p]:
            start[b[1:-2]] = dep.sops[p][k][0]
            left_on[b[1:-2]] = p
            k += 1
    queues = {}
    for b in sorted(arrived, key=lambda x: order[x]):
        body = next(x for p in range(n) for x in got[p] if x[1:-2] == b)
        lrh = LRH.unpack(body)
        q = (src[b], left_on[b] if pinned and lrh.dlid in ADAPTIVE_DLIDS else lrh.dlid % n, lrh.vl)
        assert start[b] > queues.get(q, -1), f"queue {q}: a packet started before one that came earlier"
        queues[q] = start[b]
    flows = {}
    if pinned:
        # per flow (SLID, DLID): one port, and the order it was sent in
        # (IBA orders packets per SLID, DLID and SL: packets of one flow on different SLs
        # travel in different VL queues and may pass each other)
        sent_order, arrival = {}, {}
        for _i, b, _o in env.sb.sent:
            lrh = LRH.unpack(b)
            sent_order.setdefault((lrh.slid, lrh.dlid, lrh.sl), []).append(b[1:-2])
        for p in range(n):
            for b in got[p]:
                lrh = LRH.unpack(b)
                flows.setdefault((lrh.slid, lrh.dlid), []).append((p, b[1:-2]))
                arrival.setdefault((lrh.slid, lrh.dlid, lrh.sl), []).append(b[1:-2])
        for f, arr in flows.items():
            ports = {p for p, _b in arr}
            assert len(ports) == 1, f"flow (SLID {f[0]:#x}, DLID {f[1]}) left on ports {sorted(ports)}"
        for f, arr in arrival.items():
            assert arr == sent_order[f], f"flow (SLID {f[0]:#x}, DLID {f[1]}, SL {f[2]}) arrived out of order"
        used = {arr[0][0] for f, arr in flows.items() if f[1] in ADAPTIVE_DLIDS}
        assert used == set(GROUP), f"the burst's flows used ports {sorted(used)} of the group {GROUP}"
    return {"on_hot_port": len(hot[HOT]), "flows": len(flows),
            "on_group_peer": sum(len(hot[p]) for p in GROUP if p != HOT), "burst_cycles": span,
            "one_port_cycles": alone}
