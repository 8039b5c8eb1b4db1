"""Imports run one way (docs/verification.md, "Layout"):

    contracts  <-  product (hw, models, fw, fabric, sm, netsim)  <-  verification library (verif)
               <-  scenarios  <-  {tests (tb, tests), benchmarks (bench), demos, flow tools (tools, formal)}

Every `import` in every module of the project is read (the syntax tree, so also the ones
inside functions) and judged by `LAYERS`; a module named as a string constant where a
cocotb test module is expected (`test_module="tb.test_soak"`) or to `importlib.import_module`
/ `__import__` counts as an import of it. Contracts never import amaranth, cocotb or numpy;
models never amaranth, cocotb or the RTL (`hw`); the product never cocotb. A violation is
reported as file:line with the import and the rule it breaks. (A name computed at run time
cannot be read here: such code names its modules in constants.)
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# package -> (layer, the project packages it may import besides its own and the layers below)
# Layer numbers: a package may import any project package of a lower layer.
LAYERS = {
    "contracts": 0,
    "hw": 1, "models": 1, "fw": 1, "fabric": 1, "sm": 1, "netsim": 1,
    "verif": 2,
    "scenarios": 3,
    "tb": 4, "tests": 4, "bench": 4, "demos": 4, "tools": 4, "formal": 4,
}
# imports between packages of the same layer that are allowed (importer -> importees)
SIDEWAYS = {
    "hw": {"fabric"},                    # the RTL fabric is built from a net-file topology
    "fw": set(), "models": set(),
    "fabric": {"fw", "sm"},              # the MAD-level fabric runs the firmware; the ibsim server, the SM's views
    "sm": {"fw", "fabric"},              # the SM speaks the firmware's MAD codecs, reads net files
    "netsim": {"fabric", "sm"},          # the simulator runs on the SM's fabrics and LFTs
    "tb": {"tests", "tools"}, "tests": {"tb", "tools", "formal"},   # the tests; of flow tools, of the proof
    "bench": {"tools"}, "demos": set(), "tools": set(), "formal": {"tools"},
}
# third-party packages a package must never import
FORBIDDEN = {
    "contracts": {"amaranth", "cocotb", "numpy"},
    "models": {"amaranth", "cocotb", "hw"},
    "fw": {"amaranth", "cocotb"}, "sm": {"amaranth", "cocotb"}, "netsim": {"amaranth", "cocotb"},
    "fabric": {"cocotb"}, "hw": {"cocotb"},
}
_TEST_MODULE = re.compile(r"^(tb|tests)\.[\w.]+$")


def _modules(root: Path):
    for pkg in LAYERS:
        for f in sorted((root / pkg).rglob("*.py")):
            yield pkg, f


def _imports(path: Path, root: Path):
    """(line, module) of every import in `path`, relative imports resolved; plus string
    constants passed as `test_module=` (a cocotb test module run by name)."""
    tree = ast.parse(path.read_text(), str(path))
    parts = path.relative_to(root).with_suffix("").parts
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[:len(parts) - node.level]
                name = ".".join(base + ((node.module,) if node.module else ()))
            else:
                name = node.module or ""
            yield node.lineno, name
            for a in node.names:                 # `from pkg import module`
                yield node.lineno, f"{name}.{a.name}"
        elif isinstance(node, ast.keyword) and node.arg == "test_module" and isinstance(node.value, ast.Constant) \
                and isinstance(node.value.value, str):
            yield node.lineno, node.value.value
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and _callee(node.func) in ("import_module", "__import__"):
            yield node.lineno, node.args[0].value


def _callee(func) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def violations(root: Path = ROOT) -> list[str]:
    out = []
    for pkg, f in _modules(root):
        rel = f.relative_to(root)
        seen = set()
        for line, name in _imports(f, root):
            top = name.split(".")[0]
            if line in seen:                     # one report a line (`from a import b` is a and a.b)
                continue
            where = f"{rel}:{line}: imports {name}"
            n0 = len(out)
            if top in FORBIDDEN.get(pkg, ()):
                out.append(f"{where}: {pkg} never imports {top}")
                seen.add(line)
                continue
            if top not in LAYERS or top == pkg:
                continue
            if LAYERS[top] < LAYERS[pkg] or top in SIDEWAYS.get(pkg, ()):
                continue
            if _TEST_MODULE.match(name) and pkg not in ("tb", "tests"):
                out.append(f"{where}: a test module, imported or run outside the tests (what it holds that others "
                           "need belongs in scenarios/ or verif/)")
            elif LAYERS[top] > LAYERS[pkg]:
                out.append(f"{where}: {pkg} (layer {LAYERS[pkg]}) imports {top} (layer {LAYERS[top]}) above it")
            else:
                out.append(f"{where}: {pkg} imports {top} beside it (allowed beside: "
                           f"{sorted(SIDEWAYS.get(pkg, ())) or 'nothing'})")
            if len(out) > n0:
                seen.add(line)
    return out


def test_every_package_has_a_layer():
    """A new top-level package must be given its place in LAYERS."""
    pkgs = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert pkgs <= set(LAYERS), f"packages without a layer in tests/test_layers.py: {sorted(pkgs - set(LAYERS))}"


def test_imports_run_one_way():
    bad = violations()
    assert not bad, "imports against the layering:\n  " + "\n  ".join(bad)


def test_the_check_bites(tmp_path):
    """A product module that imports a test module, a model that imports amaranth, a
    benchmark that runs a cocotb test module of tb/ and a demo that imports a test module by
    name are each reported with file:line."""
    for pkg in LAYERS:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / "fw" / "bad.py").write_text("import os\nfrom tb.test_soak import CFG\n")
    (tmp_path / "models" / "bad.py").write_text("\n\nfrom amaranth.hdl import Signal\n")
    (tmp_path / "bench" / "bad.py").write_text("run(test_module='tb.test_switch')\n")
    (tmp_path / "demos" / "bad.py").write_text("import importlib\nm = importlib.import_module('tests.test_x')\n")
    (tmp_path / "verif" / "ok.py").write_text("from contracts.config import SwitchConfig\nimport models.voq\n")
    got = sorted(violations(tmp_path))
    assert len(got) == 4, got
    assert got[0].startswith("bench/bad.py:1: imports tb.test_switch"), got
    assert got[1].startswith("demos/bad.py:2: imports tests.test_x: a test module"), got
    assert got[2].startswith("fw/bad.py:2: imports tb.test_soak: a test module"), got
    assert got[3].startswith("models/bad.py:3: imports amaranth.hdl: models never imports amaranth"), got


@pytest.mark.parametrize("pkg", ["models", "contracts"])
def test_pure_packages_import_alone(pkg):
    """models/ and contracts/ import without amaranth, cocotb or the RTL loaded (a check at
    run time, beside the syntax-tree one above)."""
    import subprocess
    import sys
    code = (f"import sys, importlib, pkgutil, {pkg}\n"
            f"for m in pkgutil.walk_packages({pkg}.__path__, '{pkg}.'): importlib.import_module(m.name)\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('amaranth', 'cocotb', 'hw')]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
