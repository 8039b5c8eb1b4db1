"""PCAP=1 (beside WAVES=1): every packet on every link port of a cocotb test's DUT, into
pcap files Wireshark and tshark open (fabric/pcap.py: ERF type-21 records, as `ibdump`
writes; timestamps are simulation time).

The runner passes $PCAP_DIR; `TB` starts a monitor on each link stream group of the top
it finds: `rx__<p>__*` and `tx__<p>__*` (the switch, the loopback, the fabric's ports) or
`rx__*` / `tx__*` (a single port), one file per port and direction, e.g.
`build/sim/<test>/pcap/tx3.pcap`. A flit counts when valid (and, on a transmit stream,
ready) is high at a rising clock edge; a packet is written at its eop flit, cut to the eop
flit's `bytes`. Link (flow-control) packets are written too.
"""
from __future__ import annotations

from pathlib import Path

from fabric.pcap import PcapWriter

__all__ = ["start_pcap"]


def _groups(dut) -> list[tuple[str, str]]:
    """(prefix, file stem) of every link stream group on the top."""
    out = []
    for d in ("rx", "tx"):
        if hasattr(dut, f"{d}__valid") and hasattr(dut, f"{d}__data"):
            out.append((f"{d}__", d))
        p = 0
        while hasattr(dut, f"{d}__{p}__valid") and hasattr(dut, f"{d}__{p}__data"):
            out.append((f"{d}__{p}__", f"{d}{p}"))
            p += 1
    return out


async def _watch(dut, clk, prefix: str, w: PcapWriter, nbytes: int):
    from cocotb.triggers import ReadOnly, RisingEdge
    from cocotb.utils import get_sim_time
    g = {k: getattr(dut, prefix + k) for k in ("valid", "data", "sop", "eop", "bytes")}
    ready = getattr(dut, prefix + "ready", None)
    cur = bytearray()
    while True:
        await RisingEdge(clk)
        await ReadOnly()
        if not (g["valid"].value.is_resolvable and int(g["valid"].value)):
            continue
        if ready is not None and not (ready.value.is_resolvable and int(ready.value)):
            continue
        if not g["data"].value.is_resolvable:
            continue
        flit = int(g["data"].value).to_bytes(nbytes, "big")
        if int(g["sop"].value):
            cur = bytearray()
        if int(g["eop"].value):
            n = int(g["bytes"].value) or nbytes
            cur += flit[:n]
            w.write(bytes(cur), t_ns=int(get_sim_time("ns")))
            w.flush()
            cur = bytearray()
        else:
            cur += flit


def start_pcap(dut, clk, out_dir: Path | str, nbytes: int) -> list[Path]:
    """Start a monitor per link stream group of `dut`; the files it writes."""
    import cocotb
    out = Path(out_dir)
    files = []
    for prefix, stem in _groups(dut):
        w = PcapWriter(out / f"{stem}.pcap")
        cocotb.start_soon(_watch(dut, clk, prefix, w, nbytes))
        files.append(w.path)
    return files
