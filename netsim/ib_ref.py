"""The fabric simulator's slow reference, IB mode: plain Python, an event per packet hop,
written for reading and for lock-step against the fast core (to come), not for speed.

The fabric is an `sm.fabric.Fabric` (a net file or a generated topology) and the LFTs of
an `sm.routing.Routes` (our SM's engines, or OpenSM's tables read back); hosts are its
channel adapters, one port each. Time is an integer count of byte times on a link
(`Params.gbps` turns it into ns for reports: 0.08 ns at 100 Gb/s).

What is modelled (IBA ch. 7 and the switch of hw/, at packet granularity):
  links      full duplex, every one at the same rate; a packet of B wire bytes (payload +
             `header`: LRH, BTH, ICRC, VCRC) occupies the sender for B byte times and its
             head reaches the far end `prop` later
  credits    per input port and data VL, a buffer of `buf_blocks` 64-byte blocks; a sender
             sends a packet only when the receiver's buffer has room for all its blocks
             (IBA §7.9: FCCL against FCTBS, whole packet at its start); a packet's blocks are
             freed when its tail leaves the buffer and the sender learns it `prop` later (the
             flow-control packet's own time on the wire is not modelled). A host's receive
             side drains at line rate: the switch never waits for a host's credit
  switches   virtual cut-through: a packet may leave `sw_latency` after its head arrived
             (its tail follows at line rate, so the output never runs dry); virtual output
             queues per (input, output, VL), FIFO each; an input port feeds one output at a
             time and an output takes one input at a time (a crossbar); each output, when
             free, takes the next input in round-robin order (from the one after its last
             grant) whose VOQ head for it is ready and fits the next hop's credit, VLs in
             ascending order; outputs are served in port order at each instant
  hosts      flows start at their start time and are cut into packets of up to `mtu`
             payload bytes; a host sends its active flows' packets in round-robin order,
             each when its VL has credit at the switch
Nothing is ever dropped: a packet that would exceed a buffer is an assertion (the credits
forbid it). A run whose events run out with packets undelivered is a deadlock:
`DeadlockError` names the cycle of buffers waiting for each other's credit.

    fab = Fabric.from_topology(fat_tree_2(4)); r = route(fab, "ftree")
    res = simulate(fab, r.lft, permutation(fab.C, 64 * 1024), Params())
    res.fct, res.latency, res.delivered_bytes, res.events
"""
from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from netsim.workload import Flow, check_flows

__all__ = ["Params", "Result", "DeadlockError", "RoutingError", "simulate", "BLOCK"]

BLOCK = 64                       # bytes per credit block (IBA §7.9.4)
NO_ROUTE = 255


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
    vls: int = 1                 # data VLs
    max_time: int | None = None  # stop there (None: when every packet is delivered)

    def ns(self, t: float) -> float:
        return t * 8 / self.gbps


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
    counters: dict = field(default_factory=dict)


class _Pkt:
    __slots__ = ("flow", "dst", "dlid", "wire", "blocks", "vl", "payload", "sent", "ready")

    def __init__(self, flow, dst, dlid, wire, blocks, vl, payload):
        self.flow, self.dst, self.dlid, self.wire, self.blocks, self.vl, self.payload = (
            flow, dst, dlid, wire, blocks, vl, payload)
        self.sent = self.ready = 0


def _check_routes(fab, lft: np.ndarray, flows: list[Flow]):
    """Every (switch, destination host) pair the flows need must be routed to a cabled port."""
    need = {}
    for f in flows:
        need.setdefault(f.dst, set()).add(f.src)
    for dst, srcs in need.items():
        lid = int(fab.lid_ca[dst])
        for src in sorted(srcs):
            s, hops = int(fab.ca_sw[src]), 0
            while True:
                if lid >= lft.shape[1]:
                    raise RoutingError(f"host {fab.ca_names[dst]}: LID {lid} is beyond the LFTs ({lft.shape[1]})")
                p = int(lft[s, lid])
                if p == NO_ROUTE or p == 0:
                    raise RoutingError(f"switch {fab.sw_names[s]} has no route to LID {lid} ({fab.ca_names[dst]}), "
                                       f"needed by a flow from {fab.ca_names[src]}")
                if s == fab.ca_sw[dst] and p == fab.ca_port[dst]:
                    break
                nxt = int(fab.nbr[s, p]) if p <= fab.P else -1
                if nxt < 0:
                    raise RoutingError(f"switch {fab.sw_names[s]} routes LID {lid} ({fab.ca_names[dst]}) out of "
                                       f"port {p}, which leads to no switch")
                s, hops = nxt, hops + 1
                if hops > fab.S:
                    raise RoutingError(f"LID {lid} ({fab.ca_names[dst]}): the LFTs loop (from {fab.ca_names[src]})")


