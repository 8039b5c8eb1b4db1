"""The published experiments (netsim/experiments.py) reach the papers' conclusions: their
tables are read back, not trusted, and the plots are written."""
from __future__ import annotations

import pytest

from netsim.experiments import collateral, deadlock, livelock, resilience

# one worker compiles and reuses the numba cores (make sim runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("netsim")


def test_go_back_0_never_completes_the_message(tmp_path):
    rows = {r["transport"]: r for r in livelock(tmp_path, horizon_ms=5.0, samples=4)}
    assert rows["go-back-0"]["message done"].startswith("no") and rows["go-back-0"]["goodput Gb/s"] == "0.00"
    for t in ("go-back-N", "selective (IRN)"):
        assert rows[t]["message done"].endswith("ms") and float(rows[t]["goodput Gb/s"]) > 30
    assert rows["selective (IRN)"]["resent"] == rows["selective (IRN)"]["dropped"]
    assert (tmp_path / "livelock.png").stat().st_size > 0 and (tmp_path / "livelock.md").exists()


def test_only_the_cyclic_routing_deadlocks(tmp_path):
    rows = deadlock(tmp_path, seeds=3)
    main = {(r["routing"], r["flow control"]): r for r in rows if "flow control" in r}
    assert main[("minhop", "ib")]["SM's CDG check"].startswith("CYCLE")
    assert main[("updn", "ib")]["SM's CDG check"] == "acyclic"
    assert main[("minhop", "ib")]["outcome"].startswith("DEADLOCK")
    assert main[("minhop", "pfc")]["outcome"].startswith("DEADLOCK")
    assert main[("minhop", "lossy")]["outcome"].startswith("all delivered")
    for mode in ("ib", "pfc", "lossy"):
        assert main[("updn", mode)]["outcome"].startswith("all delivered")
    seeds = {r["routing"]: r for r in rows if "ib: deadlocked" in r}
    assert all(seeds["updn"][f"{m}: deadlocked"].startswith("0 of") for m in ("ib", "pfc", "lossy"))
    assert seeds["minhop"]["lossy: deadlocked"].startswith("0 of")
    assert (tmp_path / "deadlock.png").stat().st_size > 0


def test_collateral_damage_where_paths_are_shared(tmp_path):
    rows = {(r["routing"], r["fabric"]): r for r in collateral(tmp_path, samples=24)}
    rate = {k: float(r["long flow with the incast, Gb/s"]) for k, r in rows.items()}
    before = {k: float(r["long flow before, Gb/s"]) for k, r in rows.items()}
    assert all(v > 9.5 for v in before.values())
    # up*/down* mixes the incast into the long flow's links: PFC and credits spread the incast's backlog to it
    assert rate[("updn", "PFC")] < 0.6 * before[("updn", "PFC")]
    assert rate[("updn", "IB credits")] < 0.6 * before[("updn", "IB credits")]
    # ftree gives the two no link in common: nothing spreads to the long flow, whatever the fabric
    for fab in ("PFC", "PFC + DCQCN", "lossy (IRN)", "IB credits", "IB credits + CC"):
        assert rate[("ftree", fab)] > 0.95 * before[("ftree", fab)], fab
    assert rows[("ftree", "PFC")]["PAUSEs"] > 0 and rows[("ftree", "lossy (IRN)")]["drops"] > 0
    # DCQCN marks the incast and its receiver answers with CNPs (too late to spare the 128 KB
    # flows PFC's pauses: each has sent most of itself before its first CNP is back)
    assert rows[("ftree", "PFC + DCQCN")]["FECN / ECN marks"] > rows[("ftree", "PFC + DCQCN")]["BECNs / CNPs"] > 0
    assert (tmp_path / "collateral.png").stat().st_size > 0


def test_adaptive_routing_and_failover_at_fabric_scale(tmp_path):
    """AR shortens the permutation's tail; a failing up-link costs packets at its far end
    (no detour down a fat tree) whatever the leaf does, and fewer with the alternates."""
    rows = {r["run"]: r for r in resilience(tmp_path, k=6, size=256 << 10, seeds=1)}
    assert float(rows["adaptive (AR groups)"]["FCT p99 us"]) < float(rows["static routes"]["FCT p99 us"])
    assert rows["static routes"]["DEST_DOWN discards"] == rows["adaptive (AR groups)"]["DEST_DOWN discards"] == 0
    assert rows["static, link fails"]["DEST_DOWN discards"] > rows["failover alternates, link fails"][
        "DEST_DOWN discards"] > 0
    assert (tmp_path / "resilience.png").stat().st_size > 0 and (tmp_path / "resilience.md").exists()
