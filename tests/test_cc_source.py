"""The endpoint model of IBA Annex A10 throttling (models/cc_source.py): CCT entries,
CCTI on BECN and on the timer, and the inter-packet delay a flow keeps."""
import pytest

from models.cc_source import CCFlow, CCSettings, cct_entry, linear_cct


def test_cct_entry_packs_shift_and_multiplier():
    assert cct_entry(0, 0) == 0 and cct_entry(3, 0x3FFF) == 0xFFFF and cct_entry(1, 5) == 0x4005
    for bad in ((4, 0), (-1, 0), (0, 1 << 14)):
        with pytest.raises(ValueError, match="CCT entry"):
            cct_entry(*bad)


def test_linear_cct_delays_and_shifting():
    s = CCSettings(cct=linear_cct(8, 127))
    assert [s.delay(k) for k in (0, 1, 10, 127)] == [0, 8, 80, 1016]
    # delays beyond 14 bits are shifted: the delay rounds down to a multiple of 2^shift
    big = CCSettings(cct=linear_cct(1000, 40))
    assert big.cct[40] >> 14 == 2 and big.delay(40) == (40000 >> 2) << 2
    with pytest.raises(ValueError, match="does not fit"):
        linear_cct(1 << 16, 3)


def test_settings_reject_what_cannot_work():
    with pytest.raises(ValueError, match="empty"):
        CCSettings(cct=[])
    with pytest.raises(ValueError, match="ccti_min"):
        CCSettings(cct=[0, 1], ccti_min=2)
    with pytest.raises(ValueError, match="ccti_timer"):
        CCSettings(ccti_timer=0)


def test_becn_raises_ccti_to_the_limit_and_the_timer_lowers_it_to_the_minimum():
    s = CCSettings(cct=linear_cct(4, 5), ccti_increase=2, ccti_timer=10, ccti_min=1)
    f = CCFlow(s)
    assert f.ccti == 1
    for _ in range(4):
        f.on_becn()
    assert (f.ccti, f.max_ccti, f.becns) == (5, 5, 4)          # 1 + 2 + 2 = 5 = limit, then held
    for now in range(9):
        f.tick(now)
    assert f.ccti == 5                                          # 9 cycles: not yet
    f.tick(9)
    assert f.ccti == 4
    for now in range(10, 100):
        f.tick(now)
    assert f.ccti == 1                                          # never below ccti_min


def test_a_flow_waits_cct_of_its_ccti_after_each_packet():
    s = CCSettings(cct=linear_cct(8, 10), ccti_timer=1000)
    f = CCFlow(s)
    assert f.ready(0)
    f.sent(0)
    assert f.ready(0)                                           # CCTI 0: no delay
    f.on_becn()
    f.on_becn()
    f.sent(100)
    assert not f.ready(115) and f.ready(116)                    # CCT[2] = 16 cycles
