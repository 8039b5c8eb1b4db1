"""Fabric topologies and ibsim's net-file format.

A net file (what `ibsim` reads and `ibnetdiscover` writes; ibsim's sim_net.c is the
reference for what is accepted) is a list of node records separated by blank lines:

    Switch 8 "S1"                  # "optional description"
    [1] "H1"[1]                    # comment, lid, width/speed: ignored here
    [3] "S2"[3]

    Hca 1 "H1"
    [1] "S1"[1]

A header names the node kind (`Switch`, `Hca` or `Ca`), its port count and its unique id;
each following line `[p] "remote"[q]` says port p is cabled to port q of node "remote"
(q defaults to 1). Lines starting with `#` are comments; the settings ibsim also knows
(`switchguid=`, `vendid=`, `width=`, ...) are accepted and ignored; `include <file>`
reads another file (relative to the including one). Every cable must be written at both
ends and agree; a malformed file is rejected with `NetFileError` naming the file, the line
and the reason.

`Topology` holds nodes and cables; generators build the families the subnet manager is
measured on: 2- and 3-level k-ary fat trees, 2-D meshes and tori, dragonflies.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Node", "Topology", "NetFileError", "parse_netfile", "read_netfile", "fat_tree_2", "fat_tree_3",
           "torus_2d", "dragonfly", "GENERATORS"]

SWITCH, HCA = "Switch", "Hca"


class NetFileError(ValueError):
    """A net file that cannot be used: `where` is "file:line"."""

    def __init__(self, where: str, reason: str):
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}")


@dataclass
class Node:
    kind: str                                    # SWITCH or HCA
    name: str
    nports: int
    desc: str = ""
    ports: dict[int, tuple[str, int]] = field(default_factory=dict)   # port -> (remote node, remote port)

    @property
    def is_switch(self) -> bool:
        return self.kind == SWITCH


class Topology:
    def __init__(self, name: str = "fabric"):
        self.name = name
        self.nodes: dict[str, Node] = {}

    # ---------------------------------------------------------------- building
    def add(self, kind: str, name: str, nports: int, desc: str = "") -> Node:
        if name in self.nodes:
            raise ValueError(f"node {name!r} exists already")
        if kind not in (SWITCH, HCA):
            raise ValueError(f"node kind must be {SWITCH} or {HCA}, not {kind!r}")
        if not 1 <= nports <= 254:
            raise ValueError(f"{name}: {nports} ports (1..254)")
        n = self.nodes[name] = Node(kind, name, nports, desc)
        return n

    def connect(self, a: str, pa: int, b: str, pb: int):
        for x, px in ((a, pa), (b, pb)):
            nd = self.nodes.get(x)
            if nd is None:
                raise ValueError(f"no node {x!r}")
            if not 1 <= px <= nd.nports:
                raise ValueError(f"{x} has no port {px} (1..{nd.nports})")
            if px in nd.ports:
                raise ValueError(f"{x} port {px} is cabled already (to {nd.ports[px]})")
        if (a, pa) == (b, pb):
            raise ValueError(f"{a} port {pa} cabled to itself")
        self.nodes[a].ports[pa] = (b, pb)
        self.nodes[b].ports[pb] = (a, pa)

    def disconnect(self, a: str, pa: int):
        """Remove the cable at (a, pa) (a failed link)."""
        b, pb = self.nodes[a].ports.pop(pa)
        del self.nodes[b].ports[pb]

    # ---------------------------------------------------------------- views
    def switches(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.is_switch]

    def hcas(self) -> list[Node]:
        return [n for n in self.nodes.values() if not n.is_switch]

    def links(self) -> list[tuple[str, int, str, int]]:
        """Each cable once: (a, port, b, port) with (a, port) < (b, port)."""
        out = []
        for n in self.nodes.values():
            for p, (r, rp) in n.ports.items():
                if (n.name, p) < (r, rp):
                    out.append((n.name, p, r, rp))
        return sorted(out)

    def copy(self) -> Topology:
        t = Topology(self.name)
        for n in self.nodes.values():
            t.nodes[n.name] = Node(n.kind, n.name, n.nports, n.desc, dict(n.ports))
        return t

    # ---------------------------------------------------------------- net file
    def to_netfile(self) -> str:
        """The topology as an ibsim net file: switches first, then channel adapters (ibsim
        takes the first port of the file as the SM's port only when nothing else is said;
        OpenSM is given its port explicitly)."""
        out = [f"# {self.name}: {len(self.switches())} switches, {len(self.hcas())} channel adapters, "
               f"{len(self.links())} cables", ""]
        for n in self.switches() + self.hcas():
            desc = f'  # "{n.desc}"' if n.desc else ""
            out.append(f'{"Switch" if n.is_switch else "Hca"}\t{n.nports} "{n.name}"{desc}')
            for p in sorted(n.ports):
                r, rp = n.ports[p]
                out.append(f'[{p}]\t"{r}"[{rp}]')
            out.append("")
        return "\n".join(out)

    def write(self, path: Path | str):
        Path(path).write_text(self.to_netfile())


_HEADER = re.compile(r'^(Switch|Hca|Ca)\s+(\d+)\s+"([^"]+)"(.*)$')
_PORT = re.compile(r'^\[(\d+)\]\s*"([^"]+)"(?:\s*\[(\d+)\])?(.*)$')
_SETTINGS = ("switchguid", "hcaguids", "caguid", "rtguid", "vendid", "devid", "sysimgguid", "width", "speed",
             "extspeed", "module", "pdebug", "do ")


def parse_netfile(text: str, name: str = "<net>", *, base: Path | None = None) -> Topology:
    """A Topology from net-file text; NetFileError (file:line and reason) when malformed."""
    topo = Topology(Path(name).stem if name != "<net>" else "fabric")
    claims: list[tuple[str, str, int, str, int]] = []      # (where, node, port, remote, remote port)
    _parse(text, name, base, topo, claims, 0)
    # every cable at both ends, agreeing
    _check_cables(topo, claims)
    if not topo.nodes:
        raise NetFileError(f"{name}:1", "no nodes")
    return topo


def _check_cables(topo: Topology, claims):
    for where, a, p, b, q in claims:
        nb = topo.nodes.get(b)
        if nb is None:
            raise NetFileError(where, f"{a} port {p}: no node {b!r} in the file")
        if not 1 <= q <= nb.nports:
            raise NetFileError(where, f"{a} port {p}: {b} has ports 1..{nb.nports}, not {q}")
        back = nb.ports.get(q)
        if back is None:
            raise NetFileError(where, f"{a} port {p} -> {b} port {q}, but {b} port {q} lists no cable")
        if back != (a, p):
            raise NetFileError(where, f"{a} port {p} -> {b} port {q}, but {b} port {q} -> {back[0]} port {back[1]}")


def _parse(text: str, name: str, base: Path | None, topo: Topology, claims: list, depth: int):
    cur: Node | None = None
    for k, raw in enumerate(text.splitlines(), 1):
        where = f"{name}:{k}"
        line = raw.strip()
        if not line:
            cur = None
            continue
        if line.startswith("#"):
            continue
        m = _HEADER.match(line)
        if m:
            kind = SWITCH if m.group(1) == "Switch" else HCA
            nports = int(m.group(2))
            if not 1 <= nports <= 254:
                raise NetFileError(where, f"{m.group(1)} {m.group(3)!r}: {nports} ports (1..254)")
            if m.group(3) in topo.nodes:
                raise NetFileError(where, f"node {m.group(3)!r} defined twice")
            desc = ""
            dm = re.search(r'#\s*"([^"]*)"', m.group(4))
            if dm:
                desc = dm.group(1)
            cur = topo.add(kind, m.group(3), nports, desc)
            continue
        if line.startswith("["):
            if cur is None:
                raise NetFileError(where, "a port line outside a node record (a blank line ended the record?)")
            pm = _PORT.match(line)
            if not pm:
                raise NetFileError(where, f"cannot read the port line {line!r} (expected [port] \"node\"[port])")
            p, r, rp = int(pm.group(1)), pm.group(2), int(pm.group(3) or 1)
            if not 1 <= p <= cur.nports:
                raise NetFileError(where, f"{cur.name} has ports 1..{cur.nports}, not {p}")
            if rp < 1:
                raise NetFileError(where, f"remote port {rp} of {r!r}: ports start at 1")
            if p in cur.ports:
                raise NetFileError(where, f"{cur.name} port {p} is listed twice")
            cur.ports[p] = (r, rp)
            claims.append((where, cur.name, p, r, rp))
            continue
        if line.startswith("include"):
            parts = line.split(None, 1)
            if len(parts) != 2:
                raise NetFileError(where, "include needs a file name")
            if depth > 8:
                raise NetFileError(where, "includes nested more than 8 deep")
            inc = (base or Path(".")) / parts[1].strip()
            if not inc.exists():
                raise NetFileError(where, f"included file {inc} does not exist")
            _parse(inc.read_text(), str(inc), inc.parent, topo, claims, depth + 1)
            cur = None
            continue
        if line.startswith(_SETTINGS):
            cur = None
            continue
        raise NetFileError(where, f"cannot read {line!r} (a node header Switch|Hca <ports> \"id\", a port "
                                  f"line [p] \"id\"[q], a comment or a setting)")


def read_netfile(path: Path | str) -> Topology:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise NetFileError(f"{path}:0", f"cannot read: {e.strerror}") from None
    return parse_netfile(text, str(path), base=path.parent)


# -------------------------------------------------------------------- generators
def fat_tree_2(k: int, hosts_per_leaf: int | None = None, name: str | None = None) -> Topology:
    """A 2-level fat tree (leaf/spine) of radix-k switches: k leaves, each with k/2 hosts
    and one cable to each of k/2 spines. k = 8: 12 switches, 32 channel adapters."""
    if k < 2 or k % 2:
        raise ValueError(f"fat_tree_2: radix must be even and >= 2, got {k}")
    h = k // 2 if hosts_per_leaf is None else hosts_per_leaf
    t = Topology(name or f"ft2-k{k}")
    leaves = [t.add(SWITCH, f"L{i}", k).name for i in range(k)]
    spines = [t.add(SWITCH, f"S{j}", k).name for j in range(k // 2)]
    for i, leaf in enumerate(leaves):
        for j, spine in enumerate(spines):
            t.connect(leaf, k // 2 + 1 + j, spine, i + 1)
        for x in range(h):
            hca = t.add(HCA, f"H{i * h + x}", 1).name
            t.connect(leaf, x + 1, hca, 1)
    return t


def fat_tree_3(k: int, name: str | None = None) -> Topology:
    """A 3-level k-ary fat tree (Al-Fares et al.) of radix-k switches: k pods of k/2 edge
    and k/2 aggregation switches, (k/2)^2 core switches, k^3/4 hosts. k = 32: 1,280
    switches, 8,192 hosts; k = 80: 8,000 switches, 128,000 hosts."""
    if k < 2 or k % 2:
        raise ValueError(f"fat_tree_3: radix must be even and >= 2, got {k}")
    h = k // 2
    t = Topology(name or f"ft3-k{k}")
    core = [[t.add(SWITCH, f"C{g}_{c}", k).name for c in range(h)] for g in range(h)]
    for pod in range(k):
        edges = [t.add(SWITCH, f"E{pod}_{e}", k).name for e in range(h)]
        aggs = [t.add(SWITCH, f"A{pod}_{a}", k).name for a in range(h)]
        for e, edge in enumerate(edges):
            for a, agg in enumerate(aggs):
                t.connect(edge, h + 1 + a, agg, e + 1)
            for x in range(h):
                hca = t.add(HCA, f"H{(pod * h + e) * h + x}", 1).name
                t.connect(edge, x + 1, hca, 1)
        for a, agg in enumerate(aggs):
            for c in range(h):                           # aggregation a reaches core group a
                t.connect(agg, h + 1 + c, core[a][c], pod + 1)
    return t


def torus_2d(x: int, y: int, hosts: int = 1, wrap: bool = True, name: str | None = None) -> Topology:
    """A 2-D torus (wrap) or mesh of x * y switches, `hosts` channel adapters on each; switch
    ports: hosts first, then +x, -x, +y, -y."""
    if x < 2 or y < 2:
        raise ValueError(f"torus_2d: needs at least 2 x 2 switches, got {x} x {y}")
    if wrap and (x < 3 or y < 3):
        raise ValueError("torus_2d: a torus needs at least 3 switches per dimension (else two cables "
                         "join the same pair of ports' neighbours twice)")
    t = Topology(name or f"{'torus' if wrap else 'mesh'}-{x}x{y}")
    nports = hosts + 4
    sw = {(i, j): t.add(SWITCH, f"T{i}_{j}", nports).name for i in range(x) for j in range(y)}
    for (i, j), s in sw.items():
        for hh in range(hosts):
            t.connect(s, hh + 1, t.add(HCA, f"H{(i * y + j) * hosts + hh}", 1).name, 1)
    px, mx, py, my = hosts + 1, hosts + 2, hosts + 3, hosts + 4
    for (i, j), s in sw.items():
        if i + 1 < x or wrap:
            t.connect(s, px, sw[((i + 1) % x, j)], mx)
        if j + 1 < y or wrap:
            t.connect(s, py, sw[(i, (j + 1) % y)], my)
    return t


def dragonfly(a: int, p: int, h: int, name: str | None = None) -> Topology:
    """A dragonfly (Kim et al. 2008): g = a * h + 1 groups of a routers, each router with p
    channel adapters, a - 1 local cables (a full mesh in the group) and h global cables; every
    pair of groups is joined by one global cable. Router ports: hosts, local, global."""
    if a < 2 or p < 1 or h < 1:
        raise ValueError(f"dragonfly: a >= 2, p >= 1, h >= 1, got a={a} p={p} h={h}")
    g = a * h + 1
    k = p + (a - 1) + h
    t = Topology(name or f"dfly-a{a}p{p}h{h}")
    r = [[t.add(SWITCH, f"R{gi}_{ri}", k).name for ri in range(a)] for gi in range(g)]
    for gi in range(g):
        for ri in range(a):
            for x in range(p):
                t.connect(r[gi][ri], x + 1, t.add(HCA, f"H{(gi * a + ri) * p + x}", 1).name, 1)
        for ri in range(a):                              # local full mesh
            for rj in range(ri + 1, a):
                t.connect(r[gi][ri], p + 1 + (rj - 1), r[gi][rj], p + 1 + ri)
    # global: group gi's global port slot s (router s // h, port s % h) goes to group
    # (gi + s + 1) % g; the cable between groups A < B uses A's slot B - A - 1 and B's slot
    # g - (B - A) - 1
    for ga in range(g):
        for gb in range(ga + 1, g):
            sa, sb = gb - ga - 1, g - (gb - ga) - 1
            t.connect(r[ga][sa // h], p + a + sa % h, r[gb][sb // h], p + a + sb % h)
    return t


GENERATORS = {"ft2": fat_tree_2, "ft3": fat_tree_3, "torus": torus_2d, "dragonfly": dragonfly}
