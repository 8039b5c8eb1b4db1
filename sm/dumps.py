"""OpenSM's dump files, written from our routing and read from OpenSM's, so that outside
tools check our routes and our fabric runs OpenSM's (formats from OpenSM's osm_dump.c):

  opensm-subnet.lst   a line per cabled port: both ends' node type, GUIDs, description, base
                      LID and port number, link width/state/speed ("{ SW ... } { CA ... } PHY=4x
                      LOG=ACT SPD=10"); what `ibdmchk -s` reads
  opensm.fdbs         per switch "dump_ucast_routes: Switch 0x<guid>", then per LID
                      "0x<lid> : <port>  : <hops>   : yes" or "UNREACHABLE"; what `ibdmchk -f`
                      reads
  opensm.mcfdbs       multicast forwarding tables: empty (the SM creates no groups); ibdmchk
                      wants the file
  opensm-lfts.dump    (OpenSM's) per switch "Unicast lids [0-<max>] of switch Lid <lid> guid
                      0x<guid> ('<desc>'):" then "0x<lid> <port> # ..." lines; read by
                      `read_opensm_lfts`

GUIDs of our fabric: switch s 0x0002c90000000000 + s + 1, CA c 0x0002c90100000000 + c + 1
(port GUID = node GUID; a switch's ports share its port-0 GUID).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from sm.fabric import Fabric
from sm.routing import NO_ROUTE, Routes

__all__ = ["sw_guid", "ca_guid", "write_subnet_lst", "write_fdbs", "write_dumps", "read_opensm_lfts",
           "read_opensm_guid2lid", "DumpError"]

SW_GUID0, CA_GUID0 = 0x0002C90000000000, 0x0002C90100000000


class DumpError(ValueError):
    pass


def sw_guid(s: int) -> int:
    return SW_GUID0 + s + 1


def ca_guid(c: int) -> int:
    return CA_GUID0 + c + 1


def _node(kind, nports, guid, desc, lid, port, sm=False):
    return (f"{{ {kind}{'-SM' if sm else ''} Ports:{nports:02X} SystemGUID:{guid:016x} NodeGUID:{guid:016x} "
            f"PortGUID:{guid:016x} VenID:{0x2C9:06X} DevID:{0xABCD:04X} Rev:{0:08X} {{{desc}}} LID:{lid:04X} "
            f"PN:{port:02X} }}")


def write_subnet_lst(fab: Fabric, path: Path, sm_ca: int = 0):
    lines = []
    for s in range(fab.S):
        me = ("SW", int(fab.nports[s]), sw_guid(s), fab.sw_names[s], int(fab.lid_sw[s]))
        for p in range(1, int(fab.nports[s]) + 1):
            if fab.nbr[s, p] >= 0:
                t, q = int(fab.nbr[s, p]), int(fab.nbr_port[s, p])
                far = _node("SW", int(fab.nports[t]), sw_guid(t), fab.sw_names[t], int(fab.lid_sw[t]), q)
            else:
                cs = [c for c in fab.cas_at[s] if fab.ca_port[c] == p]
                if not cs:
                    continue
                c = cs[0]
                far = _node("CA", 1, ca_guid(c), fab.ca_names[c], int(fab.lid_ca[c]), 1, sm=c == sm_ca)
            lines.append(f"{_node(*me, p)} {far} PHY=4x LOG=ACT SPD=10")
    for c in range(fab.C):
        s, p = int(fab.ca_sw[c]), int(fab.ca_port[c])
        lines.append(f"{_node('CA', 1, ca_guid(c), fab.ca_names[c], int(fab.lid_ca[c]), 1, sm=c == sm_ca)} "
                     f"{_node('SW', int(fab.nports[s]), sw_guid(s), fab.sw_names[s], int(fab.lid_sw[s]), p)} "
                     f"PHY=4x LOG=ACT SPD=10")
    Path(path).write_text("\n".join(lines) + "\n")


def _hops(fab: Fabric) -> np.ndarray:
    from scipy.sparse.csgraph import shortest_path
    d = shortest_path(fab.switch_graph(), unweighted=True, directed=False)
    return np.where(np.isinf(d), 255, d).astype(np.int32)


def write_fdbs(fab: Fabric, routes: Routes, path: Path):
    """opensm.fdbs: per switch and LID the port (and the hops the route takes from here,
    +1 to a CA, as OpenSM writes them)."""
    hops = _hops(fab)
    out = []
    is_ca = np.zeros(fab.L, dtype=bool)
    is_ca[fab.lid_ca] = True
    for s in range(fab.S):
        out.append(f"dump_ucast_routes: Switch 0x{sw_guid(s):016x}\nLID    : Port : Hops : Optimal")
        row = routes.lft[s]
        h = hops[s, np.maximum(fab.lid_dst, 0)] + is_ca
        for lid in range(1, fab.L):
            p = int(row[lid])
            if p == NO_ROUTE or fab.lid_dst[lid] < 0:
                out.append(f"0x{lid:04X} : UNREACHABLE")
            else:
                out.append(f"0x{lid:04X} : {p:03d}  : {int(h[lid]):02d}   : yes")
        out.append("")
    Path(path).write_text("\n".join(out) + "\n")


def write_dumps(fab: Fabric, routes: Routes, out_dir: Path) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    a, b, c = out_dir / "opensm-subnet.lst", out_dir / "opensm.fdbs", out_dir / "opensm.mcfdbs"
    write_subnet_lst(fab, a)
    write_fdbs(fab, routes, b)
    c.write_text("")                       # no multicast groups (ibdmchk needs the file)
    return [a, b, c]


_LFT_HDR = re.compile(r"^Unicast lids \[0-(\w+)\] of switch (?:Lid|DR path slid) (\w+) guid "
                      r"(0x[0-9a-fA-F]+) \('(.*)'\):")
_LFT_ROW = re.compile(r"^0x([0-9a-fA-F]+) (\d+) ")


def read_opensm_lfts(path: Path) -> dict[str, dict[int, int]]:
    """OpenSM's opensm-lfts.dump: switch description -> {LID: port}."""
    out: dict[str, dict[int, int]] = {}
    cur = None
    for k, line in enumerate(Path(path).read_text().splitlines(), 1):
        m = _LFT_HDR.match(line)
        if m:
            cur = out.setdefault(m.group(4), {})
            continue
        m = _LFT_ROW.match(line)
        if m:
            if cur is None:
                raise DumpError(f"{path}:{k}: an LFT row before any switch header")
            cur[int(m.group(1), 16)] = int(m.group(2))
    if not out:
        raise DumpError(f"{path}: no switch LFTs found")
    return out


_LST_NODE = re.compile(r"\{ (SW|CA|Rt)(?:-SM)? Ports:\w+ SystemGUID:\w+ NodeGUID:(\w+) PortGUID:(\w+) .*? "
                       r"\{(.*?)\} LID:(\w+) PN:(\w+) \}")


def read_opensm_guid2lid(path: Path) -> dict[str, int]:
    """Node description -> base LID, from an opensm-subnet.lst (OpenSM's LID assignment)."""
    out = {}
    for line in Path(path).read_text().splitlines():
        for m in _LST_NODE.finditer(line):
            out[m.group(4)] = int(m.group(5), 16)
    return out
