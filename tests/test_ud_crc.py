"""The firmware's VCRC (fw/ud.py): crcmod's compiled CRC, where it is used, gives what the
firmware's own table gives, and both give IBA's VCRC of a known packet."""
from hypothesis import given, settings
from hypothesis import strategies as st

from fw import ud


def test_the_compiled_vcrc_is_in_use():
    # make setup installs crcmod with its C extension: the MAD-level fabric's speed rests on it
    assert ud.crc16_vcrc is not ud.crc16_vcrc_table


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=600))
def test_compiled_vcrc_equals_the_table(data):
    assert ud.crc16_vcrc(data) == ud.crc16_vcrc_table(data)


def test_vcrc_check_value():
    # CRC-16 0x100B reflected, seed 0xFFFF, final XOR 0xFFFF over "123456789": the catalogue's
    # check value for these parameters, computed here bit by bit (no table, no crcmod)
    crc = 0xFFFF
    for byte in b"123456789":
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xD008 if crc & 1 else 0)
    want = crc ^ 0xFFFF
    assert ud.crc16_vcrc(b"123456789") == want == ud.crc16_vcrc_table(b"123456789")
