"""Receive parser/checker: lock-step with its golden model on Icarus and Verilator.

cocotb tests (run inside the simulator) followed by the pytest entry points that build and
run them for each simulator and config.
"""
import enum
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.defs import RxError
from contracts.link import rx_parser
from models.packet import FCPacket, build_link_packet, to_flits
from models.rx_parser import RxParserModel
from verif.ib.rx_scoreboard import check_rx_parser
from verif.ib.stimulus import (
    MALFORMED_KINDS,
    RX_IDLE,
    Item,
    cycles,
    idle_bursty,
    idle_none,
    idle_random,
    make_item,
    mixed_items,
)
from verif.lockstep import LockstepDivergence, cocotb_lockstep
from verif.monitors import FCMonitor, ParsedMonitor
from verif.runner import run_cocotb, sim_matrix
from verif.tb import TB

# cocotb names parametrised tests by Enum member names (long strings would become indices).
Kind = enum.Enum("Kind", {k: k for k in MALFORMED_KINDS})
SHOW = ["rx__valid", "rx__sop", "rx__eop", "rx__bytes", "rx__link", "rx__bad", "rx__up"]


async def _run(tb, items, idle, tail=4, model=None, report=True):
    mon, fcmon = ParsedMonitor(tb.cfg.data_width), FCMonitor()
    model = model or RxParserModel(tb.cfg)
    stim = list(cycles(items, idle)) + [dict(RX_IDLE)] * tail

    def observe(i, o):
        mon(i, o)
        fcmon(i, o)

    _, outs, qual = rx_parser(tb.cfg).ports()
    await cocotb_lockstep(tb.dut, model, stim, outs, qual, on_cycle=observe,
                          vcd=tb.vcd, show_inputs=SHOW, report=report)
    counters = {n.split("__")[1]: v for n, v in model._out.items() if n.startswith("counters__")}
    return mon, fcmon, counters


@cocotb.test()
@cocotb.parametrize(idle=["none", "random", "bursty"])
async def lockstep_mixed_traffic(dut, idle):
    """Random good packets mixed with every malformed class, lock-step + scoreboard."""
    tb = TB(dut, RX_IDLE)
    await tb.reset()
    rng = tb.rng
    # (and, whatever the draw, a packet cut by a one-flit packet and one cut by a two-flit link packet)
    cfg = tb.cfg
    fc = build_link_packet(FCPacket(op=0, fctbs=1, vl=0, fccl=2), cfg.crc_msb_first) + bytes(cfg.bytes_per_flit)
    long_link = Item("link_format", to_flits(fc, cfg.data_width, link=True), RxError.LINK_FORMAT, False, fc, link=True)
    items = mixed_items(cfg, rng, 80) + [make_item("truncated", cfg, rng), make_item("runt_pktlen", cfg, rng),
                                         make_item("truncated", cfg, rng), long_link, make_item("good", cfg, rng)]
    gen = {"none": idle_none(), "random": idle_random(0.3, rng), "bursty": idle_bursty(rng)}[idle]
    mon, fcmon, counters = await _run(tb, items, gen)
    check_rx_parser(tb.cfg, items, mon, fcmon, counters)


@cocotb.test()
@cocotb.parametrize(kind=list(Kind))
async def each_malformed_class(dut, kind):
    """One malformed packet of each class between good ones: counted once, others intact."""
    tb = TB(dut, RX_IDLE)
    await tb.reset()
    rng = tb.rng
    cfg = tb.cfg
    kind = kind.value
    items = [make_item("good", cfg, rng), make_item(kind, cfg, rng),
             make_item("good", cfg, rng), make_item("link", cfg, rng), make_item("good", cfg, rng)]
    mon, fcmon, counters = await _run(tb, items, idle_random(0.2, rng))
    check_rx_parser(cfg, items, mon, fcmon, counters)
    want = {"vcrc": "vcrc", "pktlen_short": "pktlen", "pktlen_long": "pktlen", "lver": "lver",
            "below_min": "short", "above_mtu": "long", "truncated": "truncated", "lpcrc": "lpcrc",
            "ebp": "ebp", "stray": "framing", "link_format": "link_format", "runaway": "long", "runt": "short",
            "runt_pktlen": "pktlen"}[kind]
    assert counters[want] == 1, counters


