"""Arm markers: Amaranth statement and branch coverage out of Verilator's line coverage.

Yosys writes an Amaranth process as an `always @*` block whose statements carry no source
location: Verilator's line points tell which Verilog block ran, not which Amaranth
statement. For the coverage build only (`RTL_COVERAGE=1`, verif.runner), `arm_markers()`
makes Amaranth's RTLIL backend write, into every arm of every process (each `m.If` /
`m.Elif` / `m.Else`, `m.Case` / `m.Default`, FSM state, and the process's top level), one
assignment of a 1-bit marker wire of its own:

    (* cov_arm = "hw/x.py:120|arm 1 of 3" *)
    (* cov_lines = "hw/x.py:121|hw/x.py:124" *)
    reg \\__cov_arm_7 ;
    ...
        if (\\$41 ) begin
          \\__cov_arm_7  = 1'h1;
          ...

`cov_arm` names the arm (the Amaranth line of its condition, the arm's place in its
If/Elif/Else chain or Switch) and `cov_lines` the Amaranth lines of the statements the arm
holds for this process's signal. The marker is written in the arm's Verilog block, so the
line point Verilator counts for that block counts the arm (verif.coverage reads both). An
If/Elif chain without `m.Else` gets a marker for "no arm taken" as well: the fall-through is
a branch too.

The markers are wires that drive nothing: the logic, and everything a test sees, is the
same as without them. The backend function replaced is Amaranth 0.5's
`ModuleEmitter.emit_assignment_list` (amaranth/back/rtlil.py, BSD-2-Clause), copied with the
marker lines added; `arm_markers()` refuses another Amaranth version.

(An If/Elif chain without Else has the arm "no arm taken"; a Switch on a value, an FSM or an
`Array` index without a Default has none, as a Verilog `case` has none: its values outside the
cases are either impossible, an FSM's unused encodings, or a choice not to act, which the
cases' own arms already count.)
"""
from __future__ import annotations

from contextlib import contextmanager

__all__ = ["arm_markers", "MARKER_PREFIX"]

MARKER_PREFIX = "__cov_arm_"
_AMARANTH = "0.5."


def _src(loc) -> str | None:
    return None if loc is None else f"{loc[0]}:{loc[1]}"


def _exhaustive(patterns_list, width: int) -> bool:
    """Whether the case patterns ('0', '1', '-' strings, MSB first) match every value of a
    `width`-bit test (checked exactly up to 14 bits; wider tests count as not exhaustive)."""
    if width > 14:
        return False
    need = 1 << width
    seen = set()
    for patterns in patterns_list:
        for p in patterns:
            free = [i for i, ch in enumerate(reversed(p)) if ch == "-"]
            base = sum(1 << i for i, ch in enumerate(reversed(p)) if ch == "1")
            for k in range(1 << len(free)):
                v = base
                for j, bit in enumerate(free):
                    if k >> j & 1:
                        v |= 1 << bit
                seen.add(v)
            if len(seen) == need:
                return True
    return len(seen) == need


