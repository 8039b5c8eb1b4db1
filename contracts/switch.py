"""Port specifications of the switch core's blocks (hw/switch/, docs/switch-core.md): what each
block's RTL component and golden model agree to show (contracts/ports.py). Optional features
(SwitchConfig.failover, .adaptive, .lifetimes) add their ports here and nowhere else.

Each function takes what the block's constructors take and returns its Spec, from the
block's side (In = into the block).
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.counters import COUNTERS_PER_PORT, LINK_RX_COUNTERS, LINK_TX_COUNTERS, MGMT_PORT_COUNTERS
from contracts.ports import In, Layout, Model, Out, Sig, Spec
from contracts.streams import (
    FLIT,
    PACKET_BLOCKS_BITS,
    accepted,
    buffer,
    flit,
    mgmt_axis,
    tx_source,
    valid_qual,
)

__all__ = ["voq", "requests", "ingress", "crossbar", "egress", "vlarb", "allocator", "port_counters", "mgmt_port",
           "mgmt_queue", "port_groups", "congestion", "lifetime_clock", "route", "VLARB_ENTRY", "queue_status",
           "read_start", "INGRESS_WRITE_CYCLE", "accepted_lag"]

# a VLArbitrationTable entry (IBA §7.6.9): VL and weight in 64-byte units
VLARB_ENTRY = Layout("VLArbEntry", (("vl", 4), ("weight", 8)))


def _nbits(cfg: SwitchConfig) -> int:
    """Bits of a packet's charged block count."""
    return cfg.max_packet_blocks.bit_length()


def _vlr(cfg: SwitchConfig) -> range:
    """A data VL number (at least one bit)."""
    return range(max(cfg.data_vls, 2))


def voq_write(cfg: SwitchConfig) -> Sig:
    """The VOQ buffer's write port (`w`), from the writer's side: a flit, and at the sop the
    packet's destination, output VL, charged blocks, input VL, multicast mask and SL."""
    n = cfg.ports
    return flit(cfg, qual=False, dest=range(n), ovl=_vlr(cfg), blocks=_nbits(cfg), ivl=_vlr(cfg), mcast=1, mask=n, sl=4,
                **({"ar": 1} if cfg.adaptive else {}))


def voq_release(cfg: SwitchConfig) -> Sig:
    """The VOQ buffer's credit return (`rel`), from its side."""
    m = {"valid": Out(1), "ivl": Out(_vlr(cfg)), "blocks": Out(_nbits(cfg))}
    return Sig(m, valid_qual(m))


def voq_read(cfg: SwitchConfig) -> Sig:
    """A VOQ reader's output register (`r`), from its side: the flit, the output it is for,
    its output VL, `void` (read into the void)."""
    return flit(cfg, ready=True, void=1, port=range(cfg.ports), vl=_vlr(cfg))


def queue_status(cfg: SwitchConfig) -> Sig:
    """What a VOQ buffer shows of its queues, as of the last clock edge, from its side."""
    n, v = cfg.ports, cfg.data_vls
    return Sig({
        "nonempty": Out(v).array(n), "deep": Out(v).array(n), "head_blocks": Out(_nbits(cfg)).array(n, v),
        "mc_valid": Out(1), "mc_mask": Out(n), "mc_sl": Out(4), "mc_blocks": Out(_nbits(cfg)),
        "busy": Out(1), "done": Out(1), "ending": Out(1), "done_bad": Out(1),
        **({"head_ar": Out(v).array(n)} if cfg.adaptive else {}),
        **({"head_old": Out(v).array(n)} if cfg.lifetimes else {})})


def read_start(cfg: SwitchConfig) -> Sig:
    """A VOQ reader's start, from the starter's side (with failover: `dest`, the output the
    read is for)."""
    n = cfg.ports
    return Sig({"start": Out(1), "port": Out(range(n)), "vl": Out(_vlr(cfg)), "mc": Out(1), "void": Out(1),
                **({"dest": Out(range(n))} if cfg.failover else {})})


def tap(cfg: SwitchConfig) -> Sig:
    """An input's accepted data stream as the management port sees it (no ready)."""
    return flit(cfg, blocks=8, here=1)


