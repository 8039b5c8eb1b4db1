"""Scoreboards independent of the micro-architecture.

`check_rx_parser` judges the receive parser's outputs against what each stimulus item was
built to be (verif.ib.stimulus): forwarded packets arrive intact and in order, with the
right good/bad mark and reason; refused ones never appear; link packets arrive as FC
pulses; every counter equals the number of items of its class.
"""
from __future__ import annotations

from collections import Counter

from contracts.defs import RxError
from models.packet import LRH, FCPacket
from verif.ib.stimulus import Item, expected_verdicts
from verif.monitors import FCMonitor, ParsedMonitor

__all__ = ["check_rx_parser", "expected_counters"]


def expected_counters(items: list[Item]) -> dict[str, int]:
    c = Counter()
    for it, (verdict, _fwd) in zip(items, expected_verdicts(items), strict=True):
        if verdict == RxError.NONE:
            c["good_link" if it.link else "good_data"] += 1
        else:
            c[verdict.name.lower()] += 1
    return dict(c)


def check_rx_parser(cfg, items: list[Item], mon: ParsedMonitor, fcmon: FCMonitor,
                    counters: dict[str, int]):
    nb = cfg.bytes_per_flit
    exp = expected_verdicts(items)
    fwd = [(it, v) for it, (v, f) in zip(items, exp, strict=True) if f]
    for k, ((it, v), got) in enumerate(zip(fwd, mon.packets, strict=False)):
        where = f"forwarded packet #{k} ({it.kind})"
        assert got.err == v, f"{where}: err {RxError(got.err).name}, expected {v.name}"
        assert got.bad == (v != RxError.NONE), f"{where}: bad={got.bad}"
        assert got.hdr == LRH.unpack(it.data).to_int(), f"{where}: hdr {got.hdr:#x}"
        if it.kind == "truncated":
            cut = it.meta["cut"] * nb
            assert got.data == it.data[:cut] + bytes(nb), f"{where}: bytes differ"
        elif it.kind == "runaway":
            stop = (cfg.max_packet_bytes // nb + 1) * nb
            assert got.data == it.data[:stop], f"{where}: bytes differ ({len(got.data)} vs {stop})"
        else:
            assert got.data == it.data, f"{where}: bytes differ"
    assert len(mon.packets) == len(fwd), \
        f"forwarded {len(mon.packets)} packets, expected {len(fwd)}"
    good_links = [it for it, (v, _f) in zip(items, exp, strict=True) if it.link and v == RxError.NONE]
    want_fc = []
    for it in good_links:
        f = FCPacket.unpack(it.data)
        want_fc.append((f.op, f.fctbs, f.vl, f.fccl))
    assert fcmon.packets == want_fc, "flow-control packets differ"
    want = expected_counters(items)
    got = {k: v for k, v in counters.items() if v}
    assert got == want, f"counters {got}, expected {want}"
