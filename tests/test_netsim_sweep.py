"""`make fabric-sweep`'s machinery (netsim/sweep.py) on a small grid, on a local Dask
cluster of one worker: every point runs, the table has a row per (mode, engine, load) with
the seeds counted, the plot is written."""
from __future__ import annotations

from netsim.sweep import main, point


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
