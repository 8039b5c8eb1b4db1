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

For a routing with SLs (the layered engine), two more, so that ibdmchk follows each path on
its VL (without them it puts every path on SL 0, VL 0):

  path-sl.txt         what `ibdmchk -c` reads (ibdm's IBFabric::parsePSLFile): a line per
                      (source port, destination LID) "0x<source port GUID> <DLID> <SL>", the
                      DLID in decimal; every CA and every switch (for `ibdmchk -a`) to every
                      other LID. OpenSM 3.3 writes no such file (an SL is its answer to
                      each PathRecord query), so the name is ours
  opensm-sl2vl.dump   OpenSM's own format (osm_dump.c dump_sl2vl_tbl, written with QoS on;
                      what `ibdmchk -d` reads too): per port GUID '<Switch|Channel Adapter>
                      0x<guid>, base LID <lid>, "<desc>"', then per (in port, out port) "<in>
                      <out> : <VL of SL 0> ... <VL of SL 15>"; a switch: every in port 0..N to
                      every cabled out port, a CA: "0 0 : ...". On every port SL l -> VL l for
                      the SLs the routing uses, 0 beyond (sm.inband programs l -> l up to the
                      switch's data VLs: the same for every SL a path takes)

An adaptive-routing plan (sm.adaptive) as ibdmchk can read it, which takes one LFT:
`ar_variant_lfts` gives LFTs in which every (switch, LID) takes one of its allowed ports,
every allowed port in some LFT; `write_lmc_dumps` puts several LFTs in one set of dumps, LFT
v as LID offset v of every port (LMC, `ibdmchk -l <lmc>`): ibdmchk then builds one
dependency graph of all of them.

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
           "read_opensm_guid2lid", "DumpError", "write_path_sl", "write_sl2vl", "sl2vl_table", "ar_variant_lfts",
           "write_lmc_dumps", "PATH_SL", "SL2VL"]

PATH_SL, SL2VL = "path-sl.txt", "opensm-sl2vl.dump"

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


def write_fdbs(fab: Fabric, routes: Routes, path: Path, lmc: int = 0):
    """opensm.fdbs: per switch and LID the port (and the hops the route takes from here,
    +1 to a CA, as OpenSM writes them). lmc: every port's LIDs are its base LID (the
    fabric's, 1 mod 2**lmc: write_lmc_dumps) and the 2**lmc - 1 after it; routes.lft has a
    column for each."""
    hops = _hops(fab)
    out = []
    n = routes.lft.shape[1]
    base = ((np.arange(n) - 1) & ~((1 << lmc) - 1)) + 1         # LIDs base .. base + 2**lmc - 1 (write_lmc_dumps)
    dst = np.where(base < fab.L, fab.lid_dst[np.minimum(base, fab.L - 1)], -1)
    is_ca = np.zeros(fab.L, dtype=bool)
    is_ca[fab.lid_ca] = True
    is_ca = is_ca[np.minimum(base, fab.L - 1)] & (base < fab.L)
    for s in range(fab.S):
        out.append(f"dump_ucast_routes: Switch 0x{sw_guid(s):016x}\nLID    : Port : Hops : Optimal")
        row = routes.lft[s]
        h = hops[s, np.maximum(dst, 0)] + is_ca
        for lid in range(1, n):
            p = int(row[lid])
            if p == NO_ROUTE or dst[lid] < 0:
                out.append(f"0x{lid:04X} : UNREACHABLE")
            else:
                out.append(f"0x{lid:04X} : {p:03d}  : {int(h[lid]):02d}   : yes")
        out.append("")
    Path(path).write_text("\n".join(out) + "\n")


def write_path_sl(fab: Fabric, routes: Routes, path: Path, sls=None):
    """path-sl.txt (`ibdmchk -c`): "0x<source port GUID> <DLID> <SL>" for every CA and every
    switch to every other LID, the SL of the pair's switches (routes.sl[source switch,
    destination switch]; `sls` an (S, S) array instead, e.g. all 0)."""
    sl = routes.sl if sls is None else np.asarray(sls)
    if sl is None:
        raise DumpError(f"{path}: routing {routes.engine!r} has no SLs (Routes.sl is None): no path-SL file")
    if sl.shape != (fab.S, fab.S):
        raise DumpError(f"{path}: Routes.sl is {sl.shape}, ({fab.S}, {fab.S}) needed (source, destination switch)")
    lids = np.flatnonzero(fab.lid_dst >= 0)
    dsw = fab.lid_dst[lids]
    out = []
    srcs = [(sw_guid(s), int(fab.lid_sw[s]), s) for s in range(fab.S)]
    srcs += [(ca_guid(c), int(fab.lid_ca[c]), int(fab.ca_sw[c])) for c in range(fab.C)]
    for guid, own, s in srcs:
        row = sl[s, dsw]
        out += [f"0x{guid:016x} {int(lid)} {int(v)}" for lid, v in zip(lids, row, strict=True) if lid != own]
    Path(path).write_text("\n".join(out) + "\n")


