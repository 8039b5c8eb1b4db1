"""Route lookup: RTL (Amaranth simulator, tables served as the management block's async
read ports would) against the model, over every LID range and random tables (entries are
IBA port numbers: 0 the management port, Verilog port p is p + 1)."""
import random

import pytest
from amaranth.sim import Simulator

from hw.common.config import CONFIGS
from hw.switch.route import RouteLookup
from models.packet import LRH
from models.route import RouteDrop, for_switch, route


@pytest.mark.parametrize("cfg_name,in_port", [("small", 0), ("small", 3), ("w128", 5), ("small-ext", 1)])
def test_route_matches_model(cfg_name, in_port):
    cfg = CONFIGS[cfg_name]
    n = cfg.ports
    rng = random.Random(in_port)
    # IBA port numbers: 0 the management port, 1..N physical (Verilog p + 1), above N and 255 drop
    lft = [rng.choice([255, 255, 0, n + 1, n + 3] + list(range(1, n + 1)) * 3) for _ in range(cfg.lft_size)]
    mft = [rng.getrandbits(n + 1) if rng.random() < 0.7 else rng.choice([0, 1, 2 << in_port, 3 << in_port])
           for _ in range(cfg.mft_entries)]
    sl2vl = [rng.getrandbits(32) & 0x33333333 if rng.random() < 0.8 else rng.getrandbits(32) for _ in range(2 * n * n)]
    dut = RouteLookup(cfg, in_port)
    seen = set()
    seen_mgmt = set()

    async def bench(ctx):
        for _ in range(600):
            dlid = rng.choice([0, 0xFFFF, rng.randrange(0xC000, 0xC000 + cfg.mft_entries),
                               rng.randrange(0xC000, 0xFFFF), rng.randrange(cfg.lft_entries, 0xC000),
                               rng.randrange(1, cfg.lft_entries), rng.randrange(1, cfg.lft_entries)])
            # extended LIDs: any reserved bits (those above ext_lid_bits are ignored)
            rsvd1 = rng.getrandbits(5) if cfg.ext_lid_bits and rng.random() < 0.7 else 0
            lrh = LRH(dlid=dlid, sl=rng.randrange(16), vl=rng.randrange(16), pktlen=20, rsvd1=rsvd1)
            active = {p for p in range(n) if rng.random() < 0.8}
            ctx.set(dut.hdr.as_value(), lrh.to_int())
            ctx.set(dut.port_active, sum(1 << p for p in active))
            # served as the management block reads it: {page, DLID} -> entry page * lft_entries + DLID
            lid = ctx.get(dut.lft_dlid)
            low, page = lid & 0xFFFF, lid >> 16
            ctx.set(dut.lft_port, lft[page * cfg.lft_entries + low] if low < cfg.lft_entries else 0)
            mi = ctx.get(dut.mft_index)
            ctx.set(dut.mft_mask, mft[mi] if mi < len(mft) else 0)
            ctx.set(dut.sl2vl_word, sl2vl[ctx.get(dut.sl2vl_index)] if ctx.get(dut.sl2vl_index) < len(sl2vl) else 0)
            want = route(cfg, in_port, lrh, lft, sl2vl, active, mft)
            got = (RouteDrop(ctx.get(dut.drop)), ctx.get(dut.dest), ctx.get(dut.ovl))
            assert got[0] == want[0], (hex(dlid), got, want)
            assert ctx.get(dut.mgmt) == for_switch(cfg, lrh, lft, mft), hex(dlid)
            seen_mgmt.add(for_switch(cfg, lrh, lft, mft))
            if want[0] == RouteDrop.NONE and ctx.get(dut.mcast):
                assert ctx.get(dut.mask) == want[1], (hex(dlid), want)
            elif want[0] == RouteDrop.NONE:
                assert got[1:] == want[1:], (hex(dlid), got, want)
            seen.add(want[0])
            await ctx.delay(1e-9)

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert seen == set(RouteDrop), f"not every outcome exercised: {seen}"
    assert seen_mgmt == {True, False}


