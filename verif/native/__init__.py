"""Native simulation: a self-contained top (ib_soak, ib_loopback, ib_fabric, ...) compiled by
Verilator with a C++ main of ours (verif/native/driver.cpp), no cocotb and no VPI. The model
runs alone; a controller talks to it a command a line over a pipe (set, get, step, until,
axi_read/axi_write: the driver's header), so Python costs a few microseconds per command,
never per cycle.

    exe = build("ib_soak", [Path("ib_soak.v")], Path("build/native/ib_soak"))
    with NativeSim(exe) as s:
        s.set(rst=1); s.step(3); s.set(rst=0)
        s.until("cfg_done", "==", 1, max_cycles=10_000)
        print(s.get("now"))

`build` is incremental: the binary is kept while its sources, options and driver are the
same (a stamp of their hash). The same command lines work without Python: `Vtop script`.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["build", "NativeSim", "NativeError", "DRIVER", "verilator_env", "read_record"]

DRIVER = Path(__file__).resolve().parent / "driver.cpp"

# Verilator options for speed: X values resolved once at build time (tests compare with
# golden models that know no X), assertions off, the C++ optimised
VERILATOR_FAST = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "--noassert", "-Wno-fatal", "-Wno-lint",
                  "-Wno-style", "-Wno-UNOPTFLAT"]


class NativeError(RuntimeError):
    pass


def cxx_make_vars() -> list[str]:
    """The make variables that choose the C++ compiler of a Verilator build: clang++ where it
    is installed (`make setup` installs it), which compiles Verilator's C++ about 1.7x as fast
    as g++ at the regression's -O0 (docs/verification.md, "Build time"); it needs libatomic
    named at the link. Otherwise the wheel's own choice, g++."""
    cxx = shutil.which("clang++")
    return [f"CXX={cxx}", f"LINK={cxx}", "USER_LDLIBS=-latomic"] if cxx else []


def verilator_env() -> dict:
    """The environment a Verilator build needs here: the venv's verilator first on PATH,
    VERILATOR_ROOT unset, ccache, the PCH include option the PyPI wheel leaves empty (g++
    takes the PCH as a linker input otherwise) and the compiler (cxx_make_vars)."""
    env = dict(os.environ)
    venv_bin = str(Path(sys.executable).parent)
    if venv_bin not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    env.pop("VERILATOR_ROOT", None)
    if shutil.which("ccache"):
        env.setdefault("OBJCACHE", "ccache")
    mf = env.get("MAKEFLAGS", "").split()
    for var in ["CFG_CXXFLAGS_PCH_I=-include", *cxx_make_vars()]:
        if not any(x.startswith(var.split("=")[0] + "=") for x in mf):
            mf.append(var)
    env["MAKEFLAGS"] = " ".join(mf)
    return env


_PORT = re.compile(r"VL_(IN|OUT)(8|16|64|W)?\(&(\w+),(\d+),(\d+)(?:,\d+)?\);")


def ports_from_header(header: Path) -> list[tuple[str, str, int, bool]]:
    """(Verilog name, C++ member, width, is input) of every top port in a Verilated header
    (Verilator writes `__` in a name as `___05F`)."""
    out = []
    for mt in _PORT.finditer(header.read_text()):
        member = mt.group(3)
        width = int(mt.group(4)) - int(mt.group(5)) + 1
        out.append((member.replace("___05F", "__"), member, width, mt.group(1) == "IN"))
    if not out:
        raise NativeError(f"{header}: no ports found in the Verilated header")
    return out


def reset_wrapper(top: str, ports: list[tuple[str, bool, int]], name: str | None = None) -> str:
    """A Verilog module `name` (default `<top>_native`) with the ports of `top` (`ports`:
    (name, is input, width), as hw.fabric.fabric.module_ports gives them, `clk` and `rst`
    among them) whose `rst` reaches `top` through a register. Why: Verilator evaluates all
    logic that depends combinationally on a top-level input at every eval() (its
    input-combinational region), and through Amaranth's synchronous reset every register's
    next state depends on `rst`; registered, the region shrinks to the few paths from the
    real inputs. Reset then takes effect one cycle later, which no procedure that holds `rst`
    for a few cycles can tell."""
    decl = [f"  {'input' if i else 'output'} {f'[{w - 1}:0] ' if w > 1 else ''}{n};" for n, i, w in ports]
    conn = ",\n".join(f"    .{n}({'rst_q' if n == 'rst' else n})" for n, _i, _w in ports)
    names = ", ".join(n for n, _i, _w in ports)
    return (f"module {name or top + '_native'}({names});\n" + "\n".join(decl) + "\n  reg rst_q = 1'b1;\n"
            "  always @(posedge clk) rst_q <= rst;\n"
            f"  {top} dut (\n{conn}\n  );\nendmodule\n")