def to_egress(cfg: SwitchConfig, blocks: bool = False) -> Sig:
    """Packets for an output with their output VL (the crossbar's into the egress), and with
    `blocks` the packet's credit blocks beside (the egress's out, for LinkTx's credit test)."""
    return flit(cfg, ready=True, vl=4, **({"blocks": PACKET_BLOCKS_BITS} if blocks else {}))


def voq(cfg: SwitchConfig) -> Spec:
    """hw/switch/voq.py VOQBuffer."""
    n = cfg.ports
    return Spec({
        "w": In(voq_write(cfg)),
        **queue_status(cfg).members,             # the queues' status (the request builder's `q`)
        **({"sw_tick": In(1)} if cfg.lifetimes else {}),
        "rd_start": In(1), "rd_mc": In(1), "rd_void": In(1), "rd_port": In(range(n)),
        **({"rd_dest": In(range(n))} if cfg.failover else {}),
        "rd_vl": In(_vlr(cfg)), "rd_blocks": Out(_nbits(cfg)),
        "first_ok": In(1), "issue_port": Out(range(n)),
        "r": Out(voq_read(cfg)),
        "rel": Out(voq_release(cfg)),
        "_rd_uc": Model(1),                      # a unicast read of a non-empty queue starts
    }, {"rd_blocks": "_rd_uc", "mc_mask": "mc_valid", "mc_sl": "mc_valid", "mc_blocks": "mc_valid"})


def requests(cfg: SwitchConfig) -> Spec:
    """hw/switch/requests.py RequestBuilder."""
    n, nvl = cfg.ports, cfg.data_vls
    return Spec({
        "q": In(queue_status(cfg)).array(n),
        "mc_sl2vl_index": Out(range(2 * n * n)).array(n),
        "mc_sl2vl_word": In(32).array(n),
        "active": In(n),
        "fccl": In(12).array(n, nvl), "fctbs": In(12).array(n, nvl),
        "va": Out(Sig({"ready": Out(nvl), "sel_valid": In(1), "sel_vl": In(4), "sent": Out(1), "blocks": Out(8)},
                      {"blocks": "sent"})).array(n),
        "alloc": Out(Sig({
            "req": Out(n).array(n), "deep": Out(n).array(n), "done": Out(1).array(n),
            "in_busy": In(n), "new_valid": In(1).array(n), "new_in": In(range(n)).array(n),
            "match_valid": In(1).array(n), "match_in": In(range(n)).array(n)})),
        "rd": Out(read_start(cfg)).array(n),
        "discard": Out(1).array(n),
        **({"redirect": In(n), "alt": In(range(n)).array(n)} if cfg.failover else {}),
        **({"ar_group": In(8).array(n)} if cfg.adaptive else {}),
        **({"hoq_tick": In(n), "hoq_discard": Out(range(n + 1)).array(n), "vl_stall": In(3).array(n),
            "hoq_never": In(n), "life_discard": Out(range(n + 1)).array(n)} if cfg.lifetimes else {}),
        # model-only qualifiers: input i has a multicast head; its reader starts for a match
        "_mc": Model(1).array(n), "_match": Model(1).array(n),
    }, {"mc_sl2vl_index": "_mc", "rd.port": "rd.start", "rd.mc": "rd.start", "rd.void": "rd.start",
        **({"rd.dest": "rd.start"} if cfg.failover else {}), "rd.vl": "_match"})


# The ingress's stages (hw/switch/ingress.py: address, head, decide, write): a packet's flits
# are written into the VOQ buffer from INGRESS_WRITE_CYCLE cycles after its first flit
# arrived on the link (`la`); they come on `acc` accepted_lag(cfg) cycles after the link.
INGRESS_WRITE_CYCLE = 3


def accepted_lag(cfg: SwitchConfig) -> int:
    """Cycles from a flit on the link to the same flit on LinkRx's accepted stream (`acc`):
    the receive parser's output register, and the boundary register of cfg.rx_register."""
    return 1 + int(cfg.rx_register)


