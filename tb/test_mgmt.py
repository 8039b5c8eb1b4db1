"""Management block: AXI4-Lite (cocotbext-axi master, random pauses on all five channels:
valid and ready held low) over the register map, in lock-step with its model on both
simulators; read-back of every table, SLVERR cases, PORT_STATE
requests, counters, LFT and MFT lookups (registered reads) and SL2VL lookups (same cycle)."""
import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, RisingEdge
from cocotb.utils import get_sim_time
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from contracts.config import CONFIGS
from contracts.counters import PORT_COUNTERS_LIST, counter_index
from contracts.mgmt import mgmt
from contracts.regmap import ID_MAGIC, build_regmap
from contracts.streams import AXIL_ADDR_BITS
from hw.mgmt.mgmt import sweep_cycles
from models.mgmt import MgmtModel, table_defaults_model
from verif.drivers import axil_pauses
from verif.lockstep import LockstepObserver
from verif.runner import SIMS, run_cocotb
from verif.tb import TB

LOOKUPS = 2


async def _setup(dut):
    cfg = TB.peek_config()
    idle = mgmt(cfg, LOOKUPS).idle() | {f"port_state__{p}": 1 for p in range(cfg.ports)}
    tb = TB(dut, idle)
    await tb.reset()
    axi = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    axil_pauses(axi, tb.rng)             # valid and ready both held low at random, every channel
    ins, outs, qual = mgmt(cfg, LOOKUPS).ports()
    obs = LockstepObserver(dut, MgmtModel(cfg, LOOKUPS), ins, outs, qual, vcd=tb.vcd, start_now=True).start()
    return tb, cfg, axi, obs


async def wr(axi, addr, value):
    return (await axi.write(addr, value.to_bytes(4, "little"))).resp


async def rd(axi, addr):
    r = await axi.read(addr, 4)
    return int.from_bytes(r.data, "little"), r.resp


@cocotb.test()
async def tables_write_read_back(dut):
    tb, cfg, axi, obs = await _setup(dut)
    rm = build_regmap(cfg)
    rng = random.Random(3)
    assert await rd(axi, rm["ID"].addr()) == (ID_MAGIC, AxiResp.OKAY)
    c0 = rm["CONFIG0"].unpack((await rd(axi, rm["CONFIG0"].addr()))[0])
    assert c0["ports"] == cfg.ports and c0["data_vls"] == cfg.data_vls
    # reset contents
    assert (await rd(axi, rm["LFT"].addr(0)))[0] == 0xFFFFFFFF
    expect = {}
    for name in ("SL2VL", "VLARB_HIGH", "VLARB_LOW", "LFT", "MFT", "LIMIT_HIGH"):
        r = rm[name]
        for idx in sorted(rng.sample(range(r.count), min(6, r.count))):
            v = rng.getrandbits(32) if name != "LIMIT_HIGH" else rng.getrandbits(8)
            if name.startswith("VLARB"):
                v &= 0xFFFF                    # 16-bit registers
            assert await wr(axi, r.addr(idx), v) == AxiResp.OKAY
            expect[(name, idx)] = v
    for (name, idx), v in expect.items():
        got, resp = await rd(axi, rm[name].addr(idx))
        assert resp == AxiResp.OKAY and got == v, f"{name}[{idx}] read {got:#x}, wrote {v:#x}"
    defaults = table_defaults_model(cfg)
    untouched = next(i for i in range(rm["VLARB_LOW"].count) if ("VLARB_LOW", i) not in expect)
    assert (await rd(axi, rm["VLARB_LOW"].addr(untouched)))[0] == defaults["VLARB_LOW"][untouched]
    assert await obs.stop() > 100          # cycles compared in lock-step