def sl2vl_table(routes: Routes) -> list[int]:
    """The VL of SL 0..15 on every switch port: SL l -> VL l for the routing's VLs, 0 beyond."""
    return [sl if sl < max(routes.vls, 1) else 0 for sl in range(16)]


def write_sl2vl(fab: Fabric, routes: Routes, path: Path, table=None):
    """opensm-sl2vl.dump (OpenSM's format, `ibdmchk -d`): the same SL -> VL table (`table`,
    16 VLs; default sl2vl_table) on every (in port, out port) of every switch, and as a CA's
    "0 0" row (ibdmchk sends a CA's packets on the VL numbered as their SL whatever the
    CA's table says; the table only sets how many VLs it counts: the largest + 1)."""
    vl = sl2vl_table(routes) if table is None else [int(v) for v in table]
    if len(vl) != 16 or not all(0 <= v <= 15 for v in vl):
        raise DumpError(f"{path}: SL2VL table {vl}: 16 VLs 0..15 needed (one per SL)")
    row = "".join(f" {v:<2d}" for v in vl)
    head = "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15"
    sep = "#" + "-" * 56
    out = []
    for s in range(fab.S):
        n = int(fab.nports[s])
        out += [f'Switch 0x{sw_guid(s):016x}, base LID {int(fab.lid_sw[s])}, "{fab.sw_names[s]}"', head, sep]
        cas = {int(p) for p in fab.ca_port[fab.ca_sw == s]}
        for o in (p for p in range(1, n + 1) if fab.nbr[s, p] >= 0 or p in cas):      # OpenSM: out ports cabled
            out += [f"{i:<3d} {o:<3d} :{row}" for i in range(n + 1)]
        out += [sep, ""]
    for c in range(fab.C):
        out += [f'Channel Adapter 0x{ca_guid(c):016x}, base LID {int(fab.lid_ca[c])}, "{fab.ca_names[c]}"',
                head, sep, f"{0:<3d} {0:<3d} :{row}", sep, ""]
    Path(path).write_text("\n".join(out) + "\n")


