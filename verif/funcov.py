"""Functional coverage: named groups of bins, hit counts, one JSON per run, a merged report.

A small equivalent of cocotb-coverage's CoverPoint/CoverCross, kept apart from any simulator:
the coverage model (verif/ib_funcov.py) declares every group's bins up front (so a bin no
test reaches is listed as a hole, not missing) and samplers call `hit(group, bin)`. A bin is
a tuple of values (a cross of several coverpoints) written `a × b × c`.

In a coverage run (`make coverage`: verif.runner sets FUNCOV_FILE for every cocotb run) the
lock-step checker (verif/lockstep.py) attaches the model's samplers to the golden model it
steps, and the counts are written to FUNCOV_FILE when the simulation ends. Then

    python -m verif.funcov build/coverage [--configs small,small-rxreg] [--check]

merges the runs and prints every group's bins hit/total and the holes; `--check` fails
while a bin of the model is not hit (a bin that cannot be hit is removed from the model,
with its reason, in verif/ib_funcov.py).
"""
from __future__ import annotations

import atexit
import json
import os
from collections import defaultdict
from pathlib import Path

__all__ = ["Coverage", "Deltas", "enabled", "registry", "save", "load_runs", "report", "main"]


def _key(b) -> str:
    return " × ".join(str(x) for x in b) if isinstance(b, tuple) else str(b)


class Coverage:
    """Groups of bins with hit counts."""

    def __init__(self):
        self.groups: dict[str, dict] = {}            # name -> {"title", "spec", "bins": {bin: hits}}

    def group(self, name: str, title: str, spec: str, bins) -> None:
        g = self.groups.setdefault(name, {"title": title, "spec": spec, "bins": {}})
        for b in bins:
            g["bins"].setdefault(_key(b), 0)

    def hit(self, group: str, b, n: int = 1) -> None:
        """Count a sample of bin `b`; a bin the model did not declare is an error (a sampler
        that computes a value outside the declared space is a bug in the model)."""
        bins = self.groups[group]["bins"]
        k = _key(b)
        if k not in bins:
            raise KeyError(f"functional coverage: group {group!r} has no bin {k!r} (declared: "
                           f"{', '.join(list(bins)[:12])}{' ...' if len(bins) > 12 else ''})")
        bins[k] += n

    def to_json(self) -> dict:
        return {"groups": self.groups}

    def merge(self, other: dict) -> None:
        for name, g in other["groups"].items():
            mine = self.groups.setdefault(name, {"title": g["title"], "spec": g["spec"], "bins": {}})
            for k, n in g["bins"].items():
                mine["bins"][k] = mine["bins"].get(k, 0) + n


_REGISTRY: Coverage | None = None


def enabled() -> bool:
    return bool(os.environ.get("FUNCOV_FILE"))


def registry() -> Coverage:
    """This process's coverage (written to FUNCOV_FILE at exit)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Coverage()
        atexit.register(save)
    return _REGISTRY


def save() -> None:
    path = os.environ.get("FUNCOV_FILE")
    if path and _REGISTRY is not None:
        from verif.runner import _write_whole
        _write_whole(Path(path), json.dumps(_REGISTRY.to_json()))


def load_runs(root: Path, configs: set[str] | None) -> tuple[Coverage, int]:
    """The merged coverage of every run under `root` (of the `configs`, when given)."""
    from verif.coverage import run_config
    cov = Coverage()
    n = 0
    for f in sorted(Path(root).rglob("funcov.json")):
        if configs is not None and run_config(f.parent) not in configs:
            continue
        cov.merge(json.loads(f.read_text()))
        n += 1
    return cov, n


def report(cov: Coverage, holes: int = 30) -> tuple[int, int, list[str]]:
    """Prints the table; returns (bins hit, bins, the holes as `group: bin`)."""
    print(f"{'group':26s} {'bins hit':>12s}   what (spec)")
    tot_hit = tot = 0
    missing = []
    for name, g in sorted(cov.groups.items()):
        bins = g["bins"]
        hit = sum(1 for n in bins.values() if n)
        tot_hit += hit
        tot += len(bins)
        pct = 100 * hit / max(1, len(bins))
        print(f"{name:26s} {hit:>5d}/{len(bins):<5d}{pct:5.0f} %   {g['title']} ({g['spec']})")
        missing += [f"{name}: {k}" for k, n in bins.items() if not n]
    print(f"{'all':26s} {tot_hit:>5d}/{tot:<5d}{100 * tot_hit / max(1, tot):5.0f} %")
    if missing:
        print(f"\n{len(missing)} bins not hit" + (f" (first {holes})" if len(missing) > holes else "") + ":")
        for m in missing[:holes]:
            print(f"  {m}")
    return tot_hit, tot, missing


# a sampler's helper: the increase of named counters between two samples
class Deltas:
    def __init__(self):
        self.prev: dict = defaultdict(int)

    def __call__(self, key, value) -> int:
        d = value - self.prev[key]
        self.prev[key] = value
        return d if d > 0 else 0


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default="build/coverage")
    ap.add_argument("--configs", default="small,small-rxreg", help="comma-separated, or 'all'")
    ap.add_argument("--check", action="store_true", help="fail while a bin is not hit")
    ap.add_argument("--holes", type=int, default=60)
    a = ap.parse_args(argv)
    cov, n = load_runs(Path(a.dir), None if a.configs == "all" else set(a.configs.split(",")))
    if not n:
        raise SystemExit(f"verif.funcov: no funcov.json of the configs {a.configs} under {a.dir} "
                         "(run the cocotb tests with RTL_COVERAGE=1)")
    print(f"functional coverage of {n} runs (configs: {a.configs}; model: verif/ib_funcov.py)\n")
    hit, tot, missing = report(cov, a.holes)
    if a.check and missing:
        print(f"\nBELOW FLOOR: {len(missing)} functional bins not hit (every bin must be)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

