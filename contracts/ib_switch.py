"""`ib_switch`: its ports and its connection table, written once (docs/switch-core.md; port
names: docs/interfaces.md). hw/top/switch.py builds the RTL top from them and
models/switch.py the composed golden model; neither holds a wire of its own.

The blocks, per port p:
  rxreg<p>     (cfg.rx_register) the link inputs registered at the boundary
  lrx<p>       LinkRx without data buffers: parser, credits, VL15; accepted packets on `acc`
  psm<p>       the port state machine
  ingress<p>   route lookup, write into the VOQ buffer, credit back for refused packets
  voq<p>       the VOQ input buffer
  vlarb<p>     VL arbitration of output p
  egress<p>    VL rewrite, FECN, VCRC regeneration
  ltx<p>       LinkTx
  counters<p>  the port's PMA-style counters
and per switch: requests (VLArb readiness, requests, reader starts, discard reads), alloc
(iSLIP), xbar, mgmt_port (IBA port 0: VL15 relay, receive queue, the processor's send path,
the switch between egress and LinkTx), mgmt (AXI4-Lite registers and tables), and the
optional features as blocks present or absent: lifetime (cfg.lifetimes: HOQLife and
SwitchLifetime clocks), groups (cfg.failover: redirected outputs, adaptive-routing groups),
cc (cfg.cc: congestion marking).

Port numbers: tables hold IBA port numbers (LFT entry 0 / MFT bit 0 the management port,
1..N the physical ports); Verilog port p is IBA port p + 1 (docs/interfaces.md).

Table reads: the LFT and MFT are block RAMs. Input p's lookup (read port p, through the block
RAM's output register: the entry two cycles after the address) is addressed with the DLID of
the flit arriving on link p (`la`: `rx`, before the boundary register of cfg.rx_register),
so that the entry meets the packet in the ingress's decide stage (hw/switch/ingress.py).
LFT read port N is the management port's (one cycle). SL2VL is registers: input p's route
lookup takes its words (`sl2vl_row`), read port p serves its multicast copies.
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.counters import MGMT_PORT_COUNTERS
from contracts.netlist import Cat, Netlist, Slice
from contracts.ports import In, Out, Spec
from contracts.streams import AXIL_QUAL, axil, link_rx, link_tx, mgmt_axis

__all__ = ["top", "netlist"]


def top(cfg: SwitchConfig) -> Spec:
    """The ports of `ib_switch`: rx__<p>__*, tx__<p>__* (link side), s_axil_* (registers),
    m_axis_mgmt_*, s_axis_mgmt_* (the management processor's packets)."""
    n = cfg.ports
    axis, axis_qual = mgmt_axis(cfg)
    return Spec({"rx": In(link_rx(cfg)).array(n), "tx": Out(link_tx(cfg)).array(n), **axil(), **axis},
                {**AXIL_QUAL, **axis_qual})


def netlist(cfg: SwitchConfig) -> Netlist:
    """The blocks of `ib_switch` for `cfg` and every wire between them."""
    n, nvl = cfg.ports, cfg.data_vls
    net = Netlist(top(cfg))
    net.block("mgmt", "mgmt", cfg=cfg, lookups=n + 1, sl2vl_lookups=n, staged_lookups=n)
    net.block("mgmt_port", "mgmt_port", cfg=cfg)
    net.block("alloc", "allocator", n=n, iterations=cfg.islip_iterations, fair_every=cfg.islip_fair_every)
    net.block("requests", "requests", cfg=cfg)
    net.block("xbar", "crossbar", cfg=cfg)
    for p in range(n):
        if cfg.rx_register:
            net.block(f"rxreg{p}", "link_register", cfg=cfg)
        net.block(f"lrx{p}", "link_rx", cfg=cfg, buffered=False)
        net.block(f"ltx{p}", "link_tx", cfg=cfg)
        net.block(f"psm{p}", "port_state")
        net.block(f"ingress{p}", "ingress", cfg=cfg, in_port=p)
        net.block(f"voq{p}", "voq", cfg=cfg)
        net.block(f"vlarb{p}", "vlarb", data_vls=nvl, entries=cfg.vlarb_entries, block_bits=8)
        net.block(f"egress{p}", "egress", cfg=cfg)
        net.block(f"counters{p}", "port_counters", cfg=cfg)
    if cfg.lifetimes:
        net.block("lifetime", "lifetime_clock", cfg=cfg)
    if cfg.failover:
        net.block("groups", "port_groups", cfg=cfg)
    if cfg.cc:
        net.block("cc", "congestion", cfg=cfg)

    active = Cat(*(f"psm{p}.active" for p in range(n)))       # bit p: port p is Active

    # ---- the management block's registers and the processor's streams: the top's own ports
    for k in axil():
        net.connect(f"top.{k}", f"mgmt.{k}")
    for k in mgmt_axis(cfg)[0]:
        net.connect(f"top.{k}", f"mgmt_port.{k}")

    # ---- optional features
    if cfg.lifetimes:
        # HOQLife (docs/reliability.md): each output's lifetime clock; SwitchLifetime: the
        # quarter ticks the input buffers stamp packets with
        net.wire("lifetime.sw_life", "mgmt.switch_life")
        for o in range(n):
            net.wire(f"lifetime.hoq_life__{o}", f"mgmt.hoq_life__{o}")
            net.wire(f"requests.vl_stall__{o}", f"mgmt.vl_stall__{o}")
        net.wire("requests.hoq_tick", "lifetime.tick")
        net.wire("requests.hoq_never", "lifetime.never")
    if cfg.failover:
        # failover and adaptive-routing groups (docs/reliability.md): which outputs are
        # redirected to their alternate, may be routed to while down, and a flow-pinned
        # group's Active ports for the route lookup
        net.wire("groups.active", active)
        net.wire("requests.redirect", "groups.redirect")
        for o in range(n):
            net.wire(f"groups.alt_port__{o}", f"mgmt.alt_port__{o}")
            net.wire(f"requests.alt__{o}", f"groups.alt__{o}")
            if cfg.adaptive:
                net.wire(f"groups.ar_group__{o}", f"mgmt.ar_group__{o}")
                net.wire(f"requests.ar_group__{o}", f"mgmt.ar_group__{o}")

    # ---- the management port's own LFT lookup, the tables' owner
    net.wire("mgmt_port.switch_lid", "mgmt.switch_lid")
    net.wire(f"mgmt.lft_rd__{n}__dlid", "mgmt_port.lft_dlid")
    net.wire("mgmt_port.lft_port", f"mgmt.lft_rd__{n}__port")
    net.wire(f"mgmt.mft_rd__{n}__mlid", 0)
    net.wire("mgmt.mgmt_tx_errors", "mgmt_port.tx_errors")

    for p in range(n):
        lrx, ltx, psm, ing, voq = f"lrx{p}", f"ltx{p}", f"psm{p}", f"ingress{p}", f"voq{p}"
        va, eg, pc = f"vlarb{p}", f"egress{p}", f"counters{p}"
        # ---- link layer and port state
        if cfg.rx_register:
            net.connect(f"top.rx__{p}", f"rxreg{p}.i")
            rx = f"rxreg{p}.o"
        else:
            rx = f"top.rx__{p}"
        net.connect(rx, f"{lrx}.rx")
        net.connect(f"top.tx__{p}", f"{ltx}.tx")
        net.wire(f"{psm}.up", f"{rx}__up")
        net.wire(f"{psm}.req", f"mgmt.port_req__{p}__req")
        net.wire(f"{psm}.want", f"mgmt.port_req__{p}__state")
        net.wire(f"{psm}.data_rx", f"{lrx}.data_rx")
        net.wire(f"mgmt.port_state__{p}", f"{psm}.state")
        net.wire(f"{lrx}.state", f"{psm}.state")
        net.wire(f"{ltx}.state", f"{psm}.state")
        net.connect(f"{lrx}.fc_rx", f"{ltx}.fc_rx")
        for v in range(nvl):
            net.wire(f"{ltx}.local_fccl__{v}", f"{lrx}.fccl__{v}")

        # ---- ingress: route lookup (its tables addressed from the flit arriving on the
        # link) and VOQ write; credit back
        net.connect(f"{lrx}.acc", f"{ing}.acc")
        if cfg.failover:
            net.wire(f"{ing}.redirect", "groups.usable")
            net.wire(f"{voq}.rd_dest", f"requests.rd__{p}__dest")
            for o in range(n) if cfg.adaptive else ():
                net.wire(f"{ing}.ar_mask__{o}", f"groups.ar_mask__{o}")
        net.wire(f"{ing}.port_active", active)
        net.wire(f"{ing}.la", f"top.rx__{p}__data")
        net.wire(f"mgmt.lft_rd__{p}__dlid", f"{ing}.lft_dlid")
        net.wire(f"{ing}.lft_port", f"mgmt.lft_rd__{p}__port")
        net.wire(f"mgmt.mft_rd__{p}__mlid", f"{ing}.mft_mlid")
        net.wire(f"{ing}.mft_mask", f"mgmt.mft_rd__{p}__mask")
        for j in range(2 * n):
            net.wire(f"{ing}.sl2vl_row__{j}", f"mgmt.sl2vl_row__{p}__{j}")
        net.connect(f"{ing}.w", f"{voq}.w")
        net.connect(f"{voq}.rel", f"{ing}.rel")
        for v in range(nvl):
            net.wire(f"{lrx}.release__{v}", f"{ing}.release__{v}")
        net.connect(f"{ing}.tap", f"mgmt_port.dat__{p}")

        # ---- requests (the queues' status) and reader starts
        net.connect(f"requests.q__{p}", voq)
        net.wire(f"mgmt.sl2vl_rd__{p}__index", f"requests.mc_sl2vl_index__{p}")
        net.wire(f"requests.mc_sl2vl_word__{p}", f"mgmt.sl2vl_rd__{p}__word")
        for k in ("start", "port", "vl", "mc", "void"):
            net.wire(f"{voq}.rd_{k}", f"requests.rd__{p}__{k}")

        # ---- allocation: VLArb per output, the iSLIP allocator
        net.wire(f"{va}.ready15", 0)
        net.wire(f"{va}.limit", f"mgmt.limit_high__{p}")
        net.connect(f"requests.va__{p}", va)
        for j in range(cfg.vlarb_entries):
            net.wire(f"{va}.high__{j}", f"mgmt.vlarb_high__{p}__{j}")
            net.wire(f"{va}.low__{j}", f"mgmt.vlarb_low__{p}__{j}")
        for v in range(nvl):
            net.wire(f"requests.fccl__{p}__{v}", f"{ltx}.fccl__{v}")
            net.wire(f"requests.fctbs__{p}__{v}", f"{ltx}.fctbs__{v}")
        for k in ("req", "deep", "done", "new_valid", "new_in", "match_valid", "match_in"):
            net.connect(f"requests.alloc__{k}__{p}", f"alloc.{k}__{p}")

        # ---- crossbar, egress, the management port's switch in front of LinkTx
        net.connect(f"{voq}.r", f"xbar.r__{p}")
        net.wire(f"xbar.issue_port__{p}", f"{voq}.issue_port")
        net.wire(f"{voq}.first_ok", f"xbar.first_ok__{p}")
        net.connect(f"xbar.out__{p}", f"{eg}.i")
        net.connect(f"{eg}.o", f"mgmt_port.eg__{p}")
        net.connect(f"{lrx}.vl15", f"mgmt_port.v15__{p}")
        net.wire(f"mgmt_port.state__{p}", f"{psm}.state")
        for v in range(nvl):
            net.wire(f"mgmt_port.fccl__{p}__{v}", f"{ltx}.fccl__{v}")
            net.wire(f"mgmt_port.fctbs__{p}__{v}", f"{ltx}.fctbs__{v}")
            net.connect(f"mgmt_port.src__{p}__{v}", f"{ltx}.src__{v}")
        net.connect(f"mgmt_port.src15__{p}", f"{ltx}.src15")

        # ---- congestion marking (docs/reliability.md): queue (o, v) over all inputs, FECN at
        # the egress
        if cfg.cc:
            for k, src in (("valid", "valid"), ("sop", "sop"), ("mcast", "mcast"), ("port", "dest"), ("vl", "ovl"),
                           ("blocks", "blocks")):
                net.wire(f"cc.enq__{p}__{k}", f"{ing}.w__{src}")
            for k in ("start", "mc", "port", "vl"):
                net.wire(f"cc.deq__{p}__{k}", f"requests.rd__{p}__{k}")
            net.wire(f"cc.deq__{p}__blocks", f"{voq}.rd_blocks")
            for k in ("valid", "sop", "data"):
                net.wire(f"cc.eg__{p}__{k}", f"xbar.out__{p}__{k}")
            net.wire(f"cc.eg__{p}__vl", Slice(f"xbar.out__{p}__vl", net.width(f"cc.eg__{p}__vl")))
            net.wire(f"cc.eg__{p}__ready", f"{eg}.i__ready")
            net.wire(f"{eg}.fecn", f"cc.mark__{p}")
            net.wire(f"cc.cc__{p}", f"mgmt.cc_port__{p}")
            net.wire(f"mgmt.cc_marked__{p}", f"cc.marked__{p}")
        else:
            net.wire(f"{eg}.fecn", 0)

        # ---- counters (index: contracts.counters.PORT_COUNTERS_LIST)
        net.connect(f"{lrx}.counters", f"{pc}.rx")
        net.connect(f"{ltx}.counters", f"{pc}.tx")
        for c in MGMT_PORT_COUNTERS:
            net.wire(f"{pc}.mgmt__{c}", f"mgmt_port.{c}__{p}")
        net.wire(f"{pc}.link_downed", f"{psm}.link_downed")
        net.wire(f"{pc}.route_drop", f"{ing}.dropped")
        net.wire(f"{pc}.discard", f"requests.discard__{p}")
        net.wire(f"{pc}.hoq_discard", f"requests.hoq_discard__{p}" if cfg.lifetimes else 0)
        net.wire(f"{pc}.life_discard", f"requests.life_discard__{p}" if cfg.lifetimes else 0)
        if cfg.lifetimes:
            net.wire(f"{voq}.sw_tick", "lifetime.sw_tick")
            for k in range(2):
                net.wire(f"mgmt.life_discards__{2 * p + k}", f"{pc}.details__{k}")
        net.connect(f"mgmt.counters__{p}", f"{pc}.counters")
    net.wire("requests.active", active)
    net.wire("requests.alloc__in_busy", "alloc.in_busy")
    return net.check()