def write_dumps(fab: Fabric, routes: Routes, out_dir: Path) -> list[Path]:
    """opensm-subnet.lst, opensm.fdbs, opensm.mcfdbs; for a routing with SLs also path-sl.txt
    and opensm-sl2vl.dump (module docstring)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    a, b, c = out_dir / "opensm-subnet.lst", out_dir / "opensm.fdbs", out_dir / "opensm.mcfdbs"
    write_subnet_lst(fab, a)
    write_fdbs(fab, routes, b)
    c.write_text("")                       # no multicast groups (ibdmchk needs the file)
    out = [a, b, c]
    if routes.sl is not None:
        write_path_sl(fab, routes, out_dir / PATH_SL)
        write_sl2vl(fab, routes, out_dir / SL2VL)
        out += [out_dir / PATH_SL, out_dir / SL2VL]
    return out


def _colours(fab: Fabric) -> np.ndarray:
    """A proper colouring of the switches (cabled switches differ): the level (hops from the
    nearest switch with CAs) where that is one (fat trees: every cable joins two levels),
    else greedy, in switch order."""
    from scipy.sparse.csgraph import shortest_path
    leaves = [s for s in range(fab.S) if fab.cas_at[s]]
    rows, cols = np.nonzero(fab.nbr[:, 1:] >= 0)
    nb = fab.nbr[rows, cols + 1]
    if leaves:
        lvl = shortest_path(fab.switch_graph(), unweighted=True, directed=False, indices=leaves).min(axis=0)
        if np.isfinite(lvl).all() and (lvl[rows] != lvl[nb]).all():
            return lvl.astype(np.int64)
    col = np.full(fab.S, -1, dtype=np.int64)
    for s in range(fab.S):
        taken = {int(col[t]) for t in fab.nbr[s, 1:] if t >= 0}
        col[s] = next(k for k in range(fab.S + 1) if k not in taken)
    return col


def ar_variant_lfts(fab: Fabric, routes: Routes, plan, pairwise: bool = False) -> list[np.ndarray]:
    """LFTs for an adaptive plan (sm.adaptive.ARPlan: group, adaptive, members), each a choice
    of one allowed port per (switch, LID): an adaptive LID's entry is a member of its LFT
    port's group, any other entry the LFT's.

    pairwise=False: LFT k takes the k-th member of every group (k mod its size), k < the
    largest group: every allowed port is in some LFT.
    pairwise=True: switches coloured so that cabled ones differ (`_colours`), LFT v a choice
    of a member index per colour (every combination: the product of each colour's largest
    group): for any two cabled switches, every pair of their allowed ports is in some LFT
    together, so the LFTs together have every dependency of the union of the plan's choices
    (a dependency joins two consecutive hops) as long as a path's switches with a choice
    have different colours (fat trees: a level's switches have one colour and a path climbs
    each level once; coming down it has no choice)."""
    import itertools
    lft = routes.lft
    S = fab.S
    size = np.ones(S, dtype=np.int64)
    for (s, _g), m in plan.members.items():
        size[s] = max(size[s], len(m))
    if pairwise:
        col = _colours(fab)
        ncol = int(col.max()) + 1
        per = [int(size[col == k].max()) if (col == k).any() else 1 for k in range(ncol)]
        picks = [np.array(v, dtype=np.int64)[col] for v in itertools.product(*(range(n) for n in per))]
    else:
        picks = [np.full(S, k, dtype=np.int64) for k in range(int(size.max()))]
    out = []
    for pick in picks:
        v = lft.copy()
        for (s, g), m in plan.members.items():
            row = lft[s].astype(np.int64)
            sel = plan.adaptive[s] & (row != NO_ROUTE) & (plan.group[s, np.where(row == NO_ROUTE, 0, row)] == g)
            v[s, sel] = m[int(pick[s]) % len(m)]
        out.append(v)
    return out


def write_lmc_dumps(fab: Fabric, lfts: list[np.ndarray], out_dir: Path) -> tuple[list[Path], int]:
    """The dumps of several LFTs at once (for `ibdmchk -l <lmc>`): every port gets 2**lmc
    LIDs (the fewest that hold one per LFT), its base LID routed by lfts[0], base + v by
    lfts[v] (the last LFT again past the list). Returns the files and the lmc.

    Base LIDs: switch s (s << lmc) + 1, CA c ((S + c) << lmc) + 1. Not IBA's (a base LID
    has its low lmc bits 0), but what ibdm 1.5.7 takes: its min-hop pass steps through the
    base LIDs from 1 (SubnMgtCalcMinHopTables: bLid = 1, 1 + 2**lmc, ...) and finds every
    other LID of a port unreachable; its credit-loop pass steps from 0 and takes each
    port's base LID from the port, so it meets every port once either way."""
    import copy
    if not lfts:
        raise DumpError(f"{out_dir}: no LFTs to dump")
    lmc = max(0, int(np.ceil(np.log2(len(lfts)))))
    n = 1 << lmc
    f2 = copy.deepcopy(fab)
    f2.set_lids((np.arange(fab.S) << lmc) + 1, ((fab.S + np.arange(fab.C)) << lmc) + 1)
    if f2.max_lid + n - 1 > 0xBFFF:
        raise DumpError(f"{out_dir}: {fab.S + fab.C} ports x 2**{lmc} LIDs pass the unicast LIDs (0xBFFF)")
    old = np.concatenate([fab.lid_sw, fab.lid_ca])
    new = np.concatenate([f2.lid_sw, f2.lid_ca])
    lft = np.full((fab.S, f2.L + n - 1), NO_ROUTE, dtype=np.uint8)
    for v in range(n):
        lft[:, new + v] = lfts[min(v, len(lfts) - 1)][:, old]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    a, b, c = out_dir / "opensm-subnet.lst", out_dir / "opensm.fdbs", out_dir / "opensm.mcfdbs"
    write_subnet_lst(f2, a)
    write_fdbs(f2, Routes("lmc", lft), b, lmc=lmc)
    c.write_text("")
    return [a, b, c], lmc


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
