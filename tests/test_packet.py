"""Packet model: layouts against the spec's bit positions, round trips, CRC coverage rules."""
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from hw.common.layouts import BTHLayout, FCLayout, LRHLayout
from models.crc import CRC16, CRC32
from models.packet import (
    BTH,
    LNH,
    LRH,
    FCPacket,
    build_data_packet,
    build_link_packet,
    from_flits,
    icrc_masked,
    parse_data_packet,
    parse_link_packet,
    to_flits,
)

u = st.integers
lrhs = st.builds(LRH, vl=u(0, 15), lver=u(0, 15), sl=u(0, 15), rsvd0=u(0, 3), lnh=u(0, 3),
                 dlid=u(0, 0xFFFF), rsvd1=u(0, 31), pktlen=u(0, 2047), slid=u(0, 0xFFFF))
bths = st.builds(BTH, opcode=u(0, 255), se=u(0, 1), m=u(0, 1), padcnt=u(0, 3), tver=u(0, 15),
                 pkey=u(0, 0xFFFF), fecn=u(0, 1), becn=u(0, 1), rsvd6=u(0, 63), destqp=u(0, 2**24 - 1),
                 a=u(0, 1), rsvd7=u(0, 127), psn=u(0, 2**24 - 1))


def test_lrh_bit_positions_from_the_spec():
    # IBA §7.7: VL:4 LVer:4 | SL:4 rsvd:2 LNH:2 | DLID:16 | rsvd:5 PktLen:11 | SLID:16
    b = LRH(vl=0xA, lver=0x0, sl=0x5, lnh=2, dlid=0x1234, pktlen=0x7FF, slid=0xBEEF).pack()
    assert b == bytes([0xA0, 0x52, 0x12, 0x34, 0x07, 0xFF, 0xBE, 0xEF])


def test_fc_bit_positions_from_the_spec():
    # IBA §7.9.4: Op:4 FCTBS:12 | VL:4 FCCL:12 | LPCRC:16
    b = FCPacket(op=1, fctbs=0xABC, vl=3, fccl=0x123).pack()
    assert b == bytes([0x1A, 0xBC, 0x31, 0x23])


@given(lrhs)
def test_lrh_struct_matches_model(h):
    fields = {k: getattr(h, k) for k in ("vl", "lver", "sl", "rsvd0", "lnh", "dlid", "rsvd1", "pktlen", "slid")}
    assert LRHLayout.const(fields).as_value().value == h.to_int()
    assert LRH.unpack(h.pack()) == h


@given(bths)
def test_bth_struct_matches_model(h):
    fields = {k: getattr(h, k) for k, _ in BTH.FIELDS}
    assert BTHLayout.const(fields).as_value().value == h.to_int()
    assert BTH.unpack(h.pack()) == h


@given(u(0, 15), u(0, 4095), u(0, 15), u(0, 4095))
def test_fc_struct_matches_model(op, fctbs, vl, fccl):
    pkt = build_link_packet(FCPacket(op=op, fctbs=fctbs, vl=vl, fccl=fccl))
    wire = int.from_bytes(pkt[4:6], "big")
    v = FCLayout.const({"op": op, "fctbs": fctbs, "vl": vl, "fccl": fccl, "lpcrc_wire": wire})
    assert v.as_value().value == int.from_bytes(pkt, "big")
    assert parse_link_packet(pkt) == (FCPacket(op=op, fctbs=fctbs, vl=vl, fccl=fccl), True)


@given(lrhs.filter(lambda h: h.lnh in (2, 3)), bths, st.binary(max_size=300), st.binary(min_size=40, max_size=40))
def test_data_packet_round_trip(lrh, bth, payload, grh):
    pkt = build_data_packet(lrh, payload, bth, grh if lrh.lnh == 3 else None)
    d = parse_data_packet(pkt)
    assert d.payload == payload and d.vcrc_ok and d.icrc_ok and d.pktlen_ok
    assert len(pkt) == 4 * d.lrh.pktlen + 2 and len(pkt) % 4 == 2
    assert d.lrh.vl == lrh.vl and d.lrh.dlid == lrh.dlid and d.bth.psn == bth.psn


@given(st.binary(min_size=12, max_size=200).filter(lambda b: len(b) % 4 == 0))
def test_raw_packet_round_trip(payload):
    pkt = build_data_packet(LRH(lnh=LNH.RAW), payload)
    d = parse_data_packet(pkt)
    assert d.payload == payload and d.vcrc_ok and d.icrc is None and d.pktlen_ok


@given(lrhs.filter(lambda h: h.lnh in (2, 3)), bths, st.binary(max_size=100), u(0, 15), u(0, 1), u(0, 1),
       u(0, 63), st.binary(min_size=40, max_size=40))
