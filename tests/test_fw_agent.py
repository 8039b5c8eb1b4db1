"""The switch firmware (fw/) against an SM's node written apart from it (verif/outside/mad_ref:
libibmad's field tables, the golden packet model) and against Wireshark's dissector, on a
plain-Python register file: directed-route discovery and forwarding (IBA §14.2.2), every
SMA attribute Get/Set with its register effect, the PMA, and malformed MADs answered with
the right status or counted and dropped."""
import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.config import CONFIGS, MTU_CODES
from contracts.defs import PortState
from fw.agent import SwitchFirmware
from fw.hw import RegisterFile
from fw.sma import NodeIdentity
from verif.outside.mad_ref import PERM, RefSM
from verif.outside.tshark_ref import tshark_fields

GET, SET, RESP = 0x01, 0x02, 0x81
CFG = CONFIGS["small"]           # 4 ports, 2 data VLs
GUID = 0x0002C903000A0B0C
MTU = MTU_CODES[CFG.mtu]        # MTUCap


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def sw():
    regs = RegisterFile(CFG)
    return regs, SwitchFirmware(regs, NodeIdentity(node_guid=GUID, description="sw-under-test"))


def one(fw, pkt, port):
    out = run(fw.receive(pkt, port))
    assert len(out) == 1, out
    return out[0]


def test_dr_nodeinfo_one_hop_comes_back_the_way_it_came(sw):
    regs, fw = sw
    sm = RefSM()
    req = sm.dr_smp(GET, "NodeInfo", path=[3])         # the SM's node sends it out of its port 3
    pkt, port = one(fw, req, 2)                        # ... and it arrives at our port 2
    assert port == 2
    r = sm.parse(pkt)
    assert r.icrc_ok and r.vcrc_ok and r.lrh.vl == 15 and r.lrh.dlid == PERM and r.lrh.slid == PERM
    assert r.bth.destqp == 0 and r.bth.opcode == 0x64
    h = sm.hdr(r)
    assert (h["method"], h["dr_status"], h["d"], h["hop_ptr"], h["hop_cnt"]) == (RESP, 0, 1, 1, 1)
    assert h["rpath"][1] == 2 and h["tid"] == sm.tid
    g = lambda f, wide=False: sm.data_field(r, f, wide)          # noqa: E731
    assert g("IB_NODE_TYPE_F") == 2 and g("IB_NODE_NPORTS_F") == CFG.ports
    assert g("IB_NODE_GUID_F", True) == GUID and g("IB_NODE_PORT_GUID_F", True) == GUID
    assert g("IB_NODE_LOCAL_PORT_F") == 2 and g("IB_NODE_BASE_VERS_F") == 1 and g("IB_NODE_CLASS_VERS_F") == 1


def test_dr_forwarding_out_and_back(sw):
    """Two hops: we are the first switch. Outgoing: ReturnPath[1] = arrival port, out of
    InitialPath[2]; the far node's answer comes back through us to where it started."""
    regs, fw = sw
    sm = RefSM()
    req = sm.dr_smp(GET, "NodeInfo", path=[1, 4])
    fwd, port = one(fw, req, 3)
    assert port == 4
    h = sm.hdr(sm.parse(fwd))
    assert (h["d"], h["hop_ptr"], h["hop_cnt"], h["rpath"][1]) == (0, 2, 2, 3)
    # the far node answers (C14-13:1): D = 1, hop pointer n + 1 -> n, out of its ReturnPath[2]
    b = bytearray(sm.parse(fwd).mad)
    sm.m.set(b, "IB_MAD_METHOD_F", 1)
    sm.m.set(b, "IB_MAD_RESPONSE_F", 1)
    sm.m.set(b, "IB_DRSMP_DIRECTION_F", 1)
    sm.m.set(b, "IB_DRSMP_HOPPTR_F", 2)
    back, port = one(fw, sm.wrap(b, dlid=PERM, slid=PERM, qp=0), 4)
    assert port == 3
    h = sm.hdr(sm.parse(back))
    assert (h["d"], h["hop_ptr"]) == (1, 1)
    assert fw.stats["forwarded"] == 2


@pytest.mark.parametrize("path, hop_ptr, why", [
    ([1, 2], 0, "outgoing SMP with hop pointer 0 (C14-9:1)"),
    ([1, 9], 1, "next hop beyond the switch's ports"),
    ([1, 0], 1, "next hop port 0"),
    ([1], 5, "hop pointer beyond hop count + 1 (C14-9:5)"),
])
def test_dr_bad_paths_are_discarded_and_counted(sw, path, hop_ptr, why):
    regs, fw = sw
    sm = RefSM()
    assert run(fw.receive(sm.dr_smp(GET, "NodeInfo", path=path, hop_ptr=hop_ptr), 1)) == [], why
    assert fw.stats["dr_discarded"] == 1


def test_dr_lid_routed_last_part(sw):
    """DrDLID not permissive at the end of the DR part: sent on by the LFT (C14-9:3)."""
    regs, fw = sw
    sm = RefSM()
    pkt, port = one(fw, sm.dr_smp(GET, "NodeInfo", path=[1], dr_dlid=0x77), 1)
    r = sm.parse(pkt)
    assert port is None and r.lrh.dlid == 0x77 and sm.hdr(r)["hop_ptr"] == 2


def _get(fw, sm, attr, mod=0, port=1):
    r = sm.parse(one(fw, sm.dr_smp(GET, attr, mod, path=[1]), port)[0])
    assert sm.hdr(r)["dr_status"] == 0, hex(sm.hdr(r)["dr_status"])
    return r


def _set(fw, sm, attr, mod, data, port=1, status=0):
    r = sm.parse(one(fw, sm.dr_smp(SET, attr, mod, path=[1], data=data), port)[0])
    assert sm.hdr(r)["method"] == RESP
    assert sm.hdr(r)["dr_status"] == status, hex(sm.hdr(r)["dr_status"])
    return r


