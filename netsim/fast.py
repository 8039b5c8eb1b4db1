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
    round-robin order in bit masks (inputs free, inputs with a packet for the output);
    with alloc "islip" (the RTL's allocator) a switch touched runs its grant and accept
    rounds over every free output, requests and grants in bit masks too;
  - fc_period's refresh waits on the timer heap (it may be far off) and is applied with
    the timers, after the instant's events: it only marks FC packets due, which commutes
    with every event.

    res = simulate(fab, lft, flows, Params())        # the same call and Result as netsim.ref
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import cgutils, types
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import intrinsic

from netsim.common import (
    ACK,
    BECN,
    BLOCK,
    DATA,
    NAK,
    OPEN,
    TRANSPORTS,
    DeadlockError,
    Params,
    Resilience,
    Result,
    check_routes,
    flow_vl_limit,
    sl2vl_tables,
    wait_cycle,
)
from netsim.workload import Flow, check_flows

__all__ = ["simulate", "simulate_arrays"]

ELIG, TXEND, FC, DELIV, HOSTFREE, RTO = 0, 1, 2, 3, 4, 5
FREED, FCEND, SWWAKE = 6, 7, 8       # fc_bytes: blocks freed, an FC packet's end; islip: a switch's retry
INF = 1 << 62


# A packet is a row of 4 words: its header (DLID << 32 | FECN << 31 | wire bytes << 8 |
# type << 4 | VL: all a hop needs) and its link (the VOQ's next packet, or the free list's) side by side, touched at
# every hop; its flow and sequence number (flow | psn << 32) and send time (an irn NAK:
# the packet it reports received out of order), at its ends.
# The header also rides in the event that carries the packet, so an arrival at a switch
# touches only the link of the queue's tail. Events are rows (kind | a << 8, b, hdr, next).
# A VOQ is a (head, tail) pair of packet indices.
HDR, NX, FSEQ, SENT = 0, 1, 2, 3
FECN = 1 << 31
SL_SHIFT = 56                         # the header's SL (bits 59:56; the DLID is bits 55:32)
DLID_MASK = (1 << 24) - 1


@njit(cache=True, error_model="numpy")
def _grow_packets(pk_):
    n0 = pk_.shape[0]
    new = np.zeros((2 * n0, 4), np.int64)
    new[:n0] = pk_
    for x in range(n0, 2 * n0 - 1):
        new[x, NX] = x + 1
    new[2 * n0 - 1, NX] = -1
    return new, n0


@intrinsic
def _prefetch(typingctx, arr, idx):
    """A hint to the CPU: row `idx` of the 2-D int64 array `arr` is wanted soon (llvm.prefetch;
    no effect on what the program computes)."""
    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        row = builder.mul(args[1], ir.Constant(ir.IntType(64), sig.args[0].dtype.bitwidth // 8))
        row = builder.mul(row, builder.extract_value(ary.shape, 1))
        base = builder.ptrtoint(ary.data, ir.IntType(64))
        ptr = builder.inttoptr(builder.add(base, row), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32]),
                                            "llvm.prefetch.p0i8")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()
    return types.void(arr, types.int64), codegen


@njit(cache=True, error_model="numpy", inline="always")
def _head_for(q, pk_, credit, cports, altg, active, grp, ar_lid, arf, n, s, base, P1, V, gi, o, v):
    """(queue's port, packet) input gi offers output o on VL v, the packet -1 if none fits
    o's credit. Without AR and failover, o's own queue; with them, the first non-empty of:
    a queue redirected to o (a port down whose alternate is o, lowest first), o's own, the
    queue of another port of o's group whose head is adaptive (netsim.ref: head_for)."""
    go = base + o
    qo = o
    if arf:
        qo = -1
        for kk in range(n):
            p = cports[s, kk]
            if altg[base + p] == go and not active[base + p] and q[(gi * P1 + p) * V + v, 0] >= 0:
                qo = p
                break
        if qo < 0 and q[(gi * P1 + o) * V + v, 0] >= 0:
            qo = o
        if qo < 0 and grp[go] != 0:
            for kk in range(n):
                p = cports[s, kk]
                if p != o and grp[base + p] == grp[go]:
                    x = q[(gi * P1 + p) * V + v, 0]
                    if x >= 0 and ar_lid[s, (pk_[x, HDR] >> 32) & DLID_MASK]:
                        qo = p
                        break
        if qo < 0:
            return o, -1
    x = q[(gi * P1 + qo) * V + v, 0]
    if x >= 0 and credit[go * V + v] >= (((pk_[x, HDR] >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK:
        return qo, x
    return qo, -1


@njit(cache=True, error_model="numpy")
def _vlarb_pick(go, ready, va_vl, va_w, va_n, va_ptr, va_rem, v_hc, limit):
    """VLArb at output go (netsim.ref: vlarb_pick): (VL, table 0 high / 1 low, entry), VL -1
    if no VL in `ready` (bits) is served. Tables: row 0 high, row 1 low."""
    pv = np.full(2, -1, np.int64)
    pk = np.full(2, -1, np.int64)
    for tb in range(2):
        ne = va_n[tb]
        if ne == 0:
            continue
        ptr = va_ptr[go * 2 + tb]
        rem = va_rem[go * 2 + tb]
        start = ptr if rem > 0 else (ptr + 1) % ne
        for j in range(ne):
            k = (start + j) % ne
            v = va_vl[tb, k]
            if (ready >> v) & 1 and (va_w[tb, k] > 0 or (k == ptr and rem > 0)):
                pv[tb] = v
                pk[tb] = k
                break
    if pv[0] >= 0 and (limit == 255 or v_hc[go] == 0 or v_hc[go] < limit * 64 or pv[1] < 0):
        return pv[0], 0, pk[0]
    return pv[1], 1, pk[1]


@njit(cache=True, error_model="numpy")
def _vlarb_sent(go, tb, k, blocks, va_w, va_ptr, va_rem, v_hc):
    """The VLArb entry behind the choice sends `blocks`: its weight (64-byte units) is used."""
    ptr = va_ptr[go * 2 + tb]
    rem = va_rem[go * 2 + tb]
    base = rem if (k == ptr and rem > 0) else va_w[tb, k]
    va_ptr[go * 2 + tb] = k
    va_rem[go * 2 + tb] = max(base - blocks, 0)
    if tb == 0:
        v_hc[go] = min(v_hc[go] + blocks, 255 * 64)
    else:
        v_hc[go] = 0


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
def _schedule(ev, wheel, mask, e_free, e_avail, when, kind, a, b, hdr):
    """Take an event row from the free list (the table grows when it is empty) and schedule
    it; returns the table, its free list and how many rows are free."""
    if e_avail < 1:
        ev, e_free = _grow_events(ev, e_free)
        e_avail += ev.shape[0] // 2
    e = e_free
    e_free = ev[e, 3]
    _push(ev, wheel, mask, e, when, kind, a, b, hdr)
    return ev, e_free, e_avail - 1


@njit(cache=True, error_model="numpy")
def _arm_period(t, fc_period, armed, ht, hk, n_ht, key):
    """FC packets: a block was freed at t; the periodic refresh is armed (at the next
    multiple of fc_period) if it is not. Returns (armed, heap)."""
    if not armed and fc_period > 0:
        ht, hk, n_ht = _hpush(ht, hk, n_ht, (t // fc_period + 1) * fc_period, key)
        return True, ht, hk, n_ht
    return armed, ht, hk, n_ht


@njit(cache=True, error_model="numpy")
def _fc_freed(g, vl, blocks, V, P1, NW, fc_update, fc_pend, fc_due, dirty_m, sw_flag, sw_dirty, n_sw):
    """FC packets: `blocks` of input buffer g's VL freed; at fc_update of them an FC update
    is due (its port marked for the switch's allocator). Returns the dirty switches' count."""
    fc_pend[g * V + vl] += blocks
    if fc_pend[g * V + vl] >= fc_update:
        fc_due[g] |= 1 << vl
        s = g // P1
        o = g - s * P1
        dirty_m[s * NW + (o >> 6)] |= np.uint64(1) << np.uint64(o & 63)
        if not sw_flag[s]:
            sw_flag[s] = True
            sw_dirty[n_sw] = s
            n_sw += 1
    return n_sw


@njit(cache=True, error_model="numpy")
def _free_now(g, vl, blocks, t, dest, gate, fcw, prop, fc_delay, xon, fc_period, fc_update, V, P1, NW, occ,
              pausing, fc_pend, fc_due, dirty_m, sw_flag, sw_dirty, n_sw, armed, ht, hk, n_ht, period_key, ev, wheel,
              mask, e_free, e_avail):
    """A discarded packet's `blocks` of input buffer g's VL are free at once (netsim.ref's
    free_blocks with end = t): the credit goes back to `dest` a link later (with fcw, an FC
    update becomes due), or under PFC a RESUME if the buffer fell to XON. Returns the event
    table, its free list and free rows, the events added, and the FC state it may change."""
    added = 0
    if not gate:
        if fcw > 0:
            armed, ht, hk, n_ht = _arm_period(t, fc_period, armed, ht, hk, n_ht, period_key)
            n_sw = _fc_freed(g, vl, blocks, V, P1, NW, fc_update, fc_pend, fc_due, dirty_m, sw_flag, sw_dirty, n_sw)
        else:
            ev, e_free, e_avail = _schedule(ev, wheel, mask, e_free, e_avail, t + prop, FC, dest,
                                            blocks * V + vl, 0)
            added = 1
    elif pausing[g * V + vl] and occ[g * V + vl] <= xon:
        pausing[g * V + vl] = False
        ev, e_free, e_avail = _schedule(ev, wheel, mask, e_free, e_avail, t + fc_delay, FC, dest, vl, 0)
        added = 1
    return ev, e_free, e_avail, added, n_sw, armed, ht, hk, n_ht


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
def _uniform01(s, o, k, q, t):
    """netsim.common.uniform01 in 64-bit integers (wrapping), the same number."""
    x = (np.uint64(s) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(o) * np.uint64(0xBF58476D1CE4E5B9)
         + np.uint64(k) * np.uint64(0x94D049BB133111EB) + np.uint64(q) * np.uint64(0x2545F4914F6CDD1D)
         + np.uint64(t))
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return np.float64(x >> np.uint64(11)) / 9007199254740992.0


@njit(cache=True, error_model="numpy")
def _dq_increase(k, dq_rc, dq_rt, dq_tn, dq_bc, fr_steps, ai, hai):
    """netsim.ref's dq_increase: DCQCN's rate increase."""
    lo = dq_tn[k] if dq_tn[k] < dq_bc[k] else dq_bc[k]
    hi = dq_tn[k] if dq_tn[k] > dq_bc[k] else dq_bc[k]
    if hi >= fr_steps:
        if lo > fr_steps:
            dq_rt[k] = min(1.0, dq_rt[k] + hai * (lo - fr_steps))
        else:
            dq_rt[k] = min(1.0, dq_rt[k] + ai)
    dq_rc[k] = min(1.0, (dq_rt[k] + dq_rc[k]) / 2)


@njit(cache=True, error_model="numpy")
def _dq_settle(k, t, dq_rc, dq_rt, dq_alpha, dq_t0, dq_an, dq_tn, dq_bc, g, alpha_timer, rate_timer, fr_steps,
               ai, hai):
    """netsim.ref's dq_settle: DCQCN's timers up to t."""
    na = (t - dq_t0[k]) // alpha_timer
    while dq_an[k] < na:
        dq_an[k] += 1
        dq_alpha[k] *= 1 - g
    nt = (t - dq_t0[k]) // rate_timer
    while dq_tn[k] < nt:
        dq_tn[k] += 1
        _dq_increase(k, dq_rc, dq_rt, dq_tn, dq_bc, fr_steps, ai, hai)


@njit(cache=True, error_model="numpy")
def _rr_from(c, NW, pos):
    """The first set bit at or after `pos`, cyclically (round robin), or -1."""
    x = _first_from(c, NW, pos)
    return x if x >= 0 else _first_from(c, NW, 0)


@njit(cache=True, error_model="numpy")
def _hpush(ht, hk, n, t, k):
    """Push (t, k) on the timer heap (ht, hk) of n entries; returns the arrays and n."""
    if n == ht.shape[0]:
        ht2 = np.zeros(2 * n, np.int64)
        ht2[:n] = ht
        hk2 = np.zeros(2 * n, np.int64)
        hk2[:n] = hk
        ht, hk = ht2, hk2
    i = n
    while i > 0:
        up = (i - 1) >> 1
        if ht[up] <= t:
            break
        ht[i] = ht[up]
        hk[i] = hk[up]
        i = up
    ht[i] = t
    hk[i] = k
    return ht, hk, n + 1


@njit(cache=True, error_model="numpy")
def _hpop(ht, hk, n):
    """Remove the heap's least entry (n > 0); returns its flow and the new n."""
    k = hk[0]
    n -= 1
    t, kk = ht[n], hk[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and ht[c + 1] < ht[c]:
            c += 1
        if t <= ht[c]:
            break
        ht[i] = ht[c]
        hk[i] = hk[c]
        i = c
    ht[i] = t
    hk[i] = kk
    return k, n


@njit(cache=True, error_model="numpy")
def _next_psn(k, irn, window, rtx, high, sacked, fbase, npsn, npk, una):
    """The packet flow k would send now (irn: a hole below the highest sacked first), or -1."""
    if irn:
        p = rtx[k]
        while p < high[k] and sacked[fbase[k] + p]:
            p += 1
        rtx[k] = p
        if p < high[k]:
            return p
    if npsn[k] >= npk[k] or (window > 0 and npsn[k] - una[k] >= window):
        return -1
    return npsn[k]


@njit(cache=True, error_model="numpy")
def _ring_add(h, k, in_ring, a_next, h_tail, h_n):
    if not in_ring[k]:
        in_ring[k] = True
        if h_tail[h] < 0:
            a_next[k] = k
        else:
            a_next[k] = a_next[h_tail[h]]
            a_next[h_tail[h]] = k
        h_tail[h] = k
        h_n[h] += 1


def _make_core(lossy: bool, rtl: bool):
    """The core for one kind of run: `lossy` (the transport's ACKs, NAKs and timers) and
    `rtl` (the RTL's allocator and FC packets) are constants of the compiled code, so the
    runs without them carry none of their branches. Each kind is its own function by name,
    so numba's cache keeps them in files of their own."""

    def _core(S, P1, V, ncab, cports, peer, host_at, lft, ca_g, lid_ca,
              f_src, f_dst, f_size, f_start, f_vl, order,
              prop, swl, mtu, header, buf, max_time, W, trace, pfc, xoff, xon, fc_delay,
              transport, ack_bytes, rto, window, drop_every,
              cc, cc_threshold, cc_rate, cc_victim, ccti_inc, ccti_limit, ccti_timer, cct_step, cnp_bytes,
              islip, fair_k, isl_iters, isl_cycle, fcw, fc_update, fc_period,
              dcqcn, kmin, kmax, pmax, cnp_interval, dq_g, alpha_timer, rate_timer, byte_counter, fr_steps,
              rate_ai, rate_hai, rate_min, hoq, arf, active, grp, altg, ar_lid, fail_t, fail_g,
              vlarb, va_vl, va_w, va_n, vlarb_limit, slv, sl2vl, f_sl):
        if not rtl:                                      # (folded away: a compile-time constant)
            islip = False
            fcw = 0
        H = lid_ca.shape[0]
        gate = pfc or lossy                              # no credits: PFC's gate (lossy: never shut)
        irn = lossy and transport == 2
        gb0 = lossy and transport == 1
        F = f_src.shape[0]
        G = S * P1
        # ---- switch state, per global port g (and VL)
        out_busy = np.zeros(G, np.int64)
        # what an output may send per VL: IB, the blocks of credit; PFC, OPEN or 0 when paused
        credit = np.full(G * V, OPEN if gate else buf, np.int64)
        pausing = np.zeros(G * V, np.bool_)              # PFC: a PAUSE sent upstream of this input
        drops = 0
        pauses = 0
        retransmits = 0
        naks = 0
        timeouts = 0
        rx_count = np.zeros(G, np.int64)                 # lossy: data packets into an input
        oq = np.zeros(G * V, np.int64)                   # blocks queued per output and VL
        oq0 = np.zeros(G * V if lossy else 1, np.int64)  # lossy: a queue as its instant began
        oq_t = np.full(G * V if lossy else 1, -1, np.int64)
        marks = np.zeros(G, np.int64)                    # CC: eligible packets per output
        fecns = 0
        becns = 0
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
        # output (and the outputs an input has a packet for), the inputs free, the outputs to
        # arbitrate
        NW = (P1 + 63) // 64
        one = np.uint64(1)
        voq_m = np.zeros(G * NW, np.uint64)
        in_m = np.zeros(G * NW, np.uint64)               # per input: the outputs it has a packet for
        free_m = np.zeros(S * NW, np.uint64)
        for s in range(S):
            for k in range(ncab[s]):
                p = cports[s, k]
                free_m[s * NW + (p >> 6)] |= one << np.uint64(p & 63)
        cab_m = free_m.copy()                            # (AR, failover: every port is arbitrated)
        dirty_m = np.zeros(S * NW, np.uint64)
        cand = np.zeros(NW, np.uint64)
        dcopy = np.zeros(NW, np.uint64)
        q = np.full((G * P1 * V, 2), -1, np.int32)       # per VOQ: head, tail
        # ---- FC packets on the wire (fcw > 0): blocks freed and not advertised, VLs due (bits)
        fc_pend = np.zeros(G * V if fcw > 0 else 1, np.int64)
        fc_due = np.zeros(G if fcw > 0 else 1, np.int64)
        h_fc_pend = np.zeros(H * V if fcw > 0 else 1, np.int64)
        h_fc_due = np.zeros(H if fcw > 0 else 1, np.int64)
        fc_sent = 0
        last_free = -INF                                 # when a block was last freed
        period_armed = False                             # a refresh waits on the timer heap
        PERIOD_KEY = -1 - H                              # (its key there: below every host's wake-up)
        ALLV = (1 << V) - 1
        max_blocks = (mtu + header + BLOCK - 1) // BLOCK   # a full packet's credit
        # ---- islip: the allocator's pointers (port numbers), per output / input, and a
        # switch's requests (per output: the inputs, the deep ones, each one's VL), grants
        # (per input: the outputs) and matches while it arbitrates
        GI = G if islip else 1
        isl_g = np.zeros(GI, np.int64)
        isl_gh = np.zeros(GI, np.int64)
        isl_a = np.zeros(GI, np.int64)
        isl_cnt = np.zeros(GI, np.int64)
        PI = P1 if islip else 1
        rq_m = np.zeros(PI * NW, np.uint64)
        dp_m = np.zeros(PI * NW, np.uint64)
        rq_v = np.zeros(PI * PI, np.int64)
        gr_m = np.zeros(PI * NW, np.uint64)
        gr_any = np.zeros(PI, np.bool_)
        plain = np.zeros(PI, np.bool_)
        mi = np.zeros(PI, np.int64)
        mo = np.zeros(PI, np.int64)
        fo_m = np.zeros(NW, np.uint64)
        fi_m = np.zeros(NW, np.uint64)
        dmask = np.zeros(NW, np.uint64)
        # ---- host state
        h_busy = np.zeros(H, np.int64)
        h_credit = np.full(H * V, OPEN if gate else buf, np.int64)
        h_tail = np.full(H, -1, np.int64)                # ring of flows to send from: head = a_next[tail]
        h_n = np.zeros(H, np.int64)
        a_next = np.full(F, -1, np.int64)
        in_ring = np.zeros(F, np.bool_)
        h_ctl = np.full((H, 2), -1, np.int64)            # lossy: ACK/NAK packets to send (head, tail)
        npk = (f_size + mtu - 1) // mtu                  # packets per flow
        fbase = np.zeros(F, np.int64)                    # irn: a flow's first bit in the bitmaps
        total = 0
        for k in range(F):
            fbase[k] = total
            total += npk[k]
        npsn = np.zeros(F, np.int64)                     # next to send
        FL = F if lossy else 1                           # (the transport's state: lossy hosts only)
        una = np.zeros(FL, np.int64)                     # lossy: first not acknowledged
        epsn = np.zeros(FL, np.int64)                    # lossy receiver: next expected
        nak_for = np.full(FL, -1, np.int64)              # ... the epsn a NAK was sent for
        rcvd = np.zeros(total if irn else 1, np.bool_)   # irn receiver: received above epsn
        sacked = np.zeros(total if irn else 1, np.bool_)  # irn sender: known received
        high = np.zeros(FL, np.int64)                    # irn sender: above the last sacked
        rtx = np.zeros(FL, np.int64)                     # irn sender: next hole to resend
        armed = np.zeros(FL, np.bool_)                   # lossy: a retransmission timer runs
        progress = np.zeros(FL, np.int64)
        sent_hi = np.zeros(FL, np.int64)                 # above the highest psn ever sent
        ccti = np.zeros(F if cc else 1, np.int64)        # CC: the flow's table index,
        cc_t = f_start.copy() if cc else np.zeros(1, np.int64)   # as of this time,
        next_ok = np.zeros(F if cc or dcqcn else 1, np.int64)   # and when its next packet may start
        FD = F if dcqcn else 1                           # DCQCN, per flow (netsim.ref: dq_*)
        dq_rc = np.ones(FD, np.float64)
        dq_rt = np.ones(FD, np.float64)
        dq_alpha = np.ones(FD, np.float64)
        dq_t0 = f_start.copy() if dcqcn else np.zeros(1, np.int64)
        dq_an = np.zeros(FD, np.int64)
        dq_tn = np.zeros(FD, np.int64)
        dq_bc = np.zeros(FD, np.int64)
        dq_bytes = np.zeros(FD, np.int64)
        dq_cnp = np.full(FD, -INF, np.int64)
        # HOQLife: per VOQ, when its head became the head (timers on the heap, keyed -2 - H - VOQ)
        hoq_t = np.zeros(G * P1 * V if hoq > 0 else 1, np.int64)
        hoq_drops = 0
        HOQ_KEY = -2 - H
        dest_down = 0                                    # AR, failover: packets routed to a port down
        va_ptr = np.zeros(G * 2 if vlarb else 1, np.int64)   # VLArb per output and table: the entry,
        va_rem = np.zeros(G * 2 if vlarb else 1, np.int64)   #   its weight left,
        v_hc = np.zeros(G if vlarb else 1, np.int64)         #   high-priority blocks since a low packet
        if vlarb:
            for g in range(G):
                va_ptr[g * 2] = va_n[0] - 1
                va_ptr[g * 2 + 1] = va_n[1] - 1
        nf = 0                                           # the next link failure
        NF = fail_t.shape[0]
        ht = np.zeros(64, np.int64)                      # timers (time, flow), a heap: they are far off
        hk = np.zeros(64, np.int64)
        n_ht = 0
        timers = np.zeros(16, np.int64)
        got = np.zeros(F, np.int64)
        done = np.full(F, -1, np.int64)
        delivered = np.zeros(H, np.int64)
        lat = np.zeros(max(total, 1), np.int64)
        n_lat = 0
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
            if nf < NF and fail_t[nf] < ts:
                ts = fail_t[nf]
            if n_ht > 0 and ht[0] < ts:
                ts = ht[0]
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
                _ring_add(h, k, in_ring, a_next, h_tail, h_n)
                if not h_flag[h]:
                    h_flag[h] = True
                    h_dirty[n_h] = h
                    n_h += 1
            # ---- links that fail now (before the instant's events, as netsim.ref's come first)
            while nf < NF and fail_t[nf] == t:
                events += 1
                for end_ in range(2):
                    x = fail_g[nf] if end_ == 0 else np.int64(peer[fail_g[nf]])
                    active[x] = False
                    if not sw_flag[x // P1]:
                        sw_flag[x // P1] = True
                        sw_dirty[n_sw] = x // P1
                        n_sw += 1
                nf += 1
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
                if en >= 0:                               # (the next event's row: on its way while
                    _prefetch(ev, en)                     #  this one is handled)
                ev[e, 3] = e_free
                e_free = e
                e_avail += 1
                e = en
                n_ev -= 1
                events += 1
                if kind == ELIG:                          # a: input g, b: packet, hdr: its header
                    vl = hdr & 0xF
                    blocks = (((hdr >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK
                    ov = a * V + vl
                    if drop_every > 0 and (hdr >> 4) & 0xF == DATA:
                        rx_count[a] += 1
                        if rx_count[a] % drop_every == 0:     # dropped on purpose
                            drops += 1
                            pk_[b, NX] = p_free
                            p_free = b
                            continue
                    s = a // P1
                    o = lft[s, (hdr >> 32) & DLID_MASK]
                    if arf and not active[s * P1 + o]:
                        go = s * P1 + o                   # down: redirected, or a group member up?
                        ok = altg[go] >= 0 and active[altg[go]]
                        if not ok and grp[go] != 0 and ar_lid[s, (hdr >> 32) & DLID_MASK]:
                            for kk in range(ncab[s]):
                                if active[s * P1 + cports[s, kk]] and grp[s * P1 + cports[s, kk]] == grp[go]:
                                    ok = True
                                    break
                        if not ok:                        # DEST_DOWN: discarded, its blocks free at once
                            drops += 1
                            dest_down += 1
                            pk_[b, NX] = p_free
                            p_free = b
                            up = host_at[a]
                            dest = -1 - up if up >= 0 else peer[a]     # the sender upstream: a host or an output
                            last_free = t
                            ev, e_free, e_avail, x, n_sw, period_armed, ht, hk, n_ht = _free_now(
                                a, vl, blocks, t, dest, gate, fcw, prop, fc_delay, xon,
                                fc_period, fc_update, V, P1, NW, occ, pausing, fc_pend, fc_due, dirty_m, sw_flag,
                                sw_dirty, n_sw, period_armed, ht, hk, n_ht, PERIOD_KEY, ev, wheel, mask, e_free,
                                e_avail)
                            n_ev += x
                            continue
                    ovl = vl if not slv else np.int64(sl2vl[s, a - s * P1, o, (hdr >> SL_SHIFT) & 0xF])
                    go_v = (s * P1 + o) * V + ovl
                    if lossy and oq_t[go_v] != t:         # lossy: an output queue's limit, against the
                        oq_t[go_v] = t                    # queue as it stood when the instant began
                        oq0[go_v] = oq[go_v]
                    if (oq0[go_v] if lossy else occ[ov]) + blocks > buf:  # PFC: headroom short; IB: never
                        drops += 1
                        pk_[b, NX] = p_free
                        p_free = b
                        continue
                    occ[ov] += blocks
                    oq[go_v] += blocks
                    x = oq[go_v] if lossy else occ[ov]
                    if x > max_occ:
                        max_occ = x
                    if pfc and occ[ov] >= xoff and not pausing[ov]:
                        pausing[ov] = True
                        pauses += 1
                        up = host_at[a]
                        ev, e_free, e_avail = _schedule(ev, wheel, mask, e_free, e_avail, t + fc_delay, FC,
                                                        -1 - up if up >= 0 else peer[a], V + vl, 0)
                        n_ev += 1
                    qi = (a * P1 + o) * V + ovl
                    if q[qi, 1] < 0:                      # (a queue's last packet has no link: the
                        q[qi, 0] = b                      #  tail is known, so nothing is written to it)
                        if hoq > 0:                       # HOQLife: the head from now
                            hoq_t[qi] = t
                            ht, hk, n_ht = _hpush(ht, hk, n_ht, t + hoq, HOQ_KEY - qi)
                    else:
                        pk_[q[qi, 1], NX] = b
                    q[qi, 1] = b
                    i = a - s * P1
                    voq_m[(s * P1 + o) * NW + (i >> 6)] |= one << np.uint64(i & 63)
                    in_m[a * NW + (o >> 6)] |= one << np.uint64(o & 63)
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
                        if not gate and h_credit[h * V + b % V] - c >= max_blocks:
                            continue                      # (enough for any packet before: no change)
                        if not h_flag[h]:
                            h_flag[h] = True
                            h_dirty[n_h] = h
                            n_h += 1
                    else:
                        credit[a * V + b % V] += c
                        if not gate and not islip and credit[a * V + b % V] - c >= max_blocks:
                            continue                      # (enough for any packet before: no change; not
                        s = a // P1                       #  under iSLIP, whose rounds may have left a free
                        o = a - s * P1                    #  output some free input wants: touched, it tries)
                        dirty_m[s * NW + (o >> 6)] |= one << np.uint64(o & 63)
                        if not sw_flag[s]:
                            sw_flag[s] = True
                            sw_dirty[n_sw] = s
                            n_sw += 1
                elif kind == DELIV:                       # a: host, b: packet, hdr: its header
                    k = pk_[b, FSEQ] & 0xFFFFFFFF
                    psn = pk_[b, FSEQ] >> 32
                    sent_t = pk_[b, SENT]                 # (an irn NAK: its sack)
                    typ = (hdr >> 4) & 0xF
                    pay = ((hdr >> 8) & 0x7FFFFF) - header
                    pk_[b, NX] = p_free
                    p_free = b
                    if not h_flag[a]:
                        h_flag[a] = True
                        h_dirty[n_h] = a
                        n_h += 1
                    new = not lossy and typ == DATA
                    if not lossy and typ == BECN and dcqcn:   # a CNP at the flow's source: the rate is cut
                        becns += 1
                        _dq_settle(k, t, dq_rc, dq_rt, dq_alpha, dq_t0, dq_an, dq_tn, dq_bc, dq_g, alpha_timer,
                                   rate_timer, fr_steps, rate_ai, rate_hai)
                        dq_rt[k] = dq_rc[k]
                        dq_rc[k] = max(rate_min, dq_rc[k] * (1 - dq_alpha[k] / 2))
                        dq_alpha[k] = (1 - dq_g) * dq_alpha[k] + dq_g
                        dq_t0[k] = t
                        dq_an[k] = 0
                        dq_tn[k] = 0
                        dq_bc[k] = 0
                        dq_bytes[k] = 0
                    elif not lossy and typ == BECN:       # CC at the flow's source
                        becns += 1
                        st = f_start[k]
                        x = ccti[k] - ((t - st) // ccti_timer - (cc_t[k] - st) // ccti_timer)
                        x = x if x > 0 else 0
                        cc_t[k] = t
                        x += ccti_inc
                        ccti[k] = x if x < ccti_limit else ccti_limit
                    elif not lossy and hdr & FECN and (not dcqcn or t - dq_cnp[k] >= cnp_interval):
                        if dcqcn:                         # the destination answers (DCQCN: a CNP per
                            dq_cnp[k] = t                 # interval per flow)
                        if p_free < 0:
                            pk_, p_free = _grow_packets(pk_)
                        c = p_free
                        p_free = pk_[c, NX]
                        pk_[c, HDR] = ((np.int64(f_sl[k]) << SL_SHIFT) | (np.int64(lid_ca[f_src[k]]) << 32)
                                       | (cnp_bytes << 8) | (BECN << 4) | f_vl[k])
                        pk_[c, FSEQ] = k | (psn << 32)
                        pk_[c, SENT] = 0
                        if h_ctl[a, 1] < 0:
                            h_ctl[a, 0] = c
                        else:
                            pk_[h_ctl[a, 1], NX] = c
                        h_ctl[a, 1] = c
                    if lossy and typ == DATA:             # the flow's receiver
                        ctl = -1
                        if psn == epsn[k]:
                            new = True
                            epsn[k] += 1
                            if irn:
                                while epsn[k] < npk[k] and rcvd[fbase[k] + epsn[k]]:
                                    epsn[k] += 1
                            ctl = ACK
                        elif psn > epsn[k]:
                            if irn:
                                if not rcvd[fbase[k] + psn]:
                                    new = True
                                    rcvd[fbase[k] + psn] = True
                                naks += 1
                                ctl = NAK
                            elif nak_for[k] != epsn[k]:
                                if gb0:                   # the message is to come again from its start:
                                    n_deliv -= epsn[k]    # what was taken of it is thrown away
                                    delivered[a] -= got[k]
                                    got[k] = 0
                                    epsn[k] = 0
                                nak_for[k] = epsn[k]
                                naks += 1
                                ctl = NAK
                        else:
                            ctl = ACK                     # a duplicate
                        if ctl >= 0:                      # the answer, queued at this host
                            if p_free < 0:
                                pk_, p_free = _grow_packets(pk_)
                            c = p_free
                            p_free = pk_[c, NX]
                            pk_[c, HDR] = ((np.int64(f_sl[k]) << SL_SHIFT) | (np.int64(lid_ca[f_src[k]]) << 32)
                                           | (ack_bytes << 8) | (ctl << 4) | f_vl[k])
                            pk_[c, FSEQ] = k | (epsn[k] << 32)
                            pk_[c, SENT] = psn if (ctl == NAK and irn) else 0
                            if h_ctl[a, 1] < 0:
                                h_ctl[a, 0] = c
                            else:
                                pk_[h_ctl[a, 1], NX] = c
                            h_ctl[a, 1] = c
                    elif lossy:                           # an ACK or NAK at the flow's sender
                        if psn > una[k]:
                            una[k] = psn
                            progress[k] = t
                        if typ == NAK:
                            if transport == 0:
                                x = psn if psn > una[k] else una[k]
                                if x < npsn[k]:
                                    npsn[k] = x
                            elif gb0:
                                npsn[k] = 0
                                una[k] = 0
                            else:
                                sacked[fbase[k] + sent_t] = True
                                if sent_t + 1 > high[k]:
                                    high[k] = sent_t + 1
                                if una[k] > rtx[k]:
                                    rtx[k] = una[k]
                        if _next_psn(k, irn, window, rtx, high, sacked, fbase, npsn, npk, una) >= 0:
                            _ring_add(a, k, in_ring, a_next, h_tail, h_n)
                    if new:
                        n_deliv += 1
                        if fcw > 0:                       # the host's receive side frees its blocks
                            last_free = t
                            period_armed, ht, hk, n_ht = _arm_period(t, fc_period, period_armed, ht, hk, n_ht,
                                                                     PERIOD_KEY)
                            vl = hdr & 0xF
                            h_fc_pend[a * V + vl] += (((hdr >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK
                            if h_fc_pend[a * V + vl] >= fc_update:
                                h_fc_due[a] |= 1 << vl
                        delivered[a] += pay
                        if n_lat == lat.shape[0]:
                            lat2 = np.zeros(2 * n_lat, np.int64)
                            lat2[:n_lat] = lat
                            lat = lat2
                        lat[n_lat] = t - sent_t
                        n_lat += 1
                        got[k] += pay
                        if lossy:
                            if epsn[k] == npk[k] and done[k] < 0:
                                done[k] = t
                        elif got[k] == f_size[k]:
                            done[k] = t
                elif kind == FREED:                       # a: input g, b: blocks x V + VL
                    vl = b % V
                    last_free = t
                    period_armed, ht, hk, n_ht = _arm_period(t, fc_period, period_armed, ht, hk, n_ht, PERIOD_KEY)
                    n_sw = _fc_freed(a, vl, b // V, V, P1, NW, fc_update, fc_pend, fc_due, dirty_m, sw_flag,
                                     sw_dirty, n_sw)
                elif kind == FCEND or kind == SWWAKE:     # a: output g (its FC packet's end) / switch
                    s = a // P1 if kind == FCEND else a
                    if kind == FCEND:
                        o = a - s * P1
                        dirty_m[s * NW + (o >> 6)] |= one << np.uint64(o & 63)
                    if not sw_flag[s]:
                        sw_flag[s] = True
                        sw_dirty[n_sw] = s
                        n_sw += 1
                else:                                     # HOSTFREE, a: host
                    if not h_flag[a]:
                        h_flag[a] = True
                        h_dirty[n_h] = a
                        n_h += 1
            # ---- timers, after the instant's events (an ACK due now counts), each its own flow's
            n_tm = 0
            while n_ht > 0 and ht[0] == t:
                k, n_ht = _hpop(ht, hk, n_ht)
                events += 1
                if n_tm == timers.shape[0]:
                    tm2 = np.zeros(2 * n_tm, np.int64)
                    tm2[:n_tm] = timers
                    timers = tm2
                timers[n_tm] = k
                n_tm += 1
            if n_tm > 1:
                timers[:n_tm].sort()
            for d in range(n_tm):
                k = timers[d]
                if k <= HOQ_KEY:                      # HOQLife: a head too long at the head is discarded
                    qi = HOQ_KEY - k
                    pk = q[qi, 0]
                    if pk < 0 or hoq_t[qi] + hoq != t:
                        continue                      # (granted, or another head since)
                    vl = qi % V
                    gi = qi // (P1 * V)
                    o = (qi // V) % P1
                    s = gi // P1
                    i = gi - s * P1
                    go = s * P1 + o
                    blocks = (((pk_[pk, HDR] >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK
                    if pk != q[qi, 1]:
                        q[qi, 0] = pk_[pk, NX]
                        hoq_t[qi] = t
                        ht, hk, n_ht = _hpush(ht, hk, n_ht, t + hoq, HOQ_KEY - qi)
                    else:
                        q[qi, 0] = -1
                        q[qi, 1] = -1
                        still = False
                        for v in range(V):
                            if q[gi * P1 * V + o * V + v, 0] >= 0:
                                still = True
                        if not still:
                            voq_m[go * NW + (i >> 6)] &= ~(one << np.uint64(i & 63))
                            in_m[gi * NW + (o >> 6)] &= ~(one << np.uint64(o & 63))
                    ivl = pk_[pk, HDR] & 0xF              # the VL it came in on (its buffer's)
                    pk_[pk, NX] = p_free
                    p_free = pk
                    drops += 1
                    hoq_drops += 1
                    oq[go * V + vl] -= blocks
                    occ[gi * V + ivl] -= blocks
                    up = host_at[gi]
                    dest = -1 - up if up >= 0 else peer[gi]     # the sender upstream: a host or an output
                    last_free = t
                    ev, e_free, e_avail, x, n_sw, period_armed, ht, hk, n_ht = _free_now(
                        gi, ivl, blocks, t, dest, gate, fcw, prop, fc_delay, xon,
                        fc_period, fc_update, V, P1, NW, occ, pausing, fc_pend, fc_due, dirty_m, sw_flag, sw_dirty,
                        n_sw, period_armed, ht, hk, n_ht, PERIOD_KEY, ev, wheel, mask, e_free, e_avail)
                    n_ev += x
                    dirty_m[s * NW + (o >> 6)] |= one << np.uint64(o & 63)
                    if not sw_flag[s]:
                        sw_flag[s] = True
                        sw_dirty[n_sw] = s
                        n_sw += 1
                    continue
                if k == PERIOD_KEY:                   # fc_period: every port an FC packet per VL
                    for s in range(S):
                        for kk in range(ncab[s]):
                            pp = cports[s, kk]
                            fc_due[s * P1 + pp] = ALLV
                            dirty_m[s * NW + (pp >> 6)] |= one << np.uint64(pp & 63)
                        if not sw_flag[s]:
                            sw_flag[s] = True
                            sw_dirty[n_sw] = s
                            n_sw += 1
                    for h in range(H):
                        h_fc_due[h] = ALLV
                        if not h_flag[h]:
                            h_flag[h] = True
                            h_dirty[n_h] = h
                            n_h += 1
                    again = last_free > t - fc_period
                    if not again:
                        for x in range(fc_pend.shape[0]):
                            if fc_pend[x] != 0:
                                again = True
                                break
                    if not again:
                        for x in range(h_fc_pend.shape[0]):
                            if h_fc_pend[x] != 0:
                                again = True
                                break
                    if again:
                        ht, hk, n_ht = _hpush(ht, hk, n_ht, t + fc_period, PERIOD_KEY)
                    else:
                        period_armed = False
                    continue
                if k < 0:                             # CC: a host's wake-up
                    h = -1 - k
                    if not h_flag[h]:
                        h_flag[h] = True
                        h_dirty[n_h] = h
                        n_h += 1
                    continue
                h = f_src[k]
                if not h_flag[h]:
                    h_flag[h] = True
                    h_dirty[n_h] = h
                    n_h += 1
                if una[k] >= npk[k] or (npsn[k] <= una[k] and not (irn and rtx[k] < high[k])):
                    armed[k] = False                      # done, or nothing outstanding
                    continue
                if t < progress[k] + rto:
                    ht, hk, n_ht = _hpush(ht, hk, n_ht, progress[k] + rto, k)
                    continue
                timeouts += 1
                if transport == 0:
                    npsn[k] = una[k]
                elif gb0:
                    npsn[k] = 0
                else:
                    rtx[k] = una[k]
                    high[k] = npsn[k]
                progress[k] = t
                ht, hk, n_ht = _hpush(ht, hk, n_ht, t + rto, k)
                if _next_psn(k, irn, window, rtx, high, sacked, fbase, npsn, npk, una) >= 0:
                    _ring_add(h, k, in_ring, a_next, h_tail, h_n)
            # ---- switches arbitrate: FC packets first (the outputs touched, free, with one
            # due), then the data packets: the outputs touched, in port order, each taking the
            # next input in round robin ("rr"), or the RTL's iSLIP over every free output
            for d in range(n_sw):
                s = sw_dirty[d]
                sw_flag[s] = False
                n = ncab[s]
                base = s * P1
                for w in range(NW):
                    dcopy[w] = dirty_m[s * NW + w] | (cab_m[s * NW + w] if arf else np.uint64(0))
                    dirty_m[s * NW + w] = np.uint64(0)
                if fcw > 0:
                    o = _first_from(dcopy, NW, 0)
                    while o >= 0:
                        go = base + o
                        if out_busy[go] <= t and fc_due[go] != 0:
                            vl = 0
                            while not (fc_due[go] >> vl) & 1:
                                vl += 1
                            fc_due[go] &= ~(1 << vl)
                            blocks = fc_pend[go * V + vl]
                            fc_pend[go * V + vl] = 0
                            fc_sent += 1
                            out_busy[go] = t + fcw
                            if e_avail < 2:
                                ev, e_free = _grow_events(ev, e_free)
                                e_avail += ev.shape[0] // 2
                            e = e_free
                            e_free = ev[e, 3]
                            _push(ev, wheel, mask, e, t + fcw, FCEND, go, 0, 0)
                            n_ev += 1
                            e_avail -= 1
                            if blocks > 0:
                                up = host_at[go]
                                e = e_free
                                e_free = ev[e, 3]
                                _push(ev, wheel, mask, e, t + fcw + prop, FC, -1 - up if up >= 0 else peer[go],
                                      blocks * V + vl, 0)
                                n_ev += 1
                                e_avail -= 1
                        o = _first_from(dcopy, NW, o + 1)
                n_m = 0
                if islip:
                    # the free outputs and inputs; every request (input, output: the lowest VL whose
                    # head fits the output's credit), deep when that VOQ holds more than its head
                    for w in range(NW):
                        fo_m[w] = np.uint64(0)
                        fi_m[w] = free_m[s * NW + w]
                    for kk in range(n):
                        o = cports[s, kk]
                        if out_busy[base + o] <= t:
                            fo_m[o >> 6] |= one << np.uint64(o & 63)
                    for kk in range(n):
                        o = cports[s, kk]
                        go = base + o
                        for w in range(NW):
                            rq_m[o * NW + w] = np.uint64(0)
                            dp_m[o * NW + w] = np.uint64(0)
                        if not (fo_m[o >> 6] >> np.uint64(o & 63)) & one:
                            continue
                        for w in range(NW):
                            cand[w] = voq_m[go * NW + w] & fi_m[w]
                        i = _first_from(cand, NW, 0)
                        while i >= 0:
                            qb = ((base + i) * P1 + o) * V
                            for v in range(V):
                                x = q[qb + v, 0]
                                if x >= 0 and credit[go * V + v] >= (
                                        ((pk_[x, HDR] >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK:
                                    rq_m[o * NW + (i >> 6)] |= one << np.uint64(i & 63)
                                    rq_v[o * P1 + i] = v
                                    if x != q[qb + v, 1]:
                                        dp_m[o * NW + (i >> 6)] |= one << np.uint64(i & 63)
                                    break
                            i = _first_from(cand, NW, i + 1)
                    rounds = isl_iters if isl_iters > 0 else n
                    used_up = True
                    for r in range(rounds):
                        anyg = False
                        for kk in range(n):                   # grant
                            o = cports[s, kk]
                            if not (fo_m[o >> 6] >> np.uint64(o & 63)) & one:
                                continue
                            go = base + o
                            anyc = False
                            anyd = False
                            for w in range(NW):
                                cand[w] = rq_m[o * NW + w] & fi_m[w]
                                dmask[w] = dp_m[o * NW + w] & fi_m[w]
                                if cand[w] != 0:
                                    anyc = True
                                if dmask[w] != 0:
                                    anyd = True
                            if not anyc:
                                continue
                            pl_ = fair_k <= 1 or not anyd or isl_cnt[go] == fair_k - 1
                            plain[o] = pl_
                            i = _rr_from(cand, NW, isl_g[go]) if pl_ else _rr_from(dmask, NW, isl_gh[go])
                            gr_m[i * NW + (o >> 6)] |= one << np.uint64(o & 63)
                            gr_any[i] = True
                            anyg = True
                        if not anyg:
                            used_up = False
                            break
                        for kk in range(n):                   # accept, inputs in port order
                            i = cports[s, kk]
                            if not gr_any[i]:
                                continue
                            gr_any[i] = False
                            for w in range(NW):
                                cand[w] = gr_m[i * NW + w]
                                gr_m[i * NW + w] = np.uint64(0)
                            o = _rr_from(cand, NW, isl_a[base + i])
                            fi_m[i >> 6] &= ~(one << np.uint64(i & 63))
                            fo_m[o >> 6] &= ~(one << np.uint64(o & 63))
                            mi[n_m] = i
                            mo[n_m] = o
                            n_m += 1
                            if r == 0:                        # pointers move on first-round accepts
                                if plain[o]:
                                    isl_g[base + o] = i + 1
                                else:
                                    isl_gh[base + o] = i + 1
                                isl_a[base + i] = o + 1
                    if used_up:                               # a free output some free input wants:
                        again = False                         # the next cycle tries again
                        for kk in range(n):
                            o = cports[s, kk]
                            if (fo_m[o >> 6] >> np.uint64(o & 63)) & one:
                                for w in range(NW):
                                    if rq_m[o * NW + w] & fi_m[w] != 0:
                                        again = True
                        if again:
                            ev, e_free, e_avail = _schedule(ev, wheel, mask, e_free, e_avail, t + isl_cycle,
                                                            SWWAKE, s, 0, 0)
                            n_ev += 1
                    for x in range(1, n_m):                   # the matches in output order
                        y = x
                        while y > 0 and mo[y - 1] > mo[y]:
                            mo[y - 1], mo[y] = mo[y], mo[y - 1]
                            mi[y - 1], mi[y] = mi[y], mi[y - 1]
                            y -= 1
                    for x in range(n_m):
                        go = base + mo[x]
                        isl_cnt[go] = (isl_cnt[go] + 1) % (fair_k if fair_k > 1 else 1)
                idx = 0
                o = -1 if islip else _first_from(dcopy, NW, 0)
                while True:
                    if islip:
                        if idx >= n_m:
                            break
                        i = mi[idx]
                        o = mo[idx]
                        idx += 1
                        go = base + o
                        gi = base + i
                        vl = rq_v[o * P1 + i]
                        qo = o
                        qb = (gi * P1 + o) * V
                        pk = q[qb + vl, 0]
                        hdr = pk_[pk, HDR]
                    else:
                        if o < 0:
                            break
                        go = base + o
                        if out_busy[go] > t or (arf and not active[go]):
                            o = _first_from(dcopy, NW, o + 1)
                            continue
                        anyc = False
                        for w in range(NW):
                            cand[w] = voq_m[go * NW + w]
                        if arf:                               # and the queues redirected to o, or
                            for kk in range(n):               # adaptive to it from its group
                                p = cports[s, kk]
                                if p != o and ((altg[base + p] == go and not active[base + p])
                                               or (grp[go] != 0 and grp[base + p] == grp[go])):
                                    for w in range(NW):
                                        cand[w] |= voq_m[(base + p) * NW + w]
                        for w in range(NW):
                            cand[w] &= free_m[s * NW + w]
                            if cand[w] != 0:
                                anyc = True
                        if not anyc:
                            o = _first_from(dcopy, NW, o + 1)
                            continue
                        vmask = ALLV
                        pick_t = -1
                        pick_k = -1
                        if vlarb:                             # VLArb: the VL first, among those a free
                            ready = 0                         # input could send (netsim.ref: vlarb_pick)
                            for w in range(NW):
                                dmask[w] = cand[w]
                            i = _first_from(dmask, NW, 0)
                            while i >= 0:
                                for v in range(V):
                                    if not (ready >> v) & 1 and _head_for(q, pk_, credit, cports, altg, active, grp,
                                                                         ar_lid, arf, n, s, base, P1, V, base + i, o,
                                                                         v)[1] >= 0:
                                        ready |= 1 << v
                                i = _first_from(dmask, NW, i + 1)
                            vl, pick_t, pick_k = _vlarb_pick(go, ready, va_vl, va_w, va_n, va_ptr, va_rem, v_hc,
                                                             vlarb_limit)
                            if vl < 0:
                                o = _first_from(dcopy, NW, o + 1)
                                continue
                            vmask = 1 << vl
                        start = cports[s, rr[go]]
                        pk = -1
                        vl = 0
                        hdr = 0
                        qb = 0
                        gi = 0
                        i = 0
                        qo = o
                        while True:                           # the inputs in round-robin order from `start`
                            i = _first_from(cand, NW, start)
                            if i < 0:
                                i = _first_from(cand, NW, 0)
                                if i < 0:
                                    break
                            gi = base + i
                            for v in range(V):
                                if not (vmask >> v) & 1:
                                    continue
                                if arf:
                                    qo, x = _head_for(q, pk_, credit, cports, altg, active, grp, ar_lid, arf, n, s,
                                                      base, P1, V, gi, o, v)
                                    if x < 0:
                                        continue
                                    hx = pk_[x, HDR]
                                else:                         # (the plain case, inline: the hot path)
                                    x = q[(gi * P1 + o) * V + v, 0]
                                    if x < 0:
                                        continue
                                    hx = pk_[x, HDR]
                                    if credit[go * V + v] < (((hx >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK:
                                        continue
                                pk = x
                                vl = v
                                hdr = hx
                                break
                            if pk >= 0:
                                qb = (gi * P1 + qo) * V
                                break
                            cand[i >> 6] &= ~(one << np.uint64(i & 63))
                        if pk < 0:
                            o = _first_from(dcopy, NW, o + 1)
                            continue
                    gq = base + qo                        # the queue's port (o, or redirected / adaptive to o)
                    if cc and (hdr >> 4) & 0xF == DATA and oq[gq * V + vl] >= cc_threshold and (
                            cc_victim or credit[go * V + vl] - (((hdr >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK
                            >= (mtu + header + BLOCK - 1) // BLOCK):
                        if marks[go] % (cc_rate + 1) == 0:
                            hdr |= FECN               # FECN (Annex A10): the output VL is congested
                            pk_[pk, HDR] = hdr
                            fecns += 1
                        marks[go] += 1
                    if dcqcn and (hdr >> 4) & 0xF == DATA and oq[gq * V + vl] > kmin:
                        x = oq[gq * V + vl]               # RED on the output VL's queue (this packet in it)
                        pr = 1.0 if x >= kmax else pmax * (x - kmin) / (kmax - kmin)
                        if pr >= 1.0 or _uniform01(s, o, pk_[pk, FSEQ] & 0xFFFFFFFF, pk_[pk, FSEQ] >> 32, t) < pr:
                            hdr |= FECN                   # ECN congestion experienced
                            pk_[pk, HDR] = hdr
                            fecns += 1
                    oq[gq * V + vl] -= (((hdr >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK
                    if pk != q[qb + vl, 1]:
                        q[qb + vl, 0] = pk_[pk, NX]
                        if hoq > 0:                       # HOQLife: the next is the head from now
                            hoq_t[qb + vl] = t
                            ht, hk, n_ht = _hpush(ht, hk, n_ht, t + hoq, HOQ_KEY - qb - vl)
                    else:
                        q[qb + vl, 0] = -1
                        q[qb + vl, 1] = -1
                        still = False
                        for v in range(V):
                            if q[qb + v, 0] >= 0:
                                still = True
                        if not still:
                            voq_m[gq * NW + (i >> 6)] &= ~(one << np.uint64(i & 63))
                            in_m[gi * NW + (qo >> 6)] &= ~(one << np.uint64(qo & 63))
                    free_m[s * NW + (i >> 6)] &= ~(one << np.uint64(i & 63))
                    if trace:
                        fk = pk_[pk, FSEQ] & 0xFFFFFFFF
                        tr = _trace(tr, n_tr, t, s, i, o, fk if (hdr >> 4) & 0xF == DATA else -1 - fk,
                                    pk_[pk, FSEQ] >> 32)
                        n_tr += 1
                    if not islip:
                        rr[go] = cidx[gi] + 1 if cidx[gi] + 1 < n else 0
                        if vlarb:
                            _vlarb_sent(go, pick_t, pick_k, (((hdr >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK, va_w,
                                        va_ptr, va_rem, v_hc)
                    wire = (hdr >> 8) & 0x7FFFFF
                    blocks = (wire + BLOCK - 1) // BLOCK
                    end = t + wire
                    out_busy[go] = end
                    ivl = hdr & 0xF                       # the VL it came in on (its buffer's); it leaves on vl
                    occ[gi * V + ivl] -= blocks
                    hdr = (hdr & ~np.int64(0xF)) | vl
                    pk_[pk, HDR] = hdr
                    # up to three events: the transmission's end, the credit back upstream (PFC:
                    # a RESUME if the counter fell to XON), the packet onward
                    if e_avail < 3:
                        ev, e_free = _grow_events(ev, e_free)
                        e_avail += ev.shape[0] // 2
                    e = e_free
                    e_free = ev[e, 3]
                    _push(ev, wheel, mask, e, end, TXEND, gi, o, 0)
                    up = host_at[gi]
                    if not gate:
                        credit[go * V + vl] -= blocks
                        e = e_free
                        e_free = ev[e, 3]
                        if fcw > 0:                                   # freed when the tail has left; an FC packet tells
                            _push(ev, wheel, mask, e, end, FREED, gi, blocks * V + ivl, 0)
                        else:                                         # the sender learns it a link after the tail left
                            _push(ev, wheel, mask, e, end + prop, FC, -1 - up if up >= 0 else peer[gi],
                                  blocks * V + ivl, 0)
                        n_ev += 1
                        e_avail -= 1
                    elif pausing[gi * V + ivl] and occ[gi * V + ivl] <= xon:
                        pausing[gi * V + ivl] = False
                        e = e_free
                        e_free = ev[e, 3]
                        _push(ev, wheel, mask, e, t + fc_delay, FC, -1 - up if up >= 0 else peer[gi], ivl, 0)
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
                    if not islip:
                        o = _first_from(dcopy, NW, o + 1)
            # ---- hosts send: an ACK or NAK first, else round robin over the ring's flows
            for d in range(n_h):
                h = h_dirty[d]
                h_flag[h] = False
                if h_busy[h] > t:
                    continue
                if fcw > 0 and h_fc_due[h] != 0:          # an FC packet first (the switch's credit
                    vl = 0                                # toward a host is not modelled: it drains)
                    while not (h_fc_due[h] >> vl) & 1:
                        vl += 1
                    h_fc_due[h] &= ~(1 << vl)
                    h_fc_pend[h * V + vl] = 0
                    fc_sent += 1
                    h_busy[h] = t + fcw
                    ev, e_free, e_avail = _schedule(ev, wheel, mask, e_free, e_avail, t + fcw, HOSTFREE, h, 0, 0)
                    n_ev += 1
                    continue
                pk = -1
                if h_ctl[h, 0] >= 0:
                    if h_credit[h * V + (pk_[h_ctl[h, 0], HDR] & 0xF)] < 1:
                        continue                      # (data on the VL needs more)
                    pk = h_ctl[h, 0]
                    if not gate:
                        h_credit[h * V + (pk_[pk, HDR] & 0xF)] -= 1
                    if pk == h_ctl[h, 1]:
                        h_ctl[h, 0] = -1
                        h_ctl[h, 1] = -1
                    else:
                        h_ctl[h, 0] = pk_[pk, NX]
                    hdr = pk_[pk, HDR]
                    wire = (hdr >> 8) & 0x7FFFFF
                    if trace:
                        tr = _trace(tr, n_tr, t, -1 - h, (hdr >> 4) & 0xF, pk_[pk, SENT], pk_[pk, FSEQ] & 0xFFFFFFFF,
                                    pk_[pk, FSEQ] >> 32)
                        n_tr += 1
                else:
                    for _r in range(h_n[h]):
                        tl = h_tail[h]
                        k = a_next[tl]
                        psn = _next_psn(k, irn, window, rtx, high, sacked, fbase, npsn, npk, una)
                        if psn < 0:                       # nothing to send now: out of the ring
                            in_ring[k] = False
                            if h_n[h] == 1:
                                h_tail[h] = -1
                            else:
                                a_next[tl] = a_next[k]
                            h_n[h] -= 1
                            continue
                        pay = f_size[k] - psn * mtu
                        if pay > mtu:
                            pay = mtu
                        wire = pay + header
                        blocks = (wire + BLOCK - 1) // BLOCK
                        vl = f_vl[k]
                        if h_credit[h * V + vl] < blocks or ((cc or dcqcn) and next_ok[k] > t):
                            h_tail[h] = k                 # rotate
                            continue
                        if psn == npsn[k]:
                            npsn[k] += 1
                        else:                             # irn: a hole resent
                            rtx[k] = psn + 1
                        if lossy:
                            if psn < sent_hi[k]:
                                retransmits += 1
                            else:
                                sent_hi[k] = psn + 1
                        if _next_psn(k, irn, window, rtx, high, sacked, fbase, npsn, npk, una) < 0:
                            in_ring[k] = False            # finished for now: out of the ring
                            if h_n[h] == 1:
                                h_tail[h] = -1
                            else:
                                a_next[tl] = a_next[k]
                            h_n[h] -= 1
                        else:
                            h_tail[h] = k                 # to the back
                        if not gate:
                            h_credit[h * V + vl] -= blocks
                        if lossy and not armed[k]:
                            armed[k] = True
                            progress[k] = t
                            ht, hk, n_ht = _hpush(ht, hk, n_ht, t + rto, k)
                        if cc:                            # the flow waits CCT[CCTI] before its next one
                            st = f_start[k]
                            x = ccti[k] - ((t - st) // ccti_timer - (cc_t[k] - st) // ccti_timer)
                            ccti[k] = x if x > 0 else 0
                            cc_t[k] = t
                            next_ok[k] = t + ccti[k] * cct_step
                            if next_ok[k] > t + wire:     # a wake-up (on the heap: it may be far)
                                ht, hk, n_ht = _hpush(ht, hk, n_ht, next_ok[k], -1 - h)
                        if dcqcn:                         # paced at the current rate; the byte counter
                            _dq_settle(k, t, dq_rc, dq_rt, dq_alpha, dq_t0, dq_an, dq_tn, dq_bc, dq_g, alpha_timer,
                                       rate_timer, fr_steps, rate_ai, rate_hai)
                            dq_bytes[k] += wire
                            while dq_bytes[k] >= (dq_bc[k] + 1) * byte_counter:
                                dq_bc[k] += 1
                                _dq_increase(k, dq_rc, dq_rt, dq_tn, dq_bc, fr_steps, rate_ai, rate_hai)
                            next_ok[k] = t + np.int64(wire / dq_rc[k])
                            if next_ok[k] > t + wire:
                                ht, hk, n_ht = _hpush(ht, hk, n_ht, next_ok[k], -1 - h)
                        if p_free < 0:
                            pk_, p_free = _grow_packets(pk_)
                        pk = p_free
                        p_free = pk_[pk, NX]
                        hdr = ((np.int64(f_sl[k]) << SL_SHIFT) | (np.int64(lid_ca[f_dst[k]]) << 32) | (wire << 8)
                               | (DATA << 4) | vl)
                        pk_[pk, HDR] = hdr
                        pk_[pk, FSEQ] = k | (psn << 32)
                        pk_[pk, SENT] = t
                        if trace:
                            tr = _trace(tr, n_tr, t, -1 - h, DATA, 0, k, psn)
                            n_tr += 1
                        break
                if pk < 0:
                    continue
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
        p_blocks = pk_[:, HDR].copy()                    # each packet's header, for the deadlock report
        return (t, events, total, n_deliv, delivered, done, lat[:n_lat], max_occ, tr[:n_tr],
                q[:, 0].copy(), credit, p_blocks, nxt, drops, pauses, retransmits, naks, timeouts, fecns, becns,
                fc_sent, hoq_drops, dest_down, active)

    _core.__name__ = _core.__qualname__ = ("core_lossy" if lossy else "core_credit") + ("_rtl" if rtl else "")
    return njit(cache=True, error_model="numpy")(_core)


_CORES = {(lossy, rtl): _make_core(lossy, rtl) for lossy in (False, True) for rtl in (False, True)}


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
                    trace: bool = False, check: bool = True, resilience: Resilience | None = None,
                    sl2vl=None) -> Result:
    """The flows as arrays (one entry per flow): for workloads of millions of flows. With
    `sl2vl` (netsim.common.sl2vl_tables) a flow's `vl` is its SL."""
    prm = prm or Params()
    prm.check()
    rs = resilience or Resilience()
    rs.check(fab, lft, prm)
    src = np.ascontiguousarray(src, np.int32)
    dst = np.ascontiguousarray(dst, np.int32)
    size = np.ascontiguousarray(size, np.int64)
    F = len(src)
    start = np.zeros(F, np.int64) if start is None else np.ascontiguousarray(start, np.int64)
    vl = np.zeros(F, np.int32) if vl is None else np.ascontiguousarray(vl, np.int32)
    if check:
        from netsim.workload import check_flow_arrays
        check_flow_arrays(src, dst, size, start, vl, fab.C, flow_vl_limit(sl2vl, prm.vls))
        check_routes(fab, lft, src, dst)
        if prm.mode == "lossy" or prm.cc or prm.dcqcn:     # the ACKs, BECNs or CNPs go back
            check_routes(fab, lft, dst, src)
    S, P1, V = fab.S, fab.P + 1, prm.vls
    ncab, cports, peer, host_at, ca_g = _arrays(fab)
    order = np.argsort(start, kind="stable").astype(np.int64)
    pfc = prm.mode == "pfc"
    lossy = prm.mode == "lossy"
    xoff, xon = prm.pfc_thresholds() if pfc else (0, 0)
    max_wire = prm.mtu + prm.header
    horizon = max(prm.prop + max_wire, prm.prop + prm.sw_latency, prm.prop + prm.pause_delay,
                  prm.fc_bytes + prm.prop, prm.islip_cycle) + max_wire + 1
    W = 1 << int(horizon).bit_length()
    rtl = prm.alloc == "islip" or prm.fc_bytes > 0
    G = S * P1
    active = (host_at >= 0) | (peer >= 0)
    grp = np.zeros(G, np.int64) if rs.group is None else np.ascontiguousarray(rs.group, np.int64).ravel()
    altg = np.full(G, -1, np.int64)
    if rs.alt is not None:
        a = np.asarray(rs.alt, np.int64)
        ok = (a >= 1) & (a < P1)
        altg[ok.ravel()] = (np.arange(S)[:, None] * P1 + a)[ok]
    ar_lid = np.zeros((1, 1), np.bool_) if rs.adaptive is None else np.ascontiguousarray(rs.adaptive, np.bool_)
    fails = sorted(((int(x[0]), int(x[1]), int(x[2])) for x in rs.failures), key=lambda x: x[0])
    fail_t = np.array([x[0] for x in fails], np.int64)
    fail_g = np.array([x[1] * P1 + x[2] for x in fails], np.int64)
    sw_sl2vl, host_sl2vl = sl2vl_tables(fab, sl2vl, prm.vls)
    slv = sw_sl2vl is not None
    sl2vl_a = np.ascontiguousarray(sw_sl2vl) if slv else np.zeros((1, 1, 1, 16), np.uint8)
    f_sl = vl
    vl = np.ascontiguousarray(host_sl2vl[vl], np.int32)            # a flow's VL at its host
    vlarb = bool(prm.vlarb_high or prm.vlarb_low)
    E = max(1, len(prm.vlarb_high), len(prm.vlarb_low))
    va_vl = np.full((2, E), 15, np.int64)
    va_w = np.zeros((2, E), np.int64)
    for tb, tbl in enumerate((prm.vlarb_high, prm.vlarb_low)):
        for k, (v, w) in enumerate(tbl):
            va_vl[tb, k], va_w[tb, k] = v, w
    va_n = np.array([len(prm.vlarb_high), len(prm.vlarb_low)], np.int64)
    (t, events, total, n_deliv, delivered, done, lat, max_occ, tr, q_head, credit, p_blocks,
     nxt, drops, pauses, retransmits, naks, timeouts, fecns, becns, fc_sent, hoq_drops, dest_down,
     active) = _CORES[lossy, rtl](
                  S, P1, V, ncab, cports, peer, host_at, np.ascontiguousarray(lft), ca_g,
                  fab.lid_ca.astype(np.int32), src, dst, size, start, vl, order,
                  prm.prop, prm.sw_latency, prm.mtu, prm.header, prm.buf_blocks,
                  -1 if prm.max_time is None else prm.max_time, W, trace, pfc, xoff, xon,
                  prm.prop + prm.pause_delay, TRANSPORTS.index(prm.transport), prm.ack_bytes, prm.rto,
                  prm.window if lossy else 0, prm.drop_every, prm.cc, prm.cc_threshold, prm.cc_marking_rate,
                  prm.cc_victim_mask, prm.ccti_increase, prm.ccti_limit, prm.ccti_timer, prm.cct_step, prm.cnp_bytes,
                  prm.alloc == "islip", prm.islip_fair_every, prm.islip_iterations, prm.islip_cycle, prm.fc_bytes,
                  prm.fc_update, prm.fc_period,
                  prm.dcqcn, prm.ecn_kmin, prm.ecn_kmax, prm.ecn_pmax, prm.cnp_interval, prm.dcqcn_g,
                  prm.alpha_timer, prm.rate_timer, prm.byte_counter, prm.rate_fr_steps, prm.rate_ai, prm.rate_hai,
                  prm.rate_min, prm.hoq_life, rs.on, active, grp, altg, ar_lid, fail_t, fail_g,
                  vlarb, va_vl, va_w, va_n, prm.vlarb_limit, slv, sl2vl_a, f_sl)
    if not lossy and n_deliv + drops < total and (prm.max_time is None or t < prm.max_time):
        waits: dict[tuple, set] = {}
        qh = q_head.reshape(S, P1, P1, V)
        cr = credit.reshape(S, P1, V)
        for s, i, o, v in zip(*np.nonzero(qh >= 0), strict=True):
            h = p_blocks[qh[s, i, o, v]]                  # (a head's header: its blocks, the VL it came in on)
            if host_at[s * P1 + o] < 0 and cr[s, o, v] < (((h >> 8) & 0x7FFFFF) + BLOCK - 1) // BLOCK:
                waits.setdefault((int(s), int(i), int(h & 0xF)), set()).add(
                    (int(fab.nbr[s, o]), int(fab.nbr_port[s, o]), int(v)))
        cyc = wait_cycle(fab, waits)
        down = sorted({(int(s), int(o)) for s, i, o, v in zip(*np.nonzero(qh >= 0), strict=True)
                       if not active[s * P1 + o]})
        raise DeadlockError(f"deadlock at t = {t} ({prm.ns(t):.0f} ns): {total - n_deliv - drops} packets "
                            + (f"(some queued for ports down with nothing to take them: "
                               f"{', '.join(f'switch {a} port {b}' for a, b in down)}) " if down else "") +
                            f"undelivered; "
                            f"buffers waiting in a cycle: {' -> '.join(cyc) if cyc else 'none found'}", cyc, t)
    fct = np.where(done >= 0, done - start, -1)
    return Result(prm, int(t), int(events), int(total), int(n_deliv), delivered, fct, lat, int(max_occ),
                  int(drops), int(pauses), int(retransmits), int(naks), int(timeouts), int(fecns), int(becns),
                  counters=({"fc_packets": int(fc_sent)} if prm.fc_bytes else {})
                  | ({"hoq_discards": int(hoq_drops)} if prm.hoq_life else {})
                  | ({"dest_down": int(dest_down)} if rs.on else {}), trace=tr if trace else None)


def simulate(fab, lft: np.ndarray, flows: list[Flow], prm: Params | None = None, trace: bool = False,
             resilience: Resilience | None = None, sl2vl=None) -> Result:
    prm = prm or Params()
    prm.check()
    check_flows(flows, fab.C, flow_vl_limit(sl2vl, prm.vls))
    a = np.array([(f.src, f.dst, f.size, f.start, f.vl) for f in flows], dtype=np.int64).reshape(-1, 5)
    check_routes(fab, lft, a[:, 0], a[:, 1])
    if prm.mode == "lossy" or prm.cc or prm.dcqcn:
        check_routes(fab, lft, a[:, 1], a[:, 0])
    return simulate_arrays(fab, lft, a[:, 0], a[:, 1], a[:, 2], a[:, 3], a[:, 4], prm, trace, check=False,
                           resilience=resilience, sl2vl=sl2vl)
