"""Board-support blocks in the Amaranth simulator: the UART report decoded bit by bit from
the line (a decoder written here), the AXI4-Lite set-up writer against a slave that stalls
at random and refuses one address, the PLL divider choice, and the errors bad parameters
raise."""
import random

import pytest
from amaranth.hdl import Const
from amaranth.sim import Simulator

from contracts.config import CONFIGS
from hw.board.report import Report, render
from hw.board.ulx3s import pll_params, report_template
from hw.endpoint.axil_writer import AxilWriter
from hw.top.loopback import LoopbackPlan, loopback_writes


def _decode(line: list[int], div: int) -> str:
    """8N1 from the sampled line: find a start bit, sample every bit in its middle."""
    out, i = [], 0
    while i < len(line) - 10 * div:
        if line[i] == 0:
            bits = [line[i + div // 2 + div * k] for k in range(10)]
            assert bits[0] == 0 and bits[9] == 1, f"framing error at sample {i}: {bits}"
            out.append(chr(sum(b << k for k, b in enumerate(bits[1:9]))))
            i += 10 * div - div // 2
        else:
            i += 1
    return "".join(out)


@pytest.mark.parametrize("div", [3, 8])
def test_report_text(div):
    vals = [0x1234ABCD, 0x5, 0xDEADBEEF, 0]
    tmpl = ["t=", (0, 8), " x=", (1, 1), " y=", (2, 4), " z=", (3, 2), "\r\n"]
    want = render(vals, tmpl)
    period = (len(want) + 4) * 10 * div
    dut = Report([Const(v, 32) for v in vals], tmpl, div, period)
    line = []

    async def bench(ctx):
        for _ in range(2 * period + 20):
            line.append(ctx.get(dut.tx))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert _decode(line, div) == want * 2          # one report per period, the same snapshot text


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_report_rejects():
    with pytest.raises(ValueError, match="ASCII"):
        Report([Const(0, 8)], ["é"], 4, 10000)
    with pytest.raises(ValueError, match="index"):
        Report([Const(0, 8)], [(3, 2)], 4, 10000)
    with pytest.raises(ValueError, match="shorter than one report"):
        Report([Const(0, 8)], ["abcdef"], 4, 100)


def test_board_report_template_fields():
    tmpl, names = report_template(4)
    assert len(names) == 5 + 4 * 9 and all(k < len(names) for it in tmpl if not isinstance(it, str) for k in [it[0]])


def test_axil_writer_order_and_errors():
    writes = [(0x4000 + 4 * k, 0x11110000 + k) for k in range(6)] + [(0x0, 0xBAD)]
    dut = AxilWriter(writes)
    rng = random.Random(4)
    seen, order = [], []

    async def slave(ctx):
        aw = w = None
        for _ in range(400):
            ctx.set(dut.awready, int(aw is None and rng.random() < 0.5))
            ctx.set(dut.wready, int(w is None and rng.random() < 0.5))
            if aw is not None and w is not None:
                ctx.set(dut.bvalid, int(rng.random() < 0.6))
                ctx.set(dut.bresp, 2 if aw == 0 else 0)       # ID is read-only: SLVERR
            else:
                ctx.set(dut.bvalid, 0)
            await ctx.delay(1e-9)
            if ctx.get(dut.awvalid) and ctx.get(dut.awready):
                aw = ctx.get(dut.awaddr)
                order.append("aw")
            if ctx.get(dut.wvalid) and ctx.get(dut.wready):
                w = ctx.get(dut.wdata)
                order.append("w")
            if ctx.get(dut.bvalid) and ctx.get(dut.bready) and aw is not None and w is not None:
                seen.append((aw, w))
                aw = w = None
            await ctx.tick()
        assert ctx.get(dut.done) == 1 and ctx.get(dut.errors) == 1

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(slave)
    sim.run()
    assert seen == writes


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_axil_writer_rejects():
    with pytest.raises(ValueError, match="empty"):
        AxilWriter([])
    with pytest.raises(ValueError, match="word address"):
        AxilWriter([(0x3, 1)])


def test_loopback_writes_and_plan():
    cfg = CONFIGS["small"]
    w = loopback_writes(cfg, LoopbackPlan())
    lft = {a: d for a, d in w if 0x4000 <= a < 0x5000}
    # LIDs 1..4 on Verilog ports 0..3 = IBA ports 1..4: word 0 holds LIDs 0..3, word 1 LID 4;
    # LID 0 stays 255
    assert lft == {0x4000: 0x030201FF, 0x4004: 0xFFFFFF04}
    assert [d for a, d in w if 0x100 <= a < 0x200] == [3] * 4 + [4] * 4
    with pytest.raises(ValueError, match="odd"):
        LoopbackPlan().check(cfg.replace(ports=3))
    with pytest.raises(ValueError, match="len_min"):
        LoopbackPlan(len_min=0).check(cfg)


@pytest.mark.parametrize("f_out", [10, 25, 50, 62.5, 100, 125, 150])
def test_pll_params(f_out):
    p = pll_params(25.0, f_out)
    fo = 25.0 / p["CLKI_DIV"] * p["CLKFB_DIV"]
    assert abs(fo - f_out) < 1e-9 and fo == p["f_out"]
    assert 400 <= fo * p["CLKOP_DIV"] <= 800 and 25.0 / p["CLKI_DIV"] >= 3.125
