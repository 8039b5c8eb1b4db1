"""Golden model of the route lookup (hw/switch/route.py), from IBA's LID ranges and the
tables as the register map defines them (a pure function of header, tables, port states)."""
from __future__ import annotations

from hw.common.config import SwitchConfig
from hw.common.defs import MGMT_PORT, RouteDrop, verilog_port
from models.packet import LRH

__all__ = ["RouteDrop", "route", "for_switch"]


def route(cfg: SwitchConfig, in_port: int, lrh: LRH, lft: list[int], sl2vl: list[int],
          active: set[int], mft: list[int] | None = None) -> tuple[RouteDrop, int, int]:
    """(reason, output port, output VL) for unicast, (reason, port mask, 0) for multicast.
    Ports in and out are Verilog indices; the tables hold IBA port numbers (IBA port p + 1
    is Verilog port p, 0 the management port): lft: one entry per DLID; sl2vl: the register
    words (in * N + out) * 2 + SL // 8, 4 bits per SL; mft: one IBA port mask per MLID -
    0xC000."""
    n = cfg.ports
    d = lrh.dlid
    if 0xC000 <= d < 0xFFFF:                      # multicast (IBA §14.2.5.12)
        m = d - 0xC000
        if m >= cfg.mft_entries:
            return RouteDrop.DLID_INVALID, 0, 0
        physical = (mft or [0] * cfg.mft_entries)[m] >> 1          # bit 0: the management port
        mask = physical & ~(1 << in_port) & sum(1 << p for p in active)
        return (RouteDrop.MC_EMPTY if mask == 0 else RouteDrop.NONE), mask, 0
    if d == 0:
        return RouteDrop.DLID_INVALID, 0, 0
    if d == 0xFFFF:
        return RouteDrop.TO_SWITCH, 0, 0
    if d >= cfg.lft_entries:
        return RouteDrop.DLID_INVALID, 0, 0
    entry = lft[d]
    if entry == MGMT_PORT:
        return RouteDrop.TO_SWITCH, 0, 0
    if entry > n:
        return RouteDrop.LFT_DROP, entry, 0
    port = verilog_port(entry)
    if port not in active:
        return RouteDrop.DEST_DOWN, port, 0
    word = sl2vl[(in_port * n + port) * 2 + lrh.sl // 8]
    vl = (word >> (4 * (lrh.sl % 8))) & 0xF
    if vl >= cfg.data_vls:
        return RouteDrop.VL_DROP, port, vl
    return RouteDrop.NONE, port, vl


def for_switch(cfg: SwitchConfig, lrh: LRH, lft: list[int], mft: list[int] | None = None) -> bool:
    """A data-VL packet the management port takes (a copy of): a unicast DLID whose LFT entry
    is 0, or an MLID whose MFT mask has bit 0 (the management port). The permissive DLID is
    for VL15 only (IBA §7.11.1): on a data VL it is not taken."""
    d = lrh.dlid
    if 0xC000 <= d < 0xFFFF:
        m = d - 0xC000
        return m < cfg.mft_entries and bool((mft or [0] * cfg.mft_entries)[m] & 1)
    return 0 < d < cfg.lft_entries and d < 0xC000 and lft[d] == MGMT_PORT
