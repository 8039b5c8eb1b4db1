"""`make fabric-sweep`'s machinery (netsim/sweep.py) on a small grid, on a local Dask
cluster of one worker: every point runs, the table has a row per (mode, engine, load) with
the seeds counted, the plot is written."""
from __future__ import annotations

import pytest

from netsim.sweep import main, point

# one worker compiles and reuses the numba cores (make sim runs with --dist loadgroup)
pytestmark = pytest.mark.xdist_group("netsim")


def test_a_point_is_one_simulation():
    r = point(4, "ib", "ftree", 0.5, 1, 16 << 10)
    assert r["flows"] > 0 and r["done"] == r["flows"] and r["slowdown_mean"] >= 1.0
    lossy = point(4, "lossy", "ftree", 0.5, 1, 16 << 10)
    assert lossy["flows"] == r["flows"]                   # the same workload: the seed, not the mode, draws it


def test_the_sweep_runs_on_dask(tmp_path, capsys):
    main(["--k", "4", "--loads", "0.3,0.8", "--modes", "ib,pfc", "--engines", "ftree", "--seeds", "2",
          "--workers", "1", "--size", "16384", "--out", str(tmp_path)])
    md = (tmp_path / "fabric_sweep.md").read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("| ib") or ln.startswith("| pfc")]
    assert len(rows) == 4 and all("| 2 |" in ln for ln in rows)
    assert (tmp_path / "fabric_sweep.png").stat().st_size > 0
    assert "8 runs on Dask" in capsys.readouterr().out


def test_a_parameter_swept_on_top_of_the_congestion_controlled_modes(tmp_path, capsys):
    """--vary sweeps a Params field: DCQCN's ECN threshold under RoCE, IB CC's congestion
    threshold; the table has a column for it and a row per value."""
    main(["--k", "4", "--loads", "0.8", "--modes", "pfc+dcqcn", "--engines", "ftree", "--seeds", "1",
          "--workers", "1", "--size", "16384", "--out", str(tmp_path), "--vary", "ecn_kmin=20,200"])
    md = (tmp_path / "fabric_sweep.md").read_text()
    assert "ecn_kmin over 20, 200" in md and "| ecn_kmin |" in md
    rows = [ln for ln in md.splitlines() if ln.startswith("| pfc+dcqcn")]
    assert len(rows) == 2 and "| 20 |" in rows[0] and "| 200 |" in rows[1]
    r = point(4, "ib+cc", "ftree", 0.9, 1, 16 << 10, "cc_threshold", 8)
    assert r["done"] == r["flows"] and r["value"] == 8


def test_a_bad_sweep_is_refused():
    import pytest

    from netsim.sweep import SweepError, parse_vary
    with pytest.raises(SweepError, match="field of netsim.common.Params"):
        parse_vary("no_such_field=1,2")
    with pytest.raises(SweepError, match="expected int"):
        parse_vary("xoff=a,b")
    with pytest.raises(SystemExit):
        main(["--modes", "ib,tcp"])
