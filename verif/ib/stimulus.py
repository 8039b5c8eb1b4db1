"""Stimulus for the link-side streams: good packets, every malformed class, idle insertion.

Pure Python (no cocotb), so the same generators drive cocotb testbenches, Amaranth-simulator
unit tests and the demo. Each generated `Item` declares the verdict the receive checker must
reach for it, from the packet's construction alone (an independent scoreboard beside the
cycle-accurate model).
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field, replace

from contracts.config import LRH_BYTES, SwitchConfig
from contracts.defs import RxError
from models.crc import CRC16
from models.packet import BTH, LNH, LRH, FCPacket, Flit, build_data_packet, build_link_packet, to_flits

__all__ = ["Item", "MALFORMED_KINDS", "good_packet", "make_item", "mixed_items", "cycles",
           "idle_none", "idle_random", "idle_bursty", "ready_always", "ready_random", "ready_bursty",
           "expected_verdicts", "RX_IDLE"]

RX_IDLE = {"rx__valid": 0, "rx__data": 0, "rx__sop": 0, "rx__eop": 0, "rx__bytes": 0,
           "rx__link": 0, "rx__bad": 0, "rx__up": 1}


@dataclass
class Item:
    """One packet (or framing fault) as flits, with the verdict it must get."""
    kind: str
    flits: list[Flit]
    verdict: RxError
    forwarded: bool              # its flits appear on the parser output
    data: bytes = b""            # wire bytes (for intact-delivery checks)
    link: bool = False
    meta: dict = field(default_factory=dict)


# ------------------------------------------------------------------ packets
def good_packet(cfg: SwitchConfig, rng: random.Random, *, payload_len: int | None = None,
                lnh: int | None = None, vl: int | None = None) -> bytes:
    if lnh is None:
        lnh = rng.choice([LNH.IBA_LOCAL] * 6 + [LNH.IBA_GLOBAL, LNH.RAW])
    if payload_len is None:
        payload_len = rng.choice([0, 1, 4, 7, 16, 33, 64, 100, rng.randrange(cfg.mtu + 1)])
    lrh = LRH(vl=rng.randrange(cfg.data_vls) if vl is None else vl, sl=rng.randrange(16),
              lnh=lnh, dlid=rng.randrange(1, 0xC000), slid=rng.randrange(1, 0xC000))
    payload = bytes(rng.getrandbits(8) for _ in range(payload_len))
    if lnh == LNH.RAW:
        # raw: LRH + at least 12 bytes (5 words, models.packet.min_pktlen)
        payload = payload[:len(payload) // 4 * 4]
        payload += bytes(max(0, 12 - len(payload)))
        return build_data_packet(lrh, payload, msb_first=cfg.crc_msb_first)
    grh = bytes(rng.getrandbits(8) for _ in range(40)) if lnh == LNH.IBA_GLOBAL else None
    bth = BTH(opcode=rng.randrange(256), pkey=rng.getrandbits(16), destqp=rng.getrandbits(24),
              psn=rng.getrandbits(24), fecn=rng.getrandbits(1), becn=rng.getrandbits(1))
    return build_data_packet(lrh, payload, bth, grh, msb_first=cfg.crc_msb_first)


def _revcrc(cfg: SwitchConfig, body: bytes) -> bytes:
    """Replace the trailing VCRC so that only the intended fault remains."""
    return body[:-2] + CRC16.wire(body[:-2], cfg.crc_msb_first)


def _with_lrh(cfg: SwitchConfig, pkt: bytes, **fields) -> bytes:
    lrh = replace(LRH.unpack(pkt), **fields)
    return _revcrc(cfg, lrh.pack() + pkt[LRH_BYTES:])


MALFORMED_KINDS = ["vcrc", "pktlen_short", "pktlen_long", "lver", "below_min", "above_mtu",
                   "truncated", "lpcrc", "ebp", "stray", "link_format", "runaway", "runt", "runt_pktlen"]


def make_item(kind: str, cfg: SwitchConfig, rng: random.Random) -> Item:
    W = cfg.data_width
    if kind == "good":
        p = good_packet(cfg, rng)
        return Item(kind, to_flits(p, W), RxError.NONE, True, p)
    if kind == "link":
        p = build_link_packet(FCPacket(op=rng.randrange(2), fctbs=rng.getrandbits(12),
                                       vl=rng.randrange(16), fccl=rng.getrandbits(12)), cfg.crc_msb_first)
        return Item(kind, to_flits(p, W, link=True), RxError.NONE, False, p, link=True)
    if kind == "vcrc":
        p = bytearray(good_packet(cfg, rng))
        # corrupt after the LRH, whose own faults would stop the packet at its head
        p[rng.randrange(LRH_BYTES, len(p))] ^= 1 << rng.randrange(8)
        p = bytes(p)
        return Item(kind, to_flits(p, W), RxError.VCRC, True, p)
    if kind in ("pktlen_short", "pktlen_long"):
        p = good_packet(cfg, rng, lnh=LNH.IBA_LOCAL, payload_len=rng.randrange(8, 200))
        words = LRH.unpack(p).pktlen
        new = max(6, words - rng.randrange(1, 4)) if kind == "pktlen_short" else \
            min(cfg.max_pktlen, words + rng.randrange(1, 4))
        p = _with_lrh(cfg, p, pktlen=new)
        return Item(kind, to_flits(p, W), RxError.PKTLEN, True, p)
    if kind == "lver":
        p = _with_lrh(cfg, good_packet(cfg, rng), lver=rng.randrange(1, 16))
        return Item(kind, to_flits(p, W), RxError.LVER, False, p)
    if kind == "below_min":
        lnh = rng.choice([LNH.IBA_LOCAL, LNH.IBA_GLOBAL, LNH.RAW])
        minimum = {LNH.RAW: 5, LNH.IBA_LOCAL: 6, LNH.IBA_GLOBAL: 16}[lnh]
        words = rng.randrange(2, minimum)
        body = LRH(lnh=lnh, pktlen=words, dlid=rng.randrange(1, 0xC000)).pack()
        body += bytes(rng.getrandbits(8) for _ in range(4 * words - LRH_BYTES))
        p = body + CRC16.wire(body, cfg.crc_msb_first)
        return Item(kind, to_flits(p, W), RxError.SHORT, False, p)
    if kind == "above_mtu":
        p = good_packet(cfg, rng, lnh=LNH.IBA_LOCAL, payload_len=cfg.mtu + rng.randrange(120, 200))
        return Item(kind, to_flits(p, W), RxError.LONG, False, p)
    if kind == "truncated":
        p = good_packet(cfg, rng, lnh=LNH.IBA_LOCAL, payload_len=rng.randrange(W // 8, 300))
        fl = to_flits(p, W)
        cut = rng.randrange(1, len(fl))
        return Item(kind, fl[:cut], RxError.TRUNCATED, True, p, meta={"cut": cut})
    if kind == "lpcrc":
        p = bytearray(build_link_packet(FCPacket(op=0, fctbs=rng.getrandbits(12), vl=rng.randrange(8),
                                                 fccl=rng.getrandbits(12)), cfg.crc_msb_first))
        # any bit but the Op nibble (a reserved Op is a LINK_FORMAT fault, which ranks higher)
        bit = rng.randrange(4, 48)
        p[bit // 8] ^= 0x80 >> (bit % 8)
        return Item(kind, to_flits(bytes(p), W, link=True), RxError.LPCRC, False, bytes(p), link=True)
    if kind == "ebp":
        p = good_packet(cfg, rng)
        return Item(kind, to_flits(p, W, bad=True), RxError.EBP, True, p)
    if kind == "stray":
        p = good_packet(cfg, rng, lnh=LNH.IBA_LOCAL, payload_len=rng.randrange(W // 8, 200))
        fl = to_flits(p, W)
        return Item(kind, [replace(f, sop=False) for f in fl], RxError.FRAMING, False, p)
    if kind == "link_format":
        body = build_link_packet(FCPacket(op=rng.choice([0, 1, 2, 7, 15]), fctbs=1, vl=0, fccl=2),
                                 cfg.crc_msb_first)
        if rng.random() < 0.5 or FCPacket.unpack(body).op <= 1:
            # cut short, a byte or two long, or long enough for a second flit
            body = body[:rng.choice([1, 4, 5])] if rng.random() < 0.5 else \
                body + bytes(rng.choice([rng.randrange(1, 3), W // 8 + rng.randrange(1, 5)]))
        return Item(kind, to_flits(body, W, link=True), RxError.LINK_FORMAT, False, body, link=True)
    if kind == "runt":
        # a data packet in one 8-byte flit, sop and eop together: an LRH whose PktLen is below
        # the minimum of its LNH (IBA §7.7.8), its last two bytes (the SLID) the VCRC of the six
        # in front (a wrong VCRC would rank above SHORT)
        lrh = LRH(lnh=LNH.RAW, pktlen=rng.randrange(2, 5), dlid=rng.randrange(1, 0xC000))
        head = lrh.pack()[:6]
        p = head + CRC16.wire(head, cfg.crc_msb_first)
        return Item(kind, to_flits(p, W), RxError.SHORT, False, p)
    if kind == "runt_pktlen":
        # one 8-byte flit whose LRH is valid but whose last two bytes (its SLID) are the VCRC
        # of the six in front: the VCRC checks, the length disagrees with PktLen (forwarded
        # marked bad, as a cut-through switch has sent its head already)
        lrh = LRH(lnh=LNH.IBA_LOCAL, pktlen=rng.randrange(6, 20), dlid=rng.randrange(1, 0xC000))
        head = lrh.pack()[:6]
        p = head + CRC16.wire(head, cfg.crc_msb_first)
        return Item(kind, to_flits(p, W), RxError.PKTLEN, True, p)
    if kind == "runaway":
        # Good LRH, but the stream runs past the largest legal packet before its eop.
        n = cfg.max_packet_bytes + rng.randrange(1, 3 * W // 8)
        p = good_packet(cfg, rng, lnh=LNH.IBA_LOCAL, payload_len=64)
        body = p[:-2] + bytes(rng.getrandbits(8) for _ in range(n - len(p) + 2))
        return Item(kind, to_flits(body, W), RxError.LONG, True, body)
    raise ValueError(f"make_item: unknown kind {kind!r} (known: good, link, {', '.join(MALFORMED_KINDS)})")


def mixed_items(cfg: SwitchConfig, rng: random.Random, n: int, *, p_bad: float = 0.35,
                kinds=None) -> list[Item]:
    kinds = kinds or MALFORMED_KINDS
    out = []
    for _ in range(n):
        r = rng.random()
        if r < p_bad:
            out.append(make_item(rng.choice(kinds), cfg, rng))
            if out[-1].kind == "truncated":      # only a sop can cut it: follow with one
                out.append(make_item(rng.choice(["good", "link", "runt_pktlen", "link_format"]), cfg, rng))
        elif r < p_bad + 0.15:
            out.append(make_item("link", cfg, rng))
        else:
            out.append(make_item("good", cfg, rng))
    return out


def expected_verdicts(items: list[Item]) -> list[tuple[RxError, bool]]:
    """(verdict, forwarded) of each item in stream order.

    A forwarded packet cut by the next sop takes that sop's cycle for its terminator flit,
    so the next data packet is lost: counted FRAMING, or TRUNCATED if it is itself cut
    short. A link packet needs no slot on the data output and is taken as usual. A lost
    packet is never forwarded, so the sop after it is taken normally.
    """
    out = []
    lost = False
    for it in items:
        if lost and it.link:
            out.append((it.verdict, it.forwarded))
            lost = False
        elif lost:
            out.append((RxError.TRUNCATED if it.kind == "truncated" else RxError.FRAMING, False))
            lost = False
        else:
            out.append((it.verdict, it.forwarded))
            lost = it.kind == "truncated"
    return out


# ------------------------------------------------------------------ idle generators
def idle_none():
    return itertools.repeat(False)


def idle_random(p: float, rng: random.Random):
    while True:
        yield rng.random() < p


def idle_bursty(rng: random.Random, burst=8):
    while True:
        yield from [False] * rng.randrange(1, 4 * burst)
        yield from [True] * rng.randrange(1, burst)


def ready_always():
    return itertools.repeat(True)


def ready_random(p_ready: float, rng: random.Random):
    """Backpressure: `ready` high with probability p_ready each cycle."""
    while True:
        yield rng.random() < p_ready


def ready_bursty(rng: random.Random, burst=8):
    """Backpressure in bursts: runs of ready cycles, then runs of stalls."""
    return (not idle for idle in idle_bursty(rng, burst))


def cycles(items: list[Item], idle=None, *, gap_between: int = 0):
    """Per-cycle rx input dicts: each item's flits, with idle cycles where `idle` says."""
    idle = idle if idle is not None else idle_none()
    for it in items:
        for f in it.flits:
            while next(idle):
                yield dict(RX_IDLE)
            yield {"rx__valid": 1, "rx__data": f.data, "rx__sop": int(f.sop), "rx__eop": int(f.eop),
                   "rx__bytes": f.nbytes if f.eop else 0, "rx__link": int(f.link),
                   "rx__bad": int(f.bad), "rx__up": 1}
        for _ in range(gap_between):
            yield dict(RX_IDLE)