def _emit_assignment_list(self, cell_idx, cell):
    from amaranth.back import rtlil
    from amaranth.hdl import _nir

    markers = []           # (container, arm label, arm src, [statement srcs])

    def mark(container, label, arm_src):
        entry = (container, label, arm_src, [])
        markers.append(entry)
        return entry[3]

    def emit_assignments(case, cond, stmts):
        nonlocal pos
        while pos < len(cell.assignments):
            assign = cell.assignments[pos]
            if assign.cond == cond:
                case.assign(self.sigspec(lhs[assign.start:assign.start + len(assign.value)]),
                            self.sigspec(assign.value))
                if assign.src_loc is not None and _src(assign.src_loc) not in stmts:
                    stmts.append(_src(assign.src_loc))
                pos += 1
            else:
                search_cond = assign.cond
                while True:
                    if search_cond == cond:
                        break
                    if search_cond == _nir.Net.from_const(1):
                        return
                    priority_cell_idx = search_cond.cell
                    priority_cell = self.netlist.cells[priority_cell_idx]
                    assert isinstance(priority_cell, _nir.PriorityMatch)
                    search_cond = priority_cell.en
                test = _nir.Value()
                for net in priority_cell.inputs:
                    if net != _nir.Net.from_const(1):
                        matches_cell = self.netlist.cells[net.cell]
                        assert isinstance(matches_cell, _nir.Matches)
                        test = matches_cell.value
                        break
                switch = case.switch(self.sigspec(test))
                n_arms = len(priority_cell.inputs)
                chain_src = None
                has_default = False
                all_patterns = []
                for bit, net in enumerate(priority_cell.inputs):
                    subcond = _nir.Net.from_cell(priority_cell_idx, bit)
                    if net == _nir.Net.from_const(1):
                        has_default = True
                        arm = switch.default()
                        src = chain_src or _src(priority_cell.src_loc)
                        emit_assignments(arm, subcond, mark(arm, f"else (arm {bit + 1} of {n_arms})", src))
                    else:
                        matches_cell = self.netlist.cells[net.cell]
                        assert isinstance(matches_cell, _nir.Matches)
                        assert test == matches_cell.value
                        patterns = matches_cell.patterns
                        src = _src(matches_cell.src_loc)
                        chain_src = chain_src or src
                        arm = switch.case(patterns)
                        # a case with no pattern never matches and is not written (Amaranth's
                        # `m.Case()`): no marker for it
                        stmts = mark(arm, f"arm {bit + 1} of {n_arms}", src) if patterns else []
                        all_patterns.append(patterns)
                        emit_assignments(arm, subcond, stmts)
                # "no arm taken" is a branch of an If/Elif chain (each arm tests one condition
                # bit for 1); a Switch on a value (m.Switch, an FSM, an Array index) has no implicit
                # arm, as a Verilog case has none
                chain = all(p.count("1") == 1 and p.count("0") == 0 for ps in all_patterns for p in ps)
                if chain and not has_default and not _exhaustive(all_patterns, len(test)):
                    mark(switch.default(), "no arm taken", chain_src or _src(priority_cell.src_loc))

    lhs = _nir.Value(_nir.Net.from_cell(cell_idx, bit) for bit in range(len(cell.default)))
    proc = self.builder.process(src_loc=cell.src_loc)
    proc.assign(self.sigspec(lhs), self.sigspec(cell.default))
    pos = 0
    emit_assignments(proc, _nir.Net.from_const(1), mark(proc, "process", _src(cell.src_loc)))
    assert pos == len(cell.assignments)

    for container, label, arm_src, stmts in markers:
        if arm_src is None:
            continue
        name = f"{MARKER_PREFIX}{cell_idx}_{len(self.builder.contents)}"
        wire = self.builder.wire(1, name=name, attrs={"cov_arm": f"{arm_src}|{label}",
                                                      "cov_lines": "|".join(stmts) or "-"})
        container.contents.insert(0, rtlil.Assignment(wire.name, "1'1"))
        proc.contents.insert(0, rtlil.Assignment(wire.name, "1'0"))
    # RTLIL wants a wire declared before a process uses it: the process goes after its markers
    self.builder.contents[proc.name] = self.builder.contents.pop(proc.name)


@contextmanager
def arm_markers():
    """Within the block, Amaranth's RTLIL (and so Verilog) backend writes the arm markers
    (module docstring)."""
    import amaranth
    from amaranth.back import rtlil
    if not amaranth.__version__.startswith(_AMARANTH):
        raise RuntimeError(f"verif.covmarks: written for Amaranth {_AMARANTH}x (its RTLIL backend's "
                           f"emit_assignment_list), found {amaranth.__version__}")
    orig = rtlil.ModuleEmitter.emit_assignment_list
    rtlil.ModuleEmitter.emit_assignment_list = _emit_assignment_list
    try:
        yield
    finally:
        rtlil.ModuleEmitter.emit_assignment_list = orig
