"""Code coverage of the RTL, read back to the Amaranth lines it came from.

`RTL_COVERAGE=1` makes verif.runner build every Verilator test with line and toggle coverage
(verif.runner.COVERAGE_ARGS) from Verilog that carries Amaranth's `src` attributes and the arm
markers of verif/covmarks.py, and each run write `coverage.dat` (and the run's config,
`coverage-config.json`) into its test directory under build/coverage/. This module reads
them (Verilator's coverage format: one `C '<key-values>' <count>` line per point; keys
\\x01-separated, key and value \\x02-separated: f file, l line, t type, o the point's comment,
h hierarchy, S the Verilog lines a line point counts) and reports three measures per
Amaranth source file:

  * **line**: the Amaranth statements (`m.d.sync += ...`, `m.d.comb += ...`) that a test
    executed: a statement's line is covered when the Verilator line point of a Verilog block
    that holds an arm marker listing it (`cov_lines`) counted at least once;
  * **branch**: the arms of every `m.If`/`m.Elif`/`m.Else` chain, `m.Switch` and FSM (each
    arm, and "no arm taken" where the arms do not cover every value), keyed by the Amaranth
    line of the arm's condition (`cov_arm`);
  * **toggle**: every bit of the ports and registers (signals a `posedge` block assigns)
    declared in the file, both 0->1 and 1->0; memories and combinational wires are left out.

Points merge across tests and configs by Amaranth line (a statement is covered when any
instance in any test covered it). `--configs` selects the runs by config (the issue's figures
are for `small` and `small-rxreg` together). The switch's own toggle figure covers the ports
of `ib_switch` (in the switch's runs) and every register inside it, a register by its
Amaranth declaration (toggled in any test of its block or of the switch).

Waivers (verif/coverage_waivers.txt) remove what no test can reach, each with its reason:

    line   hw/switch/voq.py:123                      -- why it cannot run at these configs
    branch hw/switch/voq.py:140|no arm taken         -- why
    toggle <a regular expression over "declaration|signal[bit]">   -- why (the file has one)

A line or branch waiver names one point; a toggle waiver is a regular expression over
`<declaration or "ib_switch port">|<signal>[<bit>]`, for the bits it names.

Floors (verif/coverage_floors.json) are what `--check` holds a file's figures to.
"""
from __future__ import annotations

import bisect
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from verif.covmarks import MARKER_PREFIX

__all__ = ["Point", "read_dat", "VerilogMap", "Coverage", "merge", "summarize", "write_lcov", "load_waivers",
           "check_floors", "main"]

_LINE = re.compile(r"^C '(.*)' (\d+)$")
_ATTR = re.compile(r'\(\*\s*([\w$]+)\s*=\s*(?:"([^"]*)"|([^*]*?))\s*\*\)')
_DECL = re.compile(r"^\s*(input|output|inout|reg|wire)\b\s*(?:signed\s*)?(?:\[[^\]]*\]\s*)?(\\\S+|[A-Za-z_][\w$]*)")
_MODULE = re.compile(r"^\s*module\s+(\\\S+|[\w$]+)")
_MARK_SET = re.compile(rf"^\s*({MARKER_PREFIX}\w+)\s*=\s*1'h1;")
_MARK_ALWAYS = re.compile(rf"^\s*assign\s+({MARKER_PREFIX}\w+)\s*=\s*1'h1;")
_BLOCKING = re.compile(r"^\s*(\\\S+|[A-Za-z_][\w$]*)\s*(?:\[[^\]]*\]\s*)?=(?!=)")
_NONBLOCKING = re.compile(r"^\s*(\\\S+|[A-Za-z_][\w$]*)\s*(?:\[[^\]]*\]\s*)?<=")
_VMANGLE = re.compile(r"__0([0-9A-Fa-f]{2})")
_TOGGLE = re.compile(r"^(.*?)((?:\[\d+\])*):([01]->[01])$")
KINDS = ("line", "branch", "toggle")


@dataclass(frozen=True)
class Point:
    kind: str           # line, branch, toggle (expr when built with it)
    file: str           # the Verilog file
    line: int
    comment: str        # Verilator's: "block", "if", a toggle's "sig[3]:0->1"
    hier: str
    count: int
    ranges: str = ""    # a line point's Verilog lines: "12-15,18"


