"""A fabric of our switches' firmware at the level of management packets, without RTL: one
`SwitchFirmware` (fw/) per switch of a topology on a plain-Python register file
(`fw.hw.RegisterFile`), cables that carry packets hop by hop, and the SM's node on one
channel adapter. It is the transport `sm.inband.InbandSM` needs (`send`, `recv`,
`cycles`), so the subnet manager's discovery, programming, traps and re-sweeps run here on
fabrics far larger than the RTL fabric simulates, in seconds.

What each switch does with a packet that arrives (as the RTL's VL15 relay and route lookup,
docs/switch-core.md): VL15 with the permissive DLID or DLID = its own LID, or a DLID whose
LFT entry is 0, goes to its firmware; otherwise the LFT entry is the port out (255, a DLID
beyond the table or a port that is Down: dropped and counted in `drops`). The firmware's
packets go out of the port it names, or by the LFT. Every hop takes `hop_cycles`, every
firmware visit `fw_cycles`. Channel adapters other than the SM's have no agent: what
reaches them is counted and dropped (as the RTL fabric's hardware endpoints do), unless
`ca_agents`: then every channel adapter has a host's agents (fw/ca.py: NodeInfo, PortInfo,
P_KeyTable, a PMA, ...), which answer what is theirs; what is for the host's software (SM
and SA traffic, responses, traps) goes to `deliver(node, packet)` if given, else (the SM's
node) to the inbox. `inject(node, packet)` sends from any channel adapter's port 1, and
`run_until_idle()` carries everything in flight to its end (fabric/ibsim_server.py).
With `count`, each switch counts the packets it receives and sends in its counter registers
(PortRcvPkts/PortRcvData, PortXmitPkts/PortXmitData in 4-byte words, saturating at 2^32 - 1)
as the RTL does, so a PMA query (perfquery) sees the traffic.

`cut(a, pa)` takes a cable down (both ends' ports Down, as their PHYs would report),
`restore(a, pa)` brings it back (both ends Init); every `poll_cycles` each firmware's
`poll()` runs (so port changes become traps). Nothing here raises on a packet: malformed
ones are the firmware's to count.
"""
from __future__ import annotations

import heapq
import itertools

from contracts.config import SwitchConfig
from contracts.counters import PORT_COUNTERS_LIST
from contracts.defs import PortState
from fabric.topology import Topology
from fw.agent import SwitchFirmware
from fw.ca import CAAgent, CAIdentity
from fw.hw import RegisterFile
from fw.sma import NodeIdentity

__all__ = ["MadFabric", "host_agents"]

PERMISSIVE = 0xFFFF
SW_GUID0 = 0x0002C90300000000
CA_GUID0 = 0x0002C90400000000          # CA k: NodeGUID CA_GUID0 + 2 (k + 1), its PortGUID one more


def host_agents(topo: Topology, cfg: SwitchConfig, only=None) -> dict[str, CAAgent]:
    """A host's agents (fw/ca.py) per channel adapter of `topo` (or those in `only`): CA k
    of the topology's order gets NodeGUID CA_GUID0 + 2 (k + 1), its link up if cabled on port 1."""
    out = {}
    for k, c in enumerate(x for x in topo.nodes.values() if not x.is_switch):
        if only is None or c.name in only:
            out[c.name] = CAAgent(CAIdentity(node_guid=CA_GUID0 + 2 * (k + 1), description=c.name,
                                             crc_msb_first=cfg.crc_msb_first))
            out[c.name].link(1 in c.ports)
    return out


def _lrh(pkt: bytes) -> tuple[int, int]:
    """(VL, DLID) from a packet's LRH (IBA §7.7)."""
    return pkt[0] >> 4, int.from_bytes(pkt[2:4], "big")


