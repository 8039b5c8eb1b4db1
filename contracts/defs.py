"""Enumerations shared by RTL, golden models and testbenches (pure Python).

Defined once here (FlooNoC-style) so the generator, the model and the tests can never
disagree on an encoding.
"""
from __future__ import annotations

from enum import IntEnum

__all__ = ["RxError", "RX_ERROR_PRIORITY", "worst", "PortState", "RouteDrop", "RX_ERROR_COUNTERS",
           "RX_REMOTE_PHYS_COUNTERS",
           "MGMT_PORT", "LFT_NONE", "iba_port", "verilog_port"]

# Port numbers as the SM sees them (IBA §14.2.5, §18.2.4; docs/interfaces.md): port 0 is the
# switch's management port, physical ports are 1..N, and Verilog port rx__<p>/tx__<p> (p from
# 0) is IBA port p + 1. LFT entries and MFT mask bits hold IBA port numbers.
MGMT_PORT = 0
LFT_NONE = 0xFF           # LFT entry: no route (drop)


def iba_port(p: int) -> int:
    """IBA port number of Verilog port index p."""
    return p + 1


def verilog_port(port: int) -> int:
    """Verilog port index of IBA physical port `port` (1..N)."""
    if port < 1:
        raise ValueError(f"IBA port {port} is not a physical port (1..N; 0 is the management port)")
    return port - 1


class RxError(IntEnum):
    """Why the receive parser refused a packet (docs/rx-parser.md). 0 = good."""
    NONE = 0
    TRUNCATED = 1     # cut off: a new sop (or link down) before its eop
    EBP = 2           # eop marked `bad` by the PHY (end-bad-packet delimiter)
    FRAMING = 3       # flits with no packet open (missing sop), or a packet lost to a cut
    LINK_FORMAT = 4   # link packet not exactly 6 bytes in one flit, or reserved Op
    LPCRC = 5         # link packet CRC wrong (IBA §7.9.4)
    VCRC = 6          # variant CRC wrong (IBA §7.8.2)
    LVER = 7          # LRH.LVer != 0 (IBA §7.7.3)
    SHORT = 8         # LRH.PktLen below the minimum for its LNH (IBA §7.7.8)
    LONG = 9          # LRH.PktLen, or the actual length, above the MTU-derived maximum
    PKTLEN = 10       # LRH.PktLen disagrees with the packet's actual length (IBA §7.7.8)


# Highest priority first: a packet with several faults is counted once, under the first.
RX_ERROR_PRIORITY = [RxError.TRUNCATED, RxError.FRAMING, RxError.EBP, RxError.LINK_FORMAT,
                     RxError.LPCRC, RxError.VCRC, RxError.LVER, RxError.SHORT, RxError.LONG,
                     RxError.PKTLEN]


def worst(*errs: int) -> RxError:
    """The highest-priority error among `errs` (NONE if all are NONE)."""
    present = {RxError(e) for e in errs if e}
    for e in RX_ERROR_PRIORITY:
        if e in present:
            return e
    return RxError.NONE


# Receive counters that add up to PMA PortRcvErrors (hw/top/switch.py, models/switch.py).
# EBP-marked packets are not among them: IBA §16.1.3.5 counts "packets marked with the EBP
# delimiter" in PortRcvRemotePhysicalErrors (the error happened upstream), and PortRcvErrors
# holds the local ones (CRCs, physical errors, malformed packets, overruns).
RX_REMOTE_PHYS_COUNTERS = ["ebp"]
RX_ERROR_COUNTERS = ["truncated", "framing", "link_format", "lpcrc", "vcrc", "lver", "short", "long",
                     "pktlen", "state_drop", "vl_invalid", "overrun", "fc_vl_invalid"]


class RouteDrop(IntEnum):
    """Why the route lookup refused a packet (hw/switch/route.py). 0 = routed."""
    NONE = 0
    DLID_INVALID = 1
    LFT_DROP = 2
    MC_EMPTY = 3
    TO_SWITCH = 4
    DEST_DOWN = 5
    VL_DROP = 6


class PortState(IntEnum):
    """IBA §14.2.5.6 PortInfo:PortState."""
    DOWN = 1
    INIT = 2
    ARMED = 3
    ACTIVE = 4