def read_dat(path: Path | str) -> list[Point]:
    """The points of one coverage.dat. A line that is not a point (the header) is skipped;
    a malformed point raises ValueError naming file and line."""
    out = []
    path = Path(path)
    for k, raw in enumerate(path.read_text(encoding="latin-1").splitlines(), 1):
        if not raw.startswith("C "):
            continue
        m = _LINE.match(raw)
        if m is None:
            raise ValueError(f"{path}:{k}: not a coverage point: {raw[:80]!r}")
        kv = {}
        for fld in m.group(1).split("\x01")[1:]:
            key, _, value = fld.partition("\x02")
            kv[key] = value
        try:
            out.append(Point(kv["t"], kv["f"], int(kv["l"]), kv.get("o", ""), kv.get("h", ""), int(m.group(2)),
                             kv.get("S", "")))
        except KeyError as e:
            raise ValueError(f"{path}:{k}: coverage point without field {e}") from None
    return out


def _ranges(s: str):
    for part in s.split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        yield from range(int(a), int(b or a) + 1)


def _unmangle(name: str) -> str:
    """Verilator's name of a signal -> the Verilog one (`__05F` is `_`, `__024` is `$`)."""
    return _VMANGLE.sub(lambda m: chr(int(m.group(1), 16)), name)


def _bare(name: str) -> str:
    return name[1:] if name.startswith("\\") else name


@dataclass
class _Module:
    ports: set = field(default_factory=set)
    regs: set = field(default_factory=set)
    mems: set = field(default_factory=set)         # memories (reg ... name [0:n]): not registers
    src: str = ""                                  # where the module's Amaranth component elaborates
    decl: dict = field(default_factory=dict)       # signal -> src of its declaration