def test_iba_port_numbering_by_hand():
    """A few cases written out from IBA's rule, not from the model: LFT entry p + 1 sends to
    Verilog port p, entry 0 is the switch itself, MFT bit 0 is the management port."""
    cfg = CONFIGS["small"]
    lft = [255] * cfg.lft_entries
    lft[5], lft[6], lft[7], lft[8] = 1, 4, 0, 5                   # port 0, port 3, management, none
    mft = [0b00001, 0b10110] + [0] * (cfg.mft_entries - 2)
    sl2vl = [0] * (2 * cfg.ports * cfg.ports)
    act = set(range(cfg.ports))
    r = lambda dlid, inp=1: route(cfg, inp, LRH(dlid=dlid), lft, sl2vl, act, mft)      # noqa: E731
    assert r(5) == (RouteDrop.NONE, 0, 0) and r(6) == (RouteDrop.NONE, 3, 0)
    assert r(7)[0] == RouteDrop.TO_SWITCH and r(8)[0] == RouteDrop.LFT_DROP
    assert r(0xC000)[0] == RouteDrop.MC_EMPTY                        # only the management port
    assert r(0xC001, inp=1) == (RouteDrop.NONE, 0b1001, 0)            # IBA ports 1, 4 (not 2: the input)


def test_extended_lids_by_hand():
    """Extended LIDs (docs/fabric.md), written out from the rule, not from the model: the LRH's
    reserved bit in front of PktLen is LID bit 16 in `small-ext` (one page bit, 64 entries a
    page); the reserved bits above it are ignored; MLIDs, the permissive DLID and DLID 0 exist
    only in page 0."""
    cfg = CONFIGS["small-ext"]
    assert (cfg.ext_lid_bits, cfg.lft_entries, cfg.lft_size) == (1, 64, 128)
    lft = [255] * 128
    lft[5], lft[64 + 5], lft[64 + 6] = 1, 3, 0          # LID 5: port 0; LID 0x10005: port 2; 0x10006: switch
    mft = [0b00110] + [0] * (cfg.mft_entries - 1)
    sl2vl = [0] * (2 * cfg.ports * cfg.ports)
    act = set(range(cfg.ports))
    r = lambda dlid, rsvd1=0: route(cfg, 3, LRH(dlid=dlid, rsvd1=rsvd1), lft, sl2vl, act, mft)  # noqa: E731
    assert r(5) == (RouteDrop.NONE, 0, 0) and r(5, rsvd1=1) == (RouteDrop.NONE, 2, 0)
    assert r(5, rsvd1=0b11110) == (RouteDrop.NONE, 0, 0)                 # bits above the page: ignored
    assert r(6, rsvd1=1)[0] == RouteDrop.TO_SWITCH and r(7, rsvd1=1)[0] == RouteDrop.LFT_DROP
    assert r(64, rsvd1=1)[0] == RouteDrop.DLID_INVALID                   # beyond the page's 64 entries
    assert r(0, rsvd1=1)[0] == RouteDrop.DLID_INVALID
    assert r(0xC000) == (RouteDrop.NONE, 0b0011, 0) and r(0xC000, rsvd1=1)[0] == RouteDrop.DLID_INVALID
    assert r(0xFFFF)[0] == RouteDrop.TO_SWITCH and r(0xFFFF, rsvd1=1)[0] == RouteDrop.DLID_INVALID
    assert for_switch(cfg, LRH(dlid=6, rsvd1=1), lft, mft) and not for_switch(cfg, LRH(dlid=6), lft, mft)
    assert [cfg.lft_index(x) for x in (5, 0x10005, 0x1003F, 0x10040, 0x20005, 0x1C000, 0x10000)] == \
        [5, 69, 127, None, None, None, None]
