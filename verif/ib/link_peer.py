"""The IBA node at the far end of one switch port's link (a channel adapter or another
switch), cycle by cycle, for whole-switch tests, the demo and the benchmarks.

Sending (into the switch's rx port): data packets only within the credit the switch
advertised (its FC packets seen on the tx port, IBA §7.9.4: the packet's whole length
checked at its sop, per VL; VL15 needs none), an FC packet per data VL every `fc_every`
cycles between packets, granting `buffer_blocks_per_vl` blocks beyond what it received
(with `fc_init` the first one per VL is an init FC packet, Op 1, as a port sends at
link-up, IBA §7.9.4).
`per_vl_queues`: the first waiting packet whose VL has credit goes (a send queue per VL,
as a channel adapter has); otherwise strictly in order.

Receiving (from the switch's tx port): every data packet is collected (`got`, or `got_bad`
when it ended marked bad) and charged against the credit this peer granted (the switch
must never send beyond it: an assertion).

Timing is set by generators, as cocotbext-axi's sources and sinks do: the idle generator
yields True for a cycle in which the peer sends nothing (it never pauses under a presented
flit: a PHY sends a packet's flits back to back only if the generator says so, gaps are
allowed on the rx stream), the backpressure generator True for a cycle in which the PHY is
not ready (tx ready low). `hold` keeps ready low whatever the generator says.
"""
from __future__ import annotations

import itertools
import random
from collections import deque

from contracts.config import SwitchConfig
from contracts.streams import LINK_FLIT
from models.credit import may_send, packet_blocks
from models.packet import LRH, FCPacket, Flit, build_link_packet, from_flits, parse_link_packet, to_flits

__all__ = ["LinkPeer", "random_gen", "bursty_gen", "GENERATORS"]

_RX = ["valid", *LINK_FLIT, "up"]


def random_gen(rng: random.Random, p: float):
    """True with probability p each cycle."""
    while True:
        yield rng.random() < p


def bursty_gen(rng: random.Random, p: float, burst: int = 16):
    """Runs of True and False with mean lengths burst * p / (1 - p) and burst."""
    while True:
        yield from itertools.repeat(False, rng.randrange(1, 2 * burst))
        yield from itertools.repeat(True, rng.randrange(1, max(2, int(2 * burst * p / max(1e-9, 1 - p)))))


# named generators for test parameters: name -> (rng, probability) -> generator; None: never
GENERATORS = {None: lambda rng, p: itertools.repeat(False), "random": random_gen, "bursty": bursty_gen}