class VerilogMap:
    """What the report needs from one generated Verilog file: its modules (ports, registers,
    each signal's declaring Amaranth line), its arm markers (module -> name -> (arm, label,
    statement lines)) and where each marker is set (Verilog line -> (module, name))."""

    def __init__(self, verilog: Path | str, root: Path | str):
        self.root = str(Path(root).resolve())
        self.modules: dict[str, _Module] = {}
        self.markers: dict[tuple, tuple] = {}
        self.set_at: dict[int, tuple] = {}
        self.always: set = set()
        self.module_at: list[tuple[int, str]] = []
        mod = None
        attrs: dict = {}
        self._text = Path(verilog).read_text().splitlines()
        self._source: dict[int, str] = {}          # Verilog line -> the first project `src` on it
        self._decl_at: dict[int, tuple] = {}       # declaration line -> (module, name)
        self._next_of: dict[tuple, str] = {}       # (module, a register's next-value wire) -> its src
        self._first_set: dict[tuple, int] = {}     # (module, name) -> the first process line setting it
        always_src = None
        for k, text in enumerate(self._text, 1):
            found = _ATTR.findall(text)
            rest = _ATTR.sub("", text).strip()
            if found and rest:
                for name, quoted, _bare_value in found:
                    if name == "src" and not self.rel(quoted).startswith("library:"):
                        self._source[k] = self.rel(quoted)
                        break
            if found and not rest:                 # attribute lines belong to what follows
                for name, quoted, bare in found:
                    attrs[name] = quoted if quoted or not bare else bare
                continue
            mm = _MODULE.match(rest)
            if mm:
                mod = _bare(mm.group(1))
                self.modules[mod] = _Module(src=self.rel(attrs["src"]) if "src" in attrs else "")
                self.module_at.append((k, mod))
                attrs = {}
                continue
            if mod is None:
                attrs = {}
                continue
            m = self.modules[mod]
            d = _DECL.match(rest)
            if d:
                name = _bare(d.group(2))
                if "src" in attrs and not self.rel(attrs["src"]).startswith("library:"):
                    self._source.setdefault(k, self.rel(attrs["src"]))
                self._decl_at[k] = (mod, name)
                if "[" in rest[d.end():]:
                    m.mems.add(name)
                if d.group(1) in ("input", "output", "inout"):
                    m.ports.add(name)
                if "src" in attrs and name not in m.decl:
                    m.decl[name] = self.rel(attrs["src"])
                if name.startswith(MARKER_PREFIX) and "cov_arm" in attrs:
                    arm, _, label = attrs["cov_arm"].partition("|")
                    stmts = [self.rel(s) for s in attrs.get("cov_lines", "-").split("|") if s and s != "-"]
                    self.markers[(mod, name)] = (self.rel(arm), label, stmts)
                attrs = {}
                continue
            attrs = {}
            s = _MARK_SET.match(rest)
            if s:
                self.set_at[k] = (mod, s.group(1))
                continue
            a = _MARK_ALWAYS.match(rest)
            if a:
                self.always.add((mod, a.group(1)))
                continue
            if rest.startswith("always @(posedge") and "src" in attrs:
                always_src = self.rel(attrs["src"])
            if rest.startswith("assign ") and k in self._source:
                self._first_set.setdefault((mod, _bare(rest[7:].split("=", 1)[0].strip().split("[")[0].strip())), k)
            bl = _BLOCKING.match(rest)
            if bl:
                self._first_set.setdefault((mod, _bare(bl.group(1))), k)
            nb = _NONBLOCKING.match(rest)
            if nb:
                m.regs.add(_bare(nb.group(1)))
                rhs = rest.split("<=", 1)[1].strip().rstrip(";").strip()
                if always_src and not always_src.startswith("library:"):
                    self._next_of[(mod, _bare(rhs))] = always_src      # a register's next value
        self._module_lines = [k for k, _m in self.module_at]

    def source(self, line: int) -> str | None:
        """The Amaranth line(s) of Verilog line `line`: its inline `src` attribute, or for a
        statement of a process the statements of the arm it is in (the arm marker nearest
        above it at its indentation), or that arm's condition."""
        got = self._source.get(line)
        if got is None and line in self._decl_at:              # a register's next-value wire
            got = self._next_of.get(self._decl_at[line])
        return got or self._arm_source(line)

    def _arm_source(self, line: int) -> str | None:
        text = self._text[line - 1] if 0 < line <= len(self._text) else ""
        indent = len(text) - len(text.lstrip())
        head = text.strip()
        if head.endswith((":", "begin")) or head.startswith(("if ", "if(", "casez", "case ")):
            # an arm's header (`if (...) begin`, `2'h1:`): the arm's marker is just below it
            for k in range(line + 1, min(line + 4, len(self._text) + 1)):
                key = self.set_at.get(k)
                if key is not None:
                    arm, label, _stmts = self.markers[key]
                    return f"{arm} ({label})"
        if line in self._decl_at and self._decl_at[line] in self._first_set:
            first = self._first_set[self._decl_at[line]]
            return self._source.get(first) or self._arm_source(first)
        for k in range(line - 1, 0, -1):
            t = self._text[k - 1]
            if t.lstrip().startswith(("always", "module", "assign")):
                return None
            key = self.set_at.get(k)
            if key is not None and len(t) - len(t.lstrip()) <= indent:
                arm, label, stmts = self.markers[key]
                return ", ".join(stmts[:3]) + (" ..." if len(stmts) > 3 else "") if stmts else f"{arm} ({label})"
        return None

    def rel(self, src: str) -> str:
        """An Amaranth `file:line` relative to the project, or 'library:<file:line>' for one
        outside it (Amaranth's own sources, the venv); the first of several `|`-joined."""
        for s in src.split("|"):
            f, _, ln = s.rpartition(":")
            ln = ln.split(".")[0]
            if s.startswith(self.root) and "/.venv/" not in s:
                return f"{Path(f).relative_to(self.root)}:{ln}"
        return "library:" + src.split("|")[0]

    def module_of(self, line: int) -> str | None:
        k = bisect.bisect_right(self._module_lines, line)
        return self.module_at[k - 1][1] if k else None


@dataclass
class Coverage:
    """Merged coverage: Amaranth statement lines, arms, toggles -> hit counts."""
    # "file:line" -> hits; ("file:line", arm label) -> hits; ("file:line", "sig[bit]") -> times
    # toggled both ways; the switch's ports and registers ("file:line" of the register or
    # "ib_switch port", "sig[bit]") -> [0->1, 1->0] over every run
    lines: dict = field(default_factory=lambda: defaultdict(int))
    arms: dict = field(default_factory=lambda: defaultdict(int))
    toggles: dict = field(default_factory=lambda: defaultdict(int))
    switch_toggles: dict = field(default_factory=dict)
    switch_universe: set = field(default_factory=set)
    unmapped: list = field(default_factory=list)     # runs whose Verilog carries no source attributes
    runs: list = field(default_factory=list)


def run_config(run_dir: Path) -> str | None:
    """The config name of a coverage run (its directory's coverage-config.json, which
    verif.runner writes), None if it has none."""
    p = Path(run_dir) / "coverage-config.json"
    if not p.exists():
        return None
    return json.loads(p.read_text()).get("name")


