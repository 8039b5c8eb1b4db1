"""Captures of InfiniBand packets that Wireshark and tshark open: a pcap file (link type
DLT_ERF = 197) of ERF records of type 21 (TYPE_INFINIBAND), the format `ibdump` writes for
real HCAs; each record is one packet from its LRH to its VCRC.

    with PcapWriter("build/demo/mads.pcap") as cap:
        cap.write(packet_bytes, t_ns=1234, port=1)

The ERF header's interface field carries `port` (0-3; tshark shows it as erf.flags.cap).
"""
from __future__ import annotations

import struct
import time
from pathlib import Path

__all__ = ["PcapWriter", "pcap_bytes", "ERF_TYPE_INFINIBAND", "DLT_ERF"]

ERF_TYPE_INFINIBAND = 21
DLT_ERF = 197
_GLOBAL = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, DLT_ERF)


def _record(pkt: bytes, t_ns: int, port: int = 0) -> bytes:
    sec, ns = divmod(int(t_ns), 1_000_000_000)
    frac = (ns << 32) // 1_000_000_000                  # ERF timestamp: 32.32 fixed point seconds
    rlen = 16 + len(pkt)
    erf = struct.pack("<Q", sec << 32 | frac) + struct.pack(">BBHHH", ERF_TYPE_INFINIBAND, 0x04 | (port & 3),
                                                            rlen, 0, len(pkt)) + pkt
    return struct.pack("<IIII", sec, ns // 1000, len(erf), len(erf)) + erf


def pcap_bytes(packets: list[bytes]) -> bytes:
    """A whole capture in memory, packet k at k seconds."""
    return _GLOBAL + b"".join(_record(p, k * 1_000_000_000) for k, p in enumerate(packets))


class PcapWriter:
    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(self.path, "wb")
        self.f.write(_GLOBAL)
        self.count = 0

    def write(self, pkt: bytes, t_ns: int | None = None, port: int = 0):
        self.f.write(_record(pkt, time.time_ns() if t_ns is None else t_ns, port))
        self.count += 1

    def flush(self):
        self.f.flush()

    def close(self):
        self.f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
