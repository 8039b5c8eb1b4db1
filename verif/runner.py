"""Build and run cocotb testbenches on Icarus Verilog and Verilator from pytest.

    run_cocotb(top=lambda cfg: RxParser(cfg), name="ib_rx_parser",
               test_module="tb.test_rx_parser", sim="icarus", cfg=cfg)

Amaranth elaborates the top for `cfg` into Verilog; cocotb's Python runner builds it for
the simulator once per design (build/sim/_build/<top>-<sim>-<hash of sources and options>,
shared by every test that simulates the same Verilog) and runs the cocotb tests of
`test_module` in the test's own directory (build/sim/<top>-<config>-<sim>/: results, the
lock-step report, VCD, pcaps, logs), with the config as one JSON string ($SWITCH_CONFIG)
and the run's scenario parameters as another ($TB_PARAMS). WAVES=1 (or waves=True) records
a VCD; PCAP=1 writes every packet on the top's link ports to the test directory's pcap/
(verif/pcap_monitor.py). A failing run is re-run once with waves so that the report can show
the VCD window around the first lock-step divergence.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from contextlib import contextmanager, nullcontext
from pathlib import Path

from contracts.config import SwitchConfig

__all__ = ["SIMS", "ROOT", "run_cocotb", "generate_verilog", "locked", "CocotbFailure"]

ROOT = Path(__file__).resolve().parents[1]
SIMS = ["icarus", "verilator"]


class CocotbFailure(AssertionError):
    pass


def sim_matrix(configs: list[str], *, long: tuple[str, ...] = ()) -> list:
    """pytest parameters ("sim, cfg_name") for every simulator and config, ids
    `<sim>-<config>`; the pairs named in `long` run in `make sim-long` only (a config whose
    behaviour the other simulator checks in `make sim`: docs/verification.md)."""
    import pytest
    return [pytest.param(sim, c, id=f"{sim}-{c}", marks=[pytest.mark.long] if f"{sim}-{c}" in long else [])
            for sim in SIMS for c in configs]


def generate_verilog(top, name: str, path: Path, *, key: str | None = None) -> Path:
    """Write the Verilog of the Amaranth component `top` (or of what the function `top`
    returns) to `path` (verilog_text); rewrite only if it changed, so the simulators' own
    up-to-date checks keep their builds."""
    text = verilog_text(top, name, key=key)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        _write_whole(path, text)
    return path


def _write_whole(path: Path, text: str):
    """Write `path` whole or not at all (a temporary file renamed over it): another xdist
    worker may be reading it at the same time."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def verilog_text(top, name: str, *, key: str | None = None, emit_src: bool = False) -> str:
    """The Verilog of the Amaranth component `top` (or of what the function `top` returns,
    called only when the text is not cached) as `make verilog` writes it (hw.verilog.convert:
    with the time-0 trigger Icarus needs). `key` (what else decides the Verilog besides the
    sources: the test module, the config...): the text is kept in build/verilog-cache under
    it and the sources' hash, and taken from there while no source changed (both simulators
    of a test, reruns), instead of elaborating again. `emit_src`: with Amaranth's `src`
    attributes (the source line of every cell and signal) and the arm markers of
    verif/covmarks.py: make coverage maps Verilog lines back to Amaranth lines with them."""
    from hw.verilog import convert
    cached = None
    if key is not None:
        digest = hashlib.sha256(f"{key}|src={emit_src}".encode()).hexdigest()[:24]
        cached = ROOT / "build" / "verilog-cache" / f"{_sources_hash()}-{digest}.v"
    if cached is not None and cached.exists():
        text = cached.read_text()
    else:
        from verif.covmarks import arm_markers
        with arm_markers() if emit_src else nullcontext():
            text = convert(top() if callable(top) else top, name, emit_src=emit_src)
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            _write_whole(cached, text)
    return text


def shared_build_dir(sim: str, name: str, texts: list[tuple[str, str]], options: list[str]) -> Path:
    """build/sim/_build/<name>-<sim>-<hash>: the build of these sources (file name, text)
    with these options (the contents of any file an option names too), this compiler and
    these tool versions, shared by every test that simulates them."""
    from verif.native import cxx_make_vars
    h = hashlib.sha256("\0".join([sim, name, *options, *cxx_make_vars(), *_tool_versions()]).encode())
    for opt in options:
        if os.path.isfile(opt):
            h.update(Path(opt).read_bytes())
    for fname, text in texts:
        h.update(fname.encode())
        h.update(hashlib.sha256(text.encode()).digest())
    d = ROOT / "build" / "sim" / "_build" / f"{name}-{sim}-{h.hexdigest()[:12]}"
    d.mkdir(parents=True, exist_ok=True)
    return d


