"""The one place where MAD table formats meet the switch's registers (docs/registers.md).

Port numbers are IBA's everywhere here: port 0 is the management port (the agents),
physical ports are 1..N; Verilog port rx__<p>/tx__<p> is IBA port p + 1
(docs/interfaces.md). The LFT and MFT registers hold IBA port numbers as they are; SL2VL
and VLArb registers exist for the physical ports only (register index p - 1).

  LinearForwardingTable     IBA §14.2.5.10: attribute modifier = block of 64 LIDs; data =
                            64 one-byte ports. Register LFT: DLID d in word d/4, byte d%4.
  MulticastForwardingTable  IBA §14.2.5.12: modifier bits 31:28 = position (ports 16*pos ..
                            16*pos+15), bits 8:0 = block of 32 MLIDs; data = 32 big-endian
                            16-bit masks (bit i = port 16*pos + i). Register MFT: the mask of
                            MLID 0xC000 + m in words m*W .. m*W+W-1, bit p = IBA port p.
  SLtoVLMappingTable        IBA §14.2.5.8: modifier bits 15:8 input port, 7:0 output port;
                            data = 8 bytes, SL 2k in the high nibble of byte k, SL 2k+1 in the
                            low one. Register SL2VL: word 0 SL0..7, word 1 SL8..15, SL s at
                            bits 4*(s%8) .. of its word.
  VLArbitrationTable        IBA §14.2.5.9: modifier bits 31:16 block (1, 2 low entries 0-31 and
                            32-63; 3, 4 high), bits 15:0 output port; data = 32 two-byte
                            elements (VL in the low nibble of byte 0, weight in byte 1).
                            Registers VLARB_LOW/HIGH: VL bits 3:0, weight bits 15:8.
"""
from __future__ import annotations

from contracts.config import SwitchConfig

__all__ = ["lft_block_word", "lft_words", "lft_block", "mft_words_per_mlid", "mft_merge", "mft_block", "sl2vl_to_words",
           "sl2vl_from_words", "vlarb_block_entries", "vlarb_element", "vlarb_from_reg", "LFT_DROP"]

LFT_DROP = 0xFF


def lft_block_word(cfg: SwitchConfig, block: int) -> int | None:
    """The first LFT register word of LinearForwardingTable block `block` (AttributeModifier:
    LIDs 64 * block .. 64 * block + 63, IBA §14.2.5.10), or None where the LFT has no entries
    for them. In the extended-LID mode (docs/fabric.md) block numbers go on past 1023 into the
    pages of 64 Ki LIDs above the 16-bit DLID; every page holds lft_entries entries and has no
    entries for its multicast and permissive range 0xC000..0xFFFF."""
    # the block's second LID: its first may be a page's LID 0, which has no entry of its own
    # (but a register slot); blocks are 64-aligned, so the two are in the LFT or not together
    index = cfg.lft_index(64 * block + 1)
    return None if index is None else (index - 1) // 4


def lft_words(base: int, entries: bytes) -> list[tuple[int, int]]:
    """(LFT register index, value) for one 64-entry MAD block whose first word is `base`
    (lft_block_word)."""
    return [(base + j, int.from_bytes(entries[4 * j:4 * j + 4], "little")) for j in range(16)]


def lft_block(words: list[int]) -> bytes:
    """The MAD block from its 16 LFT register words."""
    return b"".join(w.to_bytes(4, "little") for w in words)


def mft_words_per_mlid(cfg: SwitchConfig) -> int:
    return -(-(cfg.ports + 1) // 32)


def mft_merge(cfg: SwitchConfig, old_mask: int, position: int, mask16: int) -> int:
    """A port mask (bit p = IBA port p) with the 16 bits of `position` replaced; bits of
    ports the switch does not have are dropped."""
    keep = ~(0xFFFF << (16 * position))
    full = (1 << (cfg.ports + 1)) - 1
    return ((old_mask & keep) | (mask16 << (16 * position))) & full


def mft_block(masks: list[int], position: int) -> bytes:
    """32 MLIDs' masks -> the MAD block of `position`."""
    return b"".join(((m >> (16 * position)) & 0xFFFF).to_bytes(2, "big") for m in masks)


def sl2vl_to_words(data: bytes) -> tuple[int, int]:
    vls = []
    for b in data[:8]:
        vls += [b >> 4, b & 0xF]
    words = [0, 0]
    for sl, vl in enumerate(vls):
        words[sl // 8] |= vl << (4 * (sl % 8))
    return words[0], words[1]


def sl2vl_from_words(w0: int, w1: int) -> bytes:
    vls = [((w0 if sl < 8 else w1) >> (4 * (sl % 8))) & 0xF for sl in range(16)]
    return bytes((vls[2 * k] << 4) | vls[2 * k + 1] for k in range(8))


def vlarb_block_entries(block: int) -> tuple[str, int] | None:
    """(register table, first entry) of a VLArbitrationTable block, None if not a block."""
    return {1: ("VLARB_LOW", 0), 2: ("VLARB_LOW", 32), 3: ("VLARB_HIGH", 0), 4: ("VLARB_HIGH", 32)}.get(block)


def vlarb_element(data: bytes, k: int) -> int:
    """Element k of a MAD block as a VLARB register value."""
    return (data[2 * k] & 0xF) | data[2 * k + 1] << 8


def vlarb_from_reg(value: int) -> bytes:
    return bytes([value & 0xF, (value >> 8) & 0xFF])
