"""Our SM's routings judged twice, scope by scope: by our channel-dependency-graph checker
(sm.cdg) and by ibdmchk (Debian ibutils 1.5.7) on the OpenSM-format dumps we write
(sm.dumps); and the adaptive-routing plans (sm.adaptive) by a networkx check of the union of
every choice they allow (tools/ar_union.py) and by ibdmchk on LFT variants.

    .venv/bin/python -m tools.check_sm [--keep DIR]

Prints two Markdown tables (docs/routing-checks.md explains every column) and exits 1 when
ours and ibdmchk disagree in the same scope, 2 when ibdmchk is missing or gives no verdict
where it should. Well under a minute: small fabrics, one ibdmchk run ~10 ms.

Scopes (sm.cdg): CA->CA is what ibdmchk checks by default, all (every switch to every LID)
what `ibdmchk -a` checks; "1 VL" is every path on SL 0 (ibdmchk without -c/-d), "SL" every
path on the VL its SL maps to (ibdmchk -c path-sl.txt -d opensm-sl2vl.dump).

ibdmchk 1.5.7 (Debian's build) ends every run that reaches its credit-loop verdict with
SIGSEGV: CrdLoopCleanup is declared int and returns nothing, and GCC compiled the whole
function to a trap (ibutils fixed the declaration in 2017, commit 4a41ef9, after the snapshot
Debian packages). The verdict is printed before it, so `run_ibdmchk` takes the text's
verdict and reports the crash apart; a crash without a verdict is an error.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Ibdmchk", "run_ibdmchk", "static_rows", "adaptive_rows", "main"]

_SCANNED = re.compile(r"-I- Scanned:(\d+) CA to CA paths")
_DEAD = re.compile(r"-E- Fail to find a path from:")
_LFT_LOOP = re.compile(r"-E- Aborting after 256 hops")


@dataclass
class Ibdmchk:
    """One ibdmchk run: loops True/False (its verdict), None when it gave none (`why`)."""
    loops: bool | None
    paths: int                       # CA-to-CA paths it traced ("-I- Scanned:")
    returncode: int
    crashed: bool                    # SIGSEGV after the verdict (CrdLoopCleanup, see the module docstring)
    dead_ends: int                   # "Fail to find a path" lines: pairs whose LFT walk did not arrive
    why: str
    text: str = field(repr=False)
    args: list[str] = field(default_factory=list)

    @property
    def cell(self) -> str:
        if self.loops is None:
            return f"no verdict ({self.why})"
        return "LOOP" if self.loops else "ok"


def run_ibdmchk(d: Path, *, all_paths: bool = False, psl: str | None = None, sl2vl: str | None = None,
                lmc: int = 0, timeout: float = 120) -> Ibdmchk:
    """ibdmchk in verification mode on the dumps in directory d (opensm-subnet.lst,
    opensm.fdbs, opensm.mcfdbs; sm.dumps.write_dumps): -a with all_paths, -c psl, -d sl2vl
    (file names in d), -l lmc."""
    args = ["ibdmchk", "-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m", "opensm.mcfdbs"]
    args += ["-a"] if all_paths else []
    args += ["-c", psl] if psl else []
    args += ["-d", sl2vl] if sl2vl else []
    args += ["-l", str(lmc)] if lmc else []
    out = subprocess.run(args, cwd=d, capture_output=True, text=True, timeout=timeout)
    text = out.stdout + out.stderr
    m = _SCANNED.search(text)
    loops = True if "-E- credit loops in routing" in text else False if "-I- no credit loops found" in text else None
    dead = len(_DEAD.findall(text))
    why = ""
    if loops is None:
        if _LFT_LOOP.search(text):
            why = "paths loop in the LFTs"
        elif dead:
            why = f"{dead} dead ends"
        else:
            tail = [ln for ln in text.splitlines() if ln.startswith("-E-")]
            why = tail[0] if tail else f"exit {out.returncode}, no -E- line"
    return Ibdmchk(loops, int(m.group(1)) if m else 0, out.returncode, out.returncode == -11, dead, why, text,
                   args[1:])


def _ours(res) -> str:
    return "ok" if res.acyclic else "LOOP"


TOPOS = {
    "ft2-8": ("fat_tree_2", (8,), {}),
    "ft3-4": ("fat_tree_3", (4,), {}),
    "torus-4x4": ("torus_2d", (4, 4, 1), {}),
    "mesh-4x4": ("torus_2d", (4, 4, 1), {"wrap": False}),
}


def _fabric(name: str):
    import fabric.topology as T
    from sm.fabric import Fabric
    fn, args, kw = TOPOS[name]
    return Fabric.from_topology(getattr(T, fn)(*args, **kw))


class NoVerdict(RuntimeError):
    pass


def _must_judge(ib: Ibdmchk, all_paths: bool, name: str, engine: str):
    """Every CA-to-CA pair is routed by every engine: ibdmchk must judge them (with -a,
    switch pairs up*/down* leaves unrouted may stop it: it then says which)."""
    if ib.loops is None and not (all_paths and ib.dead_ends):
        raise NoVerdict(f"ibdmchk {' '.join(ib.args)} on {name} {engine}: no verdict ({ib.why})")


def static_rows(work: Path, runs: list) -> list[dict]:
    """A row per (topology, engine): ours and ibdmchk's verdict in each scope, 1 VL and (for a
    routing with SLs) by SL."""
    from sm.cdg import check
    from sm.dumps import PATH_SL, SL2VL, write_dumps
    from sm.fabric import FabricError
    from sm.routing import ENGINES, route
    rows = []
    for name in TOPOS:
        fab = _fabric(name)
        for engine in ENGINES:
            try:
                r = route(fab, engine)
            except FabricError as e:
                rows.append({"topology": name, "engine": engine, "skip": str(e).split(":")[1].strip()})
                continue
            d = work / f"{name}-{engine}"
            write_dumps(fab, r, d)
            row = {"topology": name, "engine": engine, "vls": r.vls, "pairs": []}
            for key, scope, all_paths in (("ca", "ca-ca", False), ("all", "all", True)):
                ours = check(fab, r, scope=scope, sls=False)
                ib = run_ibdmchk(d, all_paths=all_paths)
                runs.append(ib)
                _must_judge(ib, all_paths, name, engine)
                row[f"ours_{key}"], row[f"ib_{key}"] = _ours(ours), ib.cell
                row["pairs"].append((ours.acyclic, ib))
                if r.sl is not None:
                    ours = check(fab, r, scope=scope)
                    ib = run_ibdmchk(d, all_paths=all_paths, psl=PATH_SL, sl2vl=SL2VL)
                    runs.append(ib)
                    _must_judge(ib, all_paths, name, engine)
                    row[f"ours_{key}_sl"], row[f"ib_{key}_sl"] = _ours(ours), ib.cell
                    row["pairs"].append((ours.acyclic, ib))
            rows.append(row)
    return rows


def adaptive_rows(work: Path, runs: list) -> list[dict]:
    """A row per adaptive plan: the planner's verdict, the networkx union check (CA->CA and
    all), ibdmchk on each variant LFT (k-th member of every group) and on one LMC dump of
    the pairwise variants (the union's CA->CA dependencies, for fat trees exactly)."""
    import networkx as nx

    from sm.adaptive import ar_plan
    from sm.dumps import ar_variant_lfts, write_dumps, write_lmc_dumps
    from sm.routing import Routes, route
    from tools.ar_union import ring_both_ways, union_cdg, unrefused_plan
    cases = []
    for name, engine in (("ft2-8", "ftree"), ("ft2-8", "updn"), ("ft3-4", "ftree"), ("ft3-4", "updn")):
        fab = _fabric(name)
        r = route(fab, engine)
        cases.append((name, engine, fab, r, ar_plan(fab, r), ""))
    fab = _fabric("ft3-4")
    r = route(fab, "minhop")
    refused = ar_plan(fab, r)
    cases.append(("ft3-4", "minhop", fab, r, unrefused_plan(fab, r), "refused" if refused.groups == 0 else ""))
    fab, r, plan = ring_both_ways(4)
    cases.append(("ring-4", "updn", fab, r, plan, "bad plan"))
    rows = []
    for name, engine, fab, r, plan, note in cases:
        row = {"topology": name, "engine": engine, "plan": f"{plan.groups} groups / {plan.lids} LIDs",
               "planner": ("accepts" if plan.acyclic else "refuses") if not note else note, "pairs": []}
        u_ca = nx.is_directed_acyclic_graph(union_cdg(fab, r.lft, plan, "ca-ca"))
        u_all = nx.is_directed_acyclic_graph(union_cdg(fab, r.lft, plan, "all"))
        row["nx_ca"], row["nx_all"] = ("ok" if u_ca else "LOOP"), ("ok" if u_all else "LOOP")
        variants = ar_variant_lfts(fab, r, plan)
        loops = 0
        for k, v in enumerate(variants):
            d = work / f"ar-{name}-{engine}-v{k}"
            write_dumps(fab, Routes(f"{engine}-variant{k}", v), d)
            ib = run_ibdmchk(d)
            runs.append(ib)
            if ib.loops is None:
                raise NoVerdict(f"ibdmchk on variant {k} of {name} {engine}: no verdict ({ib.why})")
            loops += ib.loops
            if ib.loops or u_ca:            # a variant's loop is one of the union; an acyclic union has none
                row["pairs"].append((u_ca, ib))
        row["variants"] = f"{loops} of {len(variants)} loop" if loops else f"{len(variants)} of {len(variants)} ok"
        pairwise = ar_variant_lfts(fab, r, plan, pairwise=True)
        d = work / f"ar-{name}-{engine}-lmc"
        _files, lmc = write_lmc_dumps(fab, pairwise, d)
        row["lmc_n"] = f"{len(pairwise)} LFTs, LMC {lmc}"
        for key, acyclic, all_paths in (("lmc", u_ca, False), ("lmc_all", u_all, True)):
            ib = run_ibdmchk(d, lmc=lmc, all_paths=all_paths)
            runs.append(ib)
            row[key] = ib.cell
            row["pairs"].append((acyclic, ib))
        rows.append(row)
    return rows


def _agree(pairs) -> str:
    judged = [(a, ib) for a, ib in pairs if ib.loops is not None]
    if any(a == ib.loops for a, ib in judged):
        return "NO"
    return "yes" if judged else "n/a"


def _table(head: list[str], cells: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(c) + " |" for c in cells]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", help="write the dumps into this directory (default: a temporary one, removed)")
    a = ap.parse_args(argv)
    if shutil.which("ibdmchk") is None:
        print("check_sm: ibdmchk not found: apt-get install ibutils (make setup does)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    tmp = None if a.keep else tempfile.TemporaryDirectory(prefix="check_sm-")
    work = Path(a.keep or tmp.name)
    runs: list[Ibdmchk] = []
    try:
        srows = static_rows(work, runs)
        arows = adaptive_rows(work, runs)
    except NoVerdict as e:
        print(f"check_sm: {e}", file=sys.stderr)
        return 2
    finally:
        if tmp is not None:
            tmp.cleanup()
    bad = 0
    cells = []
    for r in srows:
        if "skip" in r:
            cells.append([r["topology"], r["engine"], "—"] + [f"not routed: {r['skip']}"] + ["—"] * 8)
            continue
        agree = _agree(r["pairs"])
        bad += agree == "NO"
        cells.append([r["topology"], r["engine"], str(r["vls"]), r["ours_ca"], r["ib_ca"], r["ours_all"], r["ib_all"],
                      r.get("ours_ca_sl", "—"), r.get("ib_ca_sl", "—"), r.get("ours_all_sl", "—"),
                      r.get("ib_all_sl", "—"), agree])
    print("Static routings: our CDG checker beside ibdmchk, scope by scope\n")
    print(_table(["topology", "engine", "VLs", "ours CA→CA, 1 VL", "ibdmchk", "ours all, 1 VL", "ibdmchk -a",
                  "ours CA→CA, SL", "ibdmchk -c -d", "ours all, SL", "ibdmchk -a -c -d", "agree"], cells))
    cells = []
    for r in arows:
        agree = _agree(r["pairs"])
        bad += agree == "NO"
        cells.append([r["topology"], r["engine"], r["plan"], r["planner"], r["nx_ca"], r["nx_all"], r["variants"],
                      r["lmc_n"], r["lmc"], r["lmc_all"], agree])
    print("\nAdaptive plans: the union of every allowed choice (networkx) beside ibdmchk on LFT variants\n")
    print(_table(["topology", "engine", "plan", "planner", "union CA→CA (networkx)", "union all (networkx)",
                  "ibdmchk per variant", "pairwise variants", "ibdmchk -l (union CA→CA)", "ibdmchk -l -a (union all)",
                  "agree"], cells))
    judged = [x for x in runs if x.loops is not None]
    crashed = sum(x.crashed for x in judged)
    other = sorted({x.returncode for x in judged if not x.crashed})
    print(f"\n{len(runs)} ibdmchk runs, {len(judged)} with a verdict: {crashed} of those ended by SIGSEGV after it "
          f"(CrdLoopCleanup){'; other exit codes ' + str(other) if other else ''}; "
          f"{time.perf_counter() - t0:.1f} s")
    if bad:
        print(f"check_sm: {bad} row(s) where ours and ibdmchk disagree in the same scope", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
