"""The subnet manager in-band: from its own node's port, discover a fabric by directed-route
SMPs through the switches' agents, assign LIDs, route with one of sm.routing's engines,
program every switch (LID, LFT, and, for the layered engine, SL2VL) by SubnSet and bring
every cabled switch port Init -> Armed -> Active.

It needs a transport: `send(packet bytes)`, `await recv(match, timeout)` (the next
packet arriving at the SM's node for which match(bytes) holds, or None after `timeout`
cycles) and `cycles` (cycles since it started). SMPs go out a window at a time (`many`). MADs are built
with fw.mad / fw.attrs / fw.ud (the switch firmware's codecs: the single-switch bring-up
test checks those against libibmad and Wireshark).

Discovery (IBA §14.2.2): breadth first from the SM's node. A DR SMP's initial path names
the port to leave by at each hop (entry 0 unused; the first hop is the SM node's own port
1). At each new node: NodeInfo (type, ports, GUID, the port the SMP came in on); for a
switch, NodeDescription (its name), SwitchInfo and PortInfo of ports 1..N: a port whose state is above Down has a
cable; its far end is explored through path + [port]. A node that does not answer within
`timeout` cycles is taken for a channel adapter without an agent (our hardware endpoints):
it is given a LID like any CA and `on_ca(switch GUID, port, lid)` tells whoever configures
it. Nodes are told apart by GUID.

After bring-up (IBA §14.4.1 sweeps, §13.4.9 traps): `next_trap(timeout)` takes the next
SubnTrap(Notice) that arrived at the SM's node and answers it with SubnTrapRepress (same
TID); `resweep(issuers)` then reads SwitchInfo and every PortInfo of the switches named by
LID (default: all), clears their PortStateChange, and:
  - a cabled port now Down: the cable is gone from the SM's view (both ends);
  - a port up that had no cable, or a switch that does not answer: a full discovery;
then routes again with the same engine (falling back to up*/down* if that engine cannot
route what is left, e.g. ftree with a spine cable missing), keeps every LID it gave, sends
only the LFT blocks that changed (along directed routes recomputed around the failure),
and brings ports found in Init to Armed, then Active. `light_sweep()` reads SwitchInfo of
every switch and re-sweeps those with PortStateChange set: it finds changes whose traps
were lost (a trap routed by an LFT toward the failed port is).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from contracts.defs import PortState
from fw.attrs import NODE_INFO, NOTICE, PORT_INFO, SWITCH_INFO
from fw.mad import SMP, MADError, MADHeader, Method, MgmtClass, SMAttr, Status
from fw.ud import UDPacket, build_ud, parse_ud
from sm.fabric import Fabric, FabricError
from sm.failover import alternates
from sm.routing import NO_ROUTE, Routes, route

__all__ = ["InbandSM", "Discovered", "SMError"]

PERMISSIVE = 0xFFFF
NODE_SWITCH, NODE_CA = 2, 1


class SMError(RuntimeError):
    pass


@dataclass(frozen=True)
class LidRoute:
    """In place of a directed route in a request: send the SMP LID-routed to `dlid` (class
    0x01, from the SM's LID); `hops` switches on the way (for the time-out)."""
    dlid: int
    hops: int

    def __len__(self) -> int:
        return self.hops


def _low_top(fab: Fabric) -> int:
    """The largest low 16 bits of any LID (the fabric's top LID in IBA's range)."""
    return int(max((fab.lid_sw & 0xFFFF).max(initial=0), (fab.lid_ca & 0xFFFF).max(initial=0)))


def _lft_blocks(fab: Fabric, low: int) -> list[int]:
    """The LinearForwardingTable blocks (LIDs 64b..64b+63) the SM writes: 0..max_lid // 64 in
    IBA's range; with extended LIDs (docs/fabric.md) block b holds LIDs of page b >> 10, and
    every page in use gets the blocks up to the largest low 16 bits of any LID (never the
    multicast range 0xC000..0xFFFF, which the switch refuses). `low`: _low_top(fab)."""
    return [page << 10 | b for page in range((fab.max_lid >> 16) + 1) for b in range(low // 64 + 1)]


def _lft_block(row, block: int) -> bytes:
    """LinearForwardingTable block `block` (LIDs 64*block..) of one switch's LFT row: the
    port per LID, 0xFF (no route) past the row's end or where there is none (NO_ROUTE is
    0xFF: the row's bytes as they are)."""
    return np.asarray(row[64 * block:64 * block + 64], dtype=np.uint8).tobytes().ljust(64, b"\xff")


@dataclass
class DNode:
    guid: int
    kind: int                      # NODE_SWITCH / NODE_CA
    nports: int
    path: list[int]                # DR path from the SM (ports to leave by at hops 1..)
    desc: str = ""
    ports: dict[int, tuple[int, int]] = field(default_factory=dict)    # port -> (guid, port) across
    lft_cap: int = 0
    data_vls: int = 1
    port_info: dict[int, dict] = field(default_factory=dict)          # as read in discovery
    responsive: bool = True


@dataclass
class Discovered:
    nodes: dict[int, DNode]
    sm_guid: int
    sm_switch: tuple[int, int]     # (switch guid, port) the SM's node is cabled to


class InbandSM:
    SM_GUID = 0x0002C9FE00000001                           # the SM's node

    def __init__(self, transport, *, crc_msb_first: bool = False, sm_lid: int | None = None, timeout: int = 3000,
                 say=None, failover: bool = True, adaptive: bool = True, ar_mode: str = "packet",
                 lid_routed: bool = False, window: int = 3, min_timeout: int = 64):
        """failover: give every switch that has it (docs/reliability.md) its alternate ports
        (sm.failover, SMA attribute PortFailover) after its LFT, and again when a re-sweep
        changes them; a switch answering UNSUP_METHOD_ATTR has none and is not asked again.
        adaptive: likewise its adaptive-routing groups and adaptive LIDs (sm.adaptive, SMA
        attributes ARGroup and ARLinearForwardingTable), sent after the LFT blocks (an LFT
        Set writes its entries static). ar_mode: "packet" (each packet takes whichever port
        of its group can take it first: flows may be reordered) or "flow" (flow-pinned
        groups: one port per (SLID, DLID), order kept).
        lid_routed: once the tables on the way are written, program by LID-routed SMPs
        (a switch forwards them in hardware; a directed route costs a firmware visit at every
        hop): LFT blocks switch by switch outward from the SM, then the port states (see
        `program`); where the tables give no path both ways, by directed route."""
        self.lid_routed = lid_routed
        self.window = window                               # SMPs on the wire at once (`many`)
        self.min_timeout = min_timeout                     # the adaptive time-out's floor (cycles)
        if ar_mode not in ("packet", "flow"):
            raise ValueError(f"InbandSM: ar_mode must be 'packet' or 'flow', not {ar_mode!r}")
        self.ar_mode = ar_mode
        self.t = transport
        self.failover = failover
        self.adaptive = adaptive
        self.no_ar: set[int] = set()                       # switch GUIDs without adaptive routing
        self.has_ar: set[int] = set()
        self.ar_tables: dict[int, tuple] = {}              # (ARGroup blocks, {block: ARLFT block}) held
        self.ar_plan = None                                # sm.adaptive.ARPlan of the last routing
        self.no_failover: set[int] = set()                 # switch GUIDs without the attribute
        self.has_failover: set[int] = set()                # ... and with it
        self.alt_tables: dict[int, list[bytes]] = {}       # PortFailover blocks each switch holds
        self.alternates = None                             # sm.failover.Alternates of the last routing
        self.msb = crc_msb_first
        self.timeout = timeout
        self.say = say or (lambda s: None)
        self.tids = itertools.count(0x5A000000)
        self.sm_lid = sm_lid
        self.mads = 0
        self.log: list[tuple[str, int]] = []               # (attribute, status) per answer
        self._rtt_n, self._rtt_max = 0, 0.0                # answers timed, the slowest round trip per hop
        self.state: dict | None = None                     # after bring_up: d, fab, sws, cas, routes, engine, lids
        self.traps: list[dict] = []                        # every trap received (the Notice's fields + slid)

    # ---------------------------------------------------------------- MADs
    def _smp(self, method: int, attr: int, mod: int, path, data: bytes) -> tuple[int, bytes]:
        tid = next(self.tids)
        if isinstance(path, LidRoute):
            smp = SMP(hdr=MADHeader(mgmt_class=MgmtClass.SUBN_LID, method=method, tid=tid, attr_id=attr,
                                    attr_mod=mod), data=data.ljust(64, b"\0"))
            return tid, build_ud(UDPacket(vl=15, sl=0, dlid=path.dlid, slid=self.sm_lid or 0, dest_qp=0, src_qp=0,
                                          qkey=0, pkey=0xFFFF, mad=smp.pack()), self.msb)
        smp = SMP(hdr=MADHeader(mgmt_class=MgmtClass.SUBN_DR, method=method, tid=tid, attr_id=attr,
                                attr_mod=mod), data=data.ljust(64, b"\0"))
        smp.hop_count = len(path)
        smp.hop_ptr = 1              # as on the wire: the SM node's own SMI has advanced it (C14-9:1)
        smp.initial_path = ([0] + list(path) + [0] * 64)[:64]
        return tid, build_ud(UDPacket(vl=15, sl=0, dlid=PERMISSIVE, slid=PERMISSIVE, dest_qp=0, src_qp=0, qkey=0,
                                      pkey=0xFFFF, mad=smp.pack()), self.msb)

    @staticmethod
    def _tid(b: bytes) -> int | None:
        """The TID of a MAD packet, read in place (LRH, GRH if LNH says so, BTH, DETH; no
        CRC check: `many` checks the one it takes)."""
        if len(b) < 8:
            return None
        off = 8 + (40 if b[1] & 3 == 3 else 0) + 20
        return int.from_bytes(b[off + 8:off + 16], "big") if len(b) >= off + 16 else None

    async def many(self, reqs: list[tuple], *, window: int | None = None, retries: int = 1) -> list:
        """Several DR SMPs (method, attr, mod, path[, data]) with up to `window` on the wire
        at once (as OpenSM's max_wire_smps: VL15 has no flow control, and every SMP passes
        the management queues of the switches on its path); one that gets no answer within
        its time-out is sent again `retries` times. The answers (SMP or None) in order.
        Needs a transport with a cycle count (`cycles`).

        The time-out adapts, as TCP's does: `timeout` cycles until a few answers have come
        back, then 4 x the slowest round trip per hop seen so far x the path's hops (at
        least `min_timeout` cycles, at most `timeout`), so agentless nodes cost little to
        find."""
        n = len(reqs)
        out: list = [None] * n
        tries = [0] * n
        pending = list(range(n))
        inflight: dict[int, tuple[int, int]] = {}          # tid -> (request, sent at cycle)
        while pending or inflight:
            while pending and len(inflight) < (window or self.window):
                k = pending.pop(0)
                method, attr, mod, path, *data = reqs[k]
                tid, pkt = self._smp(method, attr, mod, path, data[0] if data else bytes(64))
                self.t.send(pkt)
                self.mads += 1
                inflight[tid] = (k, self.t.cycles)
            due = min(at + self._timeout_for(len(reqs[k][3])) for k, at in inflight.values())
            got = await self.t.recv(lambda b: self._tid(b) in inflight, max(1, due - self.t.cycles))
            if got is not None:
                try:
                    r = SMP.unpack(parse_ud(got, self.msb).mad)
                except MADError:
                    continue                              # corrupt: not an answer (its SMP times out)
                k, at = inflight.pop(self._tid(got))
                self._rtt_n += 1
                self._rtt_max = max(self._rtt_max, (self.t.cycles - at) / max(1, len(reqs[k][3])))
                self.log.append((f"{reqs[k][1]:#06x}", r.status))
                out[k] = r
                continue
            for tid, (k, at) in list(inflight.items()):
                if at + self._timeout_for(len(reqs[k][3])) <= self.t.cycles:
                    del inflight[tid]
                    if tries[k] < retries:
                        tries[k] += 1
                        pending.insert(0, k)
        return out

    def _timeout_for(self, hops: int) -> int:
        if self._rtt_n < 4:
            return self.timeout
        return int(min(self.timeout, max(self.min_timeout, 4 * self._rtt_max * max(1, hops))))

    async def get(self, attr, mod, path):
        """One SubnGet along `path` (as `many` sends it): the answer, or None on no answer."""
        r, = await self.many([(Method.GET, attr, mod, path)])
        if r is not None and r.status:
            raise SMError(f"SubnGet {attr:#06x}({mod:#x}) along {path}: status {r.status:#06x}")
        return r

    async def set(self, attr, mod, path, data: bytes):
        r, = await self.many([(Method.SET, attr, mod, path, data)])
        if r is None:
            raise SMError(f"SubnSet {attr:#06x}({mod:#x}) along {path}: no answer")
        if r.status:
            raise SMError(f"SubnSet {attr:#06x}({mod:#x}) along {path}: status {r.status:#06x}")
        return r

    # ---------------------------------------------------------------- discovery
    async def discover(self) -> Discovered:
        sm = self.SM_GUID
        nodes: dict[int, DNode] = {sm: DNode(sm, NODE_CA, 1, [], desc="SM")}
        at: dict[tuple, int] = {(): sm}                      # path -> the node it reaches

        def cable(a, pa, b, pb):
            nodes[a].ports[pa] = (b, pb)
            nodes[b].ports[pb] = (a, pa)

        frontier = [[1]]                                    # out of the SM node's port 1
        while frontier:                                     # breadth first, a wave at a time
            answers = await self.many([(Method.GET, SMAttr.NODE_INFO, 0, p) for p in frontier])
            new = []
            for path, r in zip(frontier, answers, strict=True):
                parent, out = at[tuple(path[:-1])], path[-1]
                if r is None:                               # no agent answers: a CA of ours
                    g = (1 << 62) | (parent & 0xFFFFFFFFFF) << 8 | out
                    nodes[g] = DNode(g, NODE_CA, 1, path, responsive=False)
                    cable(parent, out, g, 1)
                    continue
                if r.status:
                    raise SMError(f"SubnGet NodeInfo along {path}: status {r.status:#06x}")
                ni = NODE_INFO.unpack(r.data)
                g, lp = ni["node_guid"], ni["local_port_num"]
                known = g in nodes
                if not known:
                    nodes[g] = DNode(g, ni["node_type"], ni["num_ports"], path)
                    at[tuple(path)] = g
                    if ni["node_type"] == NODE_SWITCH:
                        new.append((g, lp))
                cable(parent, out, g, lp)
            frontier = []
            reqs = []
            for g, _lp in new:
                path = nodes[g].path
                reqs += [(Method.GET, SMAttr.NODE_DESC, 0, path), (Method.GET, SMAttr.SWITCH_INFO, 0, path)]
                reqs += [(Method.GET, SMAttr.PORT_INFO, p, path) for p in range(1, nodes[g].nports + 1)]
            answers = iter(await self.many(reqs))
            for g, lp in new:
                node = nodes[g]
                got = [next(answers) for _ in range(2 + node.nports)]
                if any(r is None or r.status for r in got):
                    bad = [r.status if r is not None else "no answer" for r in got]
                    raise SMError(f"switch {g:#x} (path {node.path}) stopped answering: {bad}")
                node.desc = got[0].data.split(b"\0", 1)[0].decode("utf-8", "replace").strip()
                node.lft_cap = SWITCH_INFO.unpack(got[1].data)["linear_fdb_cap"]
                for p in range(1, node.nports + 1):
                    pi = PORT_INFO.unpack(got[1 + p].data)
                    node.port_info[p] = pi
                    node.data_vls = 1 << max(0, pi["vl_cap"] - 1)      # VLCap 1: VL0, 2: VL0-1, ...
                    if pi["port_state"] > PortState.DOWN and p != lp:
                        frontier.append(node.path + [p])
        n_sw = sum(1 for n in nodes.values() if n.kind == NODE_SWITCH)
        self.say(f"discover: {n_sw} switches, {len(nodes) - n_sw - 1} channel adapters beside the SM's node, "
                 f"{self.mads} SMPs")
        return Discovered(nodes, sm, nodes[sm].ports[1])

    # ---------------------------------------------------------------- the fabric the SM routes
    def fabric(self, d: Discovered) -> tuple[Fabric, list[int], list[int]]:
        sws = sorted(g for g, n in d.nodes.items() if n.kind == NODE_SWITCH)
        cas = sorted(g for g, n in d.nodes.items() if n.kind != NODE_SWITCH and g != d.sm_guid and n.ports)
        si = {g: k for k, g in enumerate(sws)}
        links, attach = set(), []
        for g in sws:
            for p, (og, op) in d.nodes[g].ports.items():
                if og in si:
                    a, b = (si[g], p), (si[og], op)
                    links.add((*min(a, b), *max(a, b)))
        for g in cas + [d.sm_guid]:                       # the SM's node last: a CA too
            og, op = d.nodes[g].ports[1]
            attach.append((si[og], op))
        names = [d.nodes[g].desc or f"S{g:x}" for g in sws]
        fab = Fabric(names, [d.nodes[g].nports for g in sws], [f"CA{g:x}" for g in cas] + ["SM"],
                     sorted(links), attach)
        return fab, sws, cas

    # ---------------------------------------------------------------- programming
    async def _set_all(self, reqs: list[tuple], what: str):
        for (_m, attr, mod, path, data), r in zip(reqs, await self.many(reqs), strict=True):
            if r is None:
                raise SMError(f"{what}: SubnSet {attr:#06x}({mod:#x}) along {path}: no answer")
            if r.status and not await self._already(attr, mod, path, data, r.status):
                raise SMError(f"{what}: SubnSet {attr:#06x}({mod:#x}) along {path}: status {r.status:#06x}")

    async def _already(self, attr: int, mod: int, path, data: bytes, status: int) -> bool:
        """A PortState Set refused as INVALID_FIELD because the port is already in that
        state: a Set resent after its answer was late (the first one took effect). Read
        back, it is done."""
        if attr != SMAttr.PORT_INFO or status != Status.INVALID_FIELD:
            return False
        want = PORT_INFO.unpack(data)["port_state"]
        if want not in (PortState.ARMED, PortState.ACTIVE):
            return False
        r, = await self.many([(Method.GET, SMAttr.PORT_INFO, mod, path)])
        return r is not None and not r.status and PORT_INFO.unpack(r.data)["port_state"] == want

    def _walk(self, fab: Fabric, r: Routes, x: int, lid: int) -> list[int] | None:
        """The switches a packet from switch x to `lid` passes by the tables (x first, the
        LID's own switch last); None if it is dropped or loops."""
        seen = [x]
        for _ in range(fab.S + 1):
            port = int(r.lft[x, lid])
            if port == NO_ROUTE:
                return None
            if port == 0 or fab.nbr[x, port] < 0:
                return seen if x == fab.lid_dst[lid] and port == fab.lid_port[lid] else None
            x = int(fab.nbr[x, port])
            seen.append(x)
        return None

    def _lid_route(self, fab: Fabric, r: Routes, lid: int, hops: int, ready) -> LidRoute | None:
        """A LidRoute to `lid` if the tables carry an SMP there through switches `ready(switch)`
        holds for (their tables written) and its answer back to the SM (every switch holds
        the SM's LID once `program`'s first step is done), else None."""
        home = int(fab.ca_sw[-1])                            # the SM's switch
        there = self._walk(fab, r, home, lid)
        if there is None or not all(ready(x) for x in there[:-1]):
            return None
        if self._walk(fab, r, int(fab.lid_dst[lid]), self.sm_lid) is None:
            return None
        return LidRoute(lid, hops)

    async def program(self, d: Discovered, fab: Fabric, sws: list[int], r: Routes):
        """Switch LIDs, SwitchInfo (LinearFDBTop, LifeTimeValue), LFT blocks, SL2VL (layered),
        every cabled port Armed then Active. With `lid_routed`: first by directed route each
        switch's LID, SwitchInfo, SL2VL and the LFT block that holds the SM's LID (so every
        switch can answer by LID); then the other blocks a distance from the SM at a time,
        LID-routed where the tables written so far carry the SMP there and back; then the
        port states, LID-routed where the tables allow (a host's port: Armed by directed
        route, which gives it its LID, Active by LID)."""
        reqs = []
        later: dict[int, list[tuple]] = {}                    # distance -> LFT Sets sent after
        # LinearFDBCap: the LFT's entries (in the extended-LID mode, per page: the low 16 bits
        # of every LID must be below it; a page the switch lacks is refused block by block)
        low = _low_top(fab)
        blocks = _lft_blocks(fab, low)
        sm_block = (self.sm_lid >> 16 << 10 | (self.sm_lid & 0xFFFF) // 64) if self.sm_lid is not None else None
        for k, g in enumerate(sws):
            path = d.nodes[g].path
            if fab.lid_sw[k] > 0xFFFF:
                raise SMError(f"switch {fab.sw_names[k]}: LID {int(fab.lid_sw[k]):#x} does not fit PortInfo:LID "
                              f"(16 bits): switches need LIDs of page 0")
            reqs.append((Method.SET, SMAttr.PORT_INFO, 0, path,
                         PORT_INFO.pack({"lid": int(fab.lid_sw[k]), "master_sm_lid": self.sm_lid or 0})))
            if low >= d.nodes[g].lft_cap:
                raise SMError(f"switch {fab.sw_names[k]}: LIDs up to {low:#x} (low 16 bits), its LFT holds "
                              f"{d.nodes[g].lft_cap}")
            # as OpenSM does: LinearFDBTop the top LID, LifeTimeValue its packet_life_time
            reqs.append((Method.SET, SMAttr.SWITCH_INFO, 0, path, SWITCH_INFO.pack({
                "linear_fdb_top": low, "multicast_fdb_top": 0xBFFF, "default_mcast_primary_port": 0xFF,
                "default_mcast_not_primary_port": 0xFF, "life_time_value": self.PACKET_LIFE})))
            for block in blocks:
                req = (Method.SET, SMAttr.LFT, block, path, _lft_block(r.lft[k], block))
                if self.lid_routed and block != sm_block:
                    later.setdefault(len(path), []).append((k, req))
                else:
                    reqs.append(req)
            if r.sl is not None and r.vls > 1:
                nvl = d.nodes[g].data_vls
                if r.vls > nvl:
                    raise SMError(f"switch {fab.sw_names[k]}: the routing needs {r.vls} VLs, it has {nvl}")
                # SL l -> VL l on every (in, out) pair: one optimized Set (IBA §14.2.5.8)
                vl = [sl if sl < nvl else 0 for sl in range(16)]
                reqs.append((Method.SET, SMAttr.SL2VL, 0x30000, path,
                             bytes(vl[2 * i] << 4 | vl[2 * i + 1] for i in range(8))))
        await self._set_all(reqs, "program")
        n_sets, n_lid = len(reqs), 0
        done: set[int] = set()                                # switches whose every block is written
        if later:
            for dist in sorted(later):
                batch = []
                for k, (m, attr, mod, path, data) in later[dist]:
                    lr = self._lid_route(fab, r, int(fab.lid_sw[k]), len(path), done.__contains__)
                    batch.append((m, attr, mod, lr or path, data))
                    n_lid += lr is not None
                await self._set_all(batch, f"program (distance {dist})")
                n_sets += len(batch)
                done |= {k for k, _ in later[dist]}
        self.say(f"program: {len(sws)} switches: LID, {len(blocks)} LFT block(s) each"
                 + (", SL2VL" if r.sl is not None and r.vls > 1 else "") + f" ({n_sets} SubnSets"
                 + (f", {n_lid} LID-routed)" if self.lid_routed else ")"))
        self.alt_tables = await self._program_failover(d, fab, sws, r, {})
        self.ar_tables = await self._program_adaptive(d, fab, sws, r, {}, {(g, b) for g in sws for b in blocks})
        # channel adapters with an agent (hosts: fw/ca.py) and, over a transport that has
        # one (`local_port`: sm.umad), the SM's own port: LID, MasterSMLID and the state
        cas = [g for g in sorted(g for g, n in d.nodes.items() if n.kind != NODE_SWITCH and g != d.sm_guid
                                 and n.ports)]
        ca_lid = {g: int(fab.lid_ca[c]) for c, g in enumerate(cas)}
        hosts = [(d.nodes[g].path, ca_lid[g]) for g in cas if d.nodes[g].responsive]
        if getattr(self.t, "local_port", False):
            hosts.append(([], int(fab.lid_ca[-1])))
        by_lid = {g: self._lid_route(fab, r, int(fab.lid_sw[k]), len(d.nodes[g].path), lambda x: True)
                  for k, g in enumerate(sws)} if self.lid_routed else {}
        for want in (PortState.ARMED, PortState.ACTIVE):
            # with the state, what OpenSM sets on the way up: NeighborMTU and OperationalVLs
            # (here the port's own MTUCap and VLCap: both ends of every link are ours)
            reqs = [self._port_up(d, g, p, want, by_lid.get(g)) for g in sws for p in sorted(d.nodes[g].ports)]
            for path, lid in hosts:
                via = path
                if self.lid_routed and want == PortState.ACTIVE and path:
                    via = self._lid_route(fab, r, lid, len(path), lambda x: True) or path
                reqs.append((Method.SET, SMAttr.PORT_INFO, 1, via, PORT_INFO.pack({
                    "lid": lid, "master_sm_lid": self.sm_lid or 0, "port_state": int(want)})))
            await self._set_all(reqs, want.name)
        self.say("activate: every cabled switch port" + (f" and {len(hosts)} host port(s)" if hosts else "")
                 + " Armed, then Active")

    # HOQLife and VLStallCount as OpenSM sets them by default (its head_of_queue_lifetime
    # 0x12, leaf_head_of_queue_lifetime 0x10 toward channel adapters, vl_stall_count 7):
    # 4.096 us x 2^18 = 1.07 s between switches, x 2^16 = 268 ms toward a CA
    HOQ_LIFE, LEAF_HOQ_LIFE, VL_STALL_COUNT = 0x12, 0x10, 7
    # SwitchInfo:LifeTimeValue as OpenSM sets it by default (packet_life_time 0x12: 1.07 s)
    PACKET_LIFE = 0x12

    def _port_up(self, d: Discovered, g: int, p: int, want: PortState, via=None) -> tuple:
        """PortInfo Set of switch g's port p to `want`, with what OpenSM sets on the way up:
        NeighborMTU and OperationalVLs (the port's own MTUCap and VLCap: both ends of every
        link are ours), HOQLife and VLStallCount (switches with lifetimes enforce HOQLife)."""
        n = d.nodes[g]
        far = n.ports.get(p)
        to_ca = far is not None and (far[0] not in d.nodes or d.nodes[far[0]].kind != NODE_SWITCH)
        return (Method.SET, SMAttr.PORT_INFO, p, via or n.path, PORT_INFO.pack({
            "port_state": int(want), "neighbor_mtu": n.port_info[p]["mtu_cap"],
            "operational_vls": n.port_info[p]["vl_cap"], "vl_stall_count": self.VL_STALL_COUNT,
            "hoq_life": self.LEAF_HOQ_LIFE if to_ca else self.HOQ_LIFE}))

    async def _program_adaptive(self, d: Discovered, fab: Fabric, sws: list[int], r: Routes,
                                old: dict, rewritten: set) -> dict:
        """ARGroup and ARLinearForwardingTable blocks for every switch that has adaptive
        routing: those that differ from `old` ({guid: (group blocks, {LFT block: ARLFT
        block})}) sent, and the ARLFT block of every LFT block in `rewritten` ((guid, block)
        pairs an LFT Set just made static). Returns the tables now held."""
        if not self.adaptive:
            return {}
        from sm.adaptive import ar_plan
        ask = [g for g in sws if g not in self.no_ar and g not in self.has_ar]
        for g, rsp in zip(ask, await self.many([(Method.GET, SMAttr.AR_GROUP, 0, d.nodes[g].path) for g in ask]),
                          strict=True):
            if rsp is not None and rsp.status == Status.UNSUP_METHOD_ATTR:
                self.no_ar.add(g)
            elif rsp is not None and not rsp.status:
                self.has_ar.add(g)
        if not any(g in self.has_ar for g in sws):
            return {}
        plan = ar_plan(fab, r)
        if plan.why:
            self.say(f"adaptive routing: {plan.why}")
        lft_blocks = _lft_blocks(fab, _low_top(fab))
        tables, reqs = {}, []
        for k, g in enumerate(sws):
            if g not in self.has_ar:
                continue
            path = d.nodes[g].path
            groups = [plan.group_block(k, int(fab.nports[k]), b, pinned=self.ar_mode == "flow")
                      for b in range(int(fab.nports[k]) // 64 + 1)]
            arlft = {b: plan.lft_block(k, b) for b in lft_blocks}
            tables[g] = (groups, arlft)
            prev = old.get(g, ([None] * len(groups), {}))
            for b, blk in enumerate(groups):
                if prev[0][b] != blk:
                    reqs.append((Method.SET, SMAttr.AR_GROUP, b, path, blk))
            for b, blk in arlft.items():
                if (g, b) in rewritten and any(blk) or (g, b) not in rewritten and prev[1].get(b, bytes(64)) != blk:
                    reqs.append((Method.SET, SMAttr.AR_LFT, b, path, blk))
        await self._set_all(reqs, "adaptive routing")
        self.ar_plan = plan
        if reqs:
            self.say(f"adaptive routing: {plan.groups} group(s), {plan.lids} adaptive (switch, LID) pairs; "
                     f"{len(reqs)} block(s) sent")
        return tables

    async def _program_failover(self, d: Discovered, fab: Fabric, sws: list[int], r: Routes,
                                old: dict) -> dict:
        """PortFailover blocks for every switch that has failover, those that differ from
        `old` ({guid: [block bytes]}) sent. Returns the tables now held."""
        if not self.failover:
            return {}
        # which switches have failover: a Get of PortFailover, once per switch (the others
        # answer UNSUP_METHOD_ATTR); computing alternates is skipped if none has it
        ask = [g for g in sws if g not in self.no_failover and g not in self.has_failover]
        for g, rsp in zip(ask, await self.many([(Method.GET, SMAttr.PORT_FAILOVER, 0, d.nodes[g].path)
                                                 for g in ask]), strict=True):
            if rsp is not None and rsp.status == Status.UNSUP_METHOD_ATTR:
                self.no_failover.add(g)
            elif rsp is not None and not rsp.status:
                self.has_failover.add(g)
        if not any(g in self.has_failover for g in sws):
            return {}
        a = alternates(fab, r)
        tables, reqs, owner = {}, [], []
        for k, g in enumerate(sws):
            if g not in self.has_failover:
                continue
            tabs = [a.table(k, int(fab.nports[k]), b) for b in range(int(fab.nports[k]) // 64 + 1)]
            tables[g] = tabs
            for b, tab in enumerate(tabs):
                if old.get(g, [None] * len(tabs))[b] != tab:
                    reqs.append((Method.SET, SMAttr.PORT_FAILOVER, b, d.nodes[g].path, tab))
                    owner.append(g)
        sent = 0
        for g, (_m, attr, mod, path, _data), rsp in zip(owner, reqs, await self.many(reqs), strict=True):
            if rsp is None:
                raise SMError(f"failover: SubnSet {attr:#06x}({mod:#x}) along {path}: no answer")
            if rsp.status == Status.UNSUP_METHOD_ATTR:
                self.no_failover.add(g)                    # built without failover
                tables.pop(g, None)
            elif rsp.status:
                raise SMError(f"failover: SubnSet {attr:#06x}({mod:#x}) along {path}: status {rsp.status:#06x}")
            else:
                sent += 1
        if reqs:
            self.say(f"failover: {a.covered} of {a.links} routed switch ports have an alternate; "
                     f"{sent} PortFailover block(s) sent, {len(self.no_failover)} switch(es) without failover")
        self.alternates = a
        return tables

    async def bring_up(self, engine="ftree", on_ca=None) -> tuple[Discovered, Fabric, Routes]:
        """engine: one of sm.routing's engines, or a function fab -> Routes that may also
        assign the LIDs (e.g. OpenSM's routing read back: sm.opensm.OpenSMRun.routes)."""
        d = await self.discover()
        fab, sws, cas = self.fabric(d)
        r = engine(fab) if callable(engine) else route(fab, engine)
        self.say(f"route: {r.engine}, {fab.S} switches, LIDs up to {fab.max_lid}, {r.vls} VL(s), "
                 f"{r.info.get('seconds', 0.0):.2f} s")
        if on_ca is not None:
            for c, g in enumerate(cas):
                og, op = d.nodes[g].ports[1]
                on_ca(og, op, int(fab.lid_ca[c]))
        self.sm_lid = int(fab.lid_ca[-1])
        await self.program(d, fab, sws, r)
        lids = {g: int(fab.lid_sw[k]) for k, g in enumerate(sws)}
        lids.update({g: int(fab.lid_ca[c]) for c, g in enumerate(cas)})
        lids[d.sm_guid] = self.sm_lid
        self.state = {"d": d, "fab": fab, "sws": sws, "cas": cas, "routes": r, "engine": engine, "lids": lids}
        return d, fab, r

    # ---------------------------------------------------------------- traps and re-sweeps
    def _trap_of(self, b: bytes) -> SMP | None:
        try:
            u = parse_ud(b, self.msb)
            smp = SMP.unpack(u.mad)
        except MADError:
            return None
        if smp.dr or smp.hdr.method != Method.TRAP or smp.hdr.attr_id != SMAttr.NOTICE:
            return None
        return smp

    async def next_trap(self, timeout: int) -> dict | None:
        """The next trap that arrives within `timeout` cycles (the Notice's fields, `slid`
        the sender's LID), answered with SubnTrapRepress; None if none came."""
        got = await self.t.recv(lambda b: self._trap_of(b) is not None, timeout)
        if got is None:
            return None
        u = parse_ud(got, self.msb)
        smp = self._trap_of(got)
        notice = NOTICE.unpack(smp.data) | {"slid": u.slid, "tid": smp.hdr.tid}
        self.traps.append(notice)
        rep = SMP(hdr=MADHeader(mgmt_class=MgmtClass.SUBN_LID, method=Method.TRAP_REPRESS, tid=smp.hdr.tid,
                                attr_id=SMAttr.NOTICE), data=smp.data)
        self.t.send(build_ud(UDPacket(vl=15, sl=0, dlid=u.slid, slid=self.sm_lid or 0, dest_qp=0, src_qp=0, qkey=0,
                                      pkey=0xFFFF, mad=rep.pack()), self.msb))
        self.mads += 1
        self.say(f"trap {notice['trap_number']} from LID {u.slid} (LIDADDR {notice['lid_addr']}): repressed")
        return notice

    def _paths(self, d: Discovered):
        """Directed routes from the SM to every node, breadth first over the cables known."""
        for n in d.nodes.values():
            n.path = None
        d.nodes[d.sm_guid].path = []
        todo = [d.sm_guid]
        while todo:
            nxt = []
            for g in todo:
                node = d.nodes[g]
                if node.kind != NODE_SWITCH and g != d.sm_guid:
                    continue                                 # CAs do not forward
                for p, (og, _op) in sorted(node.ports.items()):
                    if d.nodes[og].path is None:
                        d.nodes[og].path = node.path + [p if g != d.sm_guid else 1]
                        nxt.append(og)
            todo = nxt
        for g in [g for g, n in d.nodes.items() if n.path is None]:     # cut off from the SM
            for _p, (og, op) in d.nodes.pop(g).ports.items():
                if og in d.nodes:
                    d.nodes[og].ports.pop(op, None)

    async def light_sweep(self) -> dict | None:
        """SwitchInfo of every switch; a re-sweep of those with PortStateChange set."""
        st = self._need_state()
        sws = st["sws"]
        got = await self.many([(Method.GET, SMAttr.SWITCH_INFO, 0, st["d"].nodes[g].path) for g in sws])
        changed = [st["lids"][g] for g, r in zip(sws, got, strict=True)
                   if r is None or r.status or SWITCH_INFO.unpack(r.data)["port_state_change"]]
        self.say(f"light sweep: {len(sws)} switches, PortStateChange at LIDs {changed}")
        return await self.resweep(changed) if changed else None

    def _need_state(self) -> dict:
        if self.state is None:
            raise SMError("no fabric brought up yet: bring_up() first")
        return self.state

    async def _read_switches(self, d: Discovered, targets: list[int], lost: list, found: list, init_ports: list,
                             clear: list) -> list[int]:
        """SwitchInfo and every PortInfo of `targets`; cables found Down are taken out of
        `d` (and listed in `lost`), ports up without a cable listed in `found`. Returns the
        switches that did not answer."""
        reqs = []
        for g in targets:
            path = d.nodes[g].path
            reqs.append((Method.GET, SMAttr.SWITCH_INFO, 0, path))
            reqs += [(Method.GET, SMAttr.PORT_INFO, p, path) for p in range(1, d.nodes[g].nports + 1)]
        answers = iter(await self.many(reqs))
        silent = []
        for g in targets:
            node = d.nodes[g]
            got = [next(answers) for _ in range(1 + node.nports)]
            if any(r is None or r.status for r in got):
                silent.append(g)
                continue
            clear.append((g, SWITCH_INFO.unpack(got[0].data)))
            for p in range(1, node.nports + 1):
                pi = PORT_INFO.unpack(got[p].data)
                node.port_info[p] = pi
                up = pi["port_state"] > PortState.DOWN
                if p in node.ports and not up:
                    og, op = node.ports.pop(p)
                    d.nodes[og].ports.pop(op, None)
                    lost.append((g, p, og, op))
                elif up and p not in node.ports:
                    found.append((g, p))
                if up and pi["port_state"] == PortState.INIT and p in node.ports:
                    init_ports.append((g, p))
        return silent

    async def resweep(self, issuers: list[int] | None = None) -> dict:
        """Re-read the switches with these LIDs (all if None), update the SM's view, route
        again, send what changed. Returns a summary (what was lost/found, SMPs, blocks)."""
        st = self._need_state()
        d: Discovered = st["d"]
        mads0 = self.mads
        by_lid = {st["lids"][g]: g for g in st["sws"]}
        targets = [by_lid[x] for x in issuers if x in by_lid] if issuers is not None else list(st["sws"])
        lost, found, init_ports, clear = [], [], [], []
        silent = await self._read_switches(d, targets, lost, found, init_ports, clear)
        if silent:                  # their directed routes may have crossed the lost cables
            old_paths = {g: d.nodes[g].path for g in silent}
            self._paths(d)
            retry = [g for g in silent if g in d.nodes and d.nodes[g].path != old_paths[g]]
            silent = [g for g in silent if g not in retry]
            silent += await self._read_switches(d, retry, lost, found, init_ports, clear)
        if found or silent:
            self.say(f"re-sweep: ports up without a cable {found}, silent switches {silent}: full discovery")
            d = await self.discover()
            init_ports = [(g, p) for g, n in d.nodes.items() if n.kind == NODE_SWITCH
                          for p in n.ports if n.port_info[p]["port_state"] == PortState.INIT]
        self._paths(d)
        # route what is there now, with the LIDs given before (new nodes: above them)
        fab, sws, cas = self.fabric(d)
        lids = st["lids"]
        nxt = max(lids.values()) + 1
        for g in sws + cas:
            if g not in lids:
                lids[g], nxt = nxt, nxt + 1
        fab.set_lids([lids[g] for g in sws], [lids[g] for g in cas] + [self.sm_lid])
        engine = st["engine"]
        try:
            r = engine(fab) if callable(engine) else route(fab, engine)
        except FabricError as e:
            self.say(f"re-sweep: {getattr(engine, '__name__', engine)} cannot route this ({e}): up*/down*")
            r = route(fab, "updn")
        # the LFT blocks that differ from what each switch holds
        old_r, old_row = st["routes"], {g: k for k, g in enumerate(st["sws"])}
        sets = []
        rewritten = set()                                 # (switch, LFT block) written now
        blocks = _lft_blocks(fab, _low_top(fab))
        for k, g in enumerate(sws):
            path = d.nodes[g].path
            for block in blocks:
                new = _lft_block(r.lft[k], block)
                ok = old_row.get(g)
                if ok is None or new != _lft_block(old_r.lft[ok], block):
                    sets.append((Method.SET, SMAttr.LFT, block, path, new))
                    rewritten.add((g, block))
        for g, si in clear:                               # PortStateChange is write-1-to-clear
            sets.append((Method.SET, SMAttr.SWITCH_INFO, 0, d.nodes[g].path,
                         SWITCH_INFO.pack({**si, "port_state_change": 1})))
        await self._set_all(sets, "re-sweep")
        self.alt_tables = await self._program_failover(d, fab, sws, r, self.alt_tables)
        self.ar_tables = await self._program_adaptive(d, fab, sws, r, self.ar_tables, rewritten)
        for want in (PortState.ARMED, PortState.ACTIVE):
            await self._set_all([self._port_up(d, g, p, want) for g, p in init_ports], want.name)
        blocks = sum(1 for x in sets if x[1] == SMAttr.LFT)
        st.update(d=d, fab=fab, sws=sws, cas=cas, routes=r)
        out = {"lost": [(d.nodes[g].desc, p, d.nodes[og].desc, op) for g, p, og, op in lost],
               "found": [(d.nodes[g].desc if g in d.nodes else f"{g:#x}", p) for g, p in found],
               "silent": [f"{g:#x}" for g in silent], "engine": r.engine, "lft_blocks": blocks,
               "activated": len(init_ports), "smps": self.mads - mads0}
        self.say(f"re-sweep: lost {out['lost']}, routed by {r.engine}, {blocks} LFT block(s) sent, "
                 f"{len(init_ports)} port(s) activated, {out['smps']} SMPs")
        return out