class LinkPeer:
    def __init__(self, cfg: SwitchConfig, port: int, rng: random.Random, *, fc_every: int = 64,
                 per_vl_queues: bool = False, idle=None, backpressure=None, fc_init: bool = False,
                 vls: int | None = None):
        """vls: the data VLs this node's port has (default the switch's): FC packets for
        those only (a switch port in Armed or Active counts one for a VL beyond its
        OperationalVLs as an error, IBA §7.9.4)."""
        self.cfg, self.port, self.rng = cfg, port, rng
        self.nvl = min(vls or cfg.data_vls, cfg.data_vls)
        self.fc_every = fc_every
        self.fc_op = [1 if fc_init else 0] * cfg.data_vls     # a VL's first FC packet: Op 1 (init) with fc_init
        self.per_vl_queues = per_vl_queues
        self.idle = idle if idle is not None else itertools.repeat(False)
        self.backpressure = backpressure if backpressure is not None else itertools.repeat(False)
        self.hold = False
        self.credit_frozen = False               # True: no more credit than granted so far
        self.up = True                           # the PHY: False = the cable is cut (nothing
        self.cut = 0                             # either way); packets cut on their way out
        # sending
        self.pending: deque = deque()            # (flits, vl, blocks, key) waiting to go
        self.rxq: deque = deque()                # flits of the packet (or FC packets) being sent
        self.fctbs = [0] * self.nvl              # blocks sent, mod 4096
        self.fccl = [0] * self.nvl               # the credit limit the switch advertised
        self.fc_due = False
        self._t = 0
        self.sending_key = None                  # key of the data packet whose sop goes in this cycle
        self._key = None
        # receiving
        self.got: list[bytes] = []
        self.got_bad: list[bytes] = []
        self._cur: list[Flit] = []
        self.peer_blocks = [0] * self.nvl        # blocks received per VL
        self.granted = [0] * self.nvl            # the most this peer allowed (absolute)

    def set_idle_generator(self, gen=None):
        self.idle = gen if gen is not None else itertools.repeat(False)

    def set_backpressure_generator(self, gen=None):
        self.backpressure = gen if gen is not None else itertools.repeat(False)

    # ---------------------------------------------------------------- sending
    def queue(self, body: bytes, flits: list[Flit], key=None):
        lrh = LRH.unpack(body)
        self.pending.append((flits, lrh.vl, packet_blocks(lrh.pktlen, self.cfg.credit_vcrc), key))

    def queue_raw(self, flits: list[Flit], vl: int | None = None, blocks: int = 0):
        """Flits as given (a malformed packet, a broken link packet): sent when their turn
        comes, on VL `vl` charged `blocks` of credit, or (vl None) as VL15 is, without credit."""
        self.pending.append((flits, 15 if vl is None else vl, blocks, None))

    @property
    def busy(self) -> bool:
        """Data still to send (FC packets do not count)."""
        return bool(self.pending) or any(not f.link for f in self.rxq)

    def _fc_flits(self):
        out = []
        for v in range(self.nvl):
            if not self.credit_frozen or not self.granted[v]:
                self.granted[v] = self.peer_blocks[v] + self.cfg.buffer_blocks_per_vl
            pkt = build_link_packet(FCPacket(op=self.fc_op[v], fctbs=self.fctbs[v], vl=v,
                                             fccl=self.granted[v] % 4096), self.cfg.crc_msb_first)
            self.fc_op[v] = 0
            out += to_flits(pkt, self.cfg.data_width, link=True)
        return out

    def _next_sendable(self):
        blocked = set()
        for k, (_f, vl, blocks, _key) in enumerate(self.pending):
            if vl not in blocked and (vl == 15 or may_send(self.fccl[vl], self.fctbs[vl], blocks)):
                return k
            if not self.per_vl_queues:
                return None
            blocked.add(vl)                      # later packets of this VL stay behind it
        return None

    def inputs(self) -> dict:
        """This cycle's rx__<p>__* and tx__<p>__ready."""
        p, q = self.port, self.rxq
        if not self.up:                          # a cut cable: nothing arrives, PHY down
            self.sending_key = None
            out = {f"rx__{p}__{k}": 0 for k in _RX}
            out[f"tx__{p}__ready"] = 1
            return out
        self._t += 1
        if self._t % self.fc_every == p % self.fc_every:
            self.fc_due = True
        if not q:                                # between packets
            if self.fc_due:
                q.extend(self._fc_flits())
                self.fc_due = False
            elif self.pending:
                k = self._next_sendable()
                if k is not None:
                    flits, vl, blocks, key = self.pending[k]
                    del self.pending[k]
                    if vl != 15:                 # VL15 is not flow controlled
                        self.fctbs[vl] = (self.fctbs[vl] + blocks) % 4096
                    q.extend(flits)
                    self._key = key
        self.sending_key = None
        if q and not next(self.idle):
            f = q.popleft()
            if f.sop and not f.link:
                self.sending_key = self._key
            d = {"valid": 1, "data": f.data, "sop": int(f.sop), "eop": int(f.eop),
                 "bytes": f.nbytes if f.eop else 0, "link": int(f.link), "bad": int(f.bad), "up": 1}
        else:
            d = {k: 0 for k in _RX} | {"up": 1}
        out = {f"rx__{p}__{k}": v for k, v in d.items()}
        out[f"tx__{p}__ready"] = int(not next(self.backpressure) and not self.hold)
        return out

    # ---------------------------------------------------------------- receiving
    def observe(self, i: dict, o: dict):
        """The tx port's flit of this cycle. Returns (packet bytes, bad) when a data packet
        ended, else None."""
        p, W = self.port, self.cfg.data_width
        if not self.up:                          # whatever the switch sends is lost on the wire
            if self._cur:
                self.cut += 1
                self._cur = []
            return None
        if not (o[f"tx__{p}__valid"] and i[f"tx__{p}__ready"]):
            return None
        if o[f"tx__{p}__link"]:
            if o[f"tx__{p}__sop"]:
                fc, ok = parse_link_packet((o[f"tx__{p}__data"] >> (W - 48)).to_bytes(6, "big"),
                                           self.cfg.crc_msb_first)
                if ok and fc.vl < self.nvl:      # the switch grants credit for its rx buffer
                    self.fccl[fc.vl] = fc.fccl
            return None
        eop = bool(o[f"tx__{p}__eop"])
        self._cur.append(Flit(o[f"tx__{p}__data"], bool(o[f"tx__{p}__sop"]), eop,
                              o[f"tx__{p}__bytes"] if eop else W // 8))
        if not eop:
            return None
        b = from_flits(self._cur, W)
        self._cur = []
        bad = bool(o[f"tx__{p}__bad"])
        (self.got_bad if bad else self.got).append(b)
        lrh = LRH.unpack(b)
        if lrh.vl < self.nvl:
            self.peer_blocks[lrh.vl] += packet_blocks(lrh.pktlen, self.cfg.credit_vcrc)
            assert self.peer_blocks[lrh.vl] <= self.granted[lrh.vl], \
                f"tx port {p} VL {lrh.vl}: {self.peer_blocks[lrh.vl]} blocks sent, the peer granted only " \
                f"{self.granted[lrh.vl]} (credit exceeded)"
        return b, bad