@cocotb.test()
async def link_down_mid_packet(dut):
    """`up` falls inside a forwarded packet: it ends with a TRUNCATED terminator; traffic
    resumes cleanly after `up` returns."""
    tb = TB(dut, RX_IDLE)
    await tb.reset()
    cfg, rng = tb.cfg, tb.rng
    mon, fcmon = ParsedMonitor(cfg.data_width), FCMonitor()
    model = RxParserModel(cfg)
    a = make_item("good", cfg, rng)
    while len(a.flits) < 3:
        a = make_item("good", cfg, rng)
    b = make_item("good", cfg, rng)
    stim = list(cycles([a]))[:2] + [dict(RX_IDLE, rx__up=0)] * 3
    stim += [dict(RX_IDLE, rx__up=0, rx__valid=1, rx__data=0x1234)]   # ignored while down
    stim += list(cycles([b])) + [dict(RX_IDLE)] * 3

    def observe(i, o):
        mon(i, o)
        fcmon(i, o)
    _, outs, qual = rx_parser(cfg).ports()
    await cocotb_lockstep(dut, model, stim, outs, qual, on_cycle=observe, vcd=tb.vcd,
                          show_inputs=SHOW)
    assert [p.err for p in mon.packets] == [RxError.TRUNCATED, RxError.NONE]
    assert mon.packets[1].data == b.data
    assert model.counters["truncated"] == 1 and model.counters["good_data"] == 1


class _LateModel:
    """A model whose outputs lag the real one by one cycle."""

    def __init__(self, inner):
        self.inner, self.prev = inner, None

    def step(self, inp):
        cur = self.inner.step(inp)
        out, self.prev = (self.prev or cur), cur
        return out


class _BitFlipModel:
    """A model that gets one bit of the first forwarded eop flit's data wrong."""

    def __init__(self, inner):
        self.inner, self.done = inner, False

    def step(self, inp):
        out = dict(self.inner.step(inp))
        if out["out__valid"] and out["out__eop"] and not self.done:
            out["out__data"] ^= 1 << 5
            self.done = True
        return out


@cocotb.test()
@cocotb.parametrize(fault=["late", "bitflip"])
async def lockstep_checker_bites(dut, fault):
    """The lock-step checker must report a deliberately wrong model, at the right cycle."""
    tb = TB(dut, RX_IDLE)
    await tb.reset()
    rng = random.Random(7)
    items = [make_item("good", tb.cfg, rng) for _ in range(4)]
    # Where the true model first emits an eop / a valid flit, found by a dry run.
    ref = RxParserModel(tb.cfg)
    outs = [ref.step(i) for i in cycles(items)]
    first_valid = next(k for k, o in enumerate(outs) if o["out__valid"])
    first_eop = next(k for k, o in enumerate(outs) if o["out__valid"] and o["out__eop"])
    model = (_LateModel if fault == "late" else _BitFlipModel)(RxParserModel(tb.cfg))
    try:
        await _run(tb, items, idle_none(), model=model, report=False)
    except LockstepDivergence as e:
        if fault == "late":
            assert (e.cycle, e.signal) == (first_valid, "out__valid"), str(e)
        else:
            assert (e.cycle, e.signal) == (first_eop, "out__data"), str(e)
            assert e.expected ^ e.actual == 1 << 5
        assert "lock-step divergence at cycle" in str(e) and "VCD" in str(e)
        return
    raise AssertionError(f"lock-step checker missed a {fault} model")


# ---------------------------------------------------------------------- pytest entry
def _top(cfg):
    from hw.link.rx_parser import RxParser
    return RxParser(cfg)


# W=512 on one simulator in `make sim` (the other in `make sim-long`): docs/verification.md
@pytest.mark.parametrize("sim, cfg_name", sim_matrix(["small", "w512", "small-msb"], long=("icarus-w512",)))
def test_rx_parser(sim, cfg_name):
    run_cocotb(top=_top, name="ib_rx_parser", test_module="tb.test_rx_parser", sim=sim,
               cfg=CONFIGS[cfg_name])
