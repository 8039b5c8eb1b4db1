"""IB link-level credit arithmetic (IBA §7.9), from the spec's formulas.

Credits are 64-byte blocks per data VL. All counters are 12 bits and wrap at 4096.

  sender   FCTBS  total blocks sent, mod 4096                         (IBA §7.9.3)
           FCCL   the latest credit limit received from the peer
  receiver ABR    adjusted blocks received, mod 4096; := FCTBS on each FC packet
           FCCL   advertised = (ABR + min(free blocks, 2048)) mod 4096   (IBA §7.9.4)

A packet of n blocks may start only if (FCCL - (FCTBS + n)) mod 4096 <= 2048: the whole
packet must fit (virtual cut-through, never wormhole).

Block count: this project charges a data packet ceil(wire bytes / 64) blocks, wire bytes =
4*PktLen + 2 (LRH through VCRC): the receive buffer stores the packet as received, VCRC
included, so charge and storage agree exactly (docs/link-layer.md discusses the choice).
"""
from __future__ import annotations

from hw.common.config import BLOCK_BYTES, VCRC_BYTES

MOD = 4096
HALF = 2048

__all__ = ["MOD", "HALF", "packet_blocks", "may_send", "advertised_fccl", "is_overrun"]


def packet_blocks(pktlen: int) -> int:
    return -(-(4 * pktlen + VCRC_BYTES) // BLOCK_BYTES)


def may_send(fccl: int, fctbs: int, n: int) -> bool:
    """IBA §7.9.4: (FCCL - (FCTBS + n)) mod 4096 <= 2048."""
    return (fccl - (fctbs + n)) % MOD <= HALF


def advertised_fccl(abr: int, free_blocks: int) -> int:
    return (abr + min(free_blocks, HALF)) % MOD


def is_overrun(abr: int, free_blocks: int, n: int) -> bool:
    """A data packet of n blocks arriving when it does not fit the credit this receiver
    advertises: the sender ignored its credit limit (ExcessiveBufferOverrunErrors)."""
    return not may_send(advertised_fccl(abr, free_blocks), abr, n)
