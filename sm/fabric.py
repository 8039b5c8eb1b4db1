"""The subnet manager's view of a fabric, as arrays: switches 0..S-1 with their ports, the
channel adapters (CAs) attached to them, and the LIDs the SM assigns.

    fab = Fabric.from_topology(topo)          # or from in-band discovery (sm.inband)
    fab.nbr[s, p]      switch on port p of switch s (-1: none or a CA)
    fab.nbr_port[s, p] its port number
    fab.ca_sw[c], fab.ca_port[c]   the switch and port CA c hangs off (one port per CA)
    fab.lid_sw[s], fab.lid_ca[c]   LIDs (1..), fab.lid_dst[l] the switch a LID is at or behind

Ports are IBA port numbers 1..N (column 0 unused: a switch's port 0 is its management port,
where its own LID ends). LIDs: switches first (1..S), then CAs in topology order, unless
given. IBA's unicast LIDs end at 0xBFFF (49,151); a fabric that needs more can only be
routed in the extended-LID mode (`extended_lids`, docs/fabric.md).
"""
from __future__ import annotations

import numpy as np

from fabric.topology import Topology

__all__ = ["Fabric", "IBA_MAX_UCAST_LID", "EXT_MAX_LID", "EXT_PAGE_BITS", "FabricError", "unicast_lid"]

IBA_MAX_UCAST_LID = 0xBFFF
# The extended-LID mode (docs/fabric.md): up to 5 more DLID bits from the LRH's reserved
# field, i.e. 32 pages of 64 Ki LIDs; in every page only the low-16 values IBA calls
# unicast (1..0xBFFF) are LIDs (0 is reserved, 0xC000.. is multicast / permissive).
EXT_PAGE_BITS = 5
EXT_MAX_LID = ((1 << EXT_PAGE_BITS) - 1) << 16 | IBA_MAX_UCAST_LID


