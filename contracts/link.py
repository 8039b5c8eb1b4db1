"""Port specifications of the link layer's blocks (hw/link/, docs/link-layer.md), from each
block's side (contracts/ports.py)."""
from __future__ import annotations

from contracts import streams as st
from contracts.config import SwitchConfig
from contracts.counters import LINK_RX_COUNTERS, LINK_TX_COUNTERS, PARSER_COUNTERS, PORT_STATE_COUNTERS
from contracts.defs import PortState
from contracts.ports import In, Model, Out, Sig, Spec
from contracts.streams import accepted, accepted_blocks_bits, buffer, fc, parsed, tx_source

__all__ = ["rx_parser", "link_rx", "link_tx", "port_state", "link_register", "link_port", "crc_bank", "link_pair",
           "port_mgmt", "counts", "host"]


def counts(names, width: int = 32) -> Sig:
    """A block's counters, one member each."""
    return Sig({k: Out(width) for k in names})


def port_mgmt() -> Sig:
    """Management's request to a port's state machine (PortInfo:PortState), from its side."""
    return Sig({"req": Out(1), "state": Out(3)})


def rx_parser(cfg: SwitchConfig) -> Spec:
    """hw/link/rx_parser.py RxParser."""
    return Spec({"rx": In(st.link_rx(cfg)), "out": Out(parsed(cfg)), "fc": Out(fc()),
                 "counters": Out(counts(PARSER_COUNTERS))})


def link_rx(cfg: SwitchConfig, buffered: bool = True) -> Spec:
    """hw/link/link_rx.py LinkRx: with `buffered` its per-VL receive buffers (`vl`); without,
    accepted data packets leave on `acc` and the external buffer returns the blocks it frees
    on `release` (one bit wider: it may return two packets' blocks in a cycle)."""
    bufs = {"vl": Out(buffer(cfg)).array(cfg.data_vls)} if buffered else {
        "acc": Out(accepted(cfg)), "release": In(accepted_blocks_bits(cfg) + 1).array(cfg.data_vls)}
    return Spec({
        "rx": In(st.link_rx(cfg)), "state": In(3), **bufs,
        "vl15": Out(buffer(cfg)), "fccl": Out(12).array(cfg.data_vls), "fc_rx": Out(fc()), "data_rx": Out(1),
        "counters": Out(counts(LINK_RX_COUNTERS)),
    })


def link_tx(cfg: SwitchConfig) -> Spec:
    """hw/link/link_tx.py LinkTx."""
    return Spec({
        "src": In(tx_source(cfg)).array(cfg.data_vls), "src15": In(buffer(cfg)), "fc_rx": In(fc()),
        "local_fccl": In(12).array(cfg.data_vls), "state": In(3), "tx": Out(st.link_tx(cfg)),
        "fctbs": Out(12).array(cfg.data_vls), "fccl": Out(12).array(cfg.data_vls),
        "counters": Out(counts(LINK_TX_COUNTERS)),
    })


def port_state() -> Spec:
    """hw/link/port_state.py PortStateMachine (IBA §7.2)."""
    return Spec({"up": In(1), "req": In(1), "want": In(3), "data_rx": In(1),
                 "state": Out(3, init=PortState.DOWN), "active": Out(1),
                 "link_downed": Out(32), "state_req_bad": Out(32)})


def link_register(cfg: SwitchConfig) -> Spec:
    """hw/link/rx_register.py RxRegister: a register stage on every member of a link's receive
    side (`i` -> `o` a cycle later), out of reset an idle link that is down (all zeros)."""
    return Spec({"i": In(st.link_rx(cfg)), "o": Out(st.link_rx(cfg))})


def host(cfg: SwitchConfig) -> Sig:
    """LinkPort's host side: per-VL sources in, receive buffers out, the port state and counters."""
    return Sig({
        "src": In(buffer(cfg)).array(cfg.data_vls), "src15": In(buffer(cfg)),
        "vl": Out(buffer(cfg)).array(cfg.data_vls), "vl15": Out(buffer(cfg)),
        "mgmt": In(port_mgmt()), "state": Out(3),
        "crx": Out(counts(LINK_RX_COUNTERS)), "ctx": Out(counts(LINK_TX_COUNTERS)),
        "cport": Out(counts(PORT_STATE_COUNTERS)),
    })


def link_port(cfg: SwitchConfig) -> Spec:
    """hw/link/link_port.py LinkPort: LinkRx + LinkTx + the port state machine."""
    return Spec({"rx": In(st.link_rx(cfg)), "tx": Out(st.link_tx(cfg)), "host": Out(host(cfg))})


def crc_bank(width: int) -> Spec:
    """hw/common/crc.py CRCBank: VCRC, ICRC and LPCRC of a flit stream, combinational."""
    return Spec({"valid": In(1), "sop": In(1), "eop": In(1), "data": In(width),
                 "bytes": In((width // 8).bit_length()), "vcrc": Out(16), "icrc": Out(32), "lpcrc": Out(16),
                 "_valid": Model(1)},                # the flit presented is valid (the CRCs matter)
                {"vcrc": "_valid", "icrc": "_valid", "lpcrc": "_valid"})



def link_pair(cfg: SwitchConfig, max_delay: int = 64) -> Spec:
    """hw/link/link_pair.py LinkPair: two link ports back to back over a wire of `delay` (up to
    `max_delay`) cycles (the test fixture of the link layer), each host side shown, the
    wire's knobs in."""
    return Spec({"a": Out(host(cfg)), "b": Out(host(cfg)), "link_up": In(1), "a_ready": In(1), "b_ready": In(1),
                 "a2b_flip": In(cfg.data_width), "b2a_flip": In(cfg.data_width), "delay": In(range(max_delay + 1))})
