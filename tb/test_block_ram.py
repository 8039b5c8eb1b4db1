"""The block RAM primitive (hw/common/bram.py) in lock-step with its model (models/block_ram.py),
on Icarus and Verilator, and as synthesized for the ECP5 (`synth_ecp5`, the output register
folded into the DP16KD by tools/outreg.py) on Icarus with the cell models of `make gate`.

Stimulus: random writes (every lane pattern) and reads, a read of the address written in
the same cycle a third of the time, reads not taken (`r_en` low) in runs, the initial
contents read before any write. Checked apart from the model, every cycle: a shadow copy of
the memory kept by this test from the writes it drove; the data of a read taken in cycle t
is, in cycle t + 2, the shadow word after cycle t's write, and stays until the next read's.
"""
import random

import cocotb
import pytest

from contracts.common import BLOCK_RAM_READ_LATENCY, block_ram
from contracts.config import CONFIGS
from models.block_ram import BlockRAMModel
from verif.lockstep import cocotb_lockstep, visible
from verif.runner import ROOT, SIMS, run_cocotb
from verif.tb import TB, tb_params, tb_seed

# (width, depth, granularity, initial words): the DP16KD's x36 (pseudo dual port), x18 and x9
# mappings, and one small enough for LUT RAM
SHAPES = {
    "w32d512g8": (32, 512, 8, 40),
    "w20d1024": (20, 1024, 0, 0),
    "w72d2048g9": (72, 2048, 9, 5),
    "w8d16": (8, 16, 0, 16),
}


def _init(width, depth, n):
    rng = random.Random(width * 7919 + depth)
    return [rng.getrandbits(width) for _ in range(n)]


def _stimulus(width, depth, lanes, rng, cycles):
    addrs = [rng.randrange(depth) for _ in range(8)]           # a few hot addresses: collisions
    for c in range(cycles):
        if c < depth and c < 64:                               # the initial contents first
            yield {"w_en": 0, "w_addr": 0, "w_data": 0, "r_en": 1, "r_addr": c}
            continue
        w_en = rng.choice([0, (1 << lanes) - 1, rng.getrandbits(lanes)]) if rng.random() < 0.6 else 0
        w_addr = rng.choice(addrs) if rng.random() < 0.5 else rng.randrange(depth)
        r_en = int(rng.random() < (0.2 if (c // 50) % 4 == 3 else 0.8))
        r_addr = w_addr if rng.random() < 0.35 else (rng.choice(addrs) if rng.random() < 0.5 else rng.randrange(depth))
        yield {"w_en": w_en, "w_addr": w_addr, "w_data": rng.getrandbits(width), "r_en": r_en, "r_addr": r_addr}


def _checker(width, depth, granularity, init):
    lane = granularity or width
    shadow = list(init) + [0] * (depth - len(init))
    state = {"pipe": [None] * BLOCK_RAM_READ_LATENCY, "last": None, "reads": 0, "collisions": 0}

    def check(inp, out):
        pipe = state["pipe"]
        # this cycle's r_data: the read taken READ_LATENCY cycles ago, else the last one's
        due = pipe.pop(0)
        if due is not None:
            state["last"] = due
            state["reads"] += 1
        assert state["last"] is None or out["r_data"] == state["last"], \
            f"r_data {out['r_data']:#x}, want {state['last']:#x} (the shadow word of the last read taken)"
        a = inp["w_addr"]
        for k in range(width // lane):
            if inp["w_en"] >> k & 1:
                m = ((1 << lane) - 1) << (k * lane)
                shadow[a] = (shadow[a] & ~m) | (inp["w_data"] & m)
        if inp["r_en"] and inp["w_en"] and inp["r_addr"] == a:
            state["collisions"] += 1
        pipe.append(shadow[inp["r_addr"]] if inp["r_en"] else None)
    return check, state


@cocotb.test()
async def random_reads_writes_collisions(dut):
    p = tb_params()
    width, depth, gran, n_init = SHAPES[p["shape"]]
    init = _init(width, depth, n_init)
    ins, outs, qual = block_ram(width, depth, gran).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    check, state = _checker(width, depth, gran, init)
    lanes = width // gran if gran else 1
    await cocotb_lockstep(dut, BlockRAMModel(width, depth, gran, init),
                          _stimulus(width, depth, lanes, random.Random(tb_seed()), 3000), visible(outs), qual,
                          on_cycle=check, vcd=tb.vcd, start_now=True)
    assert state["reads"] > 1500 and state["collisions"] > 120, state          # the premise


def _top_for(shape):
    def top(cfg):
        from hw.common.bram import BlockRAM
        width, depth, gran, n_init = SHAPES[shape]
        return BlockRAM(width, depth, gran, _init(width, depth, n_init))
    return top


# the RTL is the same Verilog whatever the mapping: three shapes (lanes of 8 and 9 bits, none)
@pytest.mark.parametrize("shape", ["w32d512g8", "w72d2048g9", "w8d16"])
@pytest.mark.parametrize("sim", SIMS)
def test_block_ram(sim, shape):
    run_cocotb(top=_top_for(shape), name="ib_block_ram", test_module="tb.test_block_ram", sim=sim,
               cfg=CONFIGS["small"], tag=f"block_ram-{shape}", params={"shape": shape})


@pytest.mark.parametrize("shape", list(SHAPES))
def test_block_ram_netlist(shape):
    """The same test on the synthesized netlist (Icarus: the cell models' X on a collision
    show; Verilator has no X). Asserts the output register went into every DP16KD."""
    from hw.verilog import convert
    from tools.gate import cell_library, synth_netlist
    d = ROOT / "build" / "gate" / "block_ram" / shape
    d.mkdir(parents=True, exist_ok=True)
    text = convert(_top_for(shape)(None), "ib_block_ram", time0_fix=False)
    if not (d / "ib_block_ram.v").exists() or (d / "ib_block_ram.v").read_text() != text:
        (d / "ib_block_ram.v").write_text(text)
    net = synth_netlist(d, "ib_block_ram", "ib_block_ram.v", log=lambda *a: None)
    # every DP16KD instance's parameter list names REGMODE "OUTREG" (x36: both sides)
    insts = [t.split("\n  ) ")[0] for t in net.read_text().split("DP16KD #(")[1:]]
    if shape != "w8d16":
        unfolded = [k for k, t in enumerate(insts) if '"OUTREG"' not in t
                    or (".DATA_WIDTH_B(32'd36)" in t and t.count('"OUTREG"') != 2)]
        assert insts and not unfolded, f"{net}: DP16KD instances {unfolded} of {len(insts)} without OUTREG"
    lib = cell_library(ROOT / "build" / "gate" / "ecp5_cells_sim.v")
    run_cocotb(top=None, name="ib_block_ram", test_module="tb.test_block_ram", sim="icarus", cfg=CONFIGS["small"],
               tag=f"block_ram-gate-{shape}", params={"shape": shape}, sources=[net, lib], rerun_with_waves=False)