def ingress(cfg: SwitchConfig, in_port: int = 0) -> Spec:
    """hw/switch/ingress.py Ingress (input `in_port`)."""
    n, nvl = cfg.ports, cfg.data_vls
    acc = accepted(cfg)
    return Spec({
        "acc": In(acc),
        "port_active": In(n),
        **({"redirect": In(n)} if cfg.failover else {}),
        **({"ar_mask": In(n).array(n)} if cfg.adaptive else {}),
        "la": In(cfg.data_width),
        "lft_dlid": Out(cfg.lid_bits), "lft_port": In(8),
        "mft_mlid": Out(range(max(cfg.mft_entries, 2))), "mft_mask": In(n + 1),
        "sl2vl_row": In(32).array(2 * n),
        "w": Out(voq_write(cfg)),
        "rel": In(voq_release(cfg)),
        "release": Out(acc.members["blocks"].shape + 1).array(nvl),
        "tap": Out(tap(cfg)),
        "dropped": Out(1),
        # model-only qualifiers: a packet's first flit (_head), written (_wr) as unicast (_uc)
        # or multicast (_mc)
        "_head": Model(1), "_wr": Model(1), "_uc": Model(1), "_mc": Model(1),
    }, {**{f"w.{k}": "w.valid" for k in FLIT},
        "w.dest": "_uc", "w.ovl": "_uc", "w.mask": "_mc", "w.mcast": "_wr", "w.blocks": "_wr", "w.ivl": "_wr",
        "w.sl": "_wr", **({"w.ar": "_uc"} if cfg.adaptive else {}),
        "tap.here": "_head"})


def crossbar(cfg: SwitchConfig) -> Spec:
    """hw/switch/crossbar.py Crossbar."""
    n = cfg.ports
    return Spec({
        "r": In(voq_read(cfg)).array(n),
        "issue_port": In(range(n)).array(n),
        "first_ok": Out(1).array(n),
        "out": Out(to_egress(cfg)).array(n),
    })


def egress(cfg: SwitchConfig) -> Spec:
    """hw/switch/egress.py Egress."""
    return Spec({"i": In(to_egress(cfg)), "fecn": In(1), "o": Out(to_egress(cfg, blocks=True))})


def vlarb(data_vls: int, entries: int, block_bits: int = 8) -> Spec:
    """hw/switch/vlarb.py VLArbiter."""
    return Spec({
        "ready": In(data_vls), "ready15": In(1),
        "high": In(VLARB_ENTRY).array(entries), "low": In(VLARB_ENTRY).array(entries),
        "limit": In(8), "sel_valid": Out(1), "sel_vl": Out(4), "sent": In(1), "blocks": In(block_bits),
    }, {"sel_vl": "sel_valid"})


def allocator(n: int, iterations: int = 1, fair_every: int = 1) -> Spec:
    """hw/switch/allocator.py ISlipAllocator."""
    return Spec({
        "req": In(n).array(n), "deep": In(n).array(n), "done": In(1).array(n),
        "match_valid": Out(1).array(n), "match_in": Out(range(n)).array(n),
        "new_valid": Out(1).array(n), "new_in": Out(range(n)).array(n),
        "out_busy": Out(n), "in_busy": Out(n),
    }, {"match_in": "match_valid", "new_in": "new_valid"})


def _counts(names, width: int = 32) -> Sig:
    return Sig({k: Out(width) for k in names})


def port_counters(cfg: SwitchConfig | None = None) -> Spec:
    """hw/switch/counters.py PortCounters (one port's PMA-style counters)."""
    return Spec({
        "rx": In(_counts(LINK_RX_COUNTERS)), "tx": In(_counts(LINK_TX_COUNTERS)),
        "mgmt": In(_counts(MGMT_PORT_COUNTERS)),
        "link_downed": In(32), "route_drop": In(1), "discard": In(1), "hoq_discard": In(7), "life_discard": In(7),
        "counters": Out(32).array(COUNTERS_PER_PORT), "details": Out(32).array(2),
    })


