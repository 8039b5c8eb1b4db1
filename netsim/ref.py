"""The fabric simulator's slow reference, IB mode: plain Python, written for reading and
for lock-step against the fast core (netsim/fast.py), not for speed. Its docstring is the
semantics both implement.

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
             freed when it is granted the crossbar and the sender learns it `prop` after its
             tail has left (the flow-control packet's own time on the wire is not modelled).
             A host's receive side drains at line rate: a switch never waits for a host.
             With `fc_bytes` (the RTL's link layer, IBA §7.9.4) credits travel in FC
             packets instead: the blocks a packet frees (its tail leaves the buffer, or
             reaches a host) are unadvertised until they reach `fc_update`, when an FC
             packet becomes due at that port's transmitter; every `fc_period` one is due
             per VL at every port (hosts too) whatever is unadvertised. A transmitter
             sends its due FC packets (lowest VL first) before any data packet, when it is
             not in a packet; each occupies it for `fc_bytes` and advertises all the
             blocks unadvertised at its start, `fc_bytes + prop` later. The refreshes
             stop after one that found no block freed in its period and none
             unadvertised, and start again at the next multiple of fc_period after a
             block is freed (an idle fabric sends none; the RTL's go on, on idle links)
  PFC        (mode "pfc", RoCE's priority flow control, IEEE 802.1Qbb) in place of credits,
             the same switches, VLs as priorities: per input port and priority an ingress
             counter of blocks, counted when a packet becomes eligible and uncounted when it
             is granted; reaching XOFF sends a PAUSE upstream, falling to XON or below sends
             a RESUME, each taking effect `prop + pause_delay` after it was decided (a PAUSE
             and a RESUME decided at one instant cancel: the sender stays open); a paused
             sender (switch output or host) starts no packet of that priority (the one on the
             wire finishes). A packet that finds no room in the buffer (the headroom above
             XOFF too small) is dropped and counted; its flow never completes
  lossy      no flow control: a packet is dropped when the blocks queued for its output and
             VL (at all inputs), as they stood when the instant began, leave no room for it
             within `buf_blocks` (an output-queued switch's per-queue limit); hosts resend
             (go-back-N, go-back-0 or IRN: see the Params and docs/netsim.md)
  CC         (cc=True, credits only; IBA Annex A10) a packet leaving an output VL with at
             least cc_threshold blocks queued for it is FECN-marked (the first such, then
             every (cc_marking_rate + 1)-th per output), unless the port is a victim (its
             credit, after the packet, would not cover a full packet: the congestion is
             downstream) and cc_victim_mask is off; its destination sends a BECN packet
             to the source (ACK-like packets go first at a host, each needing a block of
             credit); a BECN raises the flow's CCTI by ccti_increase (to ccti_limit), a timer
             per flow lowers it by one every ccti_timer from the flow's start, and after each
             packet the flow waits CCTI x cct_step
  switches   virtual cut-through: a packet is eligible `sw_latency` after its head arrived
             (its tail follows at line rate, so the output never runs dry); virtual output
             queues per (input, output, VL), FIFO each; an input port feeds one output at a
             time and an output takes one input at a time (a crossbar); a free output takes
             the next input in round-robin order (from the one after its last grant, over
             the switch's cabled ports) that is free and whose VOQ head for it fits the
             next hop's credit, VLs in ascending order; outputs are served in port order.
             With VLArb tables (vlarb_high / vlarb_low, IBA §7.6.9) an output first picks the
             VL among those some free input could send on: each table from its current entry
             while its weight (64-byte units) lasts, else the next entry with weight whose VL
             is ready; high before low unless vlarb_limit x 4 KB of high went since the last
             low packet and a low one is ready; then the input in round robin on that VL.
             With SL2VL tables (`sl2vl`), a packet arriving at a switch is queued on the VL
             SL2VL[switch, input, LFT port, SL] gives: it takes that VL's credit and leaves
             on it, its blocks held (and their credit returned) on the VL it came in on
             With alloc "islip", the RTL's allocator instead (hw/switch/allocator.py):
             each free output grants one requesting free input (a deep one, whose VOQ
             holds more than that packet, round robin from the output's deep pointer;
             on every islip_fair_every-th match, or with no deep requester, any one from
             its plain pointer); each input accepts one grant (round robin from its
             accept pointer); pointers move on first-round accepts only; up to
             islip_iterations rounds (0: until no new match), and a switch left with a
             free output some free input wants tries again islip_cycle later
  HOQLife    (hoq_life, IB and PFC; IBA §18.2.5.4) a packet at the head of its VOQ for
             hoq_life is discarded, its blocks freed at once (credit back, an FC update
             due, or PFC's RESUME); the next packet is the head from then
  AR, failover  (a `Resilience`, as the switch does them: docs/reliability.md) ports
             Active until their link fails (at a given time, both ends); a packet is
             queued for its LFT port; for each VL, a free Active output o takes from an
             input the first non-empty of: the queue of a port that is down and whose
             failover alternate is o (lowest port first), o's own queue, the queue of
             another port of o's AR group whose head's (switch, DLID) is adaptive (lowest
             first); that head must fit o's credit. A packet routed to a port that is down,
             not redirected, and (adaptive) with no Active port in its group, is discarded
             (DEST_DOWN), its credit returned at once. A packet already started on a link
             when it fails is delivered (the RTL drains and discards its tail)
  hosts      flows start at their start time (flows starting together, in list order) and
             are cut into packets of up to `mtu` payload bytes; a host sends its active
             flows' packets in round-robin order, each when its VL has credit at the switch
  time       at each instant every event due is applied first (packets become eligible,
             transmissions end, credits return, packets are delivered, flows start), then
             every switch and host touched arbitrates once. Events due together commute and
             the nodes' decisions at one instant are independent, so the order of either
             does not matter: the fast core need not reproduce this code's order.
Events counted (Result.events), one each: a flow start, a packet eligible at a switch, a
transmission's end at a switch, a credit return (or PAUSE or RESUME taking effect), a
delivery, a host's link free, a link failing.
Under credits nothing is ever dropped: a packet that would exceed a buffer is an assertion.
A run whose events run out with packets neither delivered nor dropped is a deadlock:
`DeadlockError` names the cycle of buffers waiting for each other's credit (or RESUME).

    fab = Fabric.from_topology(fat_tree_2(4)); r = route(fab, "ftree")
    res = simulate(fab, r.lft, permutation(fab.C, 64 * 1024), Params())
    res.fct, res.latency, res.delivered_bytes, res.events
"""
from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from netsim.common import (
    ACK,
    BECN,
    BLOCK,
    DATA,
    NAK,
    NO_ROUTE,
    OPEN,
    DeadlockError,
    Params,
    Resilience,
    Result,
    RoutingError,
    check_routes,
    flow_vl_limit,
    sl2vl_tables,
    uniform01,
    wait_cycle,
)
from netsim.workload import Flow, check_flows

