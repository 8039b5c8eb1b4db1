"""Decode IB packets with Wireshark's InfiniBand dissector (`tshark`, Debian package
tshark): each packet goes into a pcap as an ERF record of type 21 (TYPE_INFINIBAND,
link type DLT_ERF = 197), and tshark prints the fields asked for, one dict per packet.
An outside decoder: a misunderstanding of the wire format shared by our encoder and our
decoder shows up here."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from fabric.pcap import pcap_bytes

__all__ = ["tshark_fields", "have_tshark"]


def have_tshark() -> bool:
    return shutil.which("tshark") is not None


def tshark_fields(packets: list[bytes], fields: list[str]) -> list[dict[str, list[str]]]:
    """For each packet: field -> the values tshark shows (strings, as `-T json` prints them)."""
    if not have_tshark():
        raise RuntimeError("tshark not found: `make setup` installs the Debian package tshark")
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "ib.pcap"
        f.write_bytes(pcap_bytes(packets))
        cmd = ["tshark", "-r", str(f), "-T", "json"] + [a for x in fields for a in ("-e", x)]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        raise RuntimeError(f"tshark failed ({res.returncode}): {res.stderr.strip()}")
    rows = json.loads(res.stdout or "[]")
    return [r["_source"]["layers"] for r in rows]