def merge(dat_files: list[Path], root: Path, configs: set[str] | None = None,
          switch_top: str = "ib_switch") -> Coverage:
    """Every point of every run (of the `configs`, when given) merged onto Amaranth lines."""
    maps: dict[str, VerilogMap] = {}
    cov = Coverage()
    toggle_dirs: dict = defaultdict(lambda: [0, 0])
    reg_dirs: dict = defaultdict(lambda: [0, 0])
    for f in dat_files:
        if configs is not None and run_config(f.parent) not in configs:
            continue
        cov.runs.append(f)
        points = read_dat(f)
        marker_hits: dict = defaultdict(int)
        seen_files = set()
        for p in points:
            vm = maps.get(p.file)
            if vm is None:
                vm = maps[p.file] = VerilogMap(p.file, root)
            if not vm.markers:
                # Verilog written without the coverage build's source attributes (a test that
                # simulates `make verilog`'s own output): nothing maps back to Amaranth
                if f not in cov.unmapped:
                    cov.unmapped.append(f)
                continue
            seen_files.add(p.file)
            if p.kind in ("line", "branch") and p.ranges:
                for ln in _ranges(p.ranges):
                    mk = vm.set_at.get(ln)
                    if mk is not None:
                        marker_hits[(p.file, mk)] += p.count
            elif p.kind == "toggle":
                t = _TOGGLE.match(p.comment)
                if t is None:
                    continue
                mod = vm.module_of(p.line)
                sig = _unmangle(t.group(1))
                m = vm.modules.get(mod)
                if m is None or not (sig in m.ports or (sig in m.regs and sig not in m.mems)):
                    continue
                bit = f"{sig}{t.group(2)}"
                d = 0 if t.group(3) == "0->1" else 1
                src = m.decl.get(sig)
                # (a port is declared by the Signature helper, hw/common/ports.py: not a place
                # that tells two blocks' ports apart)
                own = bool(src) and not src.startswith(("library:", "hw/common/ports.py:"))
                if own:
                    toggle_dirs[(src, bit)][d] += p.count
                # the switch's own figure: its top's ports and every register inside it, a
                # register by its Amaranth declaration (toggled in any test of any block)
                if sig in m.ports and mod == switch_top and Path(p.file).name == f"{switch_top}.v":
                    key = (f"{switch_top} port", bit)
                elif sig in m.regs:
                    # a register declared outside the project (a port of the component, made
                    # by wiring.Signature): by the component that owns it
                    key = (src, bit) if own else (f"{m.src or p.hier} (port register)", bit)
                else:
                    continue
                reg_dirs[key][d] += p.count
                if Path(p.file).name == f"{switch_top}.v":
                    cov.switch_universe.add(key)
        for vf in seen_files:
            vm = maps[vf]
            for key in vm.markers:
                marker_hits.setdefault((vf, key), 0)
            for key in vm.always:
                marker_hits[(vf, key)] += 1
        for (vf, key), n in marker_hits.items():
            arm, label, stmts = maps[vf].markers[key]
            if label != "process" and not arm.startswith("library:"):
                cov.arms[(arm, label)] += n
            for s in stmts:
                if not s.startswith("library:"):
                    cov.lines[s] += n
    for key, (up, down) in toggle_dirs.items():
        cov.toggles[key] = min(up, down)
    cov.switch_toggles = {k: reg_dirs[k] for k in cov.switch_universe}
    return cov


def load_waivers(path: Path) -> dict:
    """verif/coverage_waivers.txt: {(kind, key): reason}; a line without a reason, or of an
    unknown kind, raises ValueError naming file and line."""
    out = {}
    for k, raw, head, reason in reasoned_lines(path, "--"):
        parts = head.split(None, 1)
        if not reason or len(parts) != 2:
            raise ValueError(f"{path}:{k}: a waiver is `<line|branch|toggle> <what> -- <reason>`: {raw!r}")
        kind, what = parts[0], parts[1].strip()
        if kind not in KINDS:
            raise ValueError(f"{path}:{k}: unknown kind {kind!r} (line, branch or toggle)")
        out[(kind, what)] = reason
    return out


def reasoned_lines(path: Path, sep: str = " -- "):
    """The entries of a file of reasoned lines (the coverage waivers, the equivalent mutants):
    (line number, the line, what stands before `sep`, the reason after it, '' if none) for
    each line that is not blank or a # comment; nothing if the file does not exist."""
    path = Path(path)
    if not path.exists():
        return
    for k, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.strip()
        if text and not text.startswith("#"):
            head, _sep, reason = text.partition(sep)
            yield k, raw, head, reason.strip()


