"""The soak's parts that need no simulator (hw/top/soak.py, scenarios/soak_books.py): the
rogue packet is a CRC-valid IBA packet by the model's own decoder, the plan refuses bad
values by name, the set-up writes route every soak LID, and the books catch each kind of
imbalance."""
import copy

import pytest

from contracts.config import CONFIGS
from contracts.regmap import build_regmap
from hw.top.soak import INJECT_COUNTERS, SoakPlan, rogue_packet, soak_writes
from models.packet import parse_data_packet
from scenarios.soak_books import books, check, table

CFG = CONFIGS["small-rxreg"]


@pytest.mark.parametrize("msb", [False, True])
def test_rogue_packet_is_crc_valid_and_unroutable(msb):
    cfg = CFG.replace(crc_msb_first=msb)
    plan = SoakPlan()
    pkt = parse_data_packet(rogue_packet(cfg, plan), msb_first=msb)
    assert pkt.vcrc_ok and pkt.icrc_ok and pkt.pktlen_ok
    assert pkt.lrh.vl == 0 and pkt.lrh.lnh == 2 and pkt.lrh.dlid == plan.rogue_dlid(cfg)
    routed = {plan.base_lid + j for j in range(2 * cfg.ports)}
    assert pkt.lrh.dlid not in routed


def test_soak_writes_route_every_lid_to_its_port():
    plan = SoakPlan(base_lid=3)
    rm = build_regmap(CFG)
    lft = {}
    hoq = {}
    life = []
    for addr, data in soak_writes(CFG, plan):
        if rm["LFT"].addr(0) <= addr < rm["LFT"].addr(0) + 4 * rm["LFT"].count:
            w = (addr - rm["LFT"].addr(0)) // 4
            for k in range(4):
                lft[4 * w + k] = (data >> (8 * k)) & 0xFF
        elif addr == rm["SWITCH_LIFE"].addr(0):
            life.append(data)
        else:
            hoq[addr] = data
    n = CFG.ports
    for j in range(2 * n):
        assert lft[plan.base_lid + j] == j % n + 1          # IBA port numbers
    assert lft.get(plan.rogue_dlid(CFG), 0xFF) == 0xFF
    assert sorted(hoq.values()) == [plan.hoq_life] * n and life == [plan.switch_life]


@pytest.mark.parametrize("field,value,words", [
    ("flap_cycles", 4, "flap_cycles"), ("rogue_pkts", 0, "rogue_pkts"), ("seed", 0, "seed"),
    ("len_min", 0, "len_min"), ("base_lid", 2000, "base_lid"), ("switch_life", 32, "switch_life")])
def test_plan_refuses_bad_values_by_name(field, value, words):
    with pytest.raises(ValueError, match=words):
        SoakPlan(**{field: value}).check(CFG)


def _raw():
    n = 4
    inj = {k: 0 for k in INJECT_COUNTERS}
    chk = {"rcv_good": 90, "rcv_errors": 0, "seq_dup": 0}
    crx = {k: 0 for k in ["truncated", "framing", "link_format", "lpcrc", "vcrc", "lver", "short", "long", "pktlen",
                          "state_drop", "vl_invalid", "overrun", "fc_vl_invalid", "ebp"]}
    sw = {"PortRcvErrors": 0, "PortRcvRemotePhysicalErrors": 0, "PortRcvSwitchRelayErrors": 0, "PortXmitDiscards": 0}
    raw = {"ports": n, "cycles": 1000, "max_stall": 10, "sm_downs": 0, "sm_errors": 0,
           "ep": [{"sent_pkts": 100, "chk": dict(chk), "crx": dict(crx), "ctx": {"xmit_discards": 0}}
                  for _ in range(n)],
           "up": [dict(inj) for _ in range(n)], "dn": [dict(inj) for _ in range(n)], "sw": [dict(sw) for _ in range(n)]}
    # 40 lost: 22 VCRC at the switch, 10 cut (the sender and the receiver both count them), 8 HOQ; 2 rogue
    raw["sw"][0]["PortRcvErrors"] = 22
    raw["ep"][1]["crx"]["truncated"] = 10
    raw["dn"][1]["cut_both"] = 10
    raw["sw"][1]["PortXmitDiscards"] = 10 + 8
    raw["up"][2]["rogue"] = 2
    raw["sw"][2]["PortRcvSwitchRelayErrors"] = 2
    return raw


def test_books_balance_and_name_what_is_wrong():
    raw = _raw()
    t = books(raw)
    assert t["in"] == 402 and t["out"] == 402 and check(raw, max_stall=100) == []
    assert "BALANCED" in table(raw)
    off = copy.deepcopy(raw)
    off["sw"][3]["PortXmitDiscards"] = 1                 # one packet off: no tolerance
    assert any("off by +1" in m for m in check(off, max_stall=100)) and "OFF BY +1" in table(off)
    ab = copy.deepcopy(raw)      # a packet abandoned (port set Down): its sender and its receiver count it
    ab["ep"][0]["sent_pkts"] += 1
    ab["sw"][1]["PortXmitDiscards"] += 1
    ab["ep"][1]["crx"]["truncated"] += 1
    ab["dn"][1]["abandoned"] += 1
    assert check(ab, max_stall=100) == [], check(ab, max_stall=100)
    lost = copy.deepcopy(raw)                            # a packet lost on a cut cable, known to its injector
    lost["ep"][0]["sent_pkts"] += 1
    lost["up"][0]["cut_lost"] = 1
    assert check(lost, max_stall=100) == [] and "BALANCED" in table(lost)
    for mutate, words in [
        (lambda r: r["sw"][3].__setitem__("PortXmitDiscards", 2), "do not balance"),
        (lambda r: r["up"][3].__setitem__("cut_lost", 1), "do not balance"),
        (lambda r: r["dn"][0].__setitem__("abandoned", 2), "do not balance"),
        (lambda r: r["ep"][0]["chk"].__setitem__("rcv_errors", 2), "delivered corrupted"),
        (lambda r: r["ep"][0]["chk"].__setitem__("seq_dup", 1), "twice"),
        (lambda r: r.__setitem__("max_stall", 101), "wedged"),
    ]:
        bad = copy.deepcopy(raw)
        mutate(bad)
        msgs = check(bad, max_stall=100)
        assert any(words in m for m in msgs), (words, msgs)
