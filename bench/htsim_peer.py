"""The peer of `make bench-netsim`: htsim (csg-htsim, C++), RoCE with PFC (`main_roce`), on the
issue's reference set-up, run side by side with our simulator on the same machine and the
same traffic.

htsim is not a package here: point HTSIM_SRC (or --htsim-src) at a checkout of
github.com/Broadcom/csg-htsim. `build` copies its `sim/` into build/htsim/ (the checkout is
not written to) and builds `htsim_roce` there with its own Makefiles (-O2/-O3, ~3 minutes
on 2 cores, kept while the source is unchanged).

The run: a k = 32 3-level fat tree of 8,192 hosts (htsim's FatTreeTopology, 3 tiers), 100
Gb/s links (-linkspeed 100000), 1 us per hop (-hop_latency 1), 1,500-byte packets (-mtu
1500), queues of 266 packets (-q 266: 399 KB), single-path ECMP per flow (-strat ecmp_host
-paths 1), PFC at htsim's default thresholds; the traffic is the same random permutation of
2 MB flows, all from time 0, that our run uses with the same seed (written as htsim's
connection matrix). Wall is the htsim process's (set-up and simulation); memory its peak
resident set (GNU time's maximum RSS); every flow's "finished" line is counted and the last
one's time reported (the simulated span).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "htsim"


class HtsimError(RuntimeError):
    pass


def source(path: str | None) -> Path:
    src = Path(path or os.environ.get("HTSIM_SRC", ""))
    if not str(src) or not (src / "sim" / "datacenter" / "main_roce.cpp").exists():
        raise HtsimError(f"HTSIM_SRC={str(src) or '(unset)'}: not a csg-htsim checkout "
                         "(no sim/datacenter/main_roce.cpp)")
    return src


def build(src: Path, say=print) -> Path:
    """htsim_roce built from `src` (a csg-htsim checkout) under build/htsim; returns it."""
    h = hashlib.sha256()
    files = sorted(p for p in (src / "sim").rglob("*") if p.is_file() and p.suffix in (".cpp", ".h")
                   or p.name == "Makefile")
    for p in files:
        h.update(p.read_bytes())
    exe = OUT / "sim" / "datacenter" / "htsim_roce"
    stamp = OUT / "stamp"
    if exe.exists() and stamp.exists() and stamp.read_text() == h.hexdigest():
        return exe
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    shutil.copytree(src / "sim", OUT / "sim", ignore=shutil.ignore_patterns("*.o", "*.a", ".git"))
    jobs = str(os.cpu_count() or 2)
    t0 = time.perf_counter()
    for cmd in (["make", "-C", str(OUT / "sim"), "-j", jobs, "libhtsim.a"],
                ["make", "-C", str(OUT / "sim" / "datacenter"), "-j", jobs, "htsim_roce"]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            raise HtsimError(f"{' '.join(cmd)} failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    stamp.write_text(h.hexdigest())
    say(f"htsim_roce built in {time.perf_counter() - t0:.0f} s")
    return exe


def connection_matrix(path: Path, dst, size: int):
    """htsim's connection matrix: host i -> dst[i], `size` bytes, from time 0."""
    n = len(dst)
    with open(path, "w") as f:
        f.write(f"Nodes {n}\nConnections {n}\n")
        for i, d in enumerate(dst):
            f.write(f"{i}->{int(d)} start 0 size {size}\n")


def run(exe: Path, dst, size: int, tag: str = "run") -> dict:
    """htsim_roce on the permutation `dst` (host i sends `size` bytes to dst[i])."""
    n = len(dst)
    work = OUT / tag
    work.mkdir(parents=True, exist_ok=True)
    cm = work / "perm.cm"
    connection_matrix(cm, dst, size)
    cmd = ["/usr/bin/time", "-v", str(exe), "-nodes", str(n), "-conns", str(n), "-tm", str(cm), "-tiers", "3",
           "-q", "266", "-mtu", "1500", "-linkspeed", "100000", "-hop_latency", "1", "-strat", "ecmp_host",
           "-paths", "1", "-end", "100000", "-o", str(work / "logout.dat")]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise HtsimError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    fin = [float(x) for x in re.findall(r"^Flow \S+ \d+ finished at ([0-9.e+]+)", r.stdout, re.M)]
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    if len(fin) != n:
        raise HtsimError(f"htsim: {len(fin)} of {n} flows finished (end time too short?)")
    k = round((4 * n) ** (1 / 3))
    return {"run": f"htsim main_roce (PFC) k={k}", "hosts": n, "flows": n, "wall_s": round(wall, 1),
            "peak_MB": round(int(rss.group(1)) / 1024) if rss else None, "sim_time_us": round(max(fin), 1),
            "fct_mean_us": round(sum(fin) / n, 1)}