def _items(cov: Coverage):
    """(kind, file, key as a waiver names it, covered) for every point of the report."""
    for src, n in cov.lines.items():
        yield "line", src.rpartition(":")[0], src, n > 0
    for (src, label), n in cov.arms.items():
        yield "branch", src.rpartition(":")[0], f"{src}|{label}", n > 0
    for (src, bit), n in cov.toggles.items():
        yield "toggle", src.rpartition(":")[0], f"{src}|{bit}", n > 0


def summarize(cov: Coverage, waivers: dict | None = None) -> tuple[dict, list, list]:
    """({file: {kind: (covered, total)}}, holes [(kind, key)], waived [(kind, key, reason)])."""
    waivers = waivers or {}
    pats = [(re.compile(what), why) for (kind, what), why in waivers.items() if kind == "toggle"]
    table: dict = defaultdict(lambda: {k: [0, 0] for k in KINDS})
    holes, waived = [], []
    for kind, f, key, hit in _items(cov):
        if (kind, key) in waivers:
            waived.append((kind, key, waivers[(kind, key)]))
            continue
        if kind == "toggle" and any(p.fullmatch(key) for p, _w in pats):
            continue
        t = table[f][kind]
        t[1] += 1
        t[0] += hit
        if not hit:
            holes.append((kind, key))
    return ({f: {k: tuple(v) for k, v in kinds.items()} for f, kinds in table.items()}, sorted(holes),
            sorted(waived))


def switch_toggle(cov: Coverage, waivers: dict | None = None) -> tuple[int, int, list]:
    """(bits toggled both ways, bits, the holes) over the switch's ports and registers, the
    bits a toggle waiver's pattern (a regular expression over `where|sig[bit]`) matches left
    out."""
    pats = [re.compile(what) for (kind, what) in (waivers or {}) if kind == "toggle"]
    n = tot = 0
    holes = []
    for (where, bit), (up, down) in sorted(cov.switch_toggles.items()):
        key = f"{where}|{bit}"
        if any(p.fullmatch(key) for p in pats):
            continue
        tot += 1
        if up and down:
            n += 1
        else:
            holes.append(key)
    return n, tot, holes


def write_lcov(cov: Coverage, root: Path, path: Path, waivers: dict | None = None) -> Path:
    """The merged lines and arms as an lcov tracefile (DA per statement line, BRDA per arm:
    block 0 of the condition's line, one branch per arm label) for genhtml."""
    waivers = waivers or {}
    lines: dict = defaultdict(dict)
    branches: dict = defaultdict(dict)
    for src, n in cov.lines.items():
        if ("line", src) not in waivers:
            f, _, ln = src.rpartition(":")
            lines[f][int(ln)] = n
    for (src, label), n in cov.arms.items():
        if ("branch", f"{src}|{label}") not in waivers:
            f, _, ln = src.rpartition(":")
            branches[f][(int(ln), label)] = n
    out = []
    for f in sorted(set(lines) | set(branches)):
        out.append("TN:\nSF:" + str(Path(root) / f))
        for ln in sorted(lines[f]):
            out.append(f"DA:{ln},{lines[f][ln]}")
        names: dict = {}
        for (ln, label), n in sorted(branches[f].items()):
            k = names.setdefault(ln, {}).setdefault(label, len(names[ln]))
            out.append(f"BRDA:{ln},0,{k},{n if n else '-'}")
        out.append("end_of_record")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")
    return path


