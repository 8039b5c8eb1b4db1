"""Code coverage of the RTL, read back to the Amaranth lines it came from.

`RTL_COVERAGE=1` makes verif.runner build every Verilator test with line and toggle
coverage (verif.runner.COVERAGE_ARGS: line, branch and toggle points) from Verilog that
carries Amaranth's `src` attributes, and each run write `coverage.dat` into its test
directory under build/coverage/. This module
reads those files (Verilator's coverage format: one `C '<key-values>' <count>` line per
point; keys \\x01-separated, each key and value \\x02-separated: f file, l line, n column,
t type, page, o the point's comment, h hierarchy), merges them, and maps every point to an
Amaranth source line:

  * a Verilog line that carries inline `(* src = "file:line" *)` attributes (an `assign` of
    a cell's output) maps to the first of them in the project's own files;
  * a declaration (`reg`, `wire`, ports) maps to the `src` attribute on the line above it;
  * any other line (the statements of an `always` block: `if (\\$12 )`, `x = ...`, `case`)
    maps to the source of the identifiers it names: the `assign` that drives a condition
    wire, or else the signal's declaration.

Points whose source is outside the project (Amaranth's library, e.g. wiring.py's port
plumbing) are counted apart, as `library`. Points merge by (kind, Amaranth file, line, the
point's comment) across tests and configs, so that a line is covered when any test of any
config covers it.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Point", "read_dat", "SourceMap", "merge", "summarize", "write_lcov"]

_LINE = re.compile(r"^C '(.*)' (\d+)$")
_SRC = re.compile(r'\(\*\s*src\s*=\s*"([^"]+)"\s*\*\)')
_DECL = re.compile(r"^\s*(?:input|output|inout|reg|wire)\b.*?(\\\S+|\w+)\s*(?:=[^;]*)?;")
_IDENT = re.compile(r"\\\S+|[A-Za-z_][\w$]*")
_KEYWORDS = {"if", "else", "begin", "end", "case", "casez", "endcase", "always", "posedge", "negedge", "assign",
             "default", "reg", "wire", "input", "output", "signed"}
KINDS = ("line", "branch", "toggle")


@dataclass(frozen=True)
class Point:
    kind: str           # line, branch, expr, toggle
    file: str           # the Verilog file
    line: int
    comment: str        # Verilator's: "block", "cond_then", a toggle's "sig[3]:0->1", an expression term
    hier: str
    count: int


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
        for field in m.group(1).split("\x01")[1:]:
            key, _, value = field.partition("\x02")
            kv[key] = value
        try:
            out.append(Point(kv["t"], kv["f"], int(kv["l"]), kv.get("o", ""), kv.get("h", ""), int(m.group(2))))
        except KeyError as e:
            raise ValueError(f"{path}:{k}: coverage point without field {e}") from None
    return out


class SourceMap:
    """Verilog line -> Amaranth `file:line`, for one generated Verilog file (module
    docstring). `root`: the project; sources outside it are 'library'."""

    def __init__(self, verilog: Path | str, root: Path | str):
        self.root = str(Path(root).resolve())
        lines = Path(verilog).read_text().splitlines()
        self.by_line: dict[int, str | None] = {}
        driver: dict[str, str] = {}            # identifier -> src of the assign that drives it
        declared: dict[str, str] = {}          # identifier -> src of its declaration
        pending = None
        for k, text in enumerate(lines, 1):
            srcs = _SRC.findall(text)
            stripped = _SRC.sub("", text).strip()
            if not stripped and srcs:          # an attribute line: it belongs to the next declaration
                pending = srcs[0]
                continue
            d = _DECL.match(stripped)
            if d and pending:
                declared[d.group(1)] = pending
            if stripped.startswith("assign ") and srcs:
                lhs = stripped[len("assign "):].split("=", 1)[0].strip().split("[")[0].strip()
                driver[lhs] = self._own(srcs) or srcs[0]
            if srcs:
                self.by_line[k] = self._own(srcs) or srcs[0]
            elif d and pending:
                self.by_line[k] = pending
            pending = None
        self._driver, self._declared, self._lines = driver, declared, lines

    def _own(self, srcs):
        for s in srcs:
            if s.startswith(self.root) and "/.venv/" not in s:
                return s
        return None

    def source(self, line: int) -> str:
        """The Amaranth `file:line` (relative to the project) of Verilog line `line`, or
        'library:<file:line>' for a source outside the project, or 'unmapped'."""
        s = self.by_line.get(line)
        if s is None and 0 < line <= len(self._lines):
            text = self._lines[line - 1]
            names = [n for n in _IDENT.findall(text) if n not in _KEYWORDS]
            cands = [self._driver.get(n) or self._declared.get(n) for n in names]
            cands = [c for c in cands if c]
            s = next((c for c in cands if self._own([c])), cands[0] if cands else None)
            self.by_line[line] = s
        if s is None:
            return "unmapped"
        if self._own([s]):
            return str(Path(s.rsplit(":", 1)[0]).relative_to(self.root)) + ":" + s.rsplit(":", 1)[1].split(".")[0]
        return "library:" + s


def merge(dat_files: list[Path], root: Path) -> dict:
    """(kind, source, comment) -> hit count, over every point of every file (source from the
    SourceMap of the Verilog file each point names)."""
    maps: dict[str, SourceMap] = {}
    out: dict = defaultdict(int)
    for f in dat_files:
        for p in read_dat(f):
            sm = maps.get(p.file)
            if sm is None:
                sm = maps[p.file] = SourceMap(p.file, root)
            src = sm.source(p.line)
            out[(p.kind, src, p.comment if p.kind != "line" else "")] += p.count
    return out


def summarize(merged: dict) -> dict:
    """Per Amaranth file: {kind: (covered, total)}; a point is covered when any test hit it.
    Library and unmapped points are gathered under their own names."""
    table: dict = defaultdict(lambda: {k: [0, 0] for k in KINDS})
    for (kind, src, _c), n in merged.items():
        f = src.rsplit(":", 1)[0] if not src.startswith(("library:", "unmapped")) else src.split(":", 1)[0]
        t = table[f].setdefault(kind, [0, 0])
        t[1] += 1
        t[0] += n > 0
    return {f: {k: tuple(v) for k, v in kinds.items()} for f, kinds in table.items()}


def write_lcov(merged: dict, root: Path, path: Path) -> Path:
    """The merged points of the project's own sources as an lcov tracefile: DA per line
    point, BRDA per branch point (one block per line, the branch named by Verilator's
    comment), for genhtml."""
    lines: dict = defaultdict(lambda: defaultdict(int))
    branches: dict = defaultdict(lambda: defaultdict(int))
    for (kind, src, comment), n in merged.items():
        if src.startswith(("library:", "unmapped")):
            continue
        f, _, ln = src.rpartition(":")
        if kind == "line":
            lines[f][int(ln)] += n
        elif kind == "branch":
            branches[f][(int(ln), comment)] += n
    out = []
    for f in sorted(set(lines) | set(branches)):
        out.append("TN:\nSF:" + str(Path(root) / f))
        for ln in sorted(lines[f]):
            out.append(f"DA:{ln},{lines[f][ln]}")
        names: dict = {}
        for (ln, comment), n in sorted(branches[f].items()):
            k = names.setdefault(ln, {}).setdefault(comment, len(names[ln]))
            out.append(f"BRDA:{ln},0,{k},{n if n else '-'}")
        out.append("end_of_record")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n")
    return path


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default="build/coverage", help="where the runs' coverage.dat files are")
    ap.add_argument("--html", help="write the lcov tracefile there and genhtml's report (Debian's lcov)")
    a = ap.parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    files = sorted(Path(a.dir).rglob("coverage.dat"))
    if not files:
        raise SystemExit(f"verif.coverage: no coverage.dat under {a.dir} (run the tests with RTL_COVERAGE=1)")
    merged = merge(files, root)
    table = summarize(merged)
    if a.html:
        import shutil
        import subprocess
        info = write_lcov(merged, root, Path(a.html) / "coverage.info")
        if shutil.which("genhtml") is None:
            raise SystemExit("verif.coverage: genhtml not found (apt-get install lcov; make setup installs it)")
        r = subprocess.run(["genhtml", "-q", "--branch-coverage", "--prefix", str(root), "-o", str(a.html), str(info)],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"verif.coverage: genhtml failed:\n{r.stderr[-2000:]}")
        print(f"HTML: {Path(a.html) / 'index.html'}  (from {len(files)} runs)")
    print(f"{'source':44s}" + "".join(f"{k:>20s}" for k in KINDS))
    for f in sorted(table):
        row = table[f]
        cells = []
        for k in KINDS:
            c, t = row.get(k, (0, 0))
            cells.append(f"{c:>7d}/{t:<6d}{(100 * c / t if t else 100):5.1f}%")
        print(f"{f:44s}" + "".join(f"{x:>20s}" for x in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
