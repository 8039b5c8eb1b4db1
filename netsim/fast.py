"""The fabric simulator's fast core: the semantics of netsim/ref.py (read its docstring),
compiled with numba, held equal to the reference by tests/test_netsim_lockstep.py.

Differences are of representation only:
  - state lives in flat arrays indexed by global port g = switch x (P + 1) + port; a
    packet is an index into a pool of arrays (what a hop needs packed in one word), a VOQ a
    linked list through that pool;
  - events wait in a timing wheel (a ring of per-instant lists, W byte times long, W a
    power of two above the longest delay any event is scheduled with), so scheduling and
    taking an event cost O(1) instead of a heap's O(log n); flow starts are read from the
    flows sorted by start time;
  - a switch arbitrates only the outputs an event touched (an arrival for them, their
    credit, or any transmission's end in the switch), and finds the next input in
    round-robin order in bit masks (inputs free, inputs with a packet for the output).

    res = simulate(fab, lft, flows, Params())        # the same call and Result as netsim.ref
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

from netsim.common import BLOCK, OPEN, DeadlockError, Params, Result, check_routes, wait_cycle
from netsim.workload import Flow, check_flows

__all__ = ["simulate", "simulate_arrays"]

ELIG, TXEND, FC, DELIV, HOSTFREE = 0, 1, 2, 3, 4
INF = 1 << 62


# A packet is a row of 4 words: its header (DLID << 32 | wire bytes << 8 | VL: all a hop
# needs) and its link (the VOQ's next packet, or the free list's) side by side, touched at
# every hop; its flow and sequence number (flow | seq << 32) and send time, at its ends.
# The header also rides in the event that carries the packet, so an arrival at a switch
# touches only the link of the queue's tail. Events are rows (kind | a << 8, b, hdr, next).
# A VOQ is a (head, tail) pair of packet indices.
HDR, NX, FSEQ, SENT = 0, 1, 2, 3


@njit(cache=True, error_model="numpy")
def _grow_packets(pk_):
    n0 = pk_.shape[0]
    new = np.zeros((2 * n0, 4), np.int64)
    new[:n0] = pk_
    for x in range(n0, 2 * n0 - 1):
        new[x, NX] = x + 1
    new[2 * n0 - 1, NX] = -1
    return new, n0


@njit(cache=True, error_model="numpy")
def _grow_events(ev, free):
    n0 = ev.shape[0]
    new = np.zeros((2 * n0, 4), np.int64)
    new[:n0] = ev
    for x in range(n0, 2 * n0):
        new[x, 3] = x + 1
    new[2 * n0 - 1, 3] = free
    return new, n0


@njit(cache=True, error_model="numpy")
def _push(ev, wheel, mask, e, when, kind, a, b, hdr):
    """Schedule event row e (taken from the free list by the caller)."""
    ev[e, 0] = kind | (a << 8)
    ev[e, 1] = b
    ev[e, 2] = hdr
    x = when & mask
    ev[e, 3] = wheel[x]
    wheel[x] = e


@njit(cache=True, error_model="numpy")
def _trace(tr, n_tr, t, s, i, o, k, q):
    if n_tr == tr.shape[0]:
        tr2 = np.zeros((tr.shape[0] * 2, 6), np.int64)
        tr2[:n_tr] = tr
        tr = tr2
    tr[n_tr, 0] = t
    tr[n_tr, 1] = s
    tr[n_tr, 2] = i
    tr[n_tr, 3] = o
    tr[n_tr, 4] = k
    tr[n_tr, 5] = q
    return tr


@njit(cache=True, error_model="numpy")
def _first_from(c, NW, pos):
    """The lowest set bit at or above `pos` in the NW-word mask c, or -1."""
    w = pos >> 6
    if w >= NW:
        return -1
    x = c[w] & (np.uint64(0xFFFFFFFFFFFFFFFF) << np.uint64(pos & 63))
    while True:
        if x != 0:
            return (w << 6) + trailing_zeros(x)
        w += 1
        if w >= NW:
            return -1
        x = c[w]


@njit(cache=True, error_model="numpy")
def _core(S, P1, V, ncab, cports, peer, host_at, lft, ca_g, lid_ca,
          f_src, f_dst, f_size, f_start, f_vl, order,
          prop, swl, mtu, header, buf, max_time, W, trace, pfc, xoff, xon, fc_delay):
    H = lid_ca.shape[0]
    F = f_src.shape[0]
    G = S * P1
    # ---- switch state, per global port g (and VL)
    out_busy = np.zeros(G, np.int64)
    # what an output may send per VL: IB, the blocks of credit; PFC, OPEN or 0 when paused
    credit = np.full(G * V, OPEN if pfc else buf, np.int64)
    pausing = np.zeros(G * V, np.bool_)              # PFC: a PAUSE sent upstream of this input
    drops = 0
    pauses = 0
    for g in range(G):
        if host_at[g] >= 0:
            for v in range(V):
                credit[g * V + v] = INF
    occ = np.zeros(G * V, np.int64)
    rr = np.zeros(G, np.int32)                       # per output: index into the switch's cabled ports
    cidx = np.zeros(G, np.int32)                     # a port's index among its switch's cabled ports
    for s in range(S):
        for k in range(ncab[s]):
            cidx[s * P1 + cports[s, k]] = k
    # bit masks over a switch's ports, NW words each: the inputs with a packet queued for an
    # output (and the outputs an input has a packet for), the outputs with a packet queued,
    # the inputs free, the outputs to arbitrate
    NW = (P1 + 63) // 64
    one = np.uint64(1)
    voq_m = np.zeros(G * NW, np.uint64)
    in_m = np.zeros(G * NW, np.uint64)               # per input: the outputs it has a packet for
    pend_m = np.zeros(S * NW, np.uint64)
    free_m = np.zeros(S * NW, np.uint64)
    for s in range(S):
        for k in range(ncab[s]):
            p = cports[s, k]
            free_m[s * NW + (p >> 6)] |= one << np.uint64(p & 63)
    dirty_m = np.zeros(S * NW, np.uint64)
    cand = np.zeros(NW, np.uint64)
    dcopy = np.zeros(NW, np.uint64)
    q = np.full((G * P1 * V, 2), -1, np.int32)       # per VOQ: head, tail
    # ---- host state
    h_busy = np.zeros(H, np.int64)
    h_credit = np.full(H * V, OPEN if pfc else buf, np.int64)
    h_tail = np.full(H, -1, np.int64)                # ring of active flows: head = a_next[tail]
    h_n = np.zeros(H, np.int64)
    a_next = np.full(F, -1, np.int64)
    left = f_size.copy()
    sent = np.zeros(F, np.int32)
    got = np.zeros(F, np.int64)
    done = np.full(F, -1, np.int64)
    delivered = np.zeros(H, np.int64)
    total = 0
    for k in range(F):
        total += (f_size[k] + mtu - 1) // mtu
    lat = np.zeros(total, np.int64)
    # ---- packet pool
    pk_ = np.zeros((1024, 4), np.int64)
    for k in range(1024):
        pk_[k, NX] = k + 1
    pk_[1023, NX] = -1
    p_free = 0
    # ---- event pool and timing wheel
    ev = np.zeros((4096, 4), np.int64)
    for k in range(4096):
        ev[k, 3] = k + 1
    ev[4095, 3] = -1
    e_free = 0
    e_avail = 4096
    wheel = np.full(W, -1, np.int64)
    mask = W - 1
    n_ev = 0                                         # events waiting in the wheel
    # ---- nodes touched at this instant
    sw_dirty = np.zeros(S, np.int64)
    sw_flag = np.zeros(S, np.bool_)
    h_dirty = np.zeros(H, np.int64)
    h_flag = np.zeros(H, np.bool_)
    tr = np.zeros((1024 if trace else 1, 6), np.int64)
    n_tr = 0

    events = 0
    n_deliv = 0
    max_occ = 0
    nxt = 0                                          # next flow to start, in `order`
    t = 0
    last = 0
    while True:
        # ---- the next instant: the wheel's next non-empty slot or the next flow start
        ts = f_start[order[nxt]] if nxt < F else INF
        if n_ev > 0:
            u = last + 1
            while wheel[u & mask] < 0 and u < ts:
                u += 1
            t = u if u < ts else ts
        elif ts < INF:
            t = ts
        else:
            break
        if max_time >= 0 and t > max_time:
            t = max_time
            break
        last = t
        n_sw = 0
        n_h = 0
        # ---- flow starts
        while nxt < F and f_start[order[nxt]] == t:
            k = order[nxt]
            nxt += 1
            events += 1
            h = f_src[k]
            if h_tail[h] < 0:
                a_next[k] = k
            else:
                a_next[k] = a_next[h_tail[h]]
                a_next[h_tail[h]] = k
            h_tail[h] = k
            h_n[h] += 1
            if not h_flag[h]:
                h_flag[h] = True
                h_dirty[n_h] = h
                n_h += 1
        # ---- the events due
        slot = t & mask
        e = wheel[slot]
        wheel[slot] = -1
        while e >= 0:
            ka = ev[e, 0]
            kind = ka & 0xFF
            a = ka >> 8
            b = ev[e, 1]
            hdr = ev[e, 2]
            en = ev[e, 3]
            ev[e, 3] = e_free
            e_free = e
            e_avail += 1
            e = en
            n_ev -= 1
            events += 1
            if kind == ELIG:                          # a: input g, b: packet, hdr: its header
                vl = hdr & 0xFF
                blocks = (((hdr >> 8) & 0xFFFFFF) + BLOCK - 1) // BLOCK
                ov = a * V + vl
                if occ[ov] + blocks > buf:            # PFC without headroom left (IB: never)
                    drops += 1
                    pk_[b, NX] = p_free
                    p_free = b
                    continue
                occ[ov] += blocks
                if occ[ov] > max_occ:
                    max_occ = occ[ov]
                if pfc and occ[ov] >= xoff and not pausing[ov]:
                    pausing[ov] = True
                    pauses += 1
                    if e_avail < 1:
                        ev, e_free = _grow_events(ev, e_free)
                        e_avail += ev.shape[0] // 2
                    x = e_free
                    e_free = ev[x, 3]
                    e_avail -= 1
                    up = host_at[a]
                    _push(ev, wheel, mask, x, t + fc_delay, FC, -1 - up if up >= 0 else peer[a], V + vl, 0)
                    n_ev += 1
                s = a // P1
                o = lft[s, hdr >> 32]
                qi = (a * P1 + o) * V + vl
                if q[qi, 1] < 0:                      # (a queue's last packet has no link: the
                    q[qi, 0] = b                      #  tail is known, so nothing is written to it)
                else:
                    pk_[q[qi, 1], NX] = b
                q[qi, 1] = b
                i = a - s * P1
                voq_m[(s * P1 + o) * NW + (i >> 6)] |= one << np.uint64(i & 63)
                in_m[a * NW + (o >> 6)] |= one << np.uint64(o & 63)
                pend_m[s * NW + (o >> 6)] |= one << np.uint64(o & 63)
                dirty_m[s * NW + (o >> 6)] |= one << np.uint64(o & 63)
                if not sw_flag[s]:
                    sw_flag[s] = True
                    sw_dirty[n_sw] = s
                    n_sw += 1
            elif kind == TXEND:                       # a: input g, b: output port
                s = a // P1
                i = a - s * P1
                free_m[s * NW + (i >> 6)] |= one << np.uint64(i & 63)
                # the output is free, and so is the input: every output it has a packet for may go
                dirty_m[s * NW + (b >> 6)] |= one << np.uint64(b & 63)
                for w in range(NW):
                    dirty_m[s * NW + w] |= in_m[a * NW + w]
                if not sw_flag[s]:
                    sw_flag[s] = True
                    sw_dirty[n_sw] = s
                    n_sw += 1
            elif kind == FC:                          # a: output g (or -1 - host), b: c x V + VL; c: IB,
                c = b // V                            # blocks of credit; PFC, 1 PAUSE, 0 RESUME
                if pfc:
                    c = -OPEN if c else OPEN
                if a < 0:
                    h = -1 - a
                    h_credit[h * V + b % V] += c
                    if not h_flag[h]:
                        h_flag[h] = True
                        h_dirty[n_h] = h
                        n_h += 1
                else:
                    credit[a * V + b % V] += c
                    s = a // P1
                    o = a - s * P1
                    dirty_m[s * NW + (o >> 6)] |= one << np.uint64(o & 63)
                    if not sw_flag[s]:
                        sw_flag[s] = True
                        sw_dirty[n_sw] = s
                        n_sw += 1
            elif kind == DELIV:                       # a: host, b: packet, hdr: its header
                k = pk_[b, FSEQ] & 0xFFFFFFFF
                pay = ((hdr >> 8) & 0xFFFFFF) - header
                lat[n_deliv] = t - pk_[b, SENT]
                n_deliv += 1
                delivered[a] += pay
                got[k] += pay
                if got[k] == f_size[k]:
                    done[k] = t
                pk_[b, NX] = p_free
                p_free = b
            else:                                     # HOSTFREE, a: host
                if not h_flag[a]:
                    h_flag[a] = True
                    h_dirty[n_h] = a
                    n_h += 1
        # ---- switches arbitrate: the outputs touched, in port order
        for d in range(n_sw):
            s = sw_dirty[d]
            sw_flag[s] = False
            n = ncab[s]
            base = s * P1
            for w in range(NW):
                dcopy[w] = dirty_m[s * NW + w]
                dirty_m[s * NW + w] = np.uint64(0)
            o = _first_from(dcopy, NW, 0)
            while o >= 0:
                go = base + o
                if out_busy[go] > t:
                    o = _first_from(dcopy, NW, o + 1)
                    continue
                anyc = False
                for w in range(NW):
                    cand[w] = voq_m[go * NW + w] & free_m[s * NW + w]
                    if cand[w] != 0:
                        anyc = True
                if not anyc:
                    o = _first_from(dcopy, NW, o + 1)
                    continue
                start = cports[s, rr[go]]
                pk = -1
                vl = 0
                hdr = 0
                qb = 0
                gi = 0
                i = 0
                while True:                           # the inputs in round-robin order from `start`
                    i = _first_from(cand, NW, start)
                    if i < 0:
                        i = _first_from(cand, NW, 0)
                        if i < 0:
                            break
                    gi = base + i
                    qb = (gi * P1 + o) * V
                    for v in range(V):
                        x = q[qb + v, 0]
                        if x >= 0:
                            hx = pk_[x, HDR]
                            if credit[go * V + v] >= (((hx >> 8) & 0xFFFFFF) + BLOCK - 1) // BLOCK:
                                pk = x
                                vl = v
                                hdr = hx
                                break
                    if pk >= 0:
                        break
                    cand[i >> 6] &= ~(one << np.uint64(i & 63))
                if pk >= 0:
                    # ---- grant input i to output o
                    if pk != q[qb + vl, 1]:
                        q[qb + vl, 0] = pk_[pk, NX]
                    else:
                        q[qb + vl, 0] = -1
                        q[qb + vl, 1] = -1
                        still = False
                        for v in range(V):
                            if q[qb + v, 0] >= 0:
                                still = True
                        if not still:
                            voq_m[go * NW + (i >> 6)] &= ~(one << np.uint64(i & 63))
                            in_m[gi * NW + (o >> 6)] &= ~(one << np.uint64(o & 63))
                            still = False
                            for w in range(NW):
                                if voq_m[go * NW + w] != 0:
                                    still = True
                            if not still:
                                pend_m[s * NW + (o >> 6)] &= ~(one << np.uint64(o & 63))
                    free_m[s * NW + (i >> 6)] &= ~(one << np.uint64(i & 63))
                    if trace:
                        tr = _trace(tr, n_tr, t, s, i, o, pk_[pk, FSEQ] & 0xFFFFFFFF, pk_[pk, FSEQ] >> 32)
                        n_tr += 1
                    rr[go] = cidx[gi] + 1 if cidx[gi] + 1 < n else 0
                    wire = (hdr >> 8) & 0xFFFFFF
                    blocks = (wire + BLOCK - 1) // BLOCK
                    end = t + wire
                    out_busy[go] = end
                    occ[gi * V + vl] -= blocks
                    # up to three events: the transmission's end, the credit back upstream (PFC:
                    # a RESUME if the counter fell to XON), the packet onward
                    if e_avail < 3:
                        ev, e_free = _grow_events(ev, e_free)
                        e_avail += ev.shape[0] // 2
                    e = e_free
                    e_free = ev[e, 3]
                    _push(ev, wheel, mask, e, end, TXEND, gi, o, 0)
                    up = host_at[gi]
                    if not pfc:
                        credit[go * V + vl] -= blocks
                        e = e_free
                        e_free = ev[e, 3]
                        _push(ev, wheel, mask, e, end + prop, FC, -1 - up if up >= 0 else peer[gi],
                              blocks * V + vl, 0)
                        n_ev += 1
                        e_avail -= 1
                    elif pausing[gi * V + vl] and occ[gi * V + vl] <= xon:
                        pausing[gi * V + vl] = False
                        e = e_free
                        e_free = ev[e, 3]
                        _push(ev, wheel, mask, e, t + fc_delay, FC, -1 - up if up >= 0 else peer[gi], vl, 0)
                        n_ev += 1
                        e_avail -= 1
                    e = e_free
                    e_free = ev[e, 3]
                    h = host_at[go]
                    if h >= 0:
                        _push(ev, wheel, mask, e, t + prop + wire, DELIV, h, pk, hdr)
                    else:
                        _push(ev, wheel, mask, e, t + prop + swl, ELIG, peer[go], pk, hdr)
                    n_ev += 2
                    e_avail -= 2
                o = _first_from(dcopy, NW, o + 1)
        # ---- hosts send
        for d in range(n_h):
            h = h_dirty[d]
            h_flag[h] = False
            if h_busy[h] > t or h_n[h] == 0:
                continue
            for _r in range(h_n[h]):
                tl = h_tail[h]
                k = a_next[tl]
                pay = mtu if left[k] > mtu else left[k]
                wire = pay + header
                blocks = (wire + BLOCK - 1) // BLOCK
                vl = f_vl[k]
                if h_credit[h * V + vl] < blocks:
                    h_tail[h] = k                     # rotate
                    continue
                left[k] -= pay
                if left[k] > 0:
                    h_tail[h] = k                     # to the back
                else:                                 # finished: out of the ring
                    if h_n[h] == 1:
                        h_tail[h] = -1
                    else:
                        a_next[tl] = a_next[k]
                    h_n[h] -= 1
                if not pfc:
                    h_credit[h * V + vl] -= blocks
                if p_free < 0:
                    pk_, p_free = _grow_packets(pk_)
                pk = p_free
                p_free = pk_[pk, NX]
                hdr = (np.int64(lid_ca[f_dst[k]]) << 32) | (wire << 8) | vl
                pk_[pk, HDR] = hdr
                pk_[pk, FSEQ] = k | (np.int64(sent[k]) << 32)
                pk_[pk, SENT] = t
                if trace:
                    tr = _trace(tr, n_tr, t, -1 - h, 0, 0, k, sent[k])
                    n_tr += 1
                sent[k] += 1
                h_busy[h] = t + wire
                if e_avail < 2:
                    ev, e_free = _grow_events(ev, e_free)
                    e_avail += ev.shape[0] // 2
                e = e_free
                e_free = ev[e, 3]
                _push(ev, wheel, mask, e, t + prop + swl, ELIG, ca_g[h], pk, hdr)
                e = e_free
                e_free = ev[e, 3]
                _push(ev, wheel, mask, e, t + wire, HOSTFREE, h, 0, 0)
                n_ev += 2
                e_avail -= 2
                break
    # each packet's blocks, for the deadlock report
    p_blocks = ((((pk_[:, HDR] >> 8) & 0xFFFFFF) + BLOCK - 1) // BLOCK).astype(np.int64)
    return (t, events, total, n_deliv, delivered, done, lat[:n_deliv], max_occ, tr[:n_tr],
            q[:, 0].copy(), credit, p_blocks, nxt, drops, pauses)


def _arrays(fab):
    S, P1 = fab.S, fab.P + 1
    host_at = np.full(S * P1, -1, np.int32)
    for c in range(fab.C):
        host_at[int(fab.ca_sw[c]) * P1 + int(fab.ca_port[c])] = c
    peer = np.full(S * P1, -1, np.int32)
    cab = fab.nbr >= 0
    peer[cab.ravel()] = (fab.nbr * P1 + fab.nbr_port).ravel()[cab.ravel()]
    cabled = cab | (host_at.reshape(S, P1) >= 0)
    cabled[:, 0] = False
    ncab = cabled.sum(axis=1).astype(np.int32)
    cports = np.zeros((S, max(1, int(ncab.max()) if S else 1)), np.int32)
    for s in range(S):
        ps = np.flatnonzero(cabled[s]).astype(np.int32)
        cports[s, :len(ps)] = ps
    ca_g = (fab.ca_sw.astype(np.int64) * P1 + fab.ca_port).astype(np.int32)
    return ncab, cports, peer, host_at, ca_g


def simulate_arrays(fab, lft: np.ndarray, src, dst, size, start=None, vl=None, prm: Params | None = None,
                    trace: bool = False, check: bool = True) -> Result:
    """The flows as arrays (one entry per flow): for workloads of millions of flows."""
    prm = prm or Params()
    prm.check()
    src = np.ascontiguousarray(src, np.int32)
    dst = np.ascontiguousarray(dst, np.int32)
    size = np.ascontiguousarray(size, np.int64)
    F = len(src)
    start = np.zeros(F, np.int64) if start is None else np.ascontiguousarray(start, np.int64)
    vl = np.zeros(F, np.int32) if vl is None else np.ascontiguousarray(vl, np.int32)
    if check:
        from netsim.workload import check_flow_arrays
        check_flow_arrays(src, dst, size, start, vl, fab.C, prm.vls)
        check_routes(fab, lft, src, dst)
    S, P1, V = fab.S, fab.P + 1, prm.vls
    ncab, cports, peer, host_at, ca_g = _arrays(fab)
    order = np.argsort(start, kind="stable").astype(np.int64)
    pfc = prm.mode == "pfc"
    xoff, xon = prm.pfc_thresholds() if pfc else (0, 0)
    max_wire = prm.mtu + prm.header
    horizon = max(prm.prop + max_wire, prm.prop + prm.sw_latency, prm.prop + prm.pause_delay) + max_wire + 1
    W = 1 << int(horizon).bit_length()
    (t, events, total, n_deliv, delivered, done, lat, max_occ, tr, q_head, credit, p_blocks,
     nxt, drops, pauses) = _core(S, P1, V, ncab, cports, peer, host_at, np.ascontiguousarray(lft), ca_g,
                  fab.lid_ca.astype(np.int32), src, dst, size, start, vl, order,
                  prm.prop, prm.sw_latency, prm.mtu, prm.header, prm.buf_blocks,
                  -1 if prm.max_time is None else prm.max_time, W, trace, pfc, xoff, xon,
                  prm.prop + prm.pause_delay)
    if n_deliv + drops < total and (prm.max_time is None or t < prm.max_time):
        waits: dict[tuple, set] = {}
        qh = q_head.reshape(S, P1, P1, V)
        cr = credit.reshape(S, P1, V)
        for s, i, o, v in zip(*np.nonzero(qh >= 0), strict=True):
            if host_at[s * P1 + o] < 0 and cr[s, o, v] < p_blocks[qh[s, i, o, v]]:
                waits.setdefault((int(s), int(i), int(v)), set()).add(
                    (int(fab.nbr[s, o]), int(fab.nbr_port[s, o]), int(v)))
        cyc = wait_cycle(fab, waits)
        raise DeadlockError(f"deadlock at t = {t} ({prm.ns(t):.0f} ns): {total - n_deliv - drops} packets "
                            f"undelivered; "
                            f"buffers waiting in a cycle: {' -> '.join(cyc) if cyc else 'none found'}", cyc, t)
    fct = np.where(done >= 0, done - start, -1)
    return Result(prm, int(t), int(events), int(total), int(n_deliv), delivered, fct, lat, int(max_occ),
                  int(drops), int(pauses), trace=tr if trace else None)


def simulate(fab, lft: np.ndarray, flows: list[Flow], prm: Params | None = None, trace: bool = False) -> Result:
    prm = prm or Params()
    prm.check()
    check_flows(flows, fab.C, prm.vls)
    a = np.array([(f.src, f.dst, f.size, f.start, f.vl) for f in flows], dtype=np.int64).reshape(-1, 5)
    check_routes(fab, lft, a[:, 0], a[:, 1])
    return simulate_arrays(fab, lft, a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4], prm, trace, check=False)
