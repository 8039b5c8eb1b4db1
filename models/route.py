"""Golden model of the route lookup (hw/switch/route.py), from IBA's LID ranges and the
tables as the register map defines them (a pure function of header, tables, port states)."""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.defs import MGMT_PORT, RouteDrop, verilog_port
from models.packet import LRH

__all__ = ["RouteDrop", "route", "flow_hash", "flow_pin", "for_switch", "route_lid", "lft_port_of", "lft_adaptive"]


def route_lid(cfg: SwitchConfig, lrh: LRH) -> int:
    """The LID a packet is routed by: its DLID, and in extended mode (docs/fabric.md) the low
    `ext_lid_bits` of the LRH's reserved bits in front of PktLen above it (the page)."""
    return lrh.dlid | (lrh.rsvd1 & ((1 << cfg.ext_lid_bits) - 1)) << 16


def flow_hash(slid: int, dlid: int) -> int:
    """A flow's hash for flow-pinned AR groups (docs/reliability.md): bits 15:8 of
    (SLID ^ DLID) * 0x9E37 mod 2^16."""
    return (((slid ^ dlid) & 0xFFFF) * 0x9E37 & 0xFFFF) >> 8


def flow_pin(slid: int, dlid: int, count: int) -> int:
    """Which of `count` ports of a flow-pinned AR group the flow (SLID, DLID) takes
    (docs/reliability.md): a multiplicative hash of SLID xor DLID, scaled to the count."""
    h = flow_hash(slid, dlid)
    return h * count >> 8


def route(cfg: SwitchConfig, in_port: int, lrh: LRH, lft: list[int], sl2vl: list[int],
          active: set[int], mft: list[int] | None = None,
          redirected: set[int] = frozenset(),
          pinned: dict[int, list[int]] | None = None) -> tuple[RouteDrop, int, int]:
    """(reason, output port, output VL) for unicast, (reason, port mask, 0) for multicast.
    Ports in and out are Verilog indices; the tables hold IBA port numbers (IBA port p + 1
    is Verilog port p, 0 the management port): lft: one entry per DLID; sl2vl: the register
    words (in * N + out) * 2 + SL // 8, 4 bits per SL; mft: one IBA port mask per MLID -
    0xC000. In extended mode lft is indexed as cfg.lft_index says (page * lft_entries +
    low 16 bits); multicast and the permissive DLID exist only in page 0. `redirected`:
    ports that are not Active but whose packets failover sends to their alternate
    (docs/reliability.md): unicast to them is routed as to an Active port. `pinned`: for an
    output whose AR group is flow-pinned, the Active ports of that group (ascending); an
    adaptive DLID routed to such an output goes to the one flow_pin() names (its SL2VL is
    still read for the LFT's port: the ports of a group have the same)."""
    n = cfg.ports
    d, lid = lrh.dlid, route_lid(cfg, lrh)
    page = lid >> 16
    if 0xC000 <= d < 0xFFFF:                      # multicast (IBA §14.2.5.12)
        m = d - 0xC000
        if m >= cfg.mft_entries or page:
            return RouteDrop.DLID_INVALID, 0, 0
        physical = (mft or [0] * cfg.mft_entries)[m] >> 1          # bit 0: the management port
        mask = physical & ~(1 << in_port) & sum(1 << p for p in active)
        return (RouteDrop.MC_EMPTY if mask == 0 else RouteDrop.NONE), mask, 0
    if d == 0:
        return RouteDrop.DLID_INVALID, 0, 0
    if d == 0xFFFF:
        return (RouteDrop.DLID_INVALID if page else RouteDrop.TO_SWITCH), 0, 0
    index = cfg.lft_index(lid)
    if index is None:
        return RouteDrop.DLID_INVALID, 0, 0
    entry = lft_port_of(cfg, lft[index])
    if entry == MGMT_PORT:
        return RouteDrop.TO_SWITCH, 0, 0
    if entry > n:
        return RouteDrop.LFT_DROP, entry, 0
    lft_port = port = verilog_port(entry)
    members = (pinned or {}).get(port, [])
    if lft_adaptive(cfg, lft[index]) and members:
        port = members[flow_pin(lrh.slid, lrh.dlid, len(members))]
    if port not in active and port not in redirected:
        return RouteDrop.DEST_DOWN, port, 0
    word = sl2vl[(in_port * n + lft_port) * 2 + lrh.sl // 8]
    vl = (word >> (4 * (lrh.sl % 8))) & 0xF
    if vl >= cfg.data_vls:
        return RouteDrop.VL_DROP, port, vl
    return RouteDrop.NONE, port, vl


def for_switch(cfg: SwitchConfig, lrh: LRH, lft: list[int], mft: list[int] | None = None) -> bool:
    """A data-VL packet the management port takes (a copy of): a unicast DLID whose LFT entry
    is 0, or an MLID whose MFT mask has bit 0 (the management port). The permissive DLID is
    for VL15 only (IBA §7.11.1): on a data VL it is not taken."""
    d, lid = lrh.dlid, route_lid(cfg, lrh)
    if 0xC000 <= d < 0xFFFF:
        m = d - 0xC000
        return lid >> 16 == 0 and m < cfg.mft_entries and bool((mft or [0] * cfg.mft_entries)[m] & 1)
    index = cfg.lft_index(lid)
    return index is not None and lft_port_of(cfg, lft[index]) == MGMT_PORT


def lft_port_of(cfg: SwitchConfig, entry: int) -> int:
    """The IBA port an LFT entry names: with cfg.adaptive, bit 7 of an entry other than 255
    marks the DLID adaptive (docs/reliability.md) and is not part of the port."""
    return entry & 0x7F if cfg.adaptive and entry != 0xFF else entry


def lft_adaptive(cfg: SwitchConfig, entry: int) -> bool:
    """Whether an LFT entry marks its DLID adaptive (cfg.adaptive, bit 7, not 255)."""
    return cfg.adaptive and entry != 0xFF and bool(entry & 0x80)