def test_switchinfo_and_nodedescription(sw):
    regs, fw = sw
    sm = RefSM()
    r = _get(fw, sm, "SwitchInfo")
    g = lambda f: sm.data_field(r, f)          # noqa: E731
    assert g("IB_SW_LINEAR_FDB_CAP_F") == CFG.lft_entries and g("IB_SW_MCAST_FDB_CAP_F") == CFG.mft_entries
    assert g("IB_SW_RANDOM_FDB_CAP_F") == 0 and g("IB_SW_ENHANCED_PORT0_F") == 0
    # set LinearFDBTop and the lifetime; PortStateChange is write-1-to-clear
    b = bytearray(64)
    sm.m.set(b, "IB_SW_LINEAR_FDB_TOP_F", 40)
    sm.m.set(b, "IB_SW_LIFE_TIME_F", 0x12)
    sm.m.set(b, "IB_SW_MCAST_FDB_TOP_F", 0xC003)
    r = _set(fw, sm, "SwitchInfo", 0, b)
    assert (sm.data_field(r, "IB_SW_LINEAR_FDB_TOP_F"), sm.data_field(r, "IB_SW_LIFE_TIME_F"),
            sm.data_field(r, "IB_SW_MCAST_FDB_TOP_F")) == (40, 0x12, 0xC003)
    b2 = bytearray(b)
    sm.m.set(b2, "IB_SW_LINEAR_FDB_TOP_F", CFG.lft_entries)
    _set(fw, sm, "SwitchInfo", 0, b2, status=0x1C)
    assert sm.data_field(_get(fw, sm, "SwitchInfo"), "IB_SW_LINEAR_FDB_TOP_F") == 40   # nothing applied
    regs.state[2] = PortState.DOWN                                  # a port changed state
    assert sm.data_field(_get(fw, sm, "SwitchInfo"), "IB_SW_STATE_CHANGE_F") == 1
    b3 = bytearray(b)
    sm.m.set(b3, "IB_SW_STATE_CHANGE_F", 1)
    assert sm.data_field(_set(fw, sm, "SwitchInfo", 0, b3), "IB_SW_STATE_CHANGE_F") == 0
    r = _get(fw, sm, "NodeDescription")
    assert r.data.rstrip(b"\0") == b"sw-under-test"


def test_portinfo_lid_states_and_checks(sw):
    regs, fw = sw
    sm = RefSM()
    for p in range(CFG.ports + 1):
        r = _get(fw, sm, "PortInfo", p, port=2)
        g = lambda f, r=r: sm.data_field(r, f)          # noqa: E731
        assert g("IB_PORT_LOCAL_PORT_F") == 2
        assert g("IB_PORT_STATE_F") == (4 if p == 0 else 2)           # port 0 always Active
        assert g("IB_PORT_VL_CAP_F") == 2 and g("IB_PORT_MTU_CAP_F") == MTU   # VL0-1
        assert g("IB_PORT_VL_ARBITRATION_HIGH_CAP_F") == CFG.vlarb_entries
    # the switch's LID lives in port 0's PortInfo and in the SWITCH_LID register
    b = bytearray(64)
    sm.m.set(b, "IB_PORT_LID_F", 0x21)
    sm.m.set(b, "IB_PORT_SMLID_F", 0x1)
    sm.m.set(b, "IB_PORT_NEIGHBOR_MTU_F", MTU)
    r = _set(fw, sm, "PortInfo", 0, b)
    assert sm.data_field(r, "IB_PORT_LID_F") == 0x21 and sm.data_field(r, "IB_PORT_SMLID_F") == 1
    assert run(regs.read("SWITCH_LID")) == 0x21

    def state(p, want, status=0):
        b = bytearray(64)
        sm.m.set(b, "IB_PORT_STATE_F", want)
        sm.m.set(b, "IB_PORT_NEIGHBOR_MTU_F", MTU)
        sm.m.set(b, "IB_PORT_OPER_VLS_F", 2)
        _set(fw, sm, "PortInfo", p, b, status=status)          # an error echoes the request
        return sm.data_field(_get(fw, sm, "PortInfo", p), "IB_PORT_STATE_F")
    assert state(3, 4, status=0x1C) == 2                 # Init -> Active: invalid, unchanged
    assert state(3, 3) == 3 and regs.state[2] == PortState.ARMED
    assert state(3, 3, status=0x1C) == 3                 # Armed -> Armed: invalid
    assert state(3, 4) == 4 and regs.state[2] == PortState.ACTIVE
    assert state(3, 1) == 1 and regs.state[2] == PortState.DOWN
    assert state(3, 2, status=0x1C) == 1                 # Init is not a state an SM sets
    assert state(0, 1, status=0x1C) == 4                 # the management port stays up
    b = bytearray(64)
    sm.m.set(b, "IB_PORT_OPER_VLS_F", 3)                 # VL0-3 on a 2-VL switch
    sm.m.set(b, "IB_PORT_NEIGHBOR_MTU_F", MTU)
    _set(fw, sm, "PortInfo", 1, b, status=0x1C)
    _set(fw, sm, "PortInfo", CFG.ports + 1, bytearray(64), status=0x1C)
    assert not any(reg == "PORT_STATE" and i == 0 for reg, i, _v in regs.writes)


