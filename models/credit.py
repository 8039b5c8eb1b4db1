"""IB link-level credit arithmetic (IBA §7.9), from the spec's formulas.

Credits are 64-byte blocks per data VL. All counters are 12 bits and wrap at 4096.

  sender   FCTBS  total blocks sent, mod 4096                         (IBA §7.9.3)
           FCCL   the latest credit limit received from the peer
  receiver ABR    adjusted blocks received, mod 4096; := FCTBS on each FC packet
           FCCL   advertised = (ABR + min(free blocks, 2048)) mod 4096   (IBA §7.9.4)

A packet of n blocks may start only if (FCCL - (FCTBS + n)) mod 4096 <= 2048: the whole
packet must fit (virtual cut-through, never wormhole).

Block count (SwitchConfig.credit_vcrc; docs/link-layer.md, "Open questions"): by default a
data packet is charged ceil((4*PktLen + 2) / 64) blocks, its VCRC included (LRH through
VCRC, as the receive buffer stores it); with credit_vcrc False, ceil(4*PktLen / 64) (LRH
through ICRC). The two differ exactly when PktLen % 16 == 0: the VCRC then starts a block
of its own, which the receive buffer keeps no data of (models.voq, docs/switch-core.md).
"""
from __future__ import annotations

from contracts.config import BLOCK_BYTES, VCRC_BYTES

MOD = 4096
HALF = 2048

__all__ = ["MOD", "HALF", "packet_blocks", "taken_flits", "may_send", "advertised_fccl", "is_overrun"]


def packet_blocks(pktlen: int, vcrc: bool = True) -> int:
    """The credit blocks a data packet of this PktLen is charged (vcrc: counting its VCRC)."""
    return -(-(4 * pktlen + (VCRC_BYTES if vcrc else 0)) // BLOCK_BYTES)


def taken_flits(pktlen: int, bytes_per_flit: int, vcrc: bool = True) -> int:
    """The most flits a receiver takes of a data packet of this PktLen: the flits of its
    charged blocks, and without the VCRC in the charge one more (where the VCRC of a
    PktLen % 16 == 0 packet goes); flits beyond are cut (the packet is longer than its
    PktLen says)."""
    return packet_blocks(pktlen, vcrc) * (BLOCK_BYTES // bytes_per_flit) + (0 if vcrc else 1)


def may_send(fccl: int, fctbs: int, n: int) -> bool:
    """IBA §7.9.4: (FCCL - (FCTBS + n)) mod 4096 <= 2048."""
    return (fccl - (fctbs + n)) % MOD <= HALF


def advertised_fccl(abr: int, free_blocks: int) -> int:
    return (abr + min(free_blocks, HALF)) % MOD


def is_overrun(abr: int, free_blocks: int, n: int) -> bool:
    """A data packet of n blocks arriving when it does not fit the credit this receiver
    advertises: the sender ignored its credit limit (ExcessiveBufferOverrunErrors)."""
    return not may_send(advertised_fccl(abr, free_blocks), abr, n)
