"""The streams and buses blocks share, as port-spec Sigs (contracts/ports.py), from the
producer's side: the link side of docs/interfaces.md (rx from the PHY, tx to it), a packet
stream with `ready` (stream rules), flow-control packets, the management buses (AXI4-Lite,
AXI4-Stream). Member names become Verilog port names: public API.

FLIT names the members of a flit besides `valid` (and `link` on the link side): the one
place they are spelled.
"""
from __future__ import annotations

from contracts.ports import In, Layout, Out, Sig

__all__ = ["FLIT", "LINK_FLIT", "LRH", "FC_FIELDS", "AXIS_OUT", "AXIS_IN", "PACKET_BLOCKS_BITS", "AXIL_ADDR_BITS",
           "flit", "payload", "link_rx", "link_tx", "buffer", "tx_source", "parsed", "fc", "accepted", "axil",
           "axis_out", "mgmt_axis", "valid_qual"]

FLIT = ("data", "sop", "eop", "bytes", "bad")
LINK_FLIT = ("data", "sop", "eop", "bytes", "link", "bad")     # a flit on the link side: data or link packet
FC_FIELDS = ("op", "fctbs", "vl", "fccl")
PACKET_BLOCKS_BITS = 8         # credit blocks of any 11-bit PktLen: at most 128
AXIL_ADDR_BITS = 20            # the management block's AXI4-Lite window (1 MiB)

# Local Route Header (IBA §7.7), fields least significant first (wire order reversed):
# VL LVer SL rsvd LNH DLID rsvd PktLen SLID
LRH = Layout("LRH", (("slid", 16), ("pktlen", 11), ("rsvd1", 5), ("dlid", 16), ("lnh", 2), ("rsvd0", 2),
                     ("sl", 4), ("lver", 4), ("vl", 4)))


def payload(cfg, *, link: bool = False) -> dict:
    """The members of a flit besides `valid`, widths for `cfg`."""
    w = {"data": cfg.data_width, "sop": 1, "eop": 1, "bytes": cfg.bytes_width, "link": 1, "bad": 1}
    return {k: Out(w[k]) for k in (LINK_FLIT if link else FLIT)}


def valid_qual(members) -> dict:
    """Every member but valid/ready qualified by `valid`."""
    return {k: "valid" for k in members if k not in ("valid", "ready")}


def flit(cfg, *, link: bool = False, ready: bool = False, qual: bool = True, **extra) -> Sig:
    """valid + a flit's members (+ `extra` members, Out(shape)) (+ `ready` In), the payload
    qualified by valid unless `qual` is False."""
    m = {"valid": Out(1), **payload(cfg, link=link), **{k: Out(v) for k, v in extra.items()}}
    if ready:
        m["ready"] = In(1)
    return Sig(m, valid_qual(m) if qual else {})


def link_rx(cfg) -> Sig:
    """PHY -> link layer. No ready: a flit must be taken every cycle (credits make room);
    `up` is a level: the PHY reports the physical link up."""
    return Sig({"valid": Out(1), **payload(cfg, link=True), "up": Out(1)})


def link_tx(cfg) -> Sig:
    """Link layer -> PHY, paced by `ready`."""
    return flit(cfg, link=True, ready=True)


def buffer(cfg) -> Sig:
    """A packet stream out of a receive buffer, with ready (stream rules)."""
    m = {"valid": Out(1), "ready": In(1), **payload(cfg)}
    return Sig(m, valid_qual(m))


def tx_source(cfg) -> Sig:
    """A data source of LinkTx: a packet stream with the packet's credit blocks beside it."""
    b = buffer(cfg)
    m = {**b.members, "blocks": Out(PACKET_BLOCKS_BITS)}
    return Sig(m, valid_qual(m))


def parsed(cfg) -> Sig:
    """Receive parser -> buffer: data-packet flits only, checked; `hdr` the packet's LRH from
    its sop flit on; `bad`/`err` meaningful on the eop flit (err: contracts.defs.RxError)."""
    m = {"valid": Out(1), **payload(cfg), "err": Out(4), "hdr": Out(LRH)}
    return Sig(m, valid_qual(m))