_TOOL_VERSIONS = None


def _tool_versions() -> list[str]:
    """Verilator's, Icarus's and cocotb's versions (a build of another version is another)."""
    global _TOOL_VERSIONS
    if _TOOL_VERSIONS is None:
        import subprocess

        import cocotb
        out = [cocotb.__version__]
        for cmd in (["verilator", "--version"], ["iverilog", "-V"]):
            try:
                out.append(subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.split("\n")[0])
            except (OSError, subprocess.SubprocessError):
                out.append(f"{cmd[0]}: none")
        _TOOL_VERSIONS = out
    return _TOOL_VERSIONS


@contextmanager
def locked(d: Path):
    """Hold an exclusive lock on directory `d` (pytest-xdist workers share builds)."""
    import fcntl
    d.mkdir(parents=True, exist_ok=True)
    with open(d / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


_SOURCES_HASH = None


def _sources_hash() -> str:
    """A hash of every Python source the Verilog can depend on (contracts/, hw/, the net files
    of fabric/, the test fixtures and tops of verif/, scenarios/ and tb/) and of the
    Amaranth version: a change anywhere invalidates every cached text."""
    global _SOURCES_HASH
    if _SOURCES_HASH is None:
        import amaranth
        h = hashlib.sha256(amaranth.__version__.encode())
        for d in ("contracts", "hw", "fabric", "models", "verif", "scenarios", "tb"):
            for f in sorted((ROOT / d).rglob("*.py")):
                h.update(str(f.relative_to(ROOT)).encode())
                h.update(f.read_bytes())
        _SOURCES_HASH = h.hexdigest()[:16]
    return _SOURCES_HASH


def _env_setup():
    """The Verilator build environment (verif.native.verilator_env: the venv's verilator,
    ccache, the PCH option, the compiler) in this process's environment, which cocotb's
    runner hands to make."""
    from verif.native import verilator_env
    env = verilator_env()
    os.environ.pop("VERILATOR_ROOT", None)
    for k in ("PATH", "OBJCACHE", "MAKEFLAGS"):
        if k in env:
            os.environ[k] = env[k]


def _safe(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)


# C++ optimisation of Verilator builds for tests: the lock-step runs are bound by the Python
# model and cocotb, not by the simulator, and -O0 compiles the 8-port switch in a third of
# the time of Verilator's default -Os (measured: 102 s vs 304 s, w128, no ccache).
# Benchmarks pass cxx_opt="-Os" (and a build tag of their own).
TEST_CXX_OPT = "-O0"

# make coverage's Verilator points: lines (with the arms of every if/case as branch points)
# and toggles. Not --coverage, which adds expression coverage: Verilator 5.048's expression
# pass stops with an internal error ("AstNode is not of expected type ... SEL") on Amaranth's
# bit selects in comparisons, e.g. `fpos[2:0] == 1'h1`
COVERAGE_ARGS = ["--coverage-line", "--coverage-toggle"]


def run_cocotb(*, top, name: str, test_module: str, sim: str, cfg: SwitchConfig,
               testcase: str | list[str] | None = None, waves: bool | None = None,
               seed: int | None = None, tag: str | None = None, params: dict | None = None,
               rerun_with_waves: bool = True, sources: list[Path] | None = None,
               cxx_opt: str = TEST_CXX_OPT, verilator_args: list[str] | None = None,
               public_depth: int | None = 1, quiet: bool = False, say=None) -> dict:
    """Build and run; raise CocotbFailure (with the lock-step report) if any test fails.
    `cxx_opt`: the C++ optimisation level of a Verilator build (a build directory remembers
    it and is rebuilt when it changes). `verilator_args`: more Verilator options.
    `public_depth`: Verilator makes only the signals of the top `public_depth` levels
    visible to cocotb (default 1: the top's ports, all a lock-step test reads), instead of
    every signal (cocotb's --public-flat-rw, `public_depth=None`): a switch otherwise has
    tens of thousands of public signals, a fabric hundreds of thousands, which Verilator
    takes minutes to convert and GCC much longer to compile.

    `sources`: Verilog files to simulate instead of the Amaranth top (`top` is then not
    elaborated), e.g. a synthesized netlist with its cell models (tools/gate.py).

    `quiet` (the demos): the build's compiler lines and the simulation's own log (cocotb's,
    third-party banners and warnings) go to build.log and sim.log in the build directory
    instead of the terminal; `say` (e.g. print) gets a line per phase. A failure's message
    still carries the lock-step divergence in full, and names the logs.

    Returns {"tests": n, "failed": 0, "results": path, "vcd": path-or-None}.
    """
    import logging
    import time

    from cocotb_tools.runner import get_results, get_runner

    if sim not in SIMS:
        raise ValueError(f"run_cocotb: sim must be one of {SIMS}, got {sim!r}")
    _env_setup()
    if waves is None:
        waves = os.environ.get("WAVES", "0") not in ("", "0")
    if testcase is None and os.environ.get("TESTCASE"):
        testcase = os.environ["TESTCASE"]          # e.g. `make waves TESTCASE=...`
    # RTL_COVERAGE=1 (make coverage): Verilator builds with line and toggle coverage, each run
    # writing coverage.dat into its test directory (verif/coverage.py reads them)
    coverage = sim == "verilator" and os.environ.get("RTL_COVERAGE", "0") not in ("", "0")
    tag = _safe(tag or f"{name}-{cfg.name}")
    # the test's own directory (results, lock-step report, VCD, pcaps, logs) ...
    test_dir = ROOT / "build" / ("coverage" if coverage else "sim") / f"{tag}-{sim}{'-waves' if waves else ''}"
    test_dir.mkdir(parents=True, exist_ok=True)
    if sources is None:
        # what decides the Verilog besides the sources: the top, the config and the run's
        # parameters (a plan the top is built for travels in them; a top that differs in
        # anything else must be told apart by its tag)
        key = f"{test_module}|{name}|{tag}|{cfg.to_json()}|{json.dumps(params or {}, sort_keys=True)}"
        texts = [(f"{name}.v", verilog_text(lambda: top(cfg), name, key=key, emit_src=coverage))]
    else:
        texts = [(Path(x).name, Path(x).read_text()) for x in sources]
    build_args = ["-Wno-fatal", "-Wno-lint", "-Wno-style", *(COVERAGE_ARGS if coverage else []),
                  *(verilator_args or [])] if sim == "verilator" else []
    # ... and the build's, shared by every test of the same design, simulator and options
    # (the switch's Verilog is the same for tb/test_switch.py and tb/test_first_packets.py)
    build_dir = shared_build_dir(sim, name, texts, [*build_args, cxx_opt, f"waves={waves}", f"public={public_depth}"])
    srcs = [build_dir / fname for fname, _ in texts]

    runner = get_runner(sim)
    build_log = test_dir / "build.log" if quiet else None
    sim_log = test_dir / "sim.log" if quiet else None
    if quiet:
        logging.getLogger(type(runner).__qualname__).setLevel(logging.WARNING)
    say = say or (lambda _s: None)
    makeflags = os.environ.get("MAKEFLAGS", "")
    if sim == "verilator":
        # OPT_FAST: the model's code; OPT_SLOW (constructors, the VPI symbol table) stays as
        # Verilator leaves it, unoptimised: -Os there takes GCC tens of minutes on a switch
        os.environ["MAKEFLAGS"] = f"{makeflags} OPT_FAST={cxx_opt}".strip()
    if sim == "verilator" and public_depth is not None:
        build_cmd = runner._build_command

        def _only_top():
            cmds = build_cmd()
            cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"] + ["--public-depth", str(public_depth)]
            return cmds
        runner._build_command = _only_top
    t0 = time.perf_counter()
    say(f"building {name} ({cfg.name}) for {sim}{f': log {_rel(build_log)}' if build_log else ''} ...")
    try:
        with locked(build_dir):                 # another worker may be building the same
            for path, (_, text) in zip(srcs, texts, strict=True):
                if not path.exists() or path.read_text() != text:
                    path.write_text(text)
            runner.build(sources=srcs, hdl_toplevel=name, build_dir=build_dir, build_args=build_args,
                         waves=waves, timescale=("1ns", "1ps"), log_file=build_log)
    except RuntimeError as e:
        raise CocotbFailure(f"building {name} for {sim} failed ({e}){f'; see {build_log}' if build_log else ''}") \
            from None
    finally:
        os.environ["MAKEFLAGS"] = makeflags
    say(f"built in {time.perf_counter() - t0:.0f} s; simulating{f': log {_rel(sim_log)}' if sim_log else ''} ...")

    vcd = None
    plusargs = []
    if coverage:
        (test_dir / "coverage.dat").unlink(missing_ok=True)
        _write_whole(test_dir / "coverage-config.json", cfg.to_json())   # the report selects by config
        plusargs.append(f"+verilator+coverage+file+{test_dir / 'coverage.dat'}")
    if waves:
        if sim == "icarus":
            vcd = test_dir / f"{name}.vcd"
            plusargs.append(f"+dumpfile_path={vcd}")
            os.environ["SIM_CMD_SUFFIX"] = "-vcd"       # vvp writes VCD instead of FST
        else:
            vcd = test_dir / "dump.vcd"                 # Verilator's --trace output (in the run's cwd)
    report = test_dir / "lockstep_report.json"
    report.unlink(missing_ok=True)
    results = test_dir / "results.xml"
    results.unlink(missing_ok=True)
    env = {
        "SWITCH_CONFIG": cfg.to_json(),
        "TEST_SEED": str(seed if seed is not None else 1),
        "LOCKSTEP_REPORT": str(report),
        "WAVES_VCD": str(vcd) if vcd else "",
        # PCAP=1: every link port's packets into the test dir's pcap/*.pcap (verif/pcap_monitor.py)
        "PCAP_DIR": str(test_dir / "pcap") if os.environ.get("PCAP", "0") not in ("", "0") else "",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        # the run's scenario parameters, one JSON (verif.tb.tb_params): plans, packet
        # counts, where to write results
        "TB_PARAMS": json.dumps(params or {}),
        # make coverage: the functional coverage the lock-step checker samples (verif/funcov.py)
        "FUNCOV_FILE": str(test_dir / "funcov.json") if coverage else "",
    }
    if coverage:
        (test_dir / "funcov.json").unlink(missing_ok=True)
    try:
        try:
            runner.test(test_module=test_module, hdl_toplevel=name, build_dir=build_dir,
                        test_dir=test_dir, testcase=testcase, extra_env=env, waves=waves,
                        plusargs=plusargs, results_xml=results, log_file=sim_log)
        except SystemExit:          # cocotb's runner exits when a test fails; judge below
            if not results.exists():
                raise
    finally:
        os.environ.pop("SIM_CMD_SUFFIX", None)
    ntests, nfailed = get_results(results)
    _collect(results, sim, tag)
    out = {"tests": ntests, "failed": nfailed, "results": str(results),
           "vcd": str(vcd) if vcd else None}
    if nfailed == 0 and ntests > 0:
        return out

    msg = [f"{nfailed} of {ntests} cocotb test(s) failed on {sim} ({test_module}, config {cfg.name}); "
           f"log {sim_log or 'above'}, results {results}"]
    if report.exists():
        rep = json.loads(report.read_text())
        msg.append(f"first lock-step divergence: cycle {rep['cycle']} signal {rep['signal']} "
                   f"expected {rep['expected']:#x} actual {rep['actual']:#x} at {rep['sim_time']}")
        if rep.get("table"):
            msg.append(rep["table"])
        if waves and vcd and vcd.exists():
            from verif.waves import window_around
            msg.append(window_around(vcd, rep, name))
    if not waves and rerun_with_waves:
        try:
            run_cocotb(top=top, name=name, test_module=test_module, sim=sim, cfg=cfg,
                       testcase=testcase, waves=True, seed=seed, tag=tag, params=params,
                       rerun_with_waves=False, sources=sources, quiet=quiet, cxx_opt=cxx_opt,
                       verilator_args=verilator_args, public_depth=public_depth, say=say)
        except CocotbFailure as e:
            msg.append(f"re-run with waves:\n{e}")
    raise CocotbFailure("\n".join(msg))


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def _collect(results: Path, sim: str, tag: str):
    """Keep a copy of every results.xml for the per-simulator summary (verif/summary.py)."""
    dest = ROOT / "build" / "results"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(results, dest / f"{sim}--{tag}.xml")
