"""Route lookup: RTL (Amaranth simulator: the head stage's inputs in one cycle, the table
entries and port states in the next, as the ingress serves them) against the model, over
every LID range and random tables (entries are IBA port numbers: 0 the management port,
Verilog port p is p + 1)."""
import random

import pytest
from amaranth.sim import Simulator

from contracts.config import CONFIGS
from hw.switch.route import RouteLookup
from models.packet import LRH
from models.route import RouteDrop, flow_hash, for_switch, route, route_lid


@pytest.mark.parametrize("cfg_name,in_port", [("small", 0), ("small", 3), ("w128", 5), ("small-ext", 1),
                                             ("small-rxreg", 2)])
def test_route_matches_model(cfg_name, in_port):
    """With adaptive routing (small-rxreg): random adaptive bits (LFT bit 7), random flow-pinned
    groups (`ar_mask`, the Active ports of each output's group) and random SLIDs. The tables
    and port states change between the two stages, as they may in the switch: the decision
    takes the SL2VL words and groups of the head stage, the entries and states of the next."""
    cfg = CONFIGS[cfg_name]
    n = cfg.ports
    rng = random.Random(in_port)
    # IBA port numbers: 0 the management port, 1..N physical (Verilog p + 1), above N and 255 drop
    lft = [rng.choice([255, 255, 0, n + 1, n + 3] + list(range(1, n + 1)) * 3) for _ in range(cfg.lft_size)]
    if cfg.adaptive:
        lft = [e | 0x80 if e != 255 and rng.random() < 0.5 else e for e in lft]
    pinned_seen = set()
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
            lrh = LRH(dlid=dlid, slid=rng.getrandbits(16), sl=rng.randrange(16), vl=rng.randrange(16), pktlen=20,
                      rsvd1=rsvd1)
            # ---- head stage: the LRH, the input's SL2VL words, the groups
            ctx.set(dut.hdr.as_value(), lrh.to_int())
            for j in range(2 * n):
                ctx.set(dut.sl2vl_row[j], sl2vl[in_port * 2 * n + j])
            pinned = None
            if cfg.adaptive:
                masks = [rng.getrandbits(n) if rng.random() < 0.6 else 0 for _ in range(n)]
                for o in range(n):
                    ctx.set(dut.ar_mask[o], masks[o])
                ctx.set(dut.flow_hash, flow_hash(lrh.slid, lrh.dlid))      # as the ingress gives it
                pinned = {o: [y for y in range(n) if masks[o] >> y & 1] for o in range(n)}
            await ctx.tick()
            # ---- decide: other head-stage inputs now (they must not matter), the entries
            ctx.set(dut.hdr.as_value(), rng.getrandbits(64))
            for j in range(2 * n):
                ctx.set(dut.sl2vl_row[j], rng.getrandbits(32))
            if cfg.adaptive:
                for o in range(n):
                    ctx.set(dut.ar_mask[o], rng.getrandbits(n))
                ctx.set(dut.flow_hash, rng.getrandbits(8))
            active = {p for p in range(n) if rng.random() < 0.8}
            ctx.set(dut.port_active, sum(1 << p for p in active))
            # served as the management block reads it: {page, DLID} -> entry page * lft_entries + DLID
            lid = route_lid(cfg, lrh)
            low, page = lid & 0xFFFF, lid >> 16
            ctx.set(dut.lft_port, lft[page * cfg.lft_entries + low] if low < cfg.lft_entries else 0)
            mi = (dlid - 0xC000) % (1 << (max(cfg.mft_entries, 2) - 1).bit_length())
            ctx.set(dut.mft_mask, mft[mi] if mi < len(mft) else 0)
            await ctx.delay(1e-9)
            want = route(cfg, in_port, lrh, lft, sl2vl, active, mft, pinned=pinned)
            if pinned and want[0] == RouteDrop.NONE and not 0xC000 <= dlid < 0xFFFF:
                e = lft[dlid]
                if e & 0x80 and pinned[(e & 0x7F) - 1] and len(pinned[(e & 0x7F) - 1]) > 1:
                    pinned_seen.add(want[1])
            got = (RouteDrop(ctx.get(dut.drop)), ctx.get(dut.dest), ctx.get(dut.ovl))
            assert got[0] == want[0], (hex(dlid), got, want)
            assert ctx.get(dut.mgmt) == for_switch(cfg, lrh, lft, mft), hex(dlid)
            seen_mgmt.add(for_switch(cfg, lrh, lft, mft))
            if want[0] == RouteDrop.NONE and ctx.get(dut.mcast):
                assert ctx.get(dut.mask) == want[1], (hex(dlid), want)
            elif want[0] == RouteDrop.NONE:
                assert got[1:] == want[1:], (hex(dlid), got, want)
            seen.add(want[0])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == set(RouteDrop), f"not every outcome exercised: {seen}"
    assert seen_mgmt == {True, False}
    if cfg.adaptive:
        assert len(pinned_seen) == n, f"flow-pinned choices reached only ports {pinned_seen}"


def test_flow_pinned_by_hand():
    """Flow-pinned AR groups, from the documented hash (docs/reliability.md), not from the
    model's code: h = bits 15:8 of (SLID ^ DLID) * 0x9E37, port k = (h * count) >> 8 of the
    group's Active ports. SLID 1, DLID 2: 3 * 0x9E37 = 0x1DAA5, h = 0xDA = 218; 4 ports:
    218 * 4 >> 8 = 3, the fourth; 3 ports: 2; 1 port: 0."""
    cfg = CONFIGS["small-rxreg"]
    n = cfg.ports
    lft = [255] * cfg.lft_size
    lft[2] = 0x80 | 1                             # DLID 2: adaptive, LFT port 1 (Verilog 0)
    lft[3] = 1                                    # DLID 3: the same port, not adaptive
    sl2vl = [0] * (2 * n * n)
    act = set(range(n))
    grp = {0: [0, 1, 2, 3]}
    assert route(cfg, 0, LRH(dlid=2, slid=1), lft, sl2vl, act, pinned=grp) == (RouteDrop.NONE, 3, 0)
    assert route(cfg, 0, LRH(dlid=2, slid=1), lft, sl2vl, act, pinned={0: [0, 2, 3]}) == (RouteDrop.NONE, 3, 0)
    assert route(cfg, 0, LRH(dlid=2, slid=1), lft, sl2vl, act, pinned={0: [0, 1, 3]})[1] == 3
    assert route(cfg, 0, LRH(dlid=2, slid=1), lft, sl2vl, act, pinned={0: [2]})[1] == 2
    assert route(cfg, 0, LRH(dlid=3, slid=1), lft, sl2vl, act, pinned=grp)[1] == 0      # not adaptive
    assert route(cfg, 0, LRH(dlid=2, slid=1), lft, sl2vl, act, pinned={0: []})[1] == 0  # no group
    # every (SLID, DLID) one port; 32 sources spread over the 4 ports within 7..9 each
    counts = [0] * 4
    for slid in range(1, 33):
        ports = {route(cfg, 0, LRH(dlid=2, slid=slid), lft, sl2vl, act, pinned=grp)[1] for _ in range(2)}
        assert len(ports) == 1
        counts[ports.pop()] += 1
    assert sum(counts) == 32 and all(7 <= c <= 9 for c in counts), counts


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