@cocotb.test()
async def errors_state_requests_counters_lookups(dut):
    tb, cfg, axi, obs = await _setup(dut)
    rm = build_regmap(cfg)
    # unmapped, misaligned and read-only targets answer SLVERR and change nothing
    assert await wr(axi, 0x0018, 1) == AxiResp.SLVERR
    # SWITCH_LID: 16 bits stored (16 + ext_lid_bits with extended LIDs), byte strobes honoured
    assert await wr(axi, rm["SWITCH_LID"].addr(), 0xABCD1234) == AxiResp.OKAY
    assert (await rd(axi, rm["SWITCH_LID"].addr()))[0] == 0xABCD1234 & ((1 << cfg.lid_bits) - 1)
    c1 = rm["CONFIG1"].unpack((await rd(axi, rm["CONFIG1"].addr()))[0])
    c2 = rm["CONFIG2"].unpack((await rd(axi, rm["CONFIG2"].addr()))[0])
    assert (c1["ext_lid_bits"], c2["lft_entries"], c2["mft_entries"]) == \
        (cfg.ext_lid_bits, cfg.lft_entries, cfg.mft_entries)
    assert await wr(axi, rm["ID"].addr(), 1) == AxiResp.SLVERR
    assert await wr(axi, rm["COUNTERS"].addr(3), 1) == AxiResp.SLVERR
    assert (await rd(axi, rm.size + 0x40))[1] == AxiResp.SLVERR
    assert (await rd(axi, rm["ID"].addr()))[0] == ID_MAGIC
    # counters and port state read from the datapath inputs
    dut.counters__1__3.value = 0xDEADBEEF
    dut.port_state__1.value = 4
    dut.mgmt_tx_errors.value = 0x5A5A0001
    await FallingEdge(dut.clk)
    assert (await rd(axi, rm["MGMT_TX_ERRORS"].addr()))[0] == 0x5A5A0001
    assert (await rd(axi, rm["COUNTERS"].addr(counter_index(1, PORT_COUNTERS_LIST[3]))))[0] == 0xDEADBEEF
    assert (await rd(axi, rm["PORT_STATE"].addr(1)))[0] == 4
    # a PORT_STATE write is a one-cycle request to the port
    assert await wr(axi, rm["PORT_STATE"].addr(2), 3) == AxiResp.OKAY
    # LFT: program DLIDs 5 -> port 2 and 6 -> port 1, look them up
    word = rm["LFT"].pack(port0=0xFF, port1=2, port2=1, port3=0xFF)
    assert await wr(axi, rm["LFT"].addr(1), word) == AxiResp.OKAY
    for dlid, port in ((5, 2), (6, 1), (4, 0xFF), (cfg.lft_entries + 3, 0xFF)):
        dut.lft_rd__0__dlid.value = dlid
        await RisingEdge(dut.clk)                       # a registered read: the entry the next cycle
        await FallingEdge(dut.clk)
        assert int(dut.lft_rd__0__port.value) == port, f"DLID {dlid}"
    if cfg.ext_lid_bits:
        # extended LIDs: the last page's LIDs 4..7 at entry page * lft_entries + 4..7; the same
        # DLIDs in page 0 keep their entries; beyond a page's entries: 255
        last = (1 << cfg.ext_lid_bits) - 1
        word2 = rm["LFT"].pack(port0=3, port1=0, port2=0xFF, port3=4)
        assert await wr(axi, rm["LFT"].addr((last * cfg.lft_entries + 4) // 4), word2) == AxiResp.OKAY
        # the page's first word too: a LID just beyond the page must not read it
        assert await wr(axi, rm["LFT"].addr(last * cfg.lft_entries // 4), 0x01010101) == AxiResp.OKAY
        for lid, port in ((last << 16 | 4, 3), (last << 16 | 5, 0), (last << 16 | 7, 4), (5, 2), (6, 1),
                          (last << 16 | 1, 1), (last << 16 | cfg.lft_entries, 0xFF),
                          (last << 16 | cfg.lft_entries | 5, 0xFF)):
            dut.lft_rd__0__dlid.value = lid
            await RisingEdge(dut.clk)
            await FallingEdge(dut.clk)
            assert int(dut.lft_rd__0__port.value) == port, f"LID {lid:#x}"
    # SL2VL lookup and VLArb table outputs follow their registers
    row = 2 * cfg.ports + 3                             # a word of input 1 (lookup port 1 serves input 1)
    assert await wr(axi, rm["SL2VL"].addr(row), 0x12345678) == AxiResp.OKAY
    dut.sl2vl_rd__1__index.value = row
    assert await wr(axi, rm["VLARB_LOW"].addr(cfg.vlarb_entries + 1), rm["VLARB_LOW"].pack(vl=2, weight=77)) == 0
    await FallingEdge(dut.clk)
    assert int(dut.sl2vl_rd__1__word.value) == 0x12345678
    assert int(dut.vlarb_low__1__1.value) == 2 | 77 << 4
    # MFT lookup: the port mask of an MLID
    words = -(-cfg.ports // 32)
    assert await wr(axi, rm["MFT"].addr(5 * words), 0b1010) == AxiResp.OKAY
    dut.mft_rd__0__mlid.value = 5
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    assert int(dut.mft_rd__0__mask.value) == 0b1010
    # byte strobes: only byte 2 of the word changes
    await axi.write(rm["LFT"].addr(1) + 2, bytes([7]))
    assert (await rd(axi, rm["LFT"].addr(1)))[0] == (word & ~0xFF0000) | (7 << 16)
    assert await obs.stop() > 20            # cycles compared in lock-step


@cocotb.test()
async def reset_sweeps_the_tables(dut):
    """LFT and MFT are block RAMs a reset cannot clear: after a reset they are swept back to
    their reset values; until then no AXI request is taken and lookups answer the reset
    values (LFT 255, MFT 0); afterwards every word reads back as after configuration."""
    tb, cfg, axi, obs = await _setup(dut)
    rm = build_regmap(cfg)
    rng = random.Random(5)
    lft = {i: rng.getrandbits(32) for i in rng.sample(range(rm["LFT"].count), 8)} | {0: 0x01010101}
    mft = {i: rng.getrandbits(32) | 1 for i in rng.sample(range(rm["MFT"].count), 4)} | {0: 0b110}
    for t, vals in (("LFT", lft), ("MFT", mft)):
        for i, v in vals.items():
            assert await wr(axi, rm[t].addr(i), v) == AxiResp.OKAY
    await obs.stop()
    # reset; a fresh model from the first cycle out of it
    await tb.reset()
    ins, outs, qual = mgmt(cfg, LOOKUPS).ports()
    obs = LockstepObserver(dut, MgmtModel(cfg, LOOKUPS), ins, outs, qual, vcd=tb.vcd, start_now=True).start()
    dut.lft_rd__0__dlid.value = 1                   # an entry written before the reset (port 1)
    dut.mft_rd__0__mlid.value = 0
    t0 = get_sim_time("ns")
    for _ in range(3):
        await FallingEdge(dut.clk)
        assert int(dut.lft_rd__0__port.value) == 0xFF and int(dut.mft_rd__0__mask.value) == 0
        assert int(dut.s_axil_arready.value) == 0 and int(dut.s_axil_awready.value) == 0
    assert (await rd(axi, rm["ID"].addr()))[0] == ID_MAGIC          # waits for the sweep
    waited = (get_sim_time("ns") - t0) / tb.period_ns
    assert waited >= sweep_cycles(cfg), f"an AXI read was answered {waited} cycles after reset"
    for t, vals, want in (("LFT", lft, 0xFFFFFFFF), ("MFT", mft, 0)):
        for i in sorted(vals):
            assert (await rd(axi, rm[t].addr(i)))[0] == want, f"{t}[{i}] kept its value across reset"
    assert int(dut.lft_rd__0__port.value) == 0xFF and int(dut.mft_rd__0__mask.value) == 0
    assert await obs.stop() > sweep_cycles(cfg)


@cocotb.test()
async def register_walk(dut):
    """Every register of the map, every index of the register tables (a sample of the LFT and
    MFT, which are block RAMs, and of every table beyond 4 ports): read; a read-write one
    written with all ones, all zeros and a random word (every implemented bit set and
    cleared: the model in lock-step checks each read-back), a read-only one refused with
    SLVERR; an unmapped address at every address bit refused on both channels."""
    tb, cfg, axi, obs = await _setup(dut)
    rm = build_regmap(cfg)
    rng = random.Random(9)
    for r in rm.regs:
        # (every index at 4 ports; a sample at more, and of the LFT and MFT always)
        full = r.name not in ("LFT", "MFT") and cfg.ports <= 4
        idxs = range(r.count) if full else sorted({0, r.count - 1, *rng.sample(range(r.count), min(4, r.count))})
        for idx in idxs:
            a = r.addr(idx)
            assert (await rd(axi, a))[1] == AxiResp.OKAY, f"{r.name}[{idx}] read refused"
            for v in (0xFFFFFFFF, 0, rng.getrandbits(32)):
                want = AxiResp.OKAY if r.access == "RW" else AxiResp.SLVERR
                assert await wr(axi, a, v) == want, f"{r.name}[{idx}] write of {v:#x}: not {want.name}"
                await rd(axi, a)
    for bit in range(2, AXIL_ADDR_BITS):
        a = 1 << bit
        if rm.decode(a) is None:
            assert (await rd(axi, a))[1] == AxiResp.SLVERR, f"read of unmapped {a:#x} not refused"
            assert await wr(axi, a, 0xFFFFFFFF) == AxiResp.SLVERR, f"write of unmapped {a:#x} not refused"
    assert await obs.stop() > 1000


def _top(cfg):
    from hw.mgmt.mgmt import SwitchMgmt
    return SwitchMgmt(cfg, LOOKUPS)


# small-rxreg: the registers of the reliability options (failover, lifetimes, adaptive
# routing, congestion marking)
# (on Icarus, 8 ports and the reliability options' registers: make sim-long, for make sim's time)
@pytest.mark.parametrize("sim, cfg_name", [(s, c) for s in SIMS for c in ("small", "small-ext")]
                         + [("verilator", "small-rxreg"), ("verilator", "w128")]
                         + [pytest.param("icarus", c, marks=pytest.mark.long) for c in ("small-rxreg", "w128")])
def test_mgmt(sim, cfg_name):
    run_cocotb(top=_top, name="ib_mgmt", test_module="tb.test_mgmt", sim=sim, cfg=CONFIGS[cfg_name])