def test_icrc_invariant_under_variant_fields(lrh, bth, payload, vl, fecn, becn, rsvd6, grh):
    """Changing VL, FECN, BECN (and GRH TClass/FlowLabel/HopLmt) keeps the ICRC; the VCRC
    changes (IBA §7.8)."""
    g = grh if lrh.lnh == 3 else None
    a = build_data_packet(lrh, payload, bth, g)
    g2 = None
    if g is not None:
        g2 = bytearray(g)
        g2[0] ^= 0x0F
        g2[1] ^= 0x5A
        g2[7] ^= 0xFF
        g2 = bytes(g2)
    b = build_data_packet(replace(lrh, vl=vl), payload, replace(bth, fecn=fecn, becn=becn, rsvd6=rsvd6), g2)
    assert a[-6:-2] == b[-6:-2]                          # ICRC untouched
    assert parse_data_packet(b).vcrc_ok and parse_data_packet(b).icrc_ok
    if vl != lrh.vl:
        # VL alone changed: a burst of at most 4 bits, which CRC-16 always detects
        c = build_data_packet(replace(lrh, vl=vl), payload, bth, g)
        assert a[-6:-2] == c[-6:-2] and a[-2:] != c[-2:]


def test_vl_change_changes_vcrc_not_icrc():
    a = build_data_packet(LRH(vl=0, dlid=3), b"abcd", BTH())
    b = build_data_packet(LRH(vl=5, dlid=3), b"abcd", BTH(fecn=1))
    assert a[-6:-2] == b[-6:-2] and a[-2:] != b[-2:]


def test_icrc_not_invariant_under_covered_fields():
    a = build_data_packet(LRH(dlid=3), b"abcd", BTH(psn=1))
    b = build_data_packet(LRH(dlid=3), b"abcd", BTH(psn=2))
    assert a[-6:-2] != b[-6:-2]


def test_icrc_wire_order_is_least_significant_byte_first():
    pkt = build_data_packet(LRH(dlid=3), b"abcd", BTH())
    body = pkt[:-6]
    assert pkt[-6:-2] == CRC32(icrc_masked(body)).to_bytes(4, "little")
    assert pkt[-2:] == CRC16(pkt[:-2]).to_bytes(2, "little")


@given(st.binary(min_size=1, max_size=600), st.sampled_from([64, 128, 256, 512]))
def test_flit_round_trip(data, width):
    fl = to_flits(data, width)
    assert fl[0].sop and fl[-1].eop and sum(f.sop for f in fl) == 1 and sum(f.eop for f in fl) == 1
    assert 1 <= fl[-1].nbytes <= width // 8
    assert from_flits(fl, width) == data
    assert fl[0].data >> (width - 8) == data[0]          # byte 0 is the most significant


@given(st.binary(max_size=64), u(0, 0xFFFF), u(0, 0xFFFF), u(0, 15), u(0, 15), st.binary(min_size=40, max_size=40))
def test_icrc_of_a_global_packet_leaves_out_the_whole_lrh(payload, dlid, slid, sl, vl, grh):
    """With a GRH, a router replaces the LRH (DLID, SLID, SL, VL: the next subnet's), so the
    end-to-end ICRC may cover none of it; without one the LRH's DLID is covered."""
    a = build_data_packet(LRH(lnh=LNH.IBA_GLOBAL, dlid=1, slid=2), payload, BTH(), grh)
    b = build_data_packet(LRH(lnh=LNH.IBA_GLOBAL, dlid=dlid, slid=slid, sl=sl, vl=vl), payload, BTH(), grh)
    assert a[-6:-2] == b[-6:-2]
    local = build_data_packet(LRH(lnh=LNH.IBA_LOCAL, dlid=dlid ^ 1), payload, BTH())
    assert local[-6:-2] != build_data_packet(LRH(lnh=LNH.IBA_LOCAL, dlid=dlid), payload, BTH())[-6:-2]


def test_icrc_of_a_global_packet_starts_from_eight_bytes_of_ones():
    """The same rule as RoCE's ICRC (a global packet without its LRH), whose CRC-32 state after
    the missing LRH is 0xDEBB20E3 (Linux rxe_icrc.c): the register after 8 bytes of ones."""
    assert CRC32.update(CRC32.init, b"\xff" * 8) == 0xDEBB20E3
    pkt = build_data_packet(LRH(lnh=LNH.IBA_GLOBAL, dlid=77), b"xyzw", BTH(), bytes(range(40)))
    masked = icrc_masked(pkt[:-6])
    assert masked[:8] == b"\xff" * 8
    state = CRC32.update(0xDEBB20E3, masked[8:])
    assert (state ^ 0xFFFFFFFF).to_bytes(4, "little") == pkt[-6:-2]


@given(lrhs.filter(lambda h: h.lnh in (2, 3)), bths, st.binary(max_size=64), st.binary(min_size=40, max_size=40))
def test_firmware_icrc_matches_the_packet_model(lrh, bth, payload, grh):
    from fw.ud import icrc as fw_icrc
    pkt = build_data_packet(lrh, payload, bth, grh if lrh.lnh == 3 else None)
    assert fw_icrc(pkt[:-6]).to_bytes(4, "little") == pkt[-6:-2]