def fc() -> Sig:
    """A received, LPCRC-checked flow-control packet (one-cycle pulse). IBA §7.9.4."""
    m = {"valid": Out(1), **dict(zip(FC_FIELDS, (Out(4), Out(12), Out(4), Out(12)), strict=True))}
    return Sig(m, valid_qual(m))


def accepted(cfg) -> Sig:
    """Accepted data-VL packets for an external buffer (LinkRx(buffered=False)): flits with the
    packet's LRH (as 64 bits), input VL and charged blocks, valid from the sop flit on."""
    m = {"valid": Out(1), **payload(cfg), "hdr": Out(64), "vl": Out(range(max(cfg.data_vls, 2))),
         "blocks": Out(accepted_blocks_bits(cfg))}
    return Sig(m, valid_qual(m))


def accepted_blocks_bits(cfg) -> int:
    """Bits of a charged block count on `acc`: a data packet's or a VL15 packet's flits."""
    return max(cfg.max_packet_blocks, -(-cfg.vl15_max_packet_bytes // cfg.bytes_per_flit)).bit_length()


def axil() -> dict:
    """An AXI4-Lite slave's members, flat (`s_axil_*`), with its response qualifiers."""
    a = AXIL_ADDR_BITS
    return {
        "s_axil_awaddr": In(a), "s_axil_awvalid": In(1), "s_axil_awready": Out(1), "s_axil_awprot": In(3),
        "s_axil_wdata": In(32), "s_axil_wstrb": In(4), "s_axil_wvalid": In(1), "s_axil_wready": Out(1),
        "s_axil_bresp": Out(2), "s_axil_bvalid": Out(1), "s_axil_bready": In(1),
        "s_axil_araddr": In(a), "s_axil_arvalid": In(1), "s_axil_arready": Out(1), "s_axil_arprot": In(3),
        "s_axil_rdata": Out(32), "s_axil_rresp": Out(2), "s_axil_rvalid": Out(1), "s_axil_rready": In(1),
    }


AXIL_QUAL = {"s_axil_bresp": "s_axil_bvalid", "s_axil_rdata": "s_axil_rvalid", "s_axil_rresp": "s_axil_rvalid"}


AXIS_OUT = ("tdata", "tkeep", "tlast", "tuser", "tvalid")      # an AXI4-Stream master's, besides tready
AXIS_IN = ("tdata", "tkeep", "tlast", "tdest", "tvalid")       # the management send stream's, besides tready


def axis_out(cfg, prefix: str, user: int) -> tuple[dict, dict]:
    """An AXI4-Stream master's members, flat (`<prefix>_t*`), and the payload qualifiers."""
    width = {"tdata": cfg.data_width, "tkeep": cfg.bytes_per_flit, "tlast": 1, "tuser": user, "tvalid": 1}
    m = {f"{prefix}_{k}": Out(width[k]) for k in AXIS_OUT} | {f"{prefix}_tready": In(1)}
    return m, {f"{prefix}_{k}": f"{prefix}_tvalid" for k in AXIS_OUT if k != "tvalid"}


def mgmt_axis(cfg) -> tuple[dict, dict]:
    """The management processor's two AXI4-Stream buses as the switch shows them: packets
    for the processor out (`m_axis_mgmt`, tuser = the input port), the processor's packets
    in (`s_axis_mgmt`, tdest = the IBA port or 0 for the LFT)."""
    m, q = axis_out(cfg, "m_axis_mgmt", 9)
    width = {"tdata": cfg.data_width, "tkeep": cfg.bytes_per_flit, "tlast": 1, "tdest": 8, "tvalid": 1}
    m |= {f"s_axis_mgmt_{k}": In(width[k]) for k in AXIS_IN} | {"s_axis_mgmt_tready": Out(1)}
    return m, q
