"""Stream signatures of the link side (the top-level contract of docs/interfaces.md).

Members are declared from the producer's point of view; a consumer takes `In(sig)`.
Their names become Verilog port names (`rx__valid`, `tx__0__data`): public API.
"""
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from contracts.config import SwitchConfig
from hw.common.layouts import LRHLayout

__all__ = ["link_rx_signature", "link_tx_signature", "parsed_signature", "fc_signature", "forward"]


def _flit_members(cfg: SwitchConfig) -> dict:
    return {
        "valid": Out(1),
        "data": Out(cfg.data_width),
        "sop": Out(1),
        "eop": Out(1),
        "bytes": Out(cfg.bytes_width),   # valid bytes in an eop flit, 1..W/8
        "link": Out(1),                  # 1 = link (flow-control) packet
        "bad": Out(1),                   # at eop: ended with EBP / PHY error
    }


def link_rx_signature(cfg: SwitchConfig) -> wiring.Signature:
    """PHY -> link layer. No ready: a flit must be taken every cycle (credits make room).
    `up` is a level: the PHY reports the physical link up."""
    return wiring.Signature({**_flit_members(cfg), "up": Out(1)})


def link_tx_signature(cfg: SwitchConfig) -> wiring.Signature:
    """Link layer -> PHY, paced by `ready`."""
    return wiring.Signature({**_flit_members(cfg), "ready": In(1)})


def parsed_signature(cfg: SwitchConfig) -> wiring.Signature:
    """Receive parser -> buffer: data-packet flits only, checked.

    `hdr` carries the packet's LRH from its sop flit on (held until the next packet);
    `bad`/`err` are meaningful on the eop flit (err: contracts.defs.RxError).
    """
    return wiring.Signature({
        "valid": Out(1),
        "data": Out(cfg.data_width),
        "sop": Out(1),
        "eop": Out(1),
        "bytes": Out(cfg.bytes_width),
        "bad": Out(1),
        "err": Out(4),
        "hdr": Out(LRHLayout),
    })


def fc_signature() -> wiring.Signature:
    """A received, LPCRC-checked flow-control packet (one-cycle pulse). IBA §7.9.4."""
    return wiring.Signature({
        "valid": Out(1),
        "op": Out(4),
        "fctbs": Out(12),
        "vl": Out(4),
        "fccl": Out(12),
    })


def forward(m, outer, inner):
    """Expose `inner`'s interface as the parent's port `outer` (same signature), member by
    member: Out members drive outward, In members inward. (wiring.connect cannot flip an
    interface that holds arrays of sub-interfaces.)"""
    outs = list(outer.signature.flatten(outer))
    ins = list(inner.signature.flatten(inner))
    assert [p for p, _, _ in outs] == [p for p, _, _ in ins], "forward: signatures differ"
    for (_, flow, o), (_, _, i) in zip(outs, ins, strict=True):
        if flow.flow == wiring.Flow.Out:
            m.d.comb += o.eq(i)
        else:
            m.d.comb += i.eq(o)