def build(top: str, sources: list[Path], out: Path, *, cxx_opt: str = "-O2", threads: int = 1,
          trace: bool = False, debug: bool = False, extra_args: list[str] | None = None, ports: list | None = None,
          say=None) -> Path:
    """Verilate `sources` (top module `top`) with the native driver into `out`; returns the
    executable. Rebuilt only when the sources, options or driver changed. `ports` (the top's
    ports, (name, is input, width); `clk` and `rst` added): wrap the top so that its reset is
    registered (`reset_wrapper`). `trace`: the `trace` command can write a VCD; `debug`:
    every signal public and VPI, for the `peek` command (slower). Held under a lock on
    `out`: pytest-xdist's workers may ask for the same binary at once."""
    from verif.runner import locked
    with locked(out):
        return _build(top, sources, out, cxx_opt=cxx_opt, threads=threads, trace=trace, debug=debug,
                      extra_args=extra_args, ports=ports, say=say)


def _build(top, sources, out, *, cxx_opt, threads, trace, debug, extra_args, ports, say) -> Path:
    sources = list(sources)
    if ports is not None:
        # Amaranth's clock and reset are ports of the Verilog, not members of the signature
        ports = [(n, True, 1) for n in ("clk", "rst") if n not in {p[0] for p in ports}] + list(ports)
        wrapper = out / f"{top}_native.v"
        text = reset_wrapper(top, ports)
        if not wrapper.exists() or wrapper.read_text() != text:
            wrapper.write_text(text)
        sources.append(wrapper)
        top = f"{top}_native"
    args = [*VERILATOR_FAST, "--top-module", top, "--prefix", "Vtop", *(["--threads", str(threads)]
                                                                       if threads > 1 else []),
            *(["--trace"] if trace else []),
            *(["--public-flat-rw", "--vpi", "-CFLAGS", "-DNATIVE_VPI"] if debug else []), *(extra_args or [])]
    h = hashlib.sha256()
    for p in [*sources, DRIVER]:
        h.update(Path(p).read_bytes())
    h.update(repr((args, cxx_opt)).encode())
    stamp = out / "stamp"
    exe = out / "Vtop"
    if exe.exists() and stamp.exists() and stamp.read_text() == h.hexdigest():
        return exe
    obj = out / "obj"
    shutil.rmtree(obj, ignore_errors=True)
    env = verilator_env()
    t0 = time.perf_counter()
    cmd = ["verilator", "--cc", "--exe", "-Mdir", str(obj), "-CFLAGS", f"-I{obj.resolve()}", *args,
           *[str(Path(s).resolve()) for s in sources], str(DRIVER)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode:
        raise NativeError(f"verilator failed ({' '.join(cmd)}):\n{r.stdout[-4000:]}{r.stderr[-4000:]}")
    ports = ports_from_header(obj / "Vtop.h")
    (obj / "ports.inc").write_text("".join(f'X("{n}", {m}, {w}, {int(i)})\n' for n, m, w, i in ports))
    t1 = time.perf_counter()
    jobs = str(os.cpu_count() or 2)
    cmd = ["make", "-C", str(obj), "-f", "Vtop.mk", "-j", jobs, f"OPT_FAST={cxx_opt}", f"OPT_GLOBAL={cxx_opt}", "Vtop"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode:
        raise NativeError(f"C++ build failed ({' '.join(cmd)}):\n{r.stdout[-4000:]}{r.stderr[-4000:]}")
    shutil.copy(obj / "Vtop", exe)
    stamp.write_text(h.hexdigest())
    if say:
        say(f"native build of {top}: Verilator {t1 - t0:.0f} s, C++ {time.perf_counter() - t1:.0f} s ({cxx_opt})")
    return exe


def read_record(path: Path | str):
    """A `record` file as a numpy array of shape (records, 3): cycle, port index, value."""
    import numpy as np
    raw = np.fromfile(path, dtype="<u8")
    if raw.size % 3:
        raise NativeError(f"{path}: {raw.size * 8} bytes is not a whole number of 24-byte records")
    return raw.reshape(-1, 3)


class NativeSim:
    """The driver as a subprocess. Methods return what its answer says; an `error` answer
    raises NativeError naming the command."""

    def __init__(self, exe: Path, *, cwd: Path | None = None):
        self.exe = Path(exe)
        self.p = subprocess.Popen([str(self.exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  cwd=cwd, bufsize=1)
        self._ports = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
            except BrokenPipeError:
                pass
            self.p.wait(timeout=30)

    def cmd(self, line: str) -> str:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        ans = self.p.stdout.readline()
        if not ans:
            raise NativeError(f"{self.exe}: the simulator ended (exit {self.p.wait()}) at: {line}")
        ans = ans.rstrip("\n")
        if ans.startswith("error"):
            raise NativeError(f"{self.exe}: {line!r}: {ans}")
        return ans

    # ---- conveniences
    def ports(self) -> dict[str, tuple[bool, int]]:
        if self._ports is None:
            self._ports = {}
            for item in self.cmd("ports").split():
                name, d, w = item.rsplit(":", 2)
                self._ports[name] = (d == "in", int(w))
        return self._ports

    def set(self, values: dict | None = None, **kw) -> None:
        vals = {**(values or {}), **kw}
        if vals:
            self.cmd("set " + " ".join(f"{k} {int(v):#x}" for k, v in vals.items()))

    def get(self, *names: str) -> int | list[int]:
        vals = [int(x, 16) for x in self.cmd("get " + " ".join(names)).split()]
        return vals[0] if len(names) == 1 else vals

    def get_dict(self, names: list[str]) -> dict[str, int]:
        out = {}
        for k in range(0, len(names), 200):
            part = names[k:k + 200]
            out.update(zip(part, self.get(*part) if len(part) > 1 else [self.get(*part)], strict=True))
        return out

    def step(self, n: int) -> int:
        return int(self.cmd(f"step {int(n)}"))

    def until(self, expr: str | list[str], op: str, value: int, max_cycles: int, chunk: int = 1) -> tuple[bool, int]:
        """Run until the sum of the ports in `expr` compares `op` to `value`, looking every
        `chunk` cycles; (reached, cycles run)."""
        e = expr if isinstance(expr, str) else "+".join(expr)
        how, n = self.cmd(f"until {e} {op} {int(value)} {int(max_cycles)} {int(chunk)}").split()
        return how == "hit", int(n)

    def peek(self, *paths: str) -> int | list[int]:
        """Internal signals by hierarchical name (a debug build)."""
        vals = [int(x, 16) for x in self.cmd("peek " + " ".join(paths)).split()]
        return vals[0] if len(paths) == 1 else vals

    def cycles(self) -> int:
        return int(self.cmd("cycles"))

    def record(self, path: Path | str | None, *names: str) -> None:
        """From now on, every cycle's non-zero values of the ports `names` go to `path`
        (records of three little-endian uint64: cycle, index into `names`, value; read them
        with `read_record`); None stops (and closes the file)."""
        if path is None:
            self.cmd("record off")
            return
        if not names:
            raise ValueError("record: no port named")
        self.cmd(f"record {Path(path).resolve()} " + " ".join(names))

    def axi_write(self, prefix: str, addr: int, data: int) -> int:
        return int(self.cmd(f"axi_write {prefix} {addr:#x} {data & 0xFFFFFFFF:#x}"))

    def axi_read(self, prefix: str, *addrs: int) -> list[int]:
        out = []
        for k in range(0, len(addrs), 200):
            out += [int(x, 16) for x in self.cmd(f"axi_read {prefix} " + " ".join(f"{a:#x}" for a in
                                                                                   addrs[k:k + 200])).split()]
        return out