def check_floors(table: dict, switch: tuple[int, int], floors: dict) -> list[str]:
    """What falls below verif/coverage_floors.json: {"default": {kind: percent}, "files":
    {file: {kind: percent}} (a file's own floors over the default), "fixtures": [files] (test
    fixtures, reported but held to no floor), "switch_toggle": percent}."""
    bad = []
    default = floors.get("default", {})
    fixtures = set(floors.get("fixtures", []))
    for f, row in sorted(table.items()):
        if f in fixtures:
            continue
        want = {**default, **floors.get("files", {}).get(f, {})}
        for kind, floor in want.items():
            c, t = row.get(kind, (0, 0))
            if t and 100 * c / t < floor:
                bad.append(f"{f}: {kind} {100 * c / t:.1f} % ({c}/{t}) below its floor {floor} %")
    if "switch_toggle" in floors and switch[1]:
        pct = 100 * switch[0] / switch[1]
        if pct < floors["switch_toggle"]:
            bad.append(f"ib_switch ports and registers: toggle {pct:.1f} % below its floor {floors['switch_toggle']} %")
    return bad


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default="build/coverage", help="where the runs' coverage.dat files are")
    ap.add_argument("--configs", default="small,small-rxreg",
                    help="the runs' configs to merge (comma-separated; 'all' for every run)")
    ap.add_argument("--html", help="write the lcov tracefile there and genhtml's report (Debian's lcov)")
    ap.add_argument("--waivers", default="verif/coverage_waivers.txt")
    ap.add_argument("--check", metavar="FLOORS", help="fail when a figure is below these floors (JSON)")
    ap.add_argument("--holes", type=int, default=40, help="list at most this many holes per kind")
    a = ap.parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    files = sorted(Path(a.dir).rglob("coverage.dat"))
    if not files:
        raise SystemExit(f"verif.coverage: no coverage.dat under {a.dir} (run the tests with RTL_COVERAGE=1)")
    configs = None if a.configs == "all" else set(a.configs.split(","))
    cov = merge(files, root, configs)
    if not cov.runs:
        raise SystemExit(f"verif.coverage: no run of the configs {a.configs} under {a.dir}")
    waivers = load_waivers(root / a.waivers)
    table, holes, waived = summarize(cov, waivers)
    sw = switch_toggle(cov, waivers)
    if a.html:
        import shutil
        import subprocess
        info = write_lcov(cov, root, Path(a.html) / "coverage.info", waivers)
        if shutil.which("genhtml") is None:
            raise SystemExit("verif.coverage: genhtml not found (apt-get install lcov; make setup installs it)")
        r = subprocess.run(["genhtml", "-q", "--branch-coverage", "--prefix", str(root), "-o", str(a.html), str(info)],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"verif.coverage: genhtml failed:\n{r.stderr[-2000:]}")
        print(f"HTML: {Path(a.html) / 'index.html'}")
    print(f"code coverage of {len(cov.runs) - len(cov.unmapped)} runs (configs: {a.configs}); waived: {len(waived)} "
          f"({a.waivers})")
    for f in cov.unmapped:
        print(f"  left out: {f.parent.name} (its Verilog has no source attributes: the test simulates "
              f"`make verilog`'s output)")
    print()
    # the floors file names the fixtures (reported apart) whether or not the floors are checked
    ffile = root / (a.check or "verif/coverage_floors.json")
    floors = json.loads(ffile.read_text()) if ffile.exists() else {}
    fixtures = set(floors.get("fixtures", []))
    print(f"{'Amaranth source':40s}" + "".join(f"{k:>22s}" for k in KINDS))
    tot = {k: [0, 0] for k in KINDS}
    for f in sorted(table):
        cells = []
        for k in KINDS:
            c, t = table[f].get(k, (0, 0))
            if f not in fixtures:
                tot[k][0] += c
                tot[k][1] += t
            cells.append(f"{c:>6d}/{t:<6d}{(100 * c / t if t else 100):6.1f}%" if t else "-")
        print(f"{f + (' (fixture)' if f in fixtures else ''):40s}" + "".join(f"{x:>22s}" for x in cells))
    print(f"{'all (but fixtures)':40s}" + "".join(f"{c:>6d}/{t:<6d}{(100 * c / t if t else 100):6.1f}%".rjust(22)
                                   for c, t in tot.values()))
    if sw[1]:
        print(f"\nib_switch's ports and registers: {sw[0]}/{sw[1]} bits toggled both ways "
              f"({100 * sw[0] / sw[1]:.1f} %; toggle waivers' bits left out)")
        by_sig: dict = defaultdict(int)
        for h in sw[2]:
            by_sig[re.sub(r"\[\d+\]$", "[*]", h)] += 1
        worst = sorted(by_sig.items(), key=lambda x: -x[1])[:a.holes]
        if worst:
            print(f"  bits not toggled, by signal (first {len(worst)} of {len(by_sig)}):")
            for sig, k in worst:
                print(f"  {k:>5d}  {sig}")
    for kind in ("line", "branch"):
        hs = [h for h in holes if h[0] == kind]
        if hs:
            print(f"\n{len(hs)} {kind} holes" + (f" (first {a.holes})" if len(hs) > a.holes else "") + ":")
            for _k, key in hs[:a.holes]:
                print(f"  {key}")
    rc = 0
    if a.check:
        bad = check_floors(table, sw, floors)
        for b in bad:
            print(f"BELOW FLOOR: {b}")
        rc = 1 if bad else 0
        if not bad:
            print(f"\nevery figure at or above its floor ({a.check})")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