def unicast_lid(n):
    """The n-th unicast LID (n = 1, 2, ...; numpy arrays too): n itself up to 0xBFFF, then
    on through the extended pages skipping each page's low-16 0 and 0xC000..0xFFFF."""
    n = np.asarray(n, dtype=np.int64) - 1
    return (n // IBA_MAX_UCAST_LID) << 16 | (n % IBA_MAX_UCAST_LID + 1)


class FabricError(ValueError):
    pass


class Fabric:
    def __init__(self, sw_names: list[str], sw_ports: list[int], ca_names: list[str],
                 links: list[tuple[int, int, int, int]], attach: list[tuple[int, int]]):
        """links: (switch a, port, switch b, port), each once; attach: CA c -> (switch, port)."""
        self.sw_names, self.ca_names = list(sw_names), list(ca_names)
        self.S, self.C = len(sw_names), len(ca_names)
        self.nports = np.array(sw_ports, dtype=np.int32)
        self.P = int(self.nports.max()) if self.S else 0
        P1 = self.P + 1
        self.nbr = np.full((self.S, P1), -1, dtype=np.int32)
        self.nbr_port = np.zeros((self.S, P1), dtype=np.int32)
        for a, pa, b, pb in links:
            self.nbr[a, pa], self.nbr_port[a, pa] = b, pb
            self.nbr[b, pb], self.nbr_port[b, pb] = a, pa
        self.ca_sw = np.array([s for s, _ in attach], dtype=np.int32)
        self.ca_port = np.array([p for _, p in attach], dtype=np.int32)
        self.cas_at = [[] for _ in range(self.S)]
        for c, (s, _p) in enumerate(attach):
            self.cas_at[s].append(c)
        self.assign_lids()

    # ---------------------------------------------------------------- construction
    @classmethod
    def from_topology(cls, topo: Topology) -> Fabric:
        sws = topo.switches()
        idx = {n.name: k for k, n in enumerate(sws)}
        cas = [n for n in topo.hcas() if n.ports]
        links, attach = [], []
        for a, pa, b, pb in topo.links():
            na, nb = topo.nodes[a], topo.nodes[b]
            if na.is_switch and nb.is_switch:
                links.append((idx[a], pa, idx[b], pb))
        for c in cas:
            if len(c.ports) != 1:
                raise FabricError(f"CA {c.name}: {len(c.ports)} ports cabled; the SM routes one port per CA")
            (r, rp), = c.ports.values()
            if r not in idx:
                raise FabricError(f"CA {c.name} is cabled to CA {r}: no switch between them")
            attach.append((idx[r], rp))
        return cls([n.name for n in sws], [n.nports for n in sws], [c.name for c in cas], links, attach)

    def assign_lids(self, start: int = 1):
        """Switch s gets the (start + s)-th unicast LID, CA c the (start + S + c)-th: start + s
        and so on while they fit IBA's range, extended LIDs (`unicast_lid`) past it."""
        n = np.arange(start, start + self.S + self.C)
        lids = unicast_lid(n)
        self.set_lids(lids[:self.S], lids[self.S:])

    def set_lids(self, lid_sw, lid_ca):
        """Any assignment (e.g. OpenSM's): LID of switch s, LID of CA c; unique, from 1 (past
        IBA's unicast range 0xBFFF only in the extended-LID mode)."""
        lid_sw, lid_ca = np.asarray(lid_sw, dtype=np.int64), np.asarray(lid_ca, dtype=np.int64)
        if lid_sw.shape != (self.S,) or lid_ca.shape != (self.C,):
            raise FabricError(f"set_lids: {self.S} switch and {self.C} CA LIDs needed, "
                              f"got {lid_sw.size} and {lid_ca.size}")
        both = np.concatenate([lid_sw, lid_ca])
        if both.size and (both.min() < 1 or both.max() > EXT_MAX_LID):
            raise FabricError(f"set_lids: LIDs must be in 1..{EXT_MAX_LID:#x}, got {both.min()}..{both.max()}")
        low = both & 0xFFFF
        bad = (low == 0) | (low > IBA_MAX_UCAST_LID)
        if bad.any():
            raise FabricError(f"set_lids: LID {int(both[bad][0]):#x} is not unicast (its low 16 bits must be "
                              f"1..{IBA_MAX_UCAST_LID:#x})")
        if np.unique(both).size != both.size:
            dup = int(np.unique(both, return_counts=True)[0][np.unique(both, return_counts=True)[1] > 1][0])
            raise FabricError(f"set_lids: LID {dup} given twice")
        self.lid_sw, self.lid_ca = lid_sw, lid_ca
        self.L = int(both.max()) + 1 if both.size else 1    # LIDs 0..L-1 (0 reserved)
        self.lid_dst = np.full(self.L, -1, dtype=np.int32)  # switch a LID is at / behind
        self.lid_dst[self.lid_sw] = np.arange(self.S)
        self.lid_dst[self.lid_ca] = self.ca_sw
        self.lid_port = np.zeros(self.L, dtype=np.int32)    # at that switch: the port to it (0: itself)
        self.lid_port[self.lid_ca] = self.ca_port
        self._names = None

    @property
    def max_lid(self) -> int:
        return self.L - 1

    @property
    def extended_lids(self) -> bool:
        """More LIDs than IBA's unicast range holds: the extended-LID mode is needed."""
        return self.max_lid > IBA_MAX_UCAST_LID

    def lid_name(self, lid: int) -> str:
        if self._names is None:
            self._names = {int(v): n for v, n in zip(self.lid_sw, self.sw_names, strict=True)}
            self._names.update({int(v): n for v, n in zip(self.lid_ca, self.ca_names, strict=True)})
        return self._names.get(int(lid), f"lid{lid}")

    # ---------------------------------------------------------------- graph views
    def switch_graph(self):
        """The switch-to-switch adjacency as a scipy CSR matrix (one entry per neighbour pair)."""
        from scipy.sparse import csr_matrix
        rows, cols = np.nonzero(self.nbr[:, 1:] >= 0)
        dst = self.nbr[rows, cols + 1]
        data = np.ones(len(rows), dtype=np.int8)
        m = csr_matrix((data, (rows, dst)), shape=(self.S, self.S))
        m.data[:] = 1                                       # parallel cables: one edge
        return m

    def switch_ports(self, s: int) -> list[int]:
        return [p for p in range(1, self.nports[s] + 1) if self.nbr[s, p] >= 0]

    def fail_link(self, s: int, p: int):
        """Take the cable on port p of switch s out (both ends)."""
        b, q = int(self.nbr[s, p]), int(self.nbr_port[s, p])
        if b < 0:
            raise FabricError(f"switch {self.sw_names[s]} port {p}: no switch link to fail")
        self.nbr[s, p] = self.nbr[b, q] = -1
        self.nbr_port[s, p] = self.nbr_port[b, q] = 0
