"""Amaranth signatures of the streams blocks share, derived from their port specifications
(contracts/streams.py, the one place they are written): the link side of docs/interfaces.md
and the packet streams inside a port.

Members are declared from the producer's point of view; a consumer takes `In(sig)`.
Their names become Verilog port names (`rx__valid`, `tx__0__data`): public API.
"""
from amaranth.lib import wiring

from contracts import streams
from contracts.config import SwitchConfig
from hw.common.ports import signature

__all__ = ["link_rx_signature", "link_tx_signature", "forward"]


def link_rx_signature(cfg: SwitchConfig) -> wiring.Signature:
    """PHY -> link layer (contracts.streams.link_rx)."""
    return signature(streams.link_rx(cfg))


def link_tx_signature(cfg: SwitchConfig) -> wiring.Signature:
    """Link layer -> PHY, paced by `ready` (contracts.streams.link_tx)."""
    return signature(streams.link_tx(cfg))


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