def simulate(fab, lft: np.ndarray, flows: list[Flow], prm: Params = Params()) -> Result:
    check_flows(flows, fab.C, prm.vls)
    _check_routes(fab, lft, flows)
    S, P, V = fab.S, fab.P, prm.vls
    host_at = {(int(fab.ca_sw[c]), int(fab.ca_port[c])): c for c in range(fab.C)}
    ports = [[p for p in range(1, int(fab.nports[s]) + 1) if fab.nbr[s, p] >= 0 or (s, p) in host_at]
             for s in range(S)]
    INF = 1 << 62
    # switch state
    voq = [[{} for _ in range(P + 1)] for _ in range(S)]          # [s][in] -> {(out, vl): deque}
    occ = [[[0] * V for _ in range(P + 1)] for _ in range(S)]      # blocks held per input buffer and VL
    in_busy = [[0] * (P + 1) for _ in range(S)]
    out_busy = [[0] * (P + 1) for _ in range(S)]
    credit = [[[INF if (s, p) in host_at else prm.buf_blocks] * V for p in range(P + 1)] for s in range(S)]
    rr = [[0] * (P + 1) for _ in range(S)]                         # per output: index into ports[s]
    # host state
    H = fab.C
    h_credit = [[prm.buf_blocks] * V for _ in range(H)]
    h_busy = [0] * H
    h_active: list[deque] = [deque() for _ in range(H)]            # flows with packets left
    left = [f.size for f in flows]
    done_at = [-1] * len(flows)
    got = [0] * len(flows)
    delivered = np.zeros(H, dtype=np.int64)
    lat: list[int] = []
    total_pkts = sum(-(-f.size // prm.mtu) for f in flows)
    n_deliv = 0
    max_occ = 0

    ev: list = []
    seq = 0

    def push(t, kind, a=None, b=None, c=None):
        nonlocal seq
        seq += 1
        heapq.heappush(ev, (t, seq, kind, a, b, c))

    for k, f in enumerate(flows):
        push(f.start, 0, k)                                        # 0: flow start

    def host_try(h, t):
        if h_busy[h] > t or not h_active[h]:
            return
        q = h_active[h]
        for _ in range(len(q)):
            k = q[0]
            f = flows[k]
            pay = min(prm.mtu, left[k])
            wire = pay + prm.header
            blocks = -(-wire // BLOCK)
            if h_credit[h][f.vl] >= blocks:
                q.popleft()
                left[k] -= pay
                if left[k] > 0:
                    q.append(k)
                h_credit[h][f.vl] -= blocks
                pkt = _Pkt(k, f.dst, int(fab.lid_ca[f.dst]), wire, blocks, f.vl, pay)
                pkt.sent = t
                h_busy[h] = t + wire
                s, p = int(fab.ca_sw[h]), int(fab.ca_port[h])
                push(t + prm.prop, 2, s, p, pkt)                   # 2: head arrives at a switch
                push(t + wire, 1, h)                               # 1: host's link free
                return
            q.rotate(-1)

    def sw_try(s, t):
        nonlocal max_occ
        pl = ports[s]
        n = len(pl)
        for o in pl:
            if out_busy[s][o] > t:
                continue
            start = rr[s][o]
            for j in range(n):
                i = pl[(start + j) % n]
                if in_busy[s][i] > t:
                    continue
                qs = voq[s][i]
                pick = None
                for vl in range(V):
                    q = qs.get((o, vl))
                    if q and q[0].ready <= t and credit[s][o][vl] >= q[0].blocks:
                        pick = q
                        break
                if pick is None:
                    continue
                pkt = pick.popleft()
                rr[s][o] = (start + j + 1) % n
                end = t + pkt.wire
                in_busy[s][i] = out_busy[s][o] = end
                credit[s][o][pkt.vl] -= pkt.blocks
                push(end, 3, s)                                    # 3: switch re-arbitrates
                # the buffer frees as the tail leaves; the sender learns it a link later
                up = host_at.get((s, i))
                if up is not None:
                    push(end + prm.prop, 4, -1 - up, pkt.vl, pkt.blocks)     # 4: credit back (host)
                else:
                    push(end + prm.prop, 4, int(fab.nbr[s, i]), int(fab.nbr_port[s, i]) * V + pkt.vl, pkt.blocks)
                occ[s][i][pkt.vl] -= pkt.blocks
                h = host_at.get((s, o))
                if h is not None:
                    push(t + prm.prop + pkt.wire, 5, h, pkt)        # 5: tail delivered at a host
                else:
                    push(t + prm.prop, 2, int(fab.nbr[s, o]), int(fab.nbr_port[s, o]), pkt)
                break

    events = 0
    t = 0
    while ev:
        t, _seq, kind, a, b, c = heapq.heappop(ev)
        if prm.max_time is not None and t > prm.max_time:
            t = prm.max_time
            break
        events += 1
        if kind == 0:
            f = flows[a]
            h_active[f.src].append(a)
            host_try(f.src, t)
        elif kind == 1:
            host_try(a, t)
        elif kind == 2:
            s, i, pkt = a, b, c
            occ[s][i][pkt.vl] += pkt.blocks
            assert occ[s][i][pkt.vl] <= prm.buf_blocks, "a sender overran its credit"
            max_occ = max(max_occ, occ[s][i][pkt.vl])
            pkt.ready = t + prm.sw_latency
            o = int(lft[s, pkt.dlid])
            voq[s][i].setdefault((o, pkt.vl), deque()).append(pkt)
            push(pkt.ready, 3, s)
        elif kind == 3:
            sw_try(a, t)
        elif kind == 4:
            if a < 0:
                h = -1 - a
                h_credit[h][b] += c
                host_try(h, t)
            else:
                credit[a][b // V][b % V] += c
                sw_try(a, t)
        elif kind == 5:
            h, pkt = a, b
            n_deliv += 1
            delivered[h] += pkt.payload
            lat.append(t - pkt.sent)
            got[pkt.flow] += pkt.payload
            if got[pkt.flow] == flows[pkt.flow].size:
                done_at[pkt.flow] = t
    if not ev and n_deliv < total_pkts:
        cyc = _wait_cycle(fab, voq, credit, ports, V, host_at)
        raise DeadlockError(f"deadlock at t = {t} ({prm.ns(t):.0f} ns): {total_pkts - n_deliv} packets undelivered; "
                            f"buffers waiting in a cycle: {' -> '.join(cyc) if cyc else 'none found'}", cyc, t)
    fct = np.array([d - f.start if d >= 0 else -1 for d, f in zip(done_at, flows, strict=True)], dtype=np.int64)
    return Result(prm, t, events, total_pkts, n_deliv, delivered, fct, np.array(lat, dtype=np.int64), max_occ)


def _wait_cycle(fab, voq, credit, ports, V, host_at) -> list[str]:
    """The buffers (switch, input port, VL) whose head packets wait for credit at the next
    switch's buffer, as a graph; one cycle of it, named."""
    nxt: dict[tuple, set] = {}
    for s in range(fab.S):
        for i in ports[s]:
            for (o, vl), q in voq[s][i].items():
                if q and (s, o) not in host_at and credit[s][o][vl] < q[0].blocks:
                    nxt.setdefault((s, i, vl), set()).add((int(fab.nbr[s, o]), int(fab.nbr_port[s, o]), vl))
    color: dict[tuple, int] = {}
    for root in nxt:
        if color.get(root):
            continue
        stack = [(root, iter(sorted(nxt.get(root, ()))))]
        path = [root]
        color[root] = 1
        while stack:
            node, it = stack[-1]
            for m in it:
                if color.get(m) == 1:
                    cyc = path[path.index(m):] + [m]
                    return [f"{fab.sw_names[s]} port {p} VL{v}" for s, p, v in cyc]
                if not color.get(m) and m in nxt:
                    color[m] = 1
                    path.append(m)
                    stack.append((m, iter(sorted(nxt[m]))))
                    break
            else:
                color[node] = 2
                path.pop()
                stack.pop()
    return []
