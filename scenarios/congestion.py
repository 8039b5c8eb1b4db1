"""The congestion-marking scenario (IBA Annex A10; docs/reliability.md, "Congestion
control") shared by the Amaranth-simulator lock-step (tests/test_switch_pysim.py) and the
cocotb test on Icarus and Verilator (tb/test_switch.py).

Three inputs send a burst to output HOT (3:1: its VL 0 queue fills) and to output OFF
(likewise), and input 0 sends a few packets to output QUIET, which is never oversubscribed.
HOT and QUIET mark from (16 - THRESHOLD) * cc_unit blocks queued, packets of at least 64
bytes, every second eligible packet (marking_rate 1); OFF has threshold 0 (never). The
burst mixes packets with a BTH (LRH BTH, and LRH GRH BTH) of 186 or 226 bytes, packets of
34 bytes (under the 64-byte packet_size) and raw packets (no BTH). Every packet is sent
with FECN clear and a SLID and PSN of its own.

The switch's promises, from the outside: every packet is delivered once on its LFT port,
with a good VCRC and ICRC, and unchanged but for the VL nibble, the VCRC and, where marked,
BTH.FECN; marks appear at HOT, only on packets with a whole BTH and at least 64 bytes, at
most every second such packet; none at QUIET or OFF; CC_MARKED of each port counts exactly
the marked packets that left it."""
from __future__ import annotations

import random

from models.packet import BTH, LNH, LRH, build_data_packet, parse_data_packet

HOT, QUIET, OFF = 0, 2, 3                   # Verilog ports
THRESHOLD = 11                              # congested from 5 * cc_unit blocks queued
PACKET_SIZE = 1                             # in 64-byte units: 34-byte packets are never marked
MARKING_RATE = 1                            # every second eligible packet
SLID0 = 0x100


def program(env) -> None:
    """DLID d to output d % N, SL s to VL s % data_vls; CC_PORT of HOT and QUIET set, OFF's 0."""
    n = env.cfg.ports
    env.program({d: d % n for d in range(1, 17)}, {sl: sl % env.cfg.data_vls for sl in range(4)})
    word = THRESHOLD | PACKET_SIZE << 8 | MARKING_RATE << 16
    for p, w in ((HOT, word), (QUIET, word), (OFF, 0)):
        env.write("CC_PORT", p, w)


def _packet(env, rng: random.Random, k: int, dlid: int, kind: str) -> bytes:
    cfg = env.cfg
    lnh = {"local": LNH.IBA_LOCAL, "small": LNH.IBA_LOCAL, "global": LNH.IBA_GLOBAL, "raw": LNH.RAW}[kind]
    lrh = LRH(vl=0, sl=0, lnh=lnh, dlid=dlid, slid=SLID0 + k)
    payload = bytes(rng.getrandbits(8) for _ in range(8 if kind == "small" else 160))
    if lnh == LNH.RAW:
        return build_data_packet(lrh, payload + bytes(20), msb_first=cfg.crc_msb_first)
    grh = bytes(rng.getrandbits(8) for _ in range(40)) if lnh == LNH.IBA_GLOBAL else None
    bth = BTH(opcode=0x64, pkey=0xFFFF, destqp=0x11, psn=k, fecn=0, becn=0)   # UD SEND only
    return build_data_packet(lrh, payload, bth, grh, msb_first=cfg.crc_msb_first)


def send(env, rng: random.Random) -> list[bytes]:
    """Queue the burst (module docstring); returns the packets sent, in order."""
    n = env.cfg.ports
    kinds = ["local", "local", "global", "small", "local", "raw", "local", "global", "local", "small"]
    sent = []
    k = 0
    for r in range(10):
        for i in (1, 2, 3):
            for dlid in (HOT + n, OFF + n * (1 + r % 2)):
                if dlid % n == OFF and (i == 3 or r >= 6):
                    continue                                # OFF's burst: inputs 1, 2 (and 0 below)
                sent.append(_packet(env, rng, k, dlid, kinds[(r + i) % len(kinds)]))
                env.send_raw(i, sent[-1])
                k += 1
        if r % 2 == 0:
            for dlid in (QUIET, OFF):
                sent.append(_packet(env, rng, k, dlid + n, "local"))
                env.send_raw(0, sent[-1])
                k += 1
    return sent


def _key(body: bytes) -> bytes:
    """The packet but the VL nibble, BTH.FECN and the VCRC."""
    b = bytearray(body[:-2])
    b[0] &= 0x0F
    lnh = LRH.unpack(body).lnh
    if lnh in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL):
        b[8 + (40 if lnh == LNH.IBA_GLOBAL else 0) + 4] &= 0x7F
    return bytes(b)


def marked(body: bytes) -> bool:
    lnh = LRH.unpack(body).lnh
    return lnh in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL) and bool(body[8 + (40 if lnh == LNH.IBA_GLOBAL else 0) + 4] & 0x80)


def check(env, sent: list[bytes], cc_marked: dict[int, int]) -> dict:
    """The promises (module docstring). `cc_marked`: CC_MARKED per Verilog port, read at the
    end. Returns what was measured."""
    cfg = env.cfg
    n = cfg.ports
    assert not any(env.got_bad[p] for p in range(n)), "a packet arrived bad"
    assert not any(env.pending), "a sender still holds packets"
    want = {_key(b): LRH.unpack(b).dlid % n for b in sent}
    assert len(want) == len(sent), "two packets look alike: the test cannot tell them"
    seen = {}
    marks = {p: 0 for p in range(n)}
    eligible = {p: 0 for p in range(n)}
    for p in range(n):
        for b in env.got[p]:
            k = _key(b)
            assert k in want, f"port {p}: a packet that was not sent: {b.hex()}"
            assert k not in seen, f"port {p}: a packet delivered twice: {b.hex()}"
            assert want[k] == p, f"a packet for port {want[k]} left on port {p}"
            seen[k] = p
            d = parse_data_packet(b, cfg.crc_msb_first)
            assert d.vcrc_ok, f"port {p}: bad VCRC on {b.hex()}"
            lnh = d.lrh.lnh
            has_bth = lnh in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL)
            assert d.icrc_ok or not has_bth, f"port {p}: bad ICRC on {b.hex()}"
            if has_bth and len(b) >= 64 * PACKET_SIZE:
                eligible[p] += 1
            if marked(b):
                assert has_bth and len(b) >= 64 * PACKET_SIZE, f"port {p}: marked an ineligible packet {b.hex()}"
                marks[p] += 1
    assert len(seen) == len(sent), f"{len(seen)} packets delivered of {len(sent)}"
    assert marks[HOT] > 0, "no packet marked at the congested port"
    assert marks[HOT] <= (eligible[HOT] + 1) // 2, f"marking_rate 1 marks at most every second: {marks}, {eligible}"
    assert marks[QUIET] == 0 and marks[OFF] == 0, f"marks where there was no congestion or marking is off: {marks}"
    assert {p: cc_marked[p] for p in range(n)} == marks, f"CC_MARKED {cc_marked} against marks seen {marks}"
    return {"marked_at_hot": marks[HOT], "eligible_at_hot": eligible[HOT], "delivered": len(seen),
            "marked_elsewhere": sum(marks.values()) - marks[HOT]}
