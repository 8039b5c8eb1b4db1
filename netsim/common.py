"""What the fabric simulator's two implementations share: the parameters, the result, the
errors, the checks made before a run and the naming of a deadlock's cycle.

The reference (netsim/ref.py, plain Python) and the fast core (netsim/fast.py, numba)
implement the same semantics, written once in netsim/ref.py's docstring; they are held
equal by tests/test_netsim_lockstep.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["BLOCK", "NO_ROUTE", "Params", "Result", "Resilience", "DeadlockError", "RoutingError", "check_routes",
           "wait_cycle", "EVENT_KINDS", "uniform01", "sl2vl_tables", "flow_vl_limit"]

BLOCK = 64                       # bytes per credit block (IBA §7.9.4)
NO_ROUTE = 255
# PFC's gate in the credit's place: a sender's "credit" is OPEN when not paused, a PAUSE
# adds -OPEN and a RESUME +OPEN, so a PAUSE and a RESUME taking effect at one instant
# commute (the one decided first is not known to the receiver of both; their sum is)
OPEN = 1 << 60

# the events both implementations count, one per kind of thing that happens
EVENT_KINDS = ("start", "eligible", "txend", "flow control (credit, pause, resume)", "deliver", "hostfree")
MODES = ("ib", "pfc", "lossy")
TRANSPORTS = ("gbn", "gb0", "irn")
DATA, ACK, NAK, BECN = 0, 1, 2, 3     # packet types (lossy mode's transport; IB CC's notifications)


M64 = (1 << 64) - 1


def uniform01(s: int, o: int, flow: int, seq: int, t: int) -> float:
    """A number in [0, 1) from a hash (splitmix64) of a packet's switch, output, flow,
    sequence number and time: the random draws both implementations make alike (DCQCN's RED
    marking). netsim/fast.py computes the same in 64-bit integers."""
    x = (s * 0x9E3779B97F4A7C15 + o * 0xBF58476D1CE4E5B9 + flow * 0x94D049BB133111EB + seq * 0x2545F4914F6CDD1D
         + t) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    x ^= x >> 31
    return (x >> 11) / float(1 << 53)


class DeadlockError(RuntimeError):
    def __init__(self, msg: str, cycle: list[str], t: int):
        super().__init__(msg)
        self.cycle, self.t = cycle, t


class RoutingError(ValueError):
    pass


@dataclass(frozen=True)
class Params:
    gbps: float = 100.0          # link rate: ns = byte times x 8 / gbps
    prop: int = 12_500           # link propagation delay, byte times (1 us at 100 Gb/s)
    sw_latency: int = 1_625      # a switch's head in -> head out, byte times (130 ns at 100 Gb/s)
    mtu: int = 4096              # payload bytes per packet
    header: int = 26             # LRH 8 + BTH 12 + ICRC 4 + VCRC 2
    buf_blocks: int = 1024       # input buffer per port and data VL, in 64-byte blocks
    vls: int = 1                 # data VLs (IB) or priorities (PFC)
    max_time: int | None = None  # stop there (None: when every packet is delivered)
    mode: str = "ib"             # "ib": credit flow control; "pfc": RoCE priority flow control
    xoff: int | None = None      # PFC: pause the upstream when an ingress counter reaches this (blocks);
    xon: int | None = None       #   resume it at or below this; None: from the headroom (pfc_thresholds)
    pause_delay: int = 0         # PFC: a PAUSE or RESUME takes effect prop + pause_delay after it is decided
    transport: str = "gbn"       # lossy: "gbn" go-back-N, "gb0" go-back-0, "irn" selective (IRN)
    ack_bytes: int = 30          # lossy: an ACK or NAK on the wire (LRH, BTH, AETH, ICRC, VCRC)
    rto: int = 1_250_000         # lossy: retransmission timeout, byte times (100 us at 100 Gb/s)
    window: int = 0              # lossy: packets a flow may have unacknowledged (0: no limit)
    drop_every: int = 0          # lossy: every n-th data packet into each switch input is dropped (0: none)
    cc: bool = False             # IB congestion control (IBA Annex A10), credit mode only
    cc_threshold: int = 256      # CC: an output VL is congested with this many blocks queued for it
    cc_marking_rate: int = 0     # CC: mark the first eligible packet, then every (rate + 1)-th
    cc_victim_mask: bool = False  # CC: mark at victim ports too (an output VL short of credit downstream)
    ccti_increase: int = 1       # CC: CCTI step per BECN
    ccti_limit: int = 127        # CC: the table's last index
    ccti_timer: int = 12_800     # CC: byte times between CCTI decrements (1.024 us at 100 Gb/s)
    cct_step: int = 160          # CC: the table: entry k holds an inter-packet delay of k x cct_step byte times
    cnp_bytes: int = 30          # CC: a BECN packet on the wire
    hoq_life: int = 0            # IB, PFC: a packet at the head of its VOQ this long is discarded (HOQLife,
                                 #   IBA §18.2.5.4; byte times, 0: never)
    dcqcn: bool = False          # RoCE (mode 'pfc'): ECN marking (RED) at switch outputs and DCQCN at the NICs
    ecn_kmin: int = 80           # DCQCN: an output VL with fewer blocks queued marks nothing,
    ecn_kmax: int = 320          #   with this many or more marks every data packet,
    ecn_pmax: float = 0.2        #   in between with a probability rising linearly to this
    cnp_interval: int = 625_000  # DCQCN: a flow's receiver sends at most one CNP per this (50 us at 100 Gb/s)
    dcqcn_g: float = 1 / 256     # DCQCN: alpha's gain
    alpha_timer: int = 687_500   # DCQCN: alpha decays by (1 - g) every this without a CNP (55 us)
    rate_timer: int = 687_500    # DCQCN: a rate increase every this without a CNP (55 us)
    byte_counter: int = 10_000_000   # DCQCN: and one every this many bytes sent (10 MB)
    rate_fr_steps: int = 5       # DCQCN: increases of fast recovery before additive increase (F)
    rate_ai: float = 0.0004      # DCQCN: additive increase of the target rate, a fraction of the line (40 Mb/s)
    rate_hai: float = 0.004      # DCQCN: hyper increase step, a fraction of the line (400 Mb/s)
    rate_min: float = 0.001      # DCQCN: the rate never falls below this fraction of the line
    alloc: str = "rr"            # a switch's allocation: "rr" (each free output in port order takes the next
                                 #   input in round robin) or "islip" (the RTL's: iSLIP, depth priority)
    islip_fair_every: int = 8    # islip: every K-th match of an output ignores depth (1: plain iSLIP)
    islip_iterations: int = 0    # islip: grant/accept rounds per arbitration (0: until no new match)
    islip_cycle: int = 8         # islip: a switch whose rounds left a wanted output free tries again this later
    fc_bytes: int = 0            # IB: an FC packet's bytes on the wire (0: credits come back free of wire
                                 #   time, `prop` after a packet's tail left the buffer)
    fc_update: int = 1           # IB, fc_bytes: an FC packet is due once this many freed blocks are unadvertised
    fc_period: int = 0           # IB, fc_bytes: every fc_period byte times every port sends an FC packet per VL
    vlarb_high: tuple = ()       # VLArb (IBA §7.6.9), every switch output: the high-priority table, entries
    vlarb_low: tuple = ()        #   (VL, weight in 64-byte units); both empty: VLs in ascending order
    vlarb_limit: int = 255       # VLArb: LimitOfHighPriority, 4 KB units of high-priority data before a low
                                 #   packet may go (255: no limit)

    def pfc_thresholds(self) -> tuple[int, int]:
        """XOFF and XON in 64-byte blocks. By default XOFF leaves the headroom a paused
        upstream can still fill: what is on the wire for a round trip plus the pause's own
        delay, plus a packet being sent at each end (IEEE 802.1Qbb Annex N's reasoning);
        XON sits two packets lower."""
        pkt = -(-(self.mtu + self.header) // BLOCK)
        head = -(-(2 * self.prop + self.pause_delay + self.sw_latency) // BLOCK) + 2 * pkt
        xoff = self.buf_blocks - head if self.xoff is None else self.xoff
        xon = max(0, xoff - 2 * pkt) if self.xon is None else self.xon
        return xoff, xon

    def ns(self, t: float) -> float:
        return t * 8 / self.gbps

    def byte_times(self, ns: float) -> int:
        """ns, in byte times (the simulator's unit; ns()'s inverse, rounded down)."""
        return int(ns * self.gbps / 8)

    def check(self):
        for name in ("prop", "mtu", "buf_blocks", "vls"):
            if getattr(self, name) < 1:
                raise ValueError(f"Params.{name} = {getattr(self, name)}: must be at least 1")
        if self.sw_latency < 0 or self.header < 0:
            raise ValueError("Params.sw_latency and Params.header must not be negative")
        if self.mode not in MODES:
            raise ValueError(f"Params.mode = {self.mode!r}: one of {', '.join(MODES)}")
        if self.transport not in TRANSPORTS:
            raise ValueError(f"Params.transport = {self.transport!r}: one of {', '.join(TRANSPORTS)}")
        if self.mode == "lossy" and (self.rto < 1 or self.window < 0 or self.drop_every < 0
                                     or not 0 < self.ack_bytes <= BLOCK):
            raise ValueError("lossy mode: rto >= 1, window >= 0, drop_every >= 0 and 0 < ack_bytes <= 64")
        if self.cc and self.mode != "ib":
            raise ValueError("Params.cc: IB congestion control runs with credits (mode 'ib')")
        if self.cc and (self.cc_threshold < 1 or self.cc_marking_rate < 0 or self.ccti_increase < 0
                        or self.ccti_limit < 0 or self.ccti_timer < 1 or self.cct_step < 0
                        or not 0 < self.cnp_bytes <= BLOCK):
            raise ValueError("Params.cc: threshold >= 1, marking rate, increase, limit, step >= 0, timer >= 1, "
                             "0 < cnp_bytes <= 64")
        if self.fc_bytes and (self.mode != "ib" or not 0 < self.fc_bytes <= BLOCK or self.fc_update < 1
                              or self.fc_period < 0 or (self.fc_update > 1 and not self.fc_period)):
            raise ValueError(f"Params.fc_bytes = {self.fc_bytes}: FC packets on the wire are an IB credit mode "
                             f"thing (mode {self.mode!r}), 0 < fc_bytes <= 64, fc_update >= 1 (got "
                             f"{self.fc_update}), fc_period >= 0 (got {self.fc_period}), and an fc_update above "
                             "1 needs fc_period (else the blocks it holds back are never advertised)")
        if not self.fc_bytes and (self.fc_update != 1 or self.fc_period):
            raise ValueError("Params.fc_update and fc_period model FC packets: they need fc_bytes > 0")
        if self.dcqcn and (self.mode != "pfc" or not 0 <= self.ecn_kmin < self.ecn_kmax or not 0 < self.ecn_pmax <= 1
                           or self.cnp_interval < 0 or not 0 < self.dcqcn_g < 1 or self.alpha_timer < 1
                           or self.rate_timer < 1 or self.byte_counter < 1 or self.rate_fr_steps < 0
                           or self.rate_ai < 0 or self.rate_hai < 0 or not 0 < self.rate_min <= 1
                           or not 0 < self.cnp_bytes <= BLOCK):
            raise ValueError("Params.dcqcn: RoCE's (mode 'pfc'), 0 <= ecn_kmin < ecn_kmax, 0 < ecn_pmax <= 1, "
                             "0 < dcqcn_g < 1, timers and byte counter >= 1, 0 < rate_min <= 1, increases >= 0")
        if self.hoq_life < 0 or (self.hoq_life and self.mode == "lossy"):
            raise ValueError(f"Params.hoq_life = {self.hoq_life}: >= 0, and not in lossy mode (its queues drop "
                             "at their limit)")
        if self.alloc not in ("rr", "islip") or self.islip_fair_every < 1 or self.islip_cycle < 1:
            raise ValueError(f"Params.alloc = {self.alloc!r}: 'rr' or 'islip' (islip_fair_every >= 1, got "
                             f"{self.islip_fair_every}; islip_cycle >= 1, got {self.islip_cycle})")
        for name in ("vlarb_high", "vlarb_low"):
            tbl = getattr(self, name)
            if len(tbl) > 64 or any(len(e) != 2 or not 0 <= e[0] < 15 or not 0 <= e[1] <= 255 for e in tbl):
                raise ValueError(f"Params.{name} = {tbl!r}: at most 64 entries (VL 0..14, weight 0..255)")
        if (self.vlarb_high or self.vlarb_low) and self.alloc == "islip":
            raise ValueError("Params.vlarb_*: VL arbitration is modelled with alloc 'rr' only")
        if not 0 <= self.vlarb_limit <= 255:
            raise ValueError(f"Params.vlarb_limit = {self.vlarb_limit}: 0..255")
        if self.mode != "lossy" and self.drop_every:
            raise ValueError("Params.drop_every: only in lossy mode (credits and PFC lose nothing)")
        if self.mode == "pfc":
            xoff, xon = self.pfc_thresholds()
            if not 0 < xoff <= self.buf_blocks or not 0 <= xon < xoff or self.pause_delay < 0:
                raise ValueError(f"PFC thresholds XOFF {xoff}, XON {xon} of a {self.buf_blocks}-block buffer: "
                                 f"need 0 <= XON < XOFF <= the buffer (pause_delay {self.pause_delay})")
        if -(-(self.mtu + self.header) // BLOCK) > self.buf_blocks:
            raise ValueError(f"Params.buf_blocks = {self.buf_blocks}: a packet of {self.mtu} + {self.header} "
                             f"bytes needs {-(-(self.mtu + self.header) // BLOCK)} blocks")


@dataclass
class Resilience:
    """Adaptive routing, failover and link failures, as the switch does them
    (docs/reliability.md), for a run: what the SM programs (sm/adaptive.py's ARPlan:
    `group`, `adaptive`; sm/failover.py's Alternates: `alt`) and the links that fail.

    - group: (S, P + 1) AR group per port, 0 none; ports of a switch with one number are a
      group. A packet whose (switch, DLID) is `adaptive` waits in its LFT port's queue; every
      Active port of that port's group may take it (per-packet mode: whichever is free and
      has credit first).
    - alt: (S, P + 1) failover alternate per port (255 none). While a port is not Active and
      its alternate is, the alternate serves its queues first and new packets for it are
      queued as before.
    - failures: (t, switch, port): the switch-to-switch link at that port fails at byte time
      t (both ends not Active from then). A packet already started on it is delivered; one
      routed to a port that is down with no alternate or group member Active is discarded
      (DEST_DOWN: `drops` and counters["dest_down"]), its credit returned at once.
    Not modelled: flow-pinned groups, failures of a host's link, links coming back, with
    alloc "islip"."""
    group: np.ndarray | None = None
    alt: np.ndarray | None = None
    adaptive: np.ndarray | None = None
    failures: list = field(default_factory=list)

    @property
    def on(self) -> bool:
        return self.group is not None or self.alt is not None or bool(self.failures)

    def check(self, fab, lft: np.ndarray, prm: Params):
        """Shapes, ports and times that fit the fabric: each error names the field."""
        if not self.on:
            return
        S, P1 = fab.S, fab.P + 1
        if prm.alloc == "islip":
            raise ValueError("Resilience: adaptive routing and failover are modelled with alloc 'rr' only")
        for name in ("group", "alt"):
            a = getattr(self, name)
            if a is not None and np.shape(a) != (S, P1):
                raise ValueError(f"Resilience.{name}: shape {np.shape(a)}, the fabric needs ({S}, {P1})")
        if (self.group is None) != (self.adaptive is None):
            raise ValueError("Resilience: `group` and `adaptive` come together (an ARPlan's)")
        if self.adaptive is not None and np.shape(self.adaptive) != np.shape(lft):
            raise ValueError(f"Resilience.adaptive: shape {np.shape(self.adaptive)}, the LFTs' is {np.shape(lft)}")
        for j, x in enumerate(self.failures):
            try:
                t, s, p = (int(v) for v in x)
            except (TypeError, ValueError):
                raise ValueError(f"Resilience.failures[{j}] = {x!r}: (t, switch, port)") from None
            if t < 0 or not 0 <= s < S or not 1 <= p <= int(fab.nports[s]) or fab.nbr[s, p] < 0:
                raise ValueError(f"Resilience.failures[{j}] = {x!r}: t >= 0 and a switch port cabled to a "
                                 f"switch (host links do not fail in this model)")


def flow_vl_limit(sl2vl, vls: int) -> int:
    """What a flow's `vl` must stay below: with one SL2VL table for every port it is an SL
    (16); otherwise a VL of the run (with per-switch tables a host sends SL n on VL n)."""
    return 16 if sl2vl is not None and np.ndim(sl2vl) == 1 else vls


def sl2vl_tables(fab, sl2vl, vls: int):
    """SL2VL (IBA §7.6.6) for a run: None (a flow's `vl` is its VL end to end), a (16,) table
    every port uses (hosts and switches), or (S, P + 1, P + 1, 16) per switch (input port,
    output port), hosts then sending an SL on the VL of that number. With a table a flow's
    `vl` is its SL. Returns (switch tables (S, P + 1, P + 1, 16) or None, the hosts' (16,)).
    An entry that names no data VL of the run (>= vls) is an error naming it."""
    if sl2vl is None:
        return None, np.arange(16)
    a = np.asarray(sl2vl)
    S, P1 = fab.S, fab.P + 1
    if a.shape == (16,):
        host, sw = a.astype(np.int64), np.broadcast_to(a.astype(np.uint8), (S, P1, P1, 16))
    elif a.shape == (S, P1, P1, 16):
        host, sw = np.arange(16), a.astype(np.uint8)
    else:
        raise ValueError(f"sl2vl: shape {a.shape}, expected (16,) or ({S}, {P1}, {P1}, 16)")
    bad = np.argwhere(a >= vls)
    if len(bad):
        raise ValueError(f"sl2vl{list(map(int, bad[0]))} = {int(a[tuple(bad[0])])}: not a data VL of the run "
                         f"(vls = {vls})")
    return sw, host


@dataclass
class Result:
    params: Params
    end: int                                  # time of the last event
    events: int
    packets: int
    delivered_packets: int
    delivered_bytes: np.ndarray               # payload bytes received, per host
    fct: np.ndarray                           # per flow: last tail delivered - start (-1: not done)
    latency: np.ndarray                       # per delivered packet: sent by its host -> tail delivered
    max_occupancy: int = 0                    # the fullest input buffer seen, blocks
    drops: int = 0                            # PFC, lossy: packets dropped (no room, or drop_every)
    pauses: int = 0                           # PFC: PAUSE frames sent
    retransmits: int = 0                      # lossy: data packets sent again
    naks: int = 0                             # lossy: NAKs sent
    timeouts: int = 0                         # lossy: retransmission timeouts
    fecn: int = 0                             # CC: packets marked by switches
    becn: int = 0                             # CC: notifications that reached a source
    counters: dict = field(default_factory=dict)
    trace: np.ndarray | None = None           # (t, node, in, out, flow, seq) per grant, when asked


def check_routes(fab, lft: np.ndarray, src: np.ndarray, dst: np.ndarray, chunk: int = 1 << 20):
    """Every (source, destination) host pair must reach its destination through the LFTs:
    a route at every switch on the way, out of cabled ports, without a loop. A route depends
    only on the source's switch, so each (source switch, destination) is walked once (a host
    on it named in an error), all at once (numpy, in chunks): an all-to-all of 10k hosts is
    10k x (its leaf switches) walks."""
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    _, first = np.unique(fab.ca_sw[src].astype(np.int64) * fab.C + dst, return_index=True)
    pairs = np.stack([src[first], dst[first]])
    L = lft.shape[1]
    for a in range(0, pairs.shape[1], chunk):
        s_h, d_h = pairs[0, a:a + chunk], pairs[1, a:a + chunk]
        lid = fab.lid_ca[d_h].astype(np.int64)
        far = lid >= L
        if far.any():
            k = int(np.flatnonzero(far)[0])
            raise RoutingError(f"host {fab.ca_names[d_h[k]]}: LID {lid[k]} is beyond the LFTs ({L})")
        cur = fab.ca_sw[s_h].astype(np.int64)
        live = np.ones(len(cur), bool)
        for _hop in range(fab.S + 1):
            idx = np.flatnonzero(live)
            if not idx.size:
                break
            s, lk = cur[idx], lid[idx]
            p = lft[s, lk].astype(np.int64)
            bad = (p == NO_ROUTE) | (p == 0) | (p > fab.nports[s])
            if bad.any():
                k = idx[np.flatnonzero(bad)[0]]
                raise RoutingError(f"switch {fab.sw_names[cur[k]]} has no route to LID {lid[k]} "
                                   f"({fab.ca_names[d_h[k]]}), needed by a flow from {fab.ca_names[s_h[k]]}")
            home = (s == fab.ca_sw[d_h[idx]]) & (p == fab.ca_port[d_h[idx]])
            nxt = fab.nbr[s, p].astype(np.int64)
            gone = ~home & (nxt < 0)
            if gone.any():
                k = idx[np.flatnonzero(gone)[0]]
                raise RoutingError(f"switch {fab.sw_names[cur[k]]} routes LID {lid[k]} ({fab.ca_names[d_h[k]]}) "
                                   f"out of port {lft[cur[k], lid[k]]}, which leads to no switch")
            live[idx[home]] = False
            cur[idx] = np.where(home, s, nxt)
        else:
            k = int(np.flatnonzero(live)[0])
            raise RoutingError(f"LID {lid[k]} ({fab.ca_names[d_h[k]]}): the LFTs loop (from {fab.ca_names[s_h[k]]})")


def wait_cycle(fab, waits: dict[tuple, set]) -> list[str]:
    """`waits` maps a buffer (switch, input port, VL) to the buffers its head packets wait
    on for credit; one cycle of that graph, named, or [] if it has none."""
    color: dict[tuple, int] = {}
    for root in sorted(waits):
        if color.get(root):
            continue
        stack = [(root, iter(sorted(waits.get(root, ()))))]
        path = [root]
        color[root] = 1
        while stack:
            node, it = stack[-1]
            for m in it:
                if color.get(m) == 1:
                    cyc = path[path.index(m):] + [m]
                    return [f"{fab.sw_names[s]} port {p} VL{v}" for s, p, v in cyc]
                if not color.get(m) and m in waits:
                    color[m] = 1
                    path.append(m)
                    stack.append((m, iter(sorted(waits[m]))))
                    break
            else:
                color[node] = 2
                path.pop()
                stack.pop()
    return []
