"""Register map description: no overlaps, decode round trip, docs/registers.md up to date."""
from pathlib import Path

import pytest

from contracts.config import CONFIGS
from contracts.regmap import build_regmap

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_no_overlap_and_decode(name):
    rm = build_regmap(CONFIGS[name])
    spans = sorted((r.offset, r.end, r.name) for r in rm.regs)
    for (_a0, a1, n0), (b0, _b1, n1) in zip(spans, spans[1:], strict=False):
        assert a1 <= b0, f"{n0} overlaps {n1}"
    for r in rm.regs:
        for idx in {0, r.count - 1}:
            assert rm.decode(r.addr(idx)) == (r, idx)
    assert rm.decode(0x24) is None and rm.decode(rm.size) is None and rm.decode(2) is None
    assert (rm.decode(0x20) is None) != CONFIGS[name].lifetimes            # SWITCH_LIFE


def test_field_pack_checks():
    rm = build_regmap(CONFIGS["small"])
    assert rm["VLARB_LOW"].pack(vl=3, weight=200) == 3 | 200 << 8
    with pytest.raises(KeyError, match="no field"):
        rm["VLARB_LOW"].pack(vll=1)
    with pytest.raises(ValueError, match="does not fit"):
        rm["VLARB_LOW"].pack(vl=16)
    with pytest.raises(IndexError):
        rm["PORT_STATE"].addr(4)


def test_docs_registers_md_is_generated():
    from contracts.regmap import doc_config
    text = build_regmap(doc_config()).markdown() + "\n"
    assert (ROOT / "docs" / "registers.md").read_text() == text, \
        "docs/registers.md is stale: run `python -m contracts.regmap`"


@pytest.mark.parametrize("name", ["small", "small-rxreg"])
def test_reset_values_one_definition(name):
    """Every read-write register reads its reset value (contracts.regmap.reset_values) from the
    RTL after reset (AXI4-Lite reads in the Amaranth simulator, every element of the small
    registers, first/middle/last of the tables), from the model (models.mgmt) and from the
    firmware's register file without RTL (fw.hw.RegisterFile)."""
    import asyncio

    from amaranth.sim import Simulator

    from contracts.regmap import reset_values
    from fw.hw import RegisterFile
    from hw.mgmt.mgmt import SwitchMgmt, sweep_cycles
    from models.mgmt import MgmtModel

    cfg = CONFIGS[name]
    rm, want = build_regmap(cfg), reset_values(cfg)
    assert set(want) == {r.name for r in rm.regs if r.access == "RW"} - {"PORT_STATE"}
    picks = {r: sorted({0, want[r].__len__() // 2, len(want[r]) - 1}) if len(want[r]) > 16 else range(len(want[r]))
             for r in want}
    model = MgmtModel(cfg)
    regs = RegisterFile(cfg)
    for r, idx in picks.items():
        for i in idx:
            width = 0xFFFF if r.startswith("VLARB") else 0xFFFFFFFF      # VLArb entries: 16-bit registers
            assert model.t[r][i] == want[r][i] & width, f"model {r}[{i}]"
            assert asyncio.run(regs.read(r, i)) == want[r][i], f"RegisterFile {r}[{i}]"
    dut = SwitchMgmt(cfg)
    got = {}

    async def bench(ctx):
        await ctx.tick().repeat(sweep_cycles(cfg) + 4)
        ctx.set(dut.s_axil_rready, 1)
        for r, idx in picks.items():
            for i in idx:
                ctx.set(dut.s_axil_araddr, rm[r].addr(i))
                ctx.set(dut.s_axil_arvalid, 1)
                while not ctx.get(dut.s_axil_arready):
                    await ctx.tick()
                await ctx.tick()
                ctx.set(dut.s_axil_arvalid, 0)
                while not ctx.get(dut.s_axil_rvalid):
                    await ctx.tick()
                got[(r, i)] = ctx.get(dut.s_axil_rdata)
                await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert len(got) == sum(len(x) for x in picks.values())
    for (r, i), v in got.items():
        width = 0xFFFF if r.startswith("VLARB") else 0xFFFFFFFF
        assert v == want[r][i] & width, f"RTL {r}[{i}] = {v:#x}, reset value {want[r][i]:#x}"