__all__ = ["Params", "Result", "Resilience", "DeadlockError", "RoutingError", "simulate", "BLOCK", "NO_ROUTE"]

ELIG, TXEND, FC, DELIV, HOSTFREE, RTO, FREED, PERIOD, LIFE, LINK = range(10)


class _Pkt:
    __slots__ = ("flow", "seq", "kind", "dlid", "wire", "blocks", "vl", "payload", "sent", "sack", "fecn", "sl",
                 "ovl")

    def __init__(self, flow, seq, kind, dlid, wire, blocks, vl, payload, sent, sack=0, sl=0):
        self.flow, self.seq, self.kind, self.dlid, self.wire, self.blocks, self.vl, self.payload, self.sent = (
            flow, seq, kind, dlid, wire, blocks, vl, payload, sent)
        self.sack = sack                  # irn NAK: the packet received out of order
        self.fecn = False                 # CC: marked by a congested switch
        self.sl = sl                      # its service level (SL2VL)
        self.ovl = vl                     # at a switch: the VL it leaves on (its VOQ's)


def simulate(fab, lft: np.ndarray, flows: list[Flow], prm: Params | None = None, trace: bool = False,
             resilience: Resilience | None = None, sl2vl=None) -> Result:
    prm = prm or Params()
    prm.check()
    sw_sl2vl, host_sl2vl = sl2vl_tables(fab, sl2vl, prm.vls)
    check_flows(flows, fab.C, flow_vl_limit(sl2vl, prm.vls))
    rs = resilience or Resilience()
    rs.check(fab, lft, prm)
    check_routes(fab, lft, np.array([f.src for f in flows]), np.array([f.dst for f in flows]))
    if prm.mode == "lossy" or prm.cc or prm.dcqcn:   # the ACKs, BECNs or CNPs go back
        check_routes(fab, lft, np.array([f.dst for f in flows]), np.array([f.src for f in flows]))
    S, P, V = fab.S, fab.P, prm.vls
    host_at = {(int(fab.ca_sw[c]), int(fab.ca_port[c])): c for c in range(fab.C)}
    ports = [[p for p in range(1, int(fab.nports[s]) + 1) if fab.nbr[s, p] >= 0 or (s, p) in host_at]
             for s in range(S)]
    INF = 1 << 62
    pfc = prm.mode == "pfc"
    lossy = prm.mode == "lossy"
    gate = pfc or lossy                  # no credits: PFC's gate (lossy: never shut)
    xoff, xon = prm.pfc_thresholds() if pfc else (0, 0)
    fc_delay = prm.prop + prm.pause_delay
    fcw = prm.fc_bytes                   # FC packets on the wire (0: not modelled)
    fc_pend = [[[0] * V for _ in range(P + 1)] for _ in range(S)]    # blocks freed, not yet advertised
    fc_due = [[0] * (P + 1) for _ in range(S)]                        # VLs (bits) with an FC packet due
    pausing = [[[False] * V for _ in range(P + 1)] for _ in range(S)]   # PFC: a PAUSE sent upstream
    rx_count = [[0] * (P + 1) for _ in range(S)]                        # lossy: data packets into an input
    drops = pauses = retransmits = naks = timeouts = fecns = becns = fc_sent = hoq_drops = 0
    hoq_t: dict[tuple, int] = {}          # HOQLife: per VOQ (s, i, o, vl), when its head became the head
    oq = [[[0] * V for _ in range(P + 1)] for _ in range(S)]       # blocks queued per output and VL
    marks = [[0] * (P + 1) for _ in range(S)]                      # CC: eligible packets per output
    max_blocks = -(-(prm.mtu + prm.header) // BLOCK)              # CC: a full packet
    oq0: dict[tuple, int] = {}                                     # lossy: a queue at its instant's start
    oq_t: dict[tuple, int] = {}
    # switch state
    voq = [[{} for _ in range(P + 1)] for _ in range(S)]          # [s][in] -> {(out, vl): deque}
    occ = [[[0] * V for _ in range(P + 1)] for _ in range(S)]      # blocks held per input buffer and VL
    in_busy = [[0] * (P + 1) for _ in range(S)]
    out_busy = [[0] * (P + 1) for _ in range(S)]
    # what an output may send per VL: IB, the blocks of credit; PFC, OPEN or 0 when paused
    credit = [[[INF if (s, p) in host_at else OPEN if gate else prm.buf_blocks] * V for p in range(P + 1)]
              for s in range(S)]
    rr = [[0] * (P + 1) for _ in range(S)]                         # per output: index into ports[s]
    vlarb = bool(prm.vlarb_high or prm.vlarb_low)                  # VLArb, per output: (entry, weight left)
    arb = [[{"high": (len(prm.vlarb_high) - 1, 0), "low": (len(prm.vlarb_low) - 1, 0), "hcount": 0}
            for _ in range(P + 1)] for _ in range(S)]              # per table, high-priority blocks sent
    # adaptive routing and failover (netsim.common.Resilience): which ports are Active, each
    # port's AR group and failover alternate, which (switch, DLID) are adaptive
    active = [[p in ports[s] for p in range(P + 1)] for s in range(S)]
    group = rs.group if rs.group is not None else np.zeros((S, P + 1), np.int64)
    alt = rs.alt if rs.alt is not None else np.full((S, P + 1), NO_ROUTE, np.int64)
    adaptive = rs.adaptive
    dest_down = 0
    islip = prm.alloc == "islip"                                   # the RTL's allocator's pointers:
    isl_g = [[0] * (P + 1) for _ in range(S)]                      #   grant, per output
    isl_gh = [[0] * (P + 1) for _ in range(S)]                     #   grant among deep requesters
    isl_a = [[0] * (P + 1) for _ in range(S)]                      #   accept, per input
    isl_count = [[0] * (P + 1) for _ in range(S)]                  #   matches per output, mod K
    # host state: a ring of flows to send from, round robin; control packets first
    H, F = fab.C, len(flows)
    hvl = [int(host_sl2vl[f.vl]) for f in flows]                   # SL2VL: a flow's VL at its host
    h_credit = [[OPEN if gate else prm.buf_blocks] * V for _ in range(H)]
    h_busy = [0] * H
    h_ring: list[deque] = [deque() for _ in range(H)]
    h_ctl: list[deque] = [deque() for _ in range(H)]              # ACK/NAK (lossy), BECN (CC) to send
    h_fc_pend = [[0] * V for _ in range(H)]                         # fc_bytes: a host's receive side
    h_fc_due = [0] * H
    npk = [-(-f.size // prm.mtu) for f in flows]                   # packets per flow
    npsn = [0] * F                                                 # next to send
    una = [0] * F                                                  # lossy: first not acknowledged
    in_ring = [False] * F
    epsn = [0] * F                                                 # lossy receiver: next expected
    nak_for = [-1] * F                                             # ... the epsn a NAK was sent for
    rcvd = [set() for _ in range(F)]                               # irn receiver: received above epsn
    sacked = [set() for _ in range(F)]                             # irn sender: known received
    high = [0] * F                                                 # irn sender: above the last sacked
    rtx = [0] * F                                                  # irn sender: next hole to resend
    ccti = [0] * F                                                 # CC: the flow's table index
    cc_t = [f.start for f in flows]                                #   as of this time
    next_ok = [0] * F                                              #   its next packet may start then
    # DCQCN (RoCE): per flow the reaction point's rates (fractions of the line), alpha, and its
    # timers and byte counter, all counted from the last CNP (or the flow's start); the
    # notification point's last CNP
    dq_rc = [1.0] * F
    dq_rt = [1.0] * F
    dq_alpha = [1.0] * F
    dq_t0 = [f.start for f in flows]
    dq_an = [0] * F                                                # alpha decays applied since t0
    dq_tn = [0] * F                                                # timer increases applied since t0
    dq_bc = [0] * F                                                # byte-counter increases since t0
    dq_bytes = [0] * F                                             # bytes sent since t0
    dq_cnp = [-INF] * F                                            # receiver: its last CNP
    armed = [False] * F                                            # lossy: a retransmission timer runs
    sent_hi = [0] * F                                              # above the highest psn ever sent
    progress = [0] * F
    done_at = [-1] * F
    got = [0] * F
    delivered = np.zeros(H, dtype=np.int64)
    lat: list[int] = []
    tr: list[tuple] = []
    total_pkts = sum(npk)
    n_deliv = 0
    max_occ = 0

    ev: list = []
    seq = 0

    def push(t, kind, a=None, b=None, c=None):
        nonlocal seq
        seq += 1
        heapq.heappush(ev, (t, seq, kind, a, b, c))

    for tf, sf, pf in rs.failures:                                 # (first among their instant's events)
        push(tf, LINK, sf, pf)
    starts = sorted(range(F), key=lambda k: flows[k].start)       # stable: list order among equals
    nxt_start = 0

    def payload(k, psn):
        return min(prm.mtu, flows[k].size - psn * prm.mtu)

    def next_psn(k):
        """The packet flow k would send now, or None."""
        if lossy and prm.transport == "irn":
            p = rtx[k]
            while p < high[k] and p in sacked[k]:
                p += 1
            rtx[k] = p
            if p < high[k]:
                return p
        if npsn[k] >= npk[k] or (lossy and prm.window and npsn[k] - una[k] >= prm.window):
            return None
        return npsn[k]

    def settle(k, t):
        """CC: the flow's CCTI at t; a timer per flow, decrementing it every ccti_timer from
        the flow's start."""
        st = flows[k].start
        n = (t - st) // prm.ccti_timer - (cc_t[k] - st) // prm.ccti_timer
        ccti[k] = max(0, ccti[k] - n)
        cc_t[k] = t

    def dq_increase(k):
        """DCQCN's rate increase (Zhu et al., SIGCOMM 2015): fast recovery while both the
        timer's and the byte counter's increases since the last cut are below F, hyper
        increase once both are above it, additive in between."""
        lo, hi = min(dq_tn[k], dq_bc[k]), max(dq_tn[k], dq_bc[k])
        if hi >= prm.rate_fr_steps:
            if lo > prm.rate_fr_steps:
                dq_rt[k] = min(1.0, dq_rt[k] + prm.rate_hai * (lo - prm.rate_fr_steps))
            else:
                dq_rt[k] = min(1.0, dq_rt[k] + prm.rate_ai)
        dq_rc[k] = min(1.0, (dq_rt[k] + dq_rc[k]) / 2)

    def dq_settle(k, t):
        """DCQCN's timers up to t: alpha decays, and the rate-increase timer's increases."""
        na = (t - dq_t0[k]) // prm.alpha_timer
        while dq_an[k] < na:
            dq_an[k] += 1
            dq_alpha[k] *= 1 - prm.dcqcn_g
        nt = (t - dq_t0[k]) // prm.rate_timer
        while dq_tn[k] < nt:
            dq_tn[k] += 1
            dq_increase(k)

    def ring_add(h, k):
        if not in_ring[k]:
            in_ring[k] = True
            h_ring[h].append(k)

    def send(h, t, pkt):
        if trace:
            tr.append((t, -1 - h, pkt.kind, pkt.sack, pkt.flow, pkt.seq))
        h_busy[h] = t + pkt.wire
        push(t + prm.prop + prm.sw_latency, ELIG, int(fab.ca_sw[h]), int(fab.ca_port[h]), pkt)
        push(t + pkt.wire, HOSTFREE, h)

    def host_try(h, t):
        nonlocal retransmits, fc_sent
        if h_busy[h] > t:
            return
        if h_fc_due[h]:                           # an FC packet first (the switch's credit toward a
            vl = (h_fc_due[h] & -h_fc_due[h]).bit_length() - 1    # host is not modelled: it drains)
            h_fc_due[h] &= ~(1 << vl)
            h_fc_pend[h][vl] = 0
            fc_sent += 1
            h_busy[h] = t + fcw
            push(t + fcw, HOSTFREE, h)
            return
        if h_ctl[h]:
            if h_credit[h][h_ctl[h][0].vl] < 1:
                return                            # (data on the VL needs more)
            c = h_ctl[h].popleft()
            if not gate:
                h_credit[h][c.vl] -= 1
            send(h, t, c)
            return
        q = h_ring[h]
        for _ in range(len(q)):
            k = q[0]
            f = flows[k]
            psn = next_psn(k)
            if psn is None:                       # nothing to send now: out of the ring
                q.popleft()
                in_ring[k] = False
                continue
            pay = payload(k, psn)
            wire = pay + prm.header
            blocks = -(-wire // BLOCK)
            if h_credit[h][hvl[k]] < blocks or ((prm.cc or prm.dcqcn) and next_ok[k] > t):
                q.rotate(-1)
                continue
            if psn == npsn[k]:
                npsn[k] += 1
            else:                                 # irn: a hole resent
                rtx[k] = psn + 1
            if psn < sent_hi[k]:
                retransmits += 1
            sent_hi[k] = max(sent_hi[k], psn + 1)
            if next_psn(k) is None:
                q.popleft()
                in_ring[k] = False
            else:
                q.rotate(-1)
            if not gate:
                h_credit[h][hvl[k]] -= blocks
            if lossy and not armed[k]:
                armed[k] = True
                progress[k] = t
                push(t + prm.rto, RTO, k)
            if prm.cc:                            # the flow waits CCT[CCTI] before its next packet
                settle(k, t)
                next_ok[k] = t + ccti[k] * prm.cct_step
                if next_ok[k] > t + wire:
                    push(next_ok[k], HOSTFREE, h)  # (a wake-up: the host's link is free before)
            if prm.dcqcn:                         # paced at the current rate; the byte counter
                dq_settle(k, t)
                dq_bytes[k] += wire
                while dq_bytes[k] >= (dq_bc[k] + 1) * prm.byte_counter:
                    dq_bc[k] += 1
                    dq_increase(k)
                next_ok[k] = t + int(wire / dq_rc[k])
                if next_ok[k] > t + wire:
                    push(next_ok[k], HOSTFREE, h)
            send(h, t, _Pkt(k, psn, DATA, int(fab.lid_ca[f.dst]), wire, blocks, hvl[k], pay, t, sl=f.vl))
            return


    def upstream(s, i):
        up = host_at.get((s, i))
        return (-1 - up, 0) if up is not None else (int(fab.nbr[s, i]), int(fab.nbr_port[s, i]))

    def sw_try(s, t):
        nonlocal fc_sent
        pl = ports[s]
        n = len(pl)
        for o in pl:
            if out_busy[s][o] <= t and fc_due[s][o]:    # an FC packet before any data packet
                vl = (fc_due[s][o] & -fc_due[s][o]).bit_length() - 1
                fc_due[s][o] &= ~(1 << vl)
                blocks, fc_pend[s][o][vl] = fc_pend[s][o][vl], 0
                fc_sent += 1
                out_busy[s][o] = t + fcw
                push(t + fcw, TXEND, s)
                if blocks:
                    u, up = upstream(s, o)
                    push(t + fcw + prm.prop, FC, u, up * V + vl, blocks)
        if islip:
            return islip_try(s, t)
        for o in pl:
            if out_busy[s][o] > t:
                continue
            only = None
            if vlarb:                             # VLArb chooses the VL first, among those some
                ready = {v for i in pl if in_busy[s][i] <= t for v in range(V)   # free input could send
                         if head_for(s, i, o, (v,)) is not None}
                choice = vlarb_pick(s, o, ready)
                if choice is None:
                    continue
                only = (choice[0],)
            start = rr[s][o]
            for j in range(n):
                i = pl[(start + j) % n]
                if in_busy[s][i] > t:
                    continue
                pick = head_for(s, i, o, only)
                if pick is None:
                    continue
                rr[s][o] = (start + j + 1) % n
                if vlarb:
                    vlarb_sent(s, o, choice, pick[1][0].blocks)
                grant(s, i, o, pick[0], pick[1], t)
                break

    def vlarb_pick(s, o, ready):
        """IBA §7.6.9 at output o: (VL, table, entry) or None. Each table is served from its
        current entry while that entry's weight (64-byte units) is not used up, else from the
        next entry with weight whose VL is ready; high priority first unless it has sent
        vlarb_limit x 4 KB since the last low-priority packet and a low one is ready."""
        st = arb[s][o]
        picks = {}
        for name, tbl in (("high", prm.vlarb_high), ("low", prm.vlarb_low)):
            ptr, rem = st[name]
            start = ptr if rem else (ptr + 1) % max(1, len(tbl))
            for j in range(len(tbl)):
                k = (start + j) % len(tbl)
                vl, w = tbl[k]
                if vl in ready and (w or (k == ptr and rem)):
                    picks[name] = (vl, name, k)
                    break
        lim = prm.vlarb_limit
        if "high" in picks and (lim == 255 or st["hcount"] == 0 or st["hcount"] < lim * 64 or "low" not in picks):
            return picks["high"]
        return picks.get("low")

    def vlarb_sent(s, o, choice, blocks):
        """The entry behind the VL chosen sends a packet of `blocks`: its weight is used."""
        _vl, name, k = choice
        st = arb[s][o]
        ptr, rem = st[name]
        base = rem if (k == ptr and rem) else (prm.vlarb_high if name == "high" else prm.vlarb_low)[k][1]
        st[name] = (k, max(base - blocks, 0))
        st["hcount"] = min(st["hcount"] + blocks, 255 * 64) if name == "high" else 0

    def redirected(s, p):
        """Failover: output p is not Active and its alternate is."""
        a = int(alt[s, p])
        return not active[s][p] and a != NO_ROUTE and active[s][a]

    def head_for(s, i, o, only=None):
        """(queue's port, queue) of input i for output o to serve: the lowest VL whose head
        fits o's credit. Per VL, as the switch offers them (docs/reliability.md): the first
        redirected queue (a port down whose alternate is o, lowest first) holding a packet,
        else o's own queue, else (adaptive routing) the queue of another port of o's group
        whose head is adaptive."""
        if not active[s][o]:
            return None
        qs = voq[s][i]
        for vl in only or range(V):
            pick = None
            if rs.on:
                for p in ports[s]:
                    if int(alt[s, p]) == o and redirected(s, p) and qs.get((p, vl)):
                        pick = p, qs[p, vl]
                        break
            if pick is None and qs.get((o, vl)):
                pick = o, qs[o, vl]
            if pick is None and rs.on and group[s, o]:
                for p in ports[s]:
                    q = qs.get((p, vl))
                    if p != o and group[s, p] == group[s, o] and q and adaptive[s, q[0].dlid]:
                        pick = p, q
                        break
            if pick is not None and credit[s][o][vl] >= pick[1][0].blocks:
                return pick
        return None

    def _rr(cands, ptr):
        """The first of `cands` (port numbers) at or after port `ptr`, cyclically."""
        return min(cands, key=lambda x: (x - ptr) % (P + 1))

    def islip_try(s, t):
        """The RTL's allocator (hw/switch/allocator.py): iSLIP with depth priority. Every
        free output grants, among the free inputs with a packet for it, a deep one (its VOQ
        holds more than that packet) from its deep pointer, or on every K-th match or with
        no deep requester any one from its plain pointer; every input accepts one grant
        from its accept pointer; pointers move on first-round accepts only; rounds repeat
        until no new match (what the RTL's next cycles do)."""
        pl = ports[s]
        free_in = {i for i in pl if in_busy[s][i] <= t}
        free_out = [o for o in pl if out_busy[s][o] <= t]
        req = {}
        for i in free_in:
            for o in free_out:
                h = head_for(s, i, o)
                if h is not None:
                    req[i, o] = h[1]
        first = True
        matched = []
        for _round in range(prm.islip_iterations or len(pl)):
            grants: dict[int, list[int]] = {}
            plain = {}
            for o in free_out:
                cand = [i for i in free_in if (i, o) in req]
                if not cand:
                    continue
                deep = [i for i in cand if len(req[i, o]) > 1] if prm.islip_fair_every > 1 else []
                plain[o] = not deep or isl_count[s][o] == prm.islip_fair_every - 1
                gi = _rr(cand, isl_g[s][o]) if plain[o] else _rr(deep, isl_gh[s][o])
                grants.setdefault(gi, []).append(o)
            if not grants:
                break
            for i in sorted(grants):
                o = _rr(grants[i], isl_a[s][i])
                free_in.discard(i)
                free_out.remove(o)
                matched.append((i, o))
                if first:
                    if plain[o]:
                        isl_g[s][o] = i + 1
                    else:
                        isl_gh[s][o] = i + 1
                    isl_a[s][i] = o + 1
            first = False
        else:                                     # rounds used up: a free output still wanted
            if any((i, o) in req for i in free_in for o in free_out):      # tries again a cycle on
                push(t + prm.islip_cycle, TXEND, s)
        for i, o in sorted(matched, key=lambda x: x[1]):
            isl_count[s][o] = (isl_count[s][o] + 1) % max(1, prm.islip_fair_every)
            grant(s, i, o, o, req[i, o], t)

    def hoq_arm(s, i, o, vl, t):
        """HOQLife: the VOQ's head is its head from t."""
        if prm.hoq_life:
            hoq_t[s, i, o, vl] = t
            push(t + prm.hoq_life, LIFE, s, (i, o, vl))

    def freed_now(t):
        """FC packets: a block was freed at t; the periodic refresh is armed (at the next
        multiple of fc_period) if it is not."""
        nonlocal last_free, period_armed
        last_free = t
        if not period_armed and prm.fc_period:
            period_armed = True
            push((t // prm.fc_period + 1) * prm.fc_period, PERIOD)

    def fc_freed(s, i, vl, blocks, t):
        """FC packets: blocks of input buffer (s, i) freed at t; an update becomes due at
        fc_update of them."""
        freed_now(t)
        fc_pend[s][i][vl] += blocks
        if fc_pend[s][i][vl] >= prm.fc_update:
            fc_due[s][i] |= 1 << vl
            sw_dirty.add(s)

    def free_blocks(s, i, vl, blocks, t, end):
        """A packet's blocks leave input buffer (s, i) at `end`: the credit goes back (or an
        FC packet becomes due), or PFC's RESUME."""
        u, up = upstream(s, i)
        if not gate:
            if fcw and end == t:                  # (now: a discard) the FC update at once
                fc_freed(s, i, vl, blocks, t)
            elif fcw:                             # freed when the tail has left; an FC packet tells
                push(end, FREED, s, i * V + vl, blocks)
            else:                                 # the buffer is freed; the sender learns it a link
                push(end + prm.prop, FC, u, up * V + vl, blocks)  # after the tail left
        elif pausing[s][i][vl] and occ[s][i][vl] <= xon:
            pausing[s][i][vl] = False
            push(t + fc_delay, FC, u, up * V + vl, OPEN)       # RESUME

    def grant(s, i, o, qo, pick, t):
        """Input i's head packet `pick[0]` (of its queue for port qo: o, or one redirected or
        adaptive to o) starts through output o."""
        nonlocal fecns
        pkt = pick.popleft()
        ivl, ovl = pkt.vl, pkt.ovl                 # the VL it came in on (its buffer's), the one it leaves on
        if pick:
            hoq_arm(s, i, qo, ovl, t)
        victim = credit[s][o][ovl] - pkt.blocks < max_blocks         # its next hop backs up
        if prm.cc and pkt.kind == DATA and oq[s][qo][ovl] >= prm.cc_threshold and (
                prm.cc_victim_mask or not victim):
            if marks[s][o] % (prm.cc_marking_rate + 1) == 0:
                pkt.fecn = True           # FECN (Annex A10): the output VL is congested
                fecns += 1
            marks[s][o] += 1
        if prm.dcqcn and pkt.kind == DATA and oq[s][qo][ovl] > prm.ecn_kmin:
            q = oq[s][qo][ovl]                      # RED on the output VL's queue (this packet in it)
            pr = 1.0 if q >= prm.ecn_kmax else prm.ecn_pmax * (q - prm.ecn_kmin) / (prm.ecn_kmax - prm.ecn_kmin)
            if pr >= 1.0 or uniform01(s, o, pkt.flow, pkt.seq, t) < pr:
                pkt.fecn = True                   # ECN congestion experienced
                fecns += 1
        oq[s][qo][ovl] -= pkt.blocks
        if trace:
            tr.append((t, s, i, o, pkt.flow if pkt.kind == DATA else -1 - pkt.flow, pkt.seq))
        end = t + pkt.wire
        in_busy[s][i] = out_busy[s][o] = end
        occ[s][i][ivl] -= pkt.blocks
        push(end, TXEND, s)
        if not gate:
            credit[s][o][ovl] -= pkt.blocks
        free_blocks(s, i, ivl, pkt.blocks, t, end)
        pkt.vl = ovl
        h = host_at.get((s, o))
        if h is not None:
            push(t + prm.prop + pkt.wire, DELIV, h, pkt)
        else:
            push(t + prm.prop + prm.sw_latency, ELIG, int(fab.nbr[s, o]), int(fab.nbr_port[s, o]), pkt)

    def control(h, k, kind, psn, sack=0):
        """The receiver h of flow k answers: an ACK or NAK to the flow's source."""
        h_ctl[h].append(_Pkt(k, psn, kind, int(fab.lid_ca[flows[k].src]), prm.ack_bytes, 1, hvl[k], 0, 0,
                             sack, sl=flows[k].vl))

    def receive(h, t, pkt):
        """Lossy mode's receiver (data) and sender (ACK, NAK) of a flow."""
        nonlocal n_deliv, naks
        k, psn = pkt.flow, pkt.seq
        if pkt.kind == DATA:
            new = False
            if psn == epsn[k]:
                new = True
                epsn[k] += 1
                if prm.transport == "irn":
                    while epsn[k] in rcvd[k]:
                        rcvd[k].discard(epsn[k])
                        epsn[k] += 1
                control(h, k, ACK, epsn[k])
            elif psn > epsn[k]:
                if prm.transport == "irn":
                    if psn not in rcvd[k]:
                        new = True
                        rcvd[k].add(psn)
                    naks += 1
                    control(h, k, NAK, epsn[k], psn)
                elif nak_for[k] != epsn[k]:
                    if prm.transport == "gb0":        # the message is to come again from its start:
                        n_deliv -= epsn[k]            # what was taken of it is thrown away
                        delivered[h] -= got[k]
                        got[k] = 0
                        epsn[k] = 0
                    nak_for[k] = epsn[k]
                    naks += 1
                    control(h, k, NAK, epsn[k])
            else:
                control(h, k, ACK, epsn[k])       # a duplicate
            if new:
                n_deliv += 1
                delivered[h] += pkt.payload
                lat.append(t - pkt.sent)
                got[k] += pkt.payload
                if epsn[k] == npk[k] and done_at[k] < 0:
                    done_at[k] = t
            return
        src = flows[k].src
        e = pkt.seq
        if e > una[k]:
            una[k] = e
            progress[k] = t
        if pkt.kind == NAK:
            if prm.transport == "gbn":
                npsn[k] = min(npsn[k], max(e, una[k]))
            elif prm.transport == "gb0":
                npsn[k] = una[k] = 0
            else:
                sacked[k].add(pkt.sack)
                high[k] = max(high[k], pkt.sack + 1)
                rtx[k] = max(rtx[k], una[k])
        if next_psn(k) is not None:
            ring_add(src, k)

    def timeout(k, t):
        nonlocal timeouts
        if una[k] >= npk[k] or (npsn[k] <= una[k] and not (prm.transport == "irn" and rtx[k] < high[k])):
            armed[k] = False                      # done, or nothing outstanding
            return
        if t < progress[k] + prm.rto:
            push(progress[k] + prm.rto, RTO, k)
            return
        timeouts += 1
        if prm.transport == "gbn":
            npsn[k] = una[k]
        elif prm.transport == "gb0":
            npsn[k] = 0
        else:
            rtx[k] = una[k]
            high[k] = npsn[k]
        progress[k] = t
        push(t + prm.rto, RTO, k)
        if next_psn(k) is not None:
            ring_add(flows[k].src, k)

    events = 0
    last_free = -INF                              # fc_period: when a block was last freed
    period_armed = False                          # a refresh is in the event list
    t = 0
    while ev or nxt_start < len(starts):
        t = min(ev[0][0] if ev else INF, flows[starts[nxt_start]].start if nxt_start < len(starts) else INF)
        if prm.max_time is not None and t > prm.max_time:
            t = prm.max_time
            break
        sw_dirty: set[int] = set()
        h_dirty: set[int] = set()
        timers: list[int] = []
        while nxt_start < len(starts) and flows[starts[nxt_start]].start == t:
            k = starts[nxt_start]
            nxt_start += 1
            events += 1
            ring_add(flows[k].src, k)
            h_dirty.add(flows[k].src)
        while ev and ev[0][0] == t:
            _t, _seq, kind, a, b, c = heapq.heappop(ev)
            events += 1
            if kind == ELIG:
                s, i, pkt = a, b, c
                if lossy and prm.drop_every and pkt.kind == DATA:
                    rx_count[s][i] += 1
                    if rx_count[s][i] % prm.drop_every == 0:
                        drops += 1                                # dropped on purpose
                        continue
                o = int(lft[s, pkt.dlid])
                if rs.on and not active[s][o] and not redirected(s, o) and not (
                        adaptive is not None and adaptive[s, pkt.dlid] and group[s, o]
                        and any(active[s][p] and group[s, p] == group[s, o] for p in ports[s])):
                    drops += 1                                    # DEST_DOWN: nowhere to go; its
                    dest_down += 1                                # blocks are free again at once
                    free_blocks(s, i, pkt.vl, pkt.blocks, t, t)
                    continue
                ovl = pkt.ovl = pkt.vl if sw_sl2vl is None else int(sw_sl2vl[s, i, o, pkt.sl])
                if lossy:           # an output queue's limit, against the queue as it stood when the
                    key = (s, o, ovl)                             # instant began (arrivals commute)
                    if oq_t.get(key) != t:
                        oq_t[key], oq0[key] = t, oq[s][o][ovl]
                    if oq0[key] + pkt.blocks > prm.buf_blocks:
                        drops += 1
                        continue
                elif occ[s][i][pkt.vl] + pkt.blocks > prm.buf_blocks:
                    assert gate, "a sender overran its credit"
                    drops += 1                                    # no room left (PFC: no headroom)
                    continue
                occ[s][i][pkt.vl] += pkt.blocks
                oq[s][o][ovl] += pkt.blocks
                max_occ = max(max_occ, oq[s][o][ovl] if lossy else occ[s][i][pkt.vl])
                if pfc and occ[s][i][pkt.vl] >= xoff and not pausing[s][i][pkt.vl]:
                    pausing[s][i][pkt.vl] = True
                    pauses += 1
                    u, up = upstream(s, i)
                    push(t + fc_delay, FC, u, up * V + pkt.vl, -OPEN)  # PAUSE
                q = voq[s][i].setdefault((o, ovl), deque())
                q.append(pkt)
                if len(q) == 1:
                    hoq_arm(s, i, o, ovl, t)
                sw_dirty.add(s)
            elif kind == TXEND:
                sw_dirty.add(a)
            elif kind == LINK:                    # a link fails: both ends are no longer Active
                for x, p in ((a, b), (int(fab.nbr[a, b]), int(fab.nbr_port[a, b]))):
                    active[x][p] = False
                    sw_dirty.add(x)
            elif kind == FC:
                row = h_credit[-1 - a] if a < 0 else credit[a][b // V]
                row[b % V] += c                                    # credit, or PFC's -OPEN / +OPEN
                (h_dirty if a < 0 else sw_dirty).add(-1 - a if a < 0 else a)
            elif kind == DELIV:
                h, pkt = a, b
                if lossy:
                    receive(h, t, pkt)
                    h_dirty.add(h)
                    if pkt.kind != DATA:
                        h_dirty.add(flows[pkt.flow].src)
                    continue
                if pkt.kind == BECN:                              # CC at the flow's source
                    k = pkt.flow
                    becns += 1
                    if prm.dcqcn:                                 # a CNP: the rate is cut
                        dq_settle(k, t)
                        dq_rt[k] = dq_rc[k]
                        dq_rc[k] = max(prm.rate_min, dq_rc[k] * (1 - dq_alpha[k] / 2))
                        dq_alpha[k] = (1 - prm.dcqcn_g) * dq_alpha[k] + prm.dcqcn_g
                        dq_t0[k] = t
                        dq_an[k] = dq_tn[k] = dq_bc[k] = dq_bytes[k] = 0
                    else:
                        settle(k, t)
                        ccti[k] = min(ccti[k] + prm.ccti_increase, prm.ccti_limit)
                    h_dirty.add(h)
                    continue
                if pkt.fecn and (not prm.dcqcn or t - dq_cnp[pkt.flow] >= prm.cnp_interval):
                    dq_cnp[pkt.flow] = t                          # the destination answers (DCQCN:
                    h_ctl[h].append(_Pkt(pkt.flow, pkt.seq, BECN,  # a CNP per interval per flow)
                                         int(fab.lid_ca[flows[pkt.flow].src]), prm.cnp_bytes, 1, hvl[pkt.flow], 0,
                                         0, sl=flows[pkt.flow].vl))
                    h_dirty.add(h)
                n_deliv += 1
                if fcw:
                    freed_now(t)
                    h_fc_pend[h][pkt.vl] += pkt.blocks
                    if h_fc_pend[h][pkt.vl] >= prm.fc_update:
                        h_fc_due[h] |= 1 << pkt.vl
                        h_dirty.add(h)
                delivered[h] += pkt.payload
                lat.append(t - pkt.sent)
                got[pkt.flow] += pkt.payload
                if got[pkt.flow] == flows[pkt.flow].size:
                    done_at[pkt.flow] = t
            elif kind == HOSTFREE:
                h_dirty.add(a)
            elif kind == FREED:
                fc_freed(a, b // V, b % V, c, t)
            elif kind == LIFE:                    # HOQLife: a head too long at the head is discarded
                s, (i, o, vl) = a, b
                q = voq[s][i].get((o, vl))
                if q and hoq_t[s, i, o, vl] + prm.hoq_life == t:
                    pkt = q.popleft()
                    drops += 1
                    hoq_drops += 1
                    occ[s][i][pkt.vl] -= pkt.blocks
                    oq[s][o][vl] -= pkt.blocks
                    free_blocks(s, i, pkt.vl, pkt.blocks, t, t)
                    if q:
                        hoq_arm(s, i, o, vl, t)
                    sw_dirty.add(s)
            elif kind == PERIOD:                  # every port: an FC packet per VL
                for s in range(S):
                    for o in ports[s]:
                        fc_due[s][o] = (1 << V) - 1
                    sw_dirty.add(s)
                for h in range(H):
                    h_fc_due[h] = (1 << V) - 1
                    h_dirty.add(h)
                # the next one if a block was freed within the period ending now (this instant
                # included: the order of its events does not matter), or is unadvertised; else the
                # refreshes stop until a block is freed again (they could change nothing)
                if last_free > t - prm.fc_period or any(x for row in fc_pend for r in row for x in r) or any(
                        x for r in h_fc_pend for x in r):
                    push(t + prm.fc_period, PERIOD)
                else:
                    period_armed = False
            elif kind == RTO:
                timers.append(a)
        # timers after the instant's events (an ACK due now counts), each its own flow's
        for k in sorted(timers):
            timeout(k, t)
            h_dirty.add(flows[k].src)
        for s in sorted(sw_dirty):
            sw_try(s, t)
        for h in sorted(h_dirty):
            host_try(h, t)
    if not lossy and not ev and nxt_start == len(starts) and n_deliv + drops < total_pkts:
        waits: dict[tuple, set] = {}
        for s in range(S):
            for i in ports[s]:
                for (o, vl), q in voq[s][i].items():
                    if q and (s, o) not in host_at and credit[s][o][vl] < q[0].blocks:
                        waits.setdefault((s, i, q[0].vl), set()).add((int(fab.nbr[s, o]), int(fab.nbr_port[s, o]),
                                                                       vl))
        cyc = wait_cycle(fab, waits)
        down = sorted({(s, o) for s in range(S) for i in ports[s] for (o, vl), q in voq[s][i].items()
                       if q and not active[s][o]})
        raise DeadlockError(f"deadlock at t = {t} ({prm.ns(t):.0f} ns): {total_pkts - n_deliv - drops} packets "
                            + (f"(some queued for ports down with nothing to take them: "
                               f"{', '.join(f'switch {a} port {b}' for a, b in down)}) " if down else "") +
                            f"undelivered; "
                            f"buffers waiting in a cycle: {' -> '.join(cyc) if cyc else 'none found'}", cyc, t)
    fct = np.array([d - f.start if d >= 0 else -1 for d, f in zip(done_at, flows, strict=True)], dtype=np.int64)
    return Result(prm, t, events, total_pkts, n_deliv, delivered, fct, np.array(lat, dtype=np.int64), max_occ,
                  drops, pauses, retransmits, naks, timeouts, fecns, becns,
                  counters=({"fc_packets": fc_sent} if fcw else {}) | ({"hoq_discards": hoq_drops}
                                                                        if prm.hoq_life else {})
                  | ({"dest_down": dest_down} if rs.on else {}),
                  trace=np.array(tr, dtype=np.int64).reshape(-1, 6) if trace else None)