def test_lft_blocks_round_trip_through_the_registers(sw):
    regs, fw = sw
    sm = RefSM()
    entries = bytes([(k % (CFG.ports + 1)) if k % 7 else 0xFF for k in range(64)])
    r = _set(fw, sm, "LFT", 1, entries)
    assert r.data == entries
    for lid in range(64, 128):                           # LID d: register word d/4, byte d%4
        word = run(regs.read("LFT", lid // 4))
        assert (word >> (8 * (lid % 4))) & 0xFF == entries[lid - 64]
    assert _get(fw, sm, "LFT", 1).data == entries
    assert _get(fw, sm, "LFT", 0).data == bytes([0xFF] * 64)       # reset: every entry drops
    _set(fw, sm, "LFT", 0, bytes([CFG.ports + 1] * 64), status=0x1C)
    _set(fw, sm, "LFT", CFG.lft_entries // 64, bytes(64), status=0x1C)


def test_mft_positions_and_blocks(sw):
    regs, fw = sw
    sm = RefSM()
    masks = bytes(b for k in range(32) for b in ((k * 5) & 0x1F).to_bytes(2, "big"))   # ports 0..4
    r = _set(fw, sm, "MFT", 0 << 28 | 0, masks)
    assert r.data == masks
    words = -(-(CFG.ports + 1) // 32)
    for k in range(min(32, CFG.mft_entries)):
        assert run(regs.read("MFT", k * words)) == (k * 5) & 0x1F
    _set(fw, sm, "MFT", 1 << 28, bytes(64), status=0x1C)              # position 1: ports 16..31
    _set(fw, sm, "MFT", CFG.mft_entries // 32, bytes(64), status=0x1C)


def test_sl2vl_nibbles_and_vlarb_elements(sw):
    regs, fw = sw
    sm = RefSM()
    sl2vl = bytes([0x01, 0x10, 0x11, 0x00, 0x01, 0x01, 0x10, 0xF1])      # SL0->0, SL1->1, ..., SL14->15
    mod = (2 << 8) | 3                                                 # in port 2 -> out port 3
    assert _set(fw, sm, "SL2VL", mod, sl2vl).data[:8] == sl2vl
    idx = ((2 - 1) * CFG.ports + (3 - 1)) * 2
    w0, w1 = run(regs.read("SL2VL", idx)), run(regs.read("SL2VL", idx + 1))
    vls = [(w0 if s < 8 else w1) >> (4 * (s % 8)) & 0xF for s in range(16)]
    assert vls == [0, 1, 1, 0, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0xF, 1]
    _set(fw, sm, "SL2VL", mod, bytes([0x22] + [0] * 7), status=0x1C)  # VL2 on a 2-VL switch
    # optimized programming (SwitchInfo advertises it; OpenSM's use_optimized_slvl): bit 17
    # every input port, bit 16 every output port, in one Set
    assert sm.data_field(_get(fw, sm, "SwitchInfo"), "IB_SW_OPT_SLTOVL_MAPPING_F") == 1
    table = bytes([0x10, 0x01, 0x10, 0x01, 0x10, 0x01, 0x10, 0x01])      # one table for every pair
    _set(fw, sm, "SL2VL", 0x30000, table)
    for i in range(1, CFG.ports + 1):
        for o in range(1, CFG.ports + 1):
            assert _get(fw, sm, "SL2VL", (i << 8) | o).data[:8] == table, (i, o)
    other = bytes([0x01] * 8)
    _set(fw, sm, "SL2VL", 0x20000 | 3, other)                          # every input, output 3
    assert [_get(fw, sm, "SL2VL", (i << 8) | o).data[:8] == other for i in (1, 2) for o in (2, 3)] == \
        [False, True, False, True]
    r = sm.parse(one(fw, sm.dr_smp(GET, "SL2VL", 0x30000, path=[1]), 1)[0])   # a Get names one pair
    assert sm.hdr(r)["dr_status"] == 0x1C
    _set(fw, sm, "SL2VL", 0x40000, table, status=0x1C)                  # reserved bit
    # VLArb low block 1 of port 4: (VL, weight) elements
    elems = bytes(b for k in range(32) for b in ((k % 2), 10 + k if k < CFG.vlarb_entries else 0))
    r = _set(fw, sm, "VLArb", (1 << 16) | 4, elems)
    e = CFG.vlarb_entries
    assert r.data[:2 * e] == elems[:2 * e] and r.data[2 * e:] == bytes(64 - 2 * e)
    for k in range(e):
        v = run(regs.read("VLARB_LOW", 3 * e + k))
        assert (v & 0xF, v >> 8) == (k % 2, 10 + k)
    _set(fw, sm, "VLArb", (5 << 16) | 4, elems, status=0x1C)


@pytest.mark.parametrize("fix, status", [
    (("IB_MAD_CLASSVER_F", 2), 0x04),                 # bad class version
    (("IB_MAD_METHOD_F", 0x03), 0x08),                # Send: not an SMA method
    (("IB_MAD_ATTRID_F", 0x0042), 0x0C),              # no such attribute
])
def test_bad_mads_answered_with_status(sw, fix, status):
    regs, fw = sw
    sm = RefSM()
    b = bytearray(sm.parse(sm.dr_smp(GET, "NodeInfo", path=[1])).mad)
    sm.m.set(b, *fix)
    r = sm.parse(one(fw, sm.wrap(b, dlid=PERM, slid=PERM, qp=0), 1)[0])
    assert sm.hdr(r)["dr_status"] == status and sm.hdr(r)["method"] == RESP


def test_set_of_read_only_attribute(sw):
    regs, fw = sw
    sm = RefSM()
    r = sm.parse(one(fw, sm.dr_smp(SET, "NodeInfo", path=[1]), 1)[0])
    assert sm.hdr(r)["dr_status"] == 0x0C


def test_malformed_packets_counted_and_dropped(sw):
    regs, fw = sw
    sm = RefSM()
    good = sm.dr_smp(GET, "NodeInfo", path=[1])
    cases = {
        "VCRC": good[:-1] + bytes([good[-1] ^ 1]),
        "ICRC": good[:100] + bytes([good[100] ^ 0x40]) + good[101:],
        "short": good[:200],
        "PktLen": good[:6] + bytes([good[6], good[7] ^ 1]) + good[8:],
    }
    for why, pkt in cases.items():
        assert run(fw.receive(pkt, 1)) == [], why
    assert fw.stats["malformed"] == len(cases)
    # an SMP on a data VL, a PMA MAD on VL15: dropped and counted apart
    smp_vl0 = sm.wrap(sm.parse(good).mad, dlid=PERM, slid=PERM, qp=0, vl=0)
    assert run(fw.receive(smp_vl0, 1)) == [] and fw.stats["smp_on_data_vl"] == 1
    gmp_vl15 = sm.pma(GET, "PortCounters", dlid=5, vl=15)
    assert run(fw.receive(gmp_vl15, 1)) == [] and fw.stats["gmp_on_vl15"] == 1


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.lists(st.tuples(st.integers(0, 299), st.integers(0, 255)), min_size=1, max_size=6),
       port=st.integers(0, 8))
def test_fuzzed_packets_never_crash_the_agent(sw, flips, port):
    """Random corruption anywhere, CRCs then made good again so the MAD code sees it."""
    regs, fw = sw
    sm = RefSM()
    b = bytearray(sm.parse(sm.dr_smp(GET, "PortInfo", 1, path=[1, 2])).mad)
    for off, val in flips:
        if off < 256:
            b[off] = val
    out = run(fw.receive(sm.wrap(b, dlid=PERM, slid=PERM, qp=0), port))
    for pkt, p in out:
        assert p is None or 1 <= p <= CFG.ports
        assert sm.parse(pkt).vcrc_ok and sm.parse(pkt).icrc_ok


_CC_REGS = RegisterFile(CONFIGS["small-rxreg"])
_CC_FW = SwitchFirmware(_CC_REGS, NodeIdentity(node_guid=GUID))


@settings(max_examples=300, deadline=None)
@given(attr=st.sampled_from(["CongestionInfo", "CongestionKeyInfo", "CongestionLog", "SwitchCongestionSetting",
                             "SwitchPortCongestionSetting", "CACongestionSetting"]),
       method=st.sampled_from([GET, SET, 0x03, RESP]), mod=st.integers(0, 3),
       flips=st.lists(st.tuples(st.integers(0, 255), st.integers(0, 255)), max_size=6))
def test_fuzzed_cc_mads_never_crash_the_agent(attr, method, mod, flips):
    """Congestion control MADs with random attribute, method, modifier and corrupted bytes
    (CRCs made good again): the agent answers with a status or drops, never raises; what it
    writes stays within CC_PORT's fields."""
    sm = RefSM(lid=1)
    b = bytearray(sm.parse(sm.cc(method, attr, mod, bytes(192), dlid=9)).mad)
    for off, val in flips:
        if off >= 24 or off in (0, 2, 3, 16, 17, 20, 21, 22, 23):     # not the class: it stays CC
            b[off] = val
    _CC_FW.cca.key["cc_key"] = 0                                     # a fuzzed Set may have set a key
    out = run(_CC_FW.receive(sm.wrap(b, dlid=9, slid=1, qp=1, vl=0), 1))
    for pkt, _p in out:
        assert sm.parse(pkt).vcrc_ok and sm.parse(pkt).icrc_ok
    assert all(v & ~0xFFFFFF0F == 0 for (r, _i), v in _CC_REGS.mem.items() if r == "CC_PORT")


def test_packet_from_no_physical_port_is_refused(sw):
    """The management queue tags every packet with the IBA port (1..N) it came in on; one
    claimed from port 0 or beyond N has nowhere to be answered: dropped and counted
    (found by the fuzz test above: a DR SMP with hop count 0 from port 0 was answered out of
    port 0, which tdest reads as 'route by the LFT')."""
    regs, fw = sw
    sm = RefSM()
    req = sm.dr_smp(GET, "NodeInfo", 0, path=[1])
    for port in (0, CFG.ports + 1):
        assert run(fw.receive(req, port)) == []
    assert fw.stats["bad_port"] == 2 and fw.stats["responses_sent"] == 0
    assert len(run(fw.receive(req, 1))) == 1


def test_lid_routed_smp_answered_by_lid(sw):
    regs, fw = sw
    sm = RefSM(lid=1)
    run(regs.write("SWITCH_LID", 0, 9))
    pkt, port = one(fw, sm.lid_smp(GET, "NodeInfo", dlid=9), 2)
    r = sm.parse(pkt)
    assert port is None and r.lrh.dlid == 1 and r.lrh.slid == 9
    assert sm.hdr(r)["status"] == 0 and sm.data_field(r, "IB_NODE_TYPE_F") == 2


def test_pma_port_counters_get_clear_saturate(sw):
    regs, fw = sw
    sm = RefSM(lid=1)
    run(regs.write("SWITCH_LID", 0, 9))
    regs.set_counter(1, "PortXmitData", 123456)
    regs.set_counter(1, "PortRcvPkts", 77)
    regs.set_counter(1, "PortRcvErrors", 70000)             # beyond the 16-bit field: saturates
    regs.set_counter(1, "LinkDownedCounter", 3)
    regs.set_counter(1, "VL15Dropped", 5)

    def pc(method=GET, select=0, port=2, attr="PortCounters"):
        b = bytearray(64)
        sm.m.set(b, "IB_PC_PORT_SELECT_F", port)
        sm.m.set(b, "IB_PC_COUNTER_SELECT_F", select)
        pkt, out = one(fw, sm.pma(method, attr, bytes(b), dlid=9), 1)
        r = sm.parse(pkt)
        assert out is None and r.lrh.dlid == 1 and r.bth.destqp == 1 and sm.hdr(r)["method"] == RESP
        return r
    r = pc()
    g = lambda f, wide=False: sm.field(r, f, at=64, wide=wide)          # noqa: E731
    assert (g("IB_PC_XMT_BYTES_F"), g("IB_PC_RCV_PKTS_F"), g("IB_PC_ERR_RCV_F"), g("IB_PC_LINK_DOWNED_F"),
            g("IB_PC_VL15_DROPPED_F"), g("IB_PC_PORT_SELECT_F")) == (123456, 77, 0xFFFF, 3, 5, 2)
    r = pc(SET, select=1 << 12 | 1 << 3)                 # clear PortXmitData and PortRcvErrors
    regs.set_counter(1, "PortXmitData", 123500)
    r = pc()
    assert (g("IB_PC_XMT_BYTES_F"), g("IB_PC_ERR_RCV_F"), g("IB_PC_RCV_PKTS_F")) == (44, 0, 77)
    r = pc(attr="PortCountersExtended")
    assert (g("IB_PC_EXT_XMT_BYTES_F", True), g("IB_PC_EXT_RCV_PKTS_F", True)) == (44, 77)
    assert sm.hdr(pc(port=0xFF))["status"] == 0x1C        # AllPortSelect is not supported
    r = sm.parse(one(fw, sm.pma(GET, "ClassPortInfo", dlid=9), 1)[0])
    assert sm.field(r, "IB_CPI_CAPMASK_F", at=64) & (1 << 12)


def test_pma_port_xmit_discard_details():
    """PortXmitDiscardDetails (IBA §16.1.4.3) on a switch built with lifetimes: the lifetime
    discards of port p by reason are register LIFE_DISCARDS[2 (p - 1) + k] (k 0: switch
    lifetime, 1: HOQLife), answered as 16-bit fields that stop at 0xFFFF; a Set clears the
    counters its CounterSelect names (bits 2, 3); without lifetimes they are 0. Read through
    libibmad's fields (IB_PC_XMT_*_DISC_F)."""
    cfg = CONFIGS["small-rxreg"]
    regs = RegisterFile(cfg)
    fw = SwitchFirmware(regs, NodeIdentity(node_guid=GUID))
    sm = RefSM(lid=1)
    run(regs.write("SWITCH_LID", 0, 9))
    regs.mem[("LIFE_DISCARDS", 2 * 2 + 0)] = 12
    regs.mem[("LIFE_DISCARDS", 2 * 2 + 1)] = 70000

    def xd(fw, method=GET, select=0, port=3):
        b = bytearray(64)
        sm.m.set(b, "IB_PC_PORT_SELECT_F", port)
        sm.m.set(b, "IB_PC_COUNTER_SELECT_F", select)
        pkt, out = one(fw, sm.pma(method, "PortXmitDiscardDetails", bytes(b), dlid=9), 1)
        r = sm.parse(pkt)
        assert out is None and sm.hdr(r)["status"] == 0 and sm.hdr(r)["method"] == RESP
        return tuple(sm.field(r, f, at=64) for f in ("IB_PC_XMT_INACT_DISC_F", "IB_PC_XMT_NEIGH_MTU_DISC_F",
                                                     "IB_PC_XMT_SW_LIFE_DISC_F", "IB_PC_XMT_SW_HOL_DISC_F"))
    assert xd(fw) == (0, 0, 12, 0xFFFF)
    assert xd(fw, port=2) == (0, 0, 0, 0)
    xd(fw, SET, select=1 << 2)                              # clear PortSwLifetimeLimitDiscards
    regs.mem[("LIFE_DISCARDS", 2 * 2 + 0)] = 15
    assert xd(fw) == (0, 0, 3, 0xFFFF)
    plain = RegisterFile(CONFIGS["small"])
    run(plain.write("SWITCH_LID", 0, 9))
    assert xd(SwitchFirmware(plain, NodeIdentity(node_guid=GUID))) == (0, 0, 0, 0)


def test_wireshark_decodes_what_the_agent_sends(sw):
    regs, fw = sw
    sm = RefSM()
    req = sm.dr_smp(GET, "NodeInfo", path=[3])
    rsp, _ = one(fw, req, 2)
    req2 = sm.dr_smp(GET, "SwitchInfo", path=[3])
    rsp2, _ = one(fw, req2, 2)
    rows = tshark_fields([req, rsp, rsp2], [
        "infiniband.lrh.vl", "infiniband.lrh.dlid", "infiniband.lrh.pktlen", "infiniband.smpdirected.hopcount",
        "infiniband.smpdirected.hoppointer", "infiniband.smpdirected.smpstatus", "infiniband.nodeinfo.nodetype",
        "infiniband.nodeinfo.numports", "infiniband.nodeinfo.nodeguid", "infiniband.nodeinfo.localportnum",
        "infiniband.switchinfo.linearfdbcap", "infiniband.switchinfo.multicastfdbcap"])
    assert len(rows) == 3
    req_row, rsp_row, si_row = rows
    v = lambda row, f: [int(x, 0) for x in row[f"infiniband.{f}"]]          # noqa: E731
    # Wireshark 4.0's own D field reads one byte under the mask 0x8000 (always 0): the D bit
    # is checked as bit 15 of the 16-bit status word it shows
    assert v(req_row, "smpdirected.smpstatus") == [0]
    assert v(rsp_row, "lrh.vl") == [15] and v(rsp_row, "smpdirected.smpstatus") == [0x8000]
    assert v(rsp_row, "smpdirected.hopcount") == [1] and v(rsp_row, "smpdirected.hoppointer") == [1]
    assert v(rsp_row, "lrh.pktlen")[0] * 4 + 2 == len(rsp)
    assert v(rsp_row, "nodeinfo.nodetype") == [2] and v(rsp_row, "nodeinfo.numports") == [CFG.ports]
    assert v(rsp_row, "nodeinfo.nodeguid") == [GUID] and v(rsp_row, "nodeinfo.localportnum") == [2]
    assert v(si_row, "switchinfo.linearfdbcap") == [CFG.lft_entries]
    assert v(si_row, "switchinfo.multicastfdbcap") == [CFG.mft_entries]


def test_trap_128_on_a_port_state_change_until_repressed(sw):
    """A port's state changes: PortStateChange set, Trap 128 (LID-routed SubnTrap(Notice),
    VL15) to the master SM's LID, routed by the LFT; sent again every TRAP_RESEND polls until
    a TrapRepress with its TID comes back; nothing sent before an SM gave us LIDs. Decoded
    with libibmad's fields and with Wireshark's dissector."""
    from fw.agent import TRAP_RESEND, TRAP_TRIES
    regs, fw = sw
    sm = RefSM(lid=1)
    assert run(fw.poll()) == []                                   # first look: states recorded
    regs.state[1] = PortState.DOWN
    assert all(run(fw.poll()) == [] for _ in range(2 * TRAP_RESEND))   # no SM known: nothing sent
    assert fw.stats["traps_sent"] == 0 and fw.stats["traps_given_up"] == 0
    assert sm.data_field(_get(fw, sm, "SwitchInfo"), "IB_SW_STATE_CHANGE_F") == 1
    b = bytearray(64)                                            # the SM: our LID 9, its LID 1
    sm.m.set(b, "IB_PORT_LID_F", 9)
    sm.m.set(b, "IB_PORT_SMLID_F", 1)
    sm.m.set(b, "IB_PORT_NEIGHBOR_MTU_F", MTU)
    _set(fw, sm, "PortInfo", 0, b)
    regs.state[2] = PortState.DOWN
    sent = [p for _ in range(TRAP_RESEND * (TRAP_TRIES + 2)) for p in run(fw.poll())]
    assert len(sent) == TRAP_TRIES and fw.stats["traps_given_up"] == 1     # unanswered: given up
    pkt, port = sent[0]
    assert port is None                                           # by the LFT, to the SM's LID
    r = sm.parse(pkt)
    assert r.icrc_ok and r.vcrc_ok and r.lrh.vl == 15 and (r.lrh.dlid, r.lrh.slid) == (1, 9)
    assert r.bth.destqp == 0
    h = sm.hdr(r)
    assert h["method"] == 0x05 and sm.field(r, "IB_MAD_ATTRID_F") == 0x0002 and sm.field(r, "IB_MAD_MGMTCLASS_F") == 1
    assert len({sm.hdr(sm.parse(p))["tid"] for p, _ in sent}) == 1           # one trap, sent again
    rows = tshark_fields([pkt], ["infiniband.notice.isgeneric", "infiniband.notice.producertypevendorid",
                                 "infiniband.notice.trapnumberdeviceid", "infiniband.notice.issuerlid",
                                 "infiniband.trap.lidaddr"])
    v = lambda f: [int(x, 0) for x in rows[0][f"infiniband.{f}"]]          # noqa: E731
    assert v("notice.isgeneric") == [1] and v("notice.producertypevendorid") == [2]
    assert v("notice.trapnumberdeviceid") == [128]
    assert v("notice.issuerlid") == [9] and v("trap.lidaddr") == [9]
    # the next change: sent, then repressed by the SM (same TID, method TrapRepress)
    regs.state[2] = PortState.INIT
    got = [p for _ in range(TRAP_RESEND) for p in run(fw.poll())]
    assert len(got) == 1
    rep = bytearray(sm.parse(got[0][0]).mad)
    sm.m.set(rep, "IB_MAD_METHOD_F", 0x07)
    stranger = bytearray(rep)                                    # a TrapRepress for another trap
    sm.m.set(stranger, "IB_MAD_TRID_F", sm.field(bytes(rep), "IB_MAD_TRID_F", wide=True) ^ 1, wide=True)
    assert run(fw.receive(sm.wrap(bytes(stranger), dlid=9, slid=1, qp=0), 1)) == []
    assert fw.stats["repress_unmatched"] == 1 and fw.stats["traps_repressed"] == 0
    assert run(fw.receive(sm.wrap(bytes(rep), dlid=9, slid=1, qp=0), 1)) == []
    assert fw.stats["traps_repressed"] == 1
    assert all(run(fw.poll()) == [] for _ in range(3 * TRAP_RESEND))    # repressed: not sent again
    assert fw.stats["traps_sent"] == TRAP_TRIES + 1


def test_lft_blocks_of_extended_lids():
    """Extended LIDs (docs/fabric.md): LinearForwardingTable block b holds LIDs 64b..64b+63 of
    the whole extended LID space, so blocks 1024.. address page 1 (LIDs 0x10000..); block
    1024 * page + k lands at LFT register entry page * lft_entries + 64k. Blocks the LFT has no
    entries for (beyond a page's entries, a page's 0xC000..0xFFFF, pages past 2^ext_lid_bits)
    are refused with status 0x1C (invalid attribute modifier) and write nothing."""
    cfg = CONFIGS["small-ext"]                        # 1 page bit, 64 entries a page
    regs = RegisterFile(cfg)
    fw = SwitchFirmware(regs, NodeIdentity(node_guid=GUID, description="sw-ext"))
    sm = RefSM()
    page1 = bytes([(k % cfg.ports) + 1 for k in range(64)])
    assert _set(fw, sm, "LFT", 1024, page1).data == page1
    for k in range(64):                               # entry 64 + k: word 16 + k / 4, byte k % 4
        assert (run(regs.read("LFT", 16 + k // 4)) >> (8 * (k % 4))) & 0xFF == page1[k]
    assert _get(fw, sm, "LFT", 0).data == bytes([0xFF] * 64)         # page 0 untouched
    assert _get(fw, sm, "LFT", 1024).data == page1
    before = len(regs.writes)
    for block in (1, 1025, 0xC000 // 64, 1024 + 0xC000 // 64, 2048, 0xFFFF):
        _set(fw, sm, "LFT", block, bytes(64), status=0x1C)
    assert len(regs.writes) == before
    r = _get(fw, sm, "SwitchInfo")
    assert sm.data_field(r, "IB_SW_LINEAR_FDB_CAP_F") == cfg.lft_entries


def test_port_failover_attribute():
    """PortFailover (vendor attribute 0xFF10, docs/reliability.md) on a switch built with
    failover: byte k of block 0 is IBA port k's alternate, register ALT_PORT[k - 1]; 0 and 255
    mean none; a port beyond N or a port as its own alternate is refused whole; a switch
    without failover does not have the attribute."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.failover
    regs = RegisterFile(cfg)
    fw = SwitchFirmware(regs, NodeIdentity(node_guid=GUID))
    sm = RefSM()

    def get(mod=0, status=0):
        r = sm.parse(one(fw, sm.dr_smp(GET, "PortFailover", mod, path=[1]), 1)[0])
        assert sm.hdr(r)["dr_status"] == status, hex(sm.hdr(r)["dr_status"])
        return r.data

    def put(data, mod=0, status=0):
        r = sm.parse(one(fw, sm.dr_smp(SET, "PortFailover", mod, path=[1], data=data), 1)[0])
        assert sm.hdr(r)["dr_status"] == status, hex(sm.hdr(r)["dr_status"])
        return r.data

    assert get() == bytes([0xFF] * 64)                                  # reset: none
    want = bytes([7, 2, 1, 4, 0]) + bytes([9] * 59)      # port 0 and ports > 4: ignored
    assert put(want) == bytes([0xFF, 2, 1, 4, 0xFF]) + bytes([0xFF] * 59)
    assert [run(regs.read("ALT_PORT", p)) for p in range(4)] == [2, 1, 4, 0xFF]
    before = list(regs.writes)
    put(bytes([0, 2, 5, 4, 3]) + bytes(59), status=0x1C)               # port 2 -> 5: no port 5
    put(bytes([0, 1, 1, 4, 3]) + bytes(59), status=0x1C)               # port 1 -> itself
    put(bytes(64), mod=1, status=0x1C)                                   # no block 1 at 4 ports
    assert regs.writes == before                                         # nothing written
    assert get()[1:5] == bytes([2, 1, 4, 0xFF])
    # a switch without failover
    plain = SwitchFirmware(RegisterFile(CFG), NodeIdentity(node_guid=GUID))
    r = sm.parse(one(plain, sm.dr_smp(GET, "PortFailover", 0, path=[1]), 1)[0])
    assert sm.hdr(r)["dr_status"] == 0x0C


def test_ar_group_attribute():
    """ARGroup (vendor attribute 0xFF11, docs/reliability.md) on a switch built with adaptive
    routing: byte k of block 0 is IBA port k's AR group, register AR_GROUP[k - 1]; port 0 and
    ports beyond N are ignored; a block beyond the ports is refused; a switch without
    adaptive routing does not have the attribute."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.adaptive
    regs = RegisterFile(cfg)
    fw = SwitchFirmware(regs, NodeIdentity(node_guid=GUID))
    sm = RefSM()

    def call(method, mod=0, data=bytes(64), status=0):
        r = sm.parse(one(fw, sm.dr_smp(method, "ARGroup", mod, path=[1], data=data), 1)[0])
        assert sm.hdr(r)["dr_status"] == status, hex(sm.hdr(r)["dr_status"])
        return r.data

    assert call(GET) == bytes(64)                                        # reset: no group
    assert call(SET, data=bytes([9, 0, 1, 1, 2]) + bytes([7] * 59)) == bytes([0, 0, 1, 1, 2]) + bytes(59)
    assert [run(regs.read("AR_GROUP", p)) for p in range(4)] == [0, 1, 1, 2]
    before = list(regs.writes)
    call(SET, mod=1, status=0x1C)                                        # no block 1 at 4 ports
    assert regs.writes == before
    plain = SwitchFirmware(RegisterFile(CFG), NodeIdentity(node_guid=GUID))
    r = sm.parse(one(plain, sm.dr_smp(GET, "ARGroup", 0, path=[1]), 1)[0])
    assert sm.hdr(r)["dr_status"] == 0x0C


def test_ar_lft_attribute():
    """ARLinearForwardingTable (vendor attribute 0xFF12, docs/reliability.md): byte k of block
    b says LID 64 b + k is adaptive, kept as bit 7 of its LFT entry; the LFT attribute still
    reads plain ports; an LFT Set clears the flags; drop (255) and management-port (0)
    entries cannot be adaptive; a byte other than 0 or 1 is refused whole."""
    cfg = CONFIGS["small-rxreg"]
    regs = RegisterFile(cfg)
    fw = SwitchFirmware(regs, NodeIdentity(node_guid=GUID))
    sm = RefSM()

    def call(method, attr, mod=0, data=bytes(64), status=0):
        r = sm.parse(one(fw, sm.dr_smp(method, attr, mod, path=[1], data=data), 1)[0])
        assert sm.hdr(r)["dr_status"] == status, hex(sm.hdr(r)["dr_status"])
        return r.data

    lft = bytes([0, 1, 2, 3, 4, 0xFF, 2]) + bytes([0xFF] * 57)
    call(SET, "LFT", data=lft)
    flags = bytes([1, 1, 1, 0, 1, 1, 1]) + bytes(57)
    assert call(SET, "ARLinearForwardingTable", data=flags) == bytes([0, 1, 1, 0, 1, 0, 1]) + bytes(57)
    word0 = run(regs.read("LFT", 0))
    assert [word0 >> (8 * k) & 0xFF for k in range(4)] == [0, 0x81, 0x82, 3]
    assert call(GET, "LFT") == lft                                      # plain ports
    before = list(regs.writes)
    call(SET, "ARLinearForwardingTable", data=bytes([2]) + bytes(63), status=0x1C)
    assert regs.writes == before
    call(SET, "LFT", data=lft)                                           # an LFT Set: plain again
    assert call(GET, "ARLinearForwardingTable") == bytes(64)
    plain = SwitchFirmware(RegisterFile(CFG), NodeIdentity(node_guid=GUID))
    r = sm.parse(one(plain, sm.dr_smp(GET, "ARLinearForwardingTable", 0, path=[1]), 1)[0])
    assert sm.hdr(r)["dr_status"] == 0x0C


def test_portinfo_hoq_life_reaches_the_register():
    """On a switch built with lifetimes (docs/reliability.md) PortInfo:HOQLife and
    VLStallCount of port p are register HOQ_LIFE[p - 1] (bits 4:0 and 7:5, as in PortInfo's
    byte), which the switch enforces: a Set writes it, a Get reads it (reset 31: never, and
    7). Without lifetimes they are kept by the firmware only."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.lifetimes
    regs = RegisterFile(cfg)
    fw = SwitchFirmware(regs, NodeIdentity(node_guid=GUID))
    sm = RefSM()
    assert sm.data_field(_get(fw, sm, "PortInfo", 3), "IB_PORT_HOQ_LIFE_F") == 31
    assert sm.data_field(_get(fw, sm, "PortInfo", 3), "IB_PORT_VL_STALL_COUNT_F") == 7
    b = bytearray(64)
    sm.m.set(b, "IB_PORT_NEIGHBOR_MTU_F", MTU_CODES[cfg.mtu])
    sm.m.set(b, "IB_PORT_HOQ_LIFE_F", 0x10)
    sm.m.set(b, "IB_PORT_VL_STALL_COUNT_F", 5)
    _set(fw, sm, "PortInfo", 3, b)
    assert run(regs.read("HOQ_LIFE", 2)) == 0x10 | 5 << 5
    got = _get(fw, sm, "PortInfo", 3)
    assert sm.data_field(got, "IB_PORT_HOQ_LIFE_F") == 0x10
    assert sm.data_field(got, "IB_PORT_VL_STALL_COUNT_F") == 5
    assert run(regs.read("HOQ_LIFE", 0)) == 31 | 7 << 5              # the other ports unchanged


def test_switchinfo_life_time_value_reaches_the_register():
    """On a switch built with lifetimes SwitchInfo:LifeTimeValue is register SWITCH_LIFE,
    which the switch enforces (docs/reliability.md): a Set writes it, a Get reads it (reset
    31: never); a Set that fails validation writes nothing. Without lifetimes the firmware
    keeps it."""
    cfg = CONFIGS["small-rxreg"]
    regs = RegisterFile(cfg)
    fw = SwitchFirmware(regs, NodeIdentity(node_guid=GUID))
    sm = RefSM()
    assert sm.data_field(_get(fw, sm, "SwitchInfo"), "IB_SW_LIFE_TIME_F") == 31
    b = bytearray(64)
    sm.m.set(b, "IB_SW_LIFE_TIME_F", 0x0E)
    sm.m.set(b, "IB_SW_MCAST_FDB_TOP_F", 0xBFFF)
    assert sm.data_field(_set(fw, sm, "SwitchInfo", 0, b), "IB_SW_LIFE_TIME_F") == 0x0E
    assert run(regs.read("SWITCH_LIFE", 0)) == 0x0E
    regs.mem[("SWITCH_LIFE", 0)] = 0x07                              # the register is what a Get reports
    assert sm.data_field(_get(fw, sm, "SwitchInfo"), "IB_SW_LIFE_TIME_F") == 0x07
    bad = bytearray(b)
    sm.m.set(bad, "IB_SW_LIFE_TIME_F", 0x03)
    sm.m.set(bad, "IB_SW_LINEAR_FDB_TOP_F", cfg.lft_entries)          # beyond the LFT: refused
    _set(fw, sm, "SwitchInfo", 0, bad, status=0x1C)
    assert run(regs.read("SWITCH_LIFE", 0)) == 0x07
    plain = RegisterFile(CONFIGS["small"])
    fw2 = SwitchFirmware(plain, NodeIdentity(node_guid=GUID))
    assert sm.data_field(_set(fw2, sm, "SwitchInfo", 0, b), "IB_SW_LIFE_TIME_F") == 0x0E
    assert not any(r == "SWITCH_LIFE" for r, _i, _v in plain.writes)


def test_congestion_control_agent():
    """The congestion control agent (class 0x21, IBA Annex A10; fw/cca.py) on a switch built
    with congestion marking, every MAD built and read through libibmad's CC fields:
    CongestionInfo; SwitchCongestionSetting sets every port's CC_PORT (threshold + packet
    size, marking rate, by ControlMap), credit starvation refused; SwitchPortCongestionSetting
    per port; CongestionLog reports the ports that marked since the last Get; CC_Key
    checking and its violation count; a switch without congestion marking does not answer."""
    cfg = CONFIGS["small-rxreg"]
    assert cfg.cc
    regs = RegisterFile(cfg)
    fw = SwitchFirmware(regs, NodeIdentity(node_guid=GUID))
    run(regs.write("SWITCH_LID", 0, 9))
    sm = RefSM(lid=1)
    m = sm.m

    def call(method, attr, data=bytes(192), mod=0, key=0, status=0):
        out = run(fw.receive(sm.cc(method, attr, mod, data, dlid=9, cc_key=key), 1))
        if not out:
            return None
        assert len(out) == 1
        r = sm.parse(out[0][0])
        h = sm.hdr(r)
        assert (h["method"], h["status"], r.bth.destqp, r.lrh.dlid) == (RESP, status, 1, 1), h
        assert sm.field(r, "IB_MAD_CLASSVER_F") == 2 and sm.field(r, "IB_MAD_MGMTCLASS_F") == 0x21
        return r

    def d(r, f):                                         # a field of the management data
        return sm.field(r, f, at=64)

    r = call(GET, "CongestionInfo")
    assert (d(r, "IB_CC_CONGESTION_INFO_F"), d(r, "IB_CC_CONGESTION_INFO_CONTROL_TABLE_CAP_F")) == (0, 0)
    # SwitchCongestionSetting: threshold 9 + packet size 2 and marking rate 3, to every port
    b = bytearray(192)
    for f, v in (("CONTROL_MAP", 1 << 2 | 1 << 4), ("THRESHOLD", 9), ("PACKET_SIZE", 2), ("MARKING_RATE", 3)):
        m.set(b, f"IB_CC_SWITCH_CONGESTION_SETTING_{f}_F", v)
    r = call(SET, "SwitchCongestionSetting", bytes(b))
    assert d(r, "IB_CC_SWITCH_CONGESTION_SETTING_THRESHOLD_F") == 9
    assert [run(regs.read("CC_PORT", p)) for p in range(4)] == [9 | 2 << 8 | 3 << 16] * 4
    # ControlMap bit 4 alone: the marking rate changes, the threshold stays
    b = bytearray(192)
    m.set(b, "IB_CC_SWITCH_CONGESTION_SETTING_CONTROL_MAP_F", 1 << 4)
    m.set(b, "IB_CC_SWITCH_CONGESTION_SETTING_MARKING_RATE_F", 0)
    m.set(b, "IB_CC_SWITCH_CONGESTION_SETTING_THRESHOLD_F", 15)
    call(SET, "SwitchCongestionSetting", bytes(b))
    assert [run(regs.read("CC_PORT", p)) for p in range(4)] == [9 | 2 << 8] * 4
    # credit starvation is not built: refused whole, nothing written
    before = list(regs.writes)
    b = bytearray(192)
    m.set(b, "IB_CC_SWITCH_CONGESTION_SETTING_CONTROL_MAP_F", 1 << 1 | 1 << 2)
    m.set_array(b, "IB_CC_SWITCH_CONGESTION_SETTING_CREDIT_MASK_F", bytes(31) + b"\x02")
    m.set(b, "IB_CC_SWITCH_CONGESTION_SETTING_THRESHOLD_F", 1)
    call(SET, "SwitchCongestionSetting", bytes(b), status=0x1C)
    assert regs.writes == before
    # SwitchPortCongestionSetting: port 3 alone; a ControlType 1 element refuses the Set
    b = bytearray(192)
    at = 4 * 3
    e = bytearray(4)
    for f, v in (("VALID", 1), ("THRESHOLD", 14), ("PACKET_SIZE", 1), ("CONG_PARM_MARKING_RATE", 7)):
        m.set(e, f"IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_{f}_F", v)
    b[at:at + 4] = e
    r = call(SET, "SwitchPortCongestionSetting", bytes(b))
    assert [run(regs.read("CC_PORT", p)) for p in range(4)] == [9 | 2 << 8, 9 | 2 << 8, 14 | 1 << 8 | 7 << 16,
                                                                9 | 2 << 8]
    el = lambda r, k, f: m.get(r.mad[64 + 4 * k:], f"IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_{f}_F")  # noqa: E731
    r = call(GET, "SwitchPortCongestionSetting")
    assert [el(r, k, "VALID") for k in range(6)] == [0, 1, 1, 1, 1, 0]        # ports 1..4 only
    assert (el(r, 3, "THRESHOLD"), el(r, 3, "PACKET_SIZE"), el(r, 3, "CONG_PARM_MARKING_RATE")) == (14, 1, 7)
    m.set(e, "IB_CC_SWITCH_PORT_CONGESTION_SETTING_ELEMENT_CONTROL_TYPE_F", 1)
    b[at:at + 4] = e
    call(SET, "SwitchPortCongestionSetting", bytes(b), status=0x1C)
    call(GET, "SwitchPortCongestionSetting", mod=1, status=0x1C)             # no block 1 at 4 ports
    # CongestionLog: ports 2 and 4 marked since the last Get
    r = call(GET, "CongestionLog")
    regs.mem[("CC_MARKED", 1)] = 5
    regs.mem[("CC_MARKED", 3)] = 2
    r = call(GET, "CongestionLog")
    log = lambda r, f: m.get(r.mad[32:], f)                                   # noqa: E731
    assert log(r, "IB_CC_CONGESTION_LOG_LOGTYPE_F") == 1
    assert log(r, "IB_CC_CONGESTION_LOG_SWITCH_LOG_EVENTS_COUNTER_F") == 7
    pm = m.get_array(r.mad[32:], "IB_CC_CONGESTION_LOG_SWITCH_PORTMAP_F", 32)
    # a 256-bit mask as IBA's port masks are (OpenSM's cc_sw_cong_setting_victim_mask too): bit p
    # of the big-endian number is port p
    assert int.from_bytes(pm, "big") == 1 << 2 | 1 << 4, pm.hex()
    r = call(GET, "CongestionLog")
    assert log(r, "IB_CC_CONGESTION_LOG_SWITCH_LOG_EVENTS_COUNTER_F") == 0
    # CC_Key: set a key with the protect bit; a Set with another key is discarded and counted
    b = bytearray(192)
    m.set(b, "IB_CC_CONGESTION_KEY_INFO_CC_KEY_F", 0xC0FFEE, wide=True)
    m.set(b, "IB_CC_CONGESTION_KEY_INFO_CC_KEY_PROTECT_BIT_F", 1)
    call(SET, "CongestionKeyInfo", bytes(b))
    assert call(GET, "CongestionInfo", key=0x1234) is None
    assert call(SET, "SwitchPortCongestionSetting", bytes(192), key=0x1234) is None
    r = call(GET, "CongestionKeyInfo", key=0xC0FFEE)
    assert d(r, "IB_CC_CONGESTION_KEY_INFO_CC_KEY_VIOLATIONS_F") == 2
    assert sm.field(r, "IB_CC_CCKEY_F", wide=True) == 0xC0FFEE
    # a switch without congestion marking: the class is not there
    plain = SwitchFirmware(RegisterFile(CFG), NodeIdentity(node_guid=GUID))
    assert run(plain.receive(sm.cc(GET, "CongestionInfo", dlid=9), 1)) == []
    assert plain.stats["unknown_class"] == 1