class MadFabric:
    def __init__(self, topo: Topology, cfg: SwitchConfig, sm_ca: str, *, hop_cycles: int = 40,
                 fw_cycles: int = 200, poll_cycles: int | None = None, ca_agents: bool = False, deliver=None,
                 count: bool = False):
        self.topo, self.cfg = topo, cfg
        sws = topo.switches()
        if sm_ca not in topo.nodes or topo.nodes[sm_ca].is_switch:
            raise ValueError(f"MadFabric: no channel adapter {sm_ca!r}")
        for s in sws:
            if s.nports > cfg.ports:
                raise ValueError(f"MadFabric: switch {s.name} has {s.nports} ports, the config {cfg.ports}")
        self.sm_ca = sm_ca
        self.index = {s.name: k for k, s in enumerate(sws)}
        self.names = [s.name for s in sws]
        self.regs = [RegisterFile(cfg) for _ in sws]
        self.fws = [SwitchFirmware(r, NodeIdentity(node_guid=SW_GUID0 + k + 1, description=s.name))
                    for k, (r, s) in enumerate(zip(self.regs, sws, strict=True))]
        self.cable = {}                                 # (node, port) -> (node, port), both ways
        for a, pa, b, pb in topo.links():
            self.cable[(a, pa)], self.cable[(b, pb)] = (b, pb), (a, pa)
        self.dead: set[tuple[str, int]] = set()
        self.cas: dict[str, CAAgent] = host_agents(topo, cfg) if ca_agents else {}
        self.deliver = deliver
        self.count = count
        self._ci = {n: PORT_COUNTERS_LIST.index(n) for n in ("PortXmitPkts", "PortXmitData", "PortRcvPkts",
                                                             "PortRcvData")}
        for k, s in enumerate(sws):                     # uncabled ports: no link, Down
            for p in range(1, cfg.ports + 1):
                if (s.name, p) not in self.cable:
                    self.regs[k].state[p - 1] = PortState.DOWN
        self.hop_cycles, self.fw_cycles, self.poll_cycles = hop_cycles, fw_cycles, poll_cycles
        self.now = 0
        self._q: list = []                              # (time, seq, node, in port, packet)
        self._seq = itertools.count()
        self.inbox: list[bytes] = []                    # what reached the SM's node
        self.drops = {"no_route": 0, "port_down": 0, "to_ca": 0}
        self.delivered = 0
        self._next_poll = poll_cycles or 0

    # ---------------------------------------------------------------- the SM's transport
    @property
    def cycles(self) -> int:
        return self.now

    def send(self, pkt: bytes):
        """From the SM's node, out of its port 1."""
        self._wire(self.sm_ca, 1, pkt, self.now)

    def inject(self, node: str, pkt: bytes):
        """From channel adapter `node`, out of its port 1."""
        self._wire(node, 1, pkt, self.now)

    async def run_until_idle(self, limit: int = 1_000_000):
        """Carry every packet in flight to its end (at most `limit` events); no polls."""
        for _ in range(limit):
            if not self._q:
                return
            t, _s, node, port, pkt = heapq.heappop(self._q)
            self.now = max(self.now, t)
            await self._arrive(node, port, pkt)

    async def poll(self, first: int = 0, count: int | None = None):
        """Switch firmware polls now (port changes become traps): switches first ..
        first + count - 1 (default all), so a server can spread a round over time."""
        await self._poll(first, count)

    async def recv(self, match=lambda b: True, timeout: int = 3000) -> bytes | None:
        end = self.now + timeout
        while True:
            for k, b in enumerate(self.inbox):
                if match(b):
                    return self.inbox.pop(k)
            nxt = self._q[0][0] if self._q else None
            if self.poll_cycles and (nxt is None or self._next_poll <= nxt) and self._next_poll <= end:
                self.now = max(self.now, self._next_poll)
                self._next_poll += self.poll_cycles
                await self._poll()
                continue
            if nxt is None or nxt > end:
                self.now = end
                return None
            t, _s, node, port, pkt = heapq.heappop(self._q)
            self.now = max(self.now, t)
            await self._arrive(node, port, pkt)

    async def run(self, cycles: int):
        """Let the fabric run (firmware polls, packets in flight) without the SM waiting."""
        await self.recv(lambda b: False, cycles)

    # ---------------------------------------------------------------- cables
    def _peer(self, node: str, port: int) -> tuple[str, int] | None:
        far = self.cable.get((node, port))
        if far is None or (node, port) in self.dead:
            return None
        return far

    def cut(self, a: str, pa: int):
        b, pb = self.cable[(a, pa)]
        self.dead |= {(a, pa), (b, pb)}
        for n, p in ((a, pa), (b, pb)):
            if n in self.index:
                self.regs[self.index[n]].state[p - 1] = PortState.DOWN
            elif n in self.cas:
                self.cas[n].link(False)

    def restore(self, a: str, pa: int):
        b, pb = self.cable[(a, pa)]
        self.dead -= {(a, pa), (b, pb)}
        for n, p in ((a, pa), (b, pb)):
            if n in self.index:
                self.regs[self.index[n]].state[p - 1] = PortState.INIT
            elif n in self.cas:
                self.cas[n].link(True)

    # ---------------------------------------------------------------- forwarding
    def _wire(self, node: str, port: int, pkt: bytes, at: int):
        far = self._peer(node, port)
        if far is None:
            self.drops["port_down"] += 1
            return
        heapq.heappush(self._q, (at + self.hop_cycles, next(self._seq), far[0], far[1], pkt))

    async def lft_entry(self, node: str, dlid: int) -> int:
        """Switch `node`'s LFT entry for `dlid` as its registers hold it (255: none)."""
        return await self._lft(self.index[node], dlid)

    async def _lft(self, k: int, dlid: int) -> int:
        e = self.cfg.lft_index(dlid)
        if e is None:
            return 255
        return (await self.regs[k].read("LFT", e // 4)) >> (8 * (e % 4)) & 0xFF

    async def _arrive(self, node: str, port: int, pkt: bytes):
        ca = self.cas.get(node)
        if ca is not None:
            replies, up = ca.receive(pkt)
            for r in replies:
                self._wire(node, 1, r, self.now + self.fw_cycles)
            if up is not None:
                if self.deliver is not None:
                    self.deliver(node, up)
                elif node == self.sm_ca:
                    self.inbox.append(up)
                    self.delivered += 1
                else:
                    self.drops["to_ca"] += 1
            return
        if node == self.sm_ca:
            self.inbox.append(pkt)
            self.delivered += 1
            return
        if node not in self.index:
            self.drops["to_ca"] += 1
            return
        k = self.index[node]
        if self.count:
            self._tally(k, port, "PortRcvPkts", "PortRcvData", pkt)
        if len(pkt) < 8:
            self.drops["no_route"] += 1
            return
        vl, dlid = _lrh(pkt)
        own = await self.regs[k].read("SWITCH_LID")
        out = 0 if vl == 15 and (dlid == PERMISSIVE or (own and dlid == own)) else await self._lft(k, dlid)
        if out == 0:
            await self._to_firmware(k, node, port, pkt)
        else:
            self._out(k, node, out, pkt, self.now)

    def _out(self, k: int, node: str, out: int, pkt: bytes, at: int):
        if not 1 <= out <= self.cfg.ports:
            self.drops["no_route"] += 1
            return
        if self.regs[k].state[out - 1] == PortState.DOWN:
            self.drops["port_down"] += 1
            return
        if self.count:
            self._tally(k, out, "PortXmitPkts", "PortXmitData", pkt)
        self._wire(node, out, pkt, at)

    def _tally(self, k: int, port: int, pkts: str, words: str, pkt: bytes):
        if not 1 <= port <= self.cfg.ports:
            return
        c = self.regs[k].counters[port - 1]
        c[self._ci[pkts]] = min(c[self._ci[pkts]] + 1, 0xFFFFFFFF)
        c[self._ci[words]] = min(c[self._ci[words]] + len(pkt) // 4, 0xFFFFFFFF)

    async def _to_firmware(self, k: int, node: str, port: int, pkt: bytes):
        for o, dest in await self.fws[k].receive(pkt, port):
            await self._send_from(k, node, o, dest, self.now + self.fw_cycles)

    async def _send_from(self, k: int, node: str, pkt: bytes, dest: int | None, at: int):
        if dest is None:                                  # by the LFT (tdest 0)
            vl, dlid = _lrh(pkt)
            dest = await self._lft(k, dlid)
            if dest == 0:                                 # for this switch again: not looped back
                self.drops["no_route"] += 1
                return
        self._out(k, node, dest, pkt, at)

    async def _poll(self, first: int = 0, count: int | None = None):
        for k in range(first, len(self.fws) if count is None else min(len(self.fws), first + count)):
            fw = self.fws[k]
            for o, dest in await fw.poll():
                await self._send_from(k, self.names[k], o, dest, self.now + self.fw_cycles)
