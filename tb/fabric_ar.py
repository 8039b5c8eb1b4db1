"""Effective bisection bandwidth of the RTL fabric, static routing against adaptive
(tools/bench_ar.py, `make bench-ar`, docs/reliability.md). Verilator only; not part of the
regression (the module is not named test_*).

The fabric is tb/test_fabric.py's 2-level fat tree `fat_tree_2(8)` (8 leaves of 4 CAs, 4
spines, full bisection) with the switches built with adaptive routing (config fab8-ar).
Our SM brings it up with ftree (d-mod-k), and, in the adaptive mode, gives every leaf's
up-ports one AR group and marks the CA LIDs a leaf sends up adaptive (sm/adaptive.py); in
the static mode it gives none. Then rounds of traffic, every endpoint sending full-size
packets back to back to one destination:

  local   each endpoint to the next one on its own leaf (no spine crossed): the rate the
          endpoints and links reach when nothing collides, the reference;
  perm r  a random permutation of the endpoints (seed r, no one to itself).

Measured per round: the packets all endpoints receive per cycle over a window in which
every sender is still sending, as a fraction of the local round's rate: the effective
bisection. Also: packets delivered good, and (per-packet adaptive routing reorders) the
order faults the checkers saw. FABRIC_AR: a JSON file for the result; FABRIC_AR_MODE:
static, adaptive (per packet) or pinned (flow-pinned groups: one port per (SLID, DLID); must
keep order like static); FABRIC_AR_PERMS: how many permutations (default 3).
"""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb

from tb.common.tb import tb_seed

PAYLOAD_WORDS = 64                       # fab8's MTU, 256 bytes
COUNTERS = ("rcv_pkts", "rcv_good", "rcv_bad", "rcv_errors", "icrc_err", "format_err", "pattern_err",
            "unknown_src", "seq_gap", "seq_lost", "seq_dup")
CORRUPT = ("rcv_bad", "icrc_err", "format_err", "pattern_err", "unknown_src")


def _perm(n: int, seed: int) -> list[int]:
    """A permutation of range(n) with no fixed point."""
    rng = random.Random(seed)
    while True:
        p = list(range(n))
        rng.shuffle(p)
        if all(p[k] != k for k in range(n)):
            return p


@cocotb.test(skip=not os.environ.get("FABRIC_AR"))
async def ar_bisection(dut):
    from cocotb.triggers import ClockCycles

    from tb.test_fabric import _bring_up
    mode = os.environ.get("FABRIC_AR_MODE", "adaptive")
    assert mode in ("static", "adaptive", "pinned"), f"FABRIC_AR_MODE: static, adaptive or pinned, not {mode!r}"
    perms = int(os.environ.get("FABRIC_AR_PERMS", "3"))
    ctx = {}
    plan, fws, fab, routes, lid_of = await _bring_up(dut, "ftree", ctx=ctx, adaptive=mode != "static",
                                                     ar_mode="flow" if mode == "pinned" else "packet")
    sm = ctx["sm"]
    plan_ar = sm.ar_plan
    if mode != "static":
        assert plan_ar is not None and plan_ar.groups, "the SM gave no AR groups"
    n = len(plan.endpoints)
    leaf_of = {j: int(name[1:]) // 4 for j, name in enumerate(plan.endpoints)}       # H(4i..4i+3) on leaf i
    by_leaf = {}
    for j in range(n):
        by_leaf.setdefault(leaf_of[j], []).append(j)
    rounds = [("local", {j: eps[(eps.index(j) + 1) % len(eps)] for eps in by_leaf.values() for j in eps})]
    rounds += [(f"perm {r}", dict(enumerate(_perm(n, tb_seed() * 1000 + r)))) for r in range(perms)]
    count = 160
    warm, window = 1500, 3000
    sent_before = [0] * n
    got_before = {j: {k: 0 for k in COUNTERS} for j in range(n)}
    out = []

    def counters(j):
        return {k: int(getattr(dut, f"ep{j}__counters__{k}").value) for k in COUNTERS}

    for name, dst in rounds:
        for j, d in dst.items():
            for k, v in dict(slid=lid_of[j], dlid_base=lid_of[d], ndest=1, sl=0, vl=0, qp=0x11,
                             len_min=PAYLOAD_WORDS, len_mask=0, count=sent_before[j] + count, gap=0).items():
                getattr(dut, f"ep{j}__gen__{k}").value = v
            for k, v in dict(src_base=lid_of[j], len_min=PAYLOAD_WORDS, len_mask=0).items():
                getattr(dut, f"ep{d}__chk__{k}").value = v
        for j in dst:
            getattr(dut, f"ep{j}__gen__en").value = 1
        await ClockCycles(dut.clk, warm)
        r1 = sum(counters(j)["rcv_pkts"] for j in range(n))
        await ClockCycles(dut.clk, window)
        r2 = sum(counters(j)["rcv_pkts"] for j in range(n))
        busy = sum(int(getattr(dut, f"ep{j}__sent_pkts").value) < sent_before[j] + count for j in range(n))
        for _ in range(400):
            if all(counters(j)["rcv_pkts"] - got_before[j]["rcv_pkts"] >= count for j in range(n)):
                break
            await ClockCycles(dut.clk, 500)
        await ClockCycles(dut.clk, 300)
        for j in dst:
            getattr(dut, f"ep{j}__gen__en").value = 0
        now = {j: counters(j) for j in range(n)}
        delta = {k: sum(now[j][k] - got_before[j][k] for j in range(n)) for k in COUNTERS}
        assert delta["rcv_pkts"] == n * count, f"{name}: {delta['rcv_pkts']} packets received of {n * count}"
        # Nothing corrupted or misdelivered in either mode. Static routing keeps every flow on
        # one path, so it must also keep order; per-packet adaptive routing may reorder, and
        # the checker then counts the early packet as a gap and the late one as a duplicate
        # (both in rcv_errors): reported as order faults, not failed.
        assert not any(delta[k] for k in CORRUPT), f"{name}: corrupted or misdelivered: {delta}"
        if mode in ("static", "pinned"):
            assert not delta["rcv_errors"], f"{name}: {mode} routing reordered: {delta}"
        assert delta["rcv_good"] + delta["rcv_errors"] == delta["rcv_pkts"], f"{name}: books: {delta}"
        row = {"round": name, "rate": (r2 - r1) / window, "senders_busy_at_window_end": busy,
               **{k: delta[k] for k in ("rcv_pkts", "rcv_good", "rcv_errors", "seq_gap", "seq_lost", "seq_dup")}}
        out.append(row)
        dut._log.info(f"{mode} {name}: {row}")
        sent_before = [int(getattr(dut, f"ep{j}__sent_pkts").value) for j in range(n)]
        got_before = now
    ref = out[0]["rate"]
    for row in out:
        row["of_local"] = row["rate"] / ref if ref else 0.0
    res = {"mode": mode, "endpoints": n, "switches": len(plan.switches), "payload_bytes": 4 * PAYLOAD_WORDS,
           "packets_per_sender_per_round": count, "window_cycles": window, "rounds": out,
           "ar_groups": plan_ar.groups if plan_ar else 0, "ar_lids": plan_ar.lids if plan_ar else 0}
    Path(os.environ["FABRIC_AR"]).write_text(json.dumps(res, indent=1))