def mgmt_port(cfg: SwitchConfig) -> Spec:
    """hw/switch/mgmt_port.py MgmtPort (IBA port 0 in the datapath)."""
    n, nvl = cfg.ports, cfg.data_vls
    axis, axis_qual = mgmt_axis(cfg)
    return Spec({
        "v15": In(buffer(cfg)).array(n),
        "dat": In(tap(cfg)).array(n),
        "state": In(3).array(n),
        "switch_lid": In(cfg.lid_bits),
        "lft_dlid": Out(cfg.lid_bits), "lft_port": In(8),
        "fccl": In(12).array(n, nvl), "fctbs": In(12).array(n, nvl),
        "eg": In(to_egress(cfg, blocks=True)).array(n),
        "src": Out(tx_source(cfg)).array(n, nvl),
        "src15": Out(buffer(cfg)).array(n),
        **axis,
        **{c: Out(32).array(n) for c in MGMT_PORT_COUNTERS},
        "tx_errors": Out(32),
    }, axis_qual)


def mgmt_queue(cfg: SwitchConfig, depth_flits: int | None = None) -> Spec:
    """hw/switch/mgmt_queue.py MgmtQueue (default depth: cfg.mgmt_queue_flits)."""
    from contracts.streams import axis_out
    depth = cfg.mgmt_queue_flits if depth_flits is None else depth_flits
    axis, qual = axis_out(cfg, "m_axis", 9)
    return Spec({
        "i": In(flit(cfg, qual=False, port=8)),
        "free": Out(range(depth + 1), init=depth),
        **axis,
        "pkts_in": Out(32), "overflow": Out(32),
    }, qual)


def port_groups(cfg: SwitchConfig) -> Spec:
    """hw/switch/port_groups.py PortGroups (cfg.failover; AR groups with cfg.adaptive)."""
    n = cfg.ports
    return Spec({
        "active": In(n), "alt_port": In(8).array(n),
        "redirect": Out(n), "alt": Out(range(n)).array(n), "usable": Out(n),
        **({"ar_group": In(8).array(n), "ar_mask": Out(n).array(n)} if cfg.adaptive else {}),
    })


def _event(cfg: SwitchConfig, *flags: str) -> Sig:
    return Sig({**{f: Out(1) for f in flags}, "port": Out(range(cfg.ports)), "vl": Out(_vlr(cfg)),
                "blocks": Out(_nbits(cfg))})


def congestion(cfg: SwitchConfig) -> Spec:
    """hw/switch/congestion.py CongestionMarker (cfg.cc): an input's buffer write (`enq`) and
    read start (`deq`) as the marker sees them, output o's flits at the egress (`eg`)."""
    n, nvl = cfg.ports, cfg.data_vls
    return Spec({
        "enq": In(_event(cfg, "valid", "sop", "mcast")).array(n),
        "deq": In(_event(cfg, "start", "mc")).array(n),
        "cc": In(32).array(n),
        "eg": In(Sig({"valid": Out(1), "sop": Out(1), "ready": Out(1), "vl": Out(_vlr(cfg)),
                      "data": Out(cfg.data_width)})).array(n),
        "mark": Out(1).array(n), "congested": Out(nvl).array(n), "marked": Out(32).array(n),
    })


def lifetime_clock(cfg: SwitchConfig) -> Spec:
    """hw/switch/lifetime.py LifetimeClock (cfg.lifetimes)."""
    n = cfg.ports
    return Spec({"hoq_life": In(5).array(n), "tick": Out(n), "never": Out(n), "sw_life": In(5), "sw_tick": Out(1)})


def route(cfg: SwitchConfig, in_port: int = 0) -> Spec:
    """hw/switch/route.py RouteLookup: the head stage's inputs in cycle t (the packet's LRH,
    its flow hash, the input's SL2VL words, the AR groups), the table entries and port states
    in t + 1, the decision in t + 1."""
    from contracts.streams import LRH
    n = cfg.ports
    return Spec({
        "hdr": In(LRH),
        "sl2vl_row": In(32).array(2 * n),
        **({"flow_hash": In(8), "ar_mask": In(n).array(n)} if cfg.adaptive else {}),
        "lft_port": In(8), "mft_mask": In(n + 1),
        "port_active": In(n),
        **({"redirect": In(n)} if cfg.failover else {}),
        "dest": Out(range(n)), "ovl": Out(4), "drop": Out(3),
        "mcast": Out(1), "mask": Out(n),
        "mgmt": Out(1),
        **({"ar": Out(1)} if cfg.adaptive else {}),
    })
