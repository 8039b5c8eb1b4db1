"""Verilator -Wall warnings waived on Amaranth-generated Verilog, each with its reason.

`make lint` runs `verilator --lint-only -Wall` with these rules turned off, prints how many
of each it waived, and fails on any other warning. See docs/lint.md.
"""

WAIVERS = {
    "WIDTHEXPAND": "Amaranth emits operands at their natural width and relies on Verilog's "
                   "zero-extension, exactly Amaranth's own unsigned arithmetic semantics.",
    "WIDTHTRUNC": "Yosys writes `x == 0` as `!x` on multi-bit values and truncates sums into "
                  "declared widths, as Amaranth's assignment semantics define.",
    "UNUSEDSIGNAL": "Port bundles (struct views, CRC engine outputs, reserved header fields) "
                    "expose bits that a given consumer does not read.",
    "PROCASSINIT": "Amaranth gives every register its reset value with an initializer and "
                   "assigns it again in the clocked process.",
    "CASEINCOMPLETE": "Yosys emits `case` without `default` after a default assignment at the "
                      "top of the same process; no latch results.",
    "DECLFILENAME": "All submodules of a top go in one file, named `top.sub`.",
}
