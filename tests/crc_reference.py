"""CRC from its definition, by polynomial long division over GF(2).

Independent of both models/crc.py (table driven) and hw/common/crc.py (bit-serial LFSR):
the message is read as a polynomial (each byte least-significant bit first, since the IB
CRCs are reflected), the seed is folded in as I(x)·x^len, the product with x^n is reduced
modulo the generator, and the remainder is reflected back and XORed with the final value.
"""


def _reflect(v: int, n: int) -> int:
    return int(f"{v:0{n}b}"[::-1], 2)


def crc_by_division(data: bytes, n: int, poly: int, init: int, xorout: int) -> int:
    bits = 0
    for b in data:
        bits = (bits << 8) | _reflect(b, 8)
    nbits = 8 * len(data)
    dividend = (bits << n) ^ (_reflect(init, n) << nbits)
    g = (1 << n) | poly
    for i in range(nbits + n - 1, n - 1, -1):
        if dividend >> i & 1:
            dividend ^= g << (i - n)
    return _reflect(dividend, n) ^ xorout


def crc32_ref(data: bytes) -> int:
    return crc_by_division(data, 32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF)


def crc16_ib_ref(data: bytes) -> int:
    return crc_by_division(data, 16, 0x100B, 0xFFFF, 0xFFFF)
