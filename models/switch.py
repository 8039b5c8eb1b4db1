"""Golden model of the whole switch (hw/top/switch.py): the block models composed with
models.compose.Composite, wired as the RTL top wires its components, and nothing else.
Every block declares its ports, so a misspelt wire is an error at construction.

Top-level ports as in the RTL: rx__<p>__*, tx__<p>__*, s_axil_*, m_axis_mgmt_*, s_axis_mgmt_*.
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.defs import PortState
from models.allocator import ISlipModel, allocator_ports
from models.compose import Composite
from models.congestion import CongestionModel, congestion_ports
from models.counters import PortCountersModel, port_counters_ports
from models.crossbar import CrossbarModel, crossbar_ports
from models.egress import EgressModel, egress_ports
from models.ingress import IngressModel, ingress_ports
from models.lifetime import LifetimeClockModel, lifetime_clock_ports
from models.link_rx import LINK_RX_COUNTERS, LinkRxModel, link_rx_ports
from models.link_tx import LINK_TX_COUNTERS, LinkTxModel, link_tx_ports
from models.mgmt import N_COUNTERS, MgmtModel, mgmt_ports
from models.mgmt_port import MGMT_PORT_COUNTERS, MgmtPortModel, mgmt_port_ports
from models.port_groups import PortGroupsModel, port_groups_ports
from models.port_state import PortStateModel, port_state_ports
from models.requests import RequestBuilderModel, requests_ports
from models.vlarb import VLArbModel, vlarb_ports
from models.voq import VOQModel, voq_ports

__all__ = ["SwitchModel", "idle_inputs", "switch_ports"]
_RX = ["valid", "data", "sop", "eop", "bytes", "link", "bad", "up"]
_TX = ["valid", "data", "sop", "eop", "bytes", "link", "bad"]
_FL = ["data", "sop", "eop", "bytes", "bad"]
_AXI_IN = ["s_axil_awaddr", "s_axil_awvalid", "s_axil_wdata", "s_axil_wstrb", "s_axil_wvalid", "s_axil_bready",
           "s_axil_araddr", "s_axil_arvalid", "s_axil_rready"]
_AXIS_IN = ["m_axis_mgmt_tready"] + [f"s_axis_mgmt_{k}" for k in ("tdata", "tkeep", "tlast", "tdest", "tvalid")]
_AXIS_OUT = [f"m_axis_mgmt_{k}" for k in ("tdata", "tkeep", "tlast", "tuser", "tvalid")] + ["s_axis_mgmt_tready"]
_AXI_OUT = ["s_axil_awready", "s_axil_wready", "s_axil_bvalid", "s_axil_bresp", "s_axil_arready", "s_axil_rvalid",
            "s_axil_rdata", "s_axil_rresp"]
_QUEUE = ["mc_valid", "mc_mask", "mc_sl", "mc_blocks", "busy", "done", "ending", "done_bad"]


def switch_ports(cfg: SwitchConfig):
    n = cfg.ports
    ins = [f"rx__{p}__{k}" for p in range(n) for k in _RX] + [f"tx__{p}__ready" for p in range(n)] + _AXI_IN
    ins += _AXIS_IN
    outs = [f"tx__{p}__{k}" for p in range(n) for k in _TX] + _AXI_OUT + _AXIS_OUT
    qual = {f"tx__{p}__{k}": f"tx__{p}__valid" for p in range(n) for k in _TX[1:]}
    qual.update({f"m_axis_mgmt_{k}": "m_axis_mgmt_tvalid" for k in ("tdata", "tkeep", "tlast", "tuser")})
    qual.update({"s_axil_bresp": "s_axil_bvalid", "s_axil_rdata": "s_axil_rvalid", "s_axil_rresp": "s_axil_rvalid"})
    return ins, outs, qual


def idle_inputs(cfg: SwitchConfig) -> dict:
    """Top-level inputs of an idle switch: every PHY up, nothing sent, no AXI transfer."""
    ins, _, _ = switch_ports(cfg)
    return {k: 0 for k in ins} | {f"rx__{p}__up": 1 for p in range(cfg.ports)}


class SwitchModel:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n, nvl = cfg.ports, cfg.data_vls
        self.mgmt = MgmtModel(cfg, n + 1, 2 * n)           # LFT lookup n: the management port's
        self.mp = MgmtPortModel(cfg, cfg.mgmt_queue_flits, cfg.mgmt_send_flits)
        blocks = {"mgmt": self.mgmt, "mp": self.mp, "alloc": ISlipModel(n, cfg.islip_iterations, cfg.islip_fair_every),
                  "rq": RequestBuilderModel(cfg), "xb": CrossbarModel(cfg)}
        ports = {"mgmt": mgmt_ports(cfg, n + 1, 2 * n)[:2], "mp": mgmt_port_ports(cfg)[:2],
                 "alloc": allocator_ports(n)[:2], "rq": requests_ports(cfg)[:2], "xb": crossbar_ports(cfg)[:2]}
        for p in range(n):
            blocks.update({f"ps{p}": PortStateModel(), f"rx{p}": LinkRxModel(cfg, buffered=False),
                           f"tx{p}": LinkTxModel(cfg), f"ing{p}": IngressModel(cfg, p), f"voq{p}": VOQModel(cfg),
                           f"eg{p}": EgressModel(cfg), f"va{p}": VLArbModel(nvl, cfg.vlarb_entries),
                           f"pc{p}": PortCountersModel()})
            ports.update({f"ps{p}": port_state_ports()[:2], f"rx{p}": link_rx_ports(cfg, buffered=False)[:2],
                          f"tx{p}": link_tx_ports(cfg)[:2], f"ing{p}": ingress_ports(cfg)[:2],
                          f"voq{p}": voq_ports(cfg)[:2], f"eg{p}": egress_ports()[:2],
                          f"va{p}": vlarb_ports(nvl, cfg.vlarb_entries)[:2], f"pc{p}": port_counters_ports()[:2]})
        if cfg.lifetimes:
            blocks["life"] = LifetimeClockModel(cfg)
            ports["life"] = lifetime_clock_ports(cfg)[:2]
        if cfg.failover:
            blocks["pg"] = PortGroupsModel(cfg)
            ports["pg"] = port_groups_ports(cfg)[:2]
        if cfg.cc:
            blocks["cc"] = CongestionModel(cfg)
            ports["cc"] = congestion_ports(cfg)[:2]
        self.blocks = blocks

        def active(outs):                        # bit p: port p is Active
            return sum(1 << p for p in range(n) if outs.get(f"ps{p}", {}).get("state") == PortState.ACTIVE)

        w = {}

        def link(dst, src, names, dk="{}", sk="{}"):
            for k in names:
                w[(dst, dk.format(k))] = (src, sk.format(k))

        w[("mp", "switch_lid")] = ("mgmt", "switch_lid")
        w[("mp", "lft_port")] = ("mgmt", f"lft_rd__{n}__port")
        w[("mgmt", f"lft_rd__{n}__dlid")] = ("mp", "lft_dlid")
        w[("mgmt", "mgmt_tx_errors")] = ("mp", "tx_errors")
        w[("rq", "active")] = active

        if cfg.lifetimes:
            for o in range(n):
                w[("life", f"hoq_life__{o}")] = ("mgmt", f"hoq_life__{o}")
                w[("rq", f"vl_stall__{o}")] = ("mgmt", f"vl_stall__{o}")
            w[("rq", "hoq_tick")] = ("life", "tick")
            w[("rq", "hoq_never")] = ("life", "never")
            w[("life", "sw_life")] = ("mgmt", "switch_life")
            for p in range(n):
                w[(f"voq{p}", "sw_tick")] = ("life", "sw_tick")
        if cfg.failover:
            w[("pg", "active")] = active
            w[("rq", "redirect")] = ("pg", "redirect")
            for o in range(n):
                w[("pg", f"alt_port__{o}")] = ("mgmt", f"alt_port__{o}")
                w[("rq", f"alt__{o}")] = ("pg", f"alt__{o}")
            for o in range(n) if cfg.adaptive else ():
                w[("pg", f"ar_group__{o}")] = ("mgmt", f"ar_group__{o}")
                w[("rq", f"ar_group__{o}")] = ("mgmt", f"ar_group__{o}")
        w[("rq", "alloc__in_busy")] = ("alloc", "in_busy")
        for p in range(n) if cfg.cc else ():
            # congestion marking: input p's buffer writes and read starts, output p's flits
            ing, voq, eg = f"ing{p}", f"voq{p}", f"eg{p}"
            link("cc", ing, ("valid", "sop", "mcast", "blocks"), f"enq__{p}__{{}}", "w__{}")
            w[("cc", f"enq__{p}__port")], w[("cc", f"enq__{p}__vl")] = (ing, "w__dest"), (ing, "w__ovl")
            link("cc", "rq", ("start", "mc", "port", "vl"), f"deq__{p}__{{}}", f"rd__{p}__{{}}")
            w[("cc", f"deq__{p}__blocks")] = (voq, "rd_blocks")
            link("cc", "xb", ("valid", "sop", "data", "vl"), f"eg__{p}__{{}}", f"out__{p}__{{}}")
            w[("cc", f"eg__{p}__ready")] = (eg, "i__ready")
            w[("cc", f"cc__{p}")] = ("mgmt", f"cc_port__{p}")
            w[("mgmt", f"cc_marked__{p}")] = ("cc", f"marked__{p}")
        for p in range(n):
            ps, rx, tx, ing, voq, eg, va, pc = (f"{b}{p}" for b in ("ps", "rx", "tx", "ing", "voq", "eg", "va", "pc"))
            # link layer and port state
            w[(ps, "req")] = ("mgmt", f"port_req__{p}__req")
            w[(ps, "want")] = ("mgmt", f"port_req__{p}__state")
            w[("mgmt", f"port_state__{p}")] = (ps, "state")
            w[(rx, "state")] = (ps, "state")
            w[(ps, "data_rx")] = (rx, "data_rx")
            w[(tx, "state")] = (ps, "state")
            link(tx, rx, ("valid", "op", "fctbs", "vl", "fccl"), "fc_rx__{}", "fc_rx__{}")
            link(tx, rx, range(nvl), "local_fccl__{}", "fccl__{}")
            # ingress
            link(ing, rx, ["valid"] + _FL + ["hdr", "vl", "blocks"], "acc__{}", "acc__{}")
            w[(ing, "port_active")] = active
            if cfg.failover:
                w[(ing, "redirect")] = ("pg", "usable")
                w[(voq, "rd_dest")] = ("rq", f"rd__{p}__dest")
            for o in range(n) if cfg.adaptive else ():
                w[(ing, f"ar_mask__{o}")] = ("pg", f"ar_mask__{o}")
            w[(ing, "lft_port")] = ("mgmt", f"lft_rd__{p}__port")
            w[("mgmt", f"lft_rd__{p}__dlid")] = (ing, "lft_dlid")
            w[("mgmt", f"mft_rd__{p}__mlid")] = (ing, "mft_mlid")
            w[(ing, "mft_mask")] = ("mgmt", f"mft_rd__{p}__mask")
            w[(ing, "sl2vl_word")] = ("mgmt", f"sl2vl_rd__{p}__word")
            w[("mgmt", f"sl2vl_rd__{p}__index")] = (ing, "sl2vl_index")
            link(ing, voq, ("valid", "ivl", "blocks"), "rel__{}", "rel__{}")
            link(rx, ing, range(nvl), "release__{}", "release__{}")
            link(voq, ing, ["valid"] + _FL + ["dest", "ovl", "blocks", "ivl", "mcast", "mask", "sl"]
                 + (["ar"] if cfg.adaptive else []), "w__{}", "w__{}")
            link("mp", ing, ["valid"] + _FL + ["blocks", "here"], f"dat__{p}__{{}}", "tap__{}")
            # requests and reader starts
            link("rq", voq, range(n), f"q__{p}__nonempty__{{}}", "nonempty__{}")
            link("rq", voq, range(n), f"q__{p}__deep__{{}}", "deep__{}")
            if cfg.adaptive:
                link("rq", voq, range(n), f"q__{p}__head_ar__{{}}", "head_ar__{}")
            if cfg.lifetimes:
                link("rq", voq, range(n), f"q__{p}__head_old__{{}}", "head_old__{}")
            for o in range(n):
                link("rq", voq, range(nvl), f"q__{p}__head_blocks__{o}__{{}}", f"head_blocks__{o}__{{}}")
            link("rq", voq, _QUEUE, f"q__{p}__{{}}")
            w[("rq", f"mc_sl2vl_word__{p}")] = ("mgmt", f"sl2vl_rd__{n + p}__word")
            w[("mgmt", f"sl2vl_rd__{n + p}__index")] = ("rq", f"mc_sl2vl_index__{p}")
            link(voq, "rq", ("start", "port", "vl", "mc", "void"), "rd_{}", f"rd__{p}__{{}}")
            # allocation
            link(va, "rq", ("ready", "sent", "blocks"), "{}", f"va__{p}__{{}}")
            link("rq", va, ("sel_valid", "sel_vl"), f"va__{p}__{{}}")
            w[(va, "limit")] = ("mgmt", f"limit_high__{p}")
            for t in ("high", "low"):
                link(va, "mgmt", range(cfg.vlarb_entries), f"{t}__{{}}", f"vlarb_{t}__{p}__{{}}")
            link("rq", tx, range(nvl), f"fccl__{p}__{{}}", "fccl__{}")
            link("rq", tx, range(nvl), f"fctbs__{p}__{{}}", "fctbs__{}")
            link("alloc", "rq", ("req", "deep", "done"), f"{{}}__{p}", f"alloc__{{}}__{p}")
            link("rq", "alloc", ("new_valid", "new_in", "match_valid", "match_in"), f"alloc__{{}}__{p}", f"{{}}__{p}")
            # crossbar, egress, the management port
            link("xb", voq, ["valid"] + _FL + ["void", "port", "vl"], f"r__{p}__{{}}", "r__{}")
            w[("xb", f"issue_port__{p}")] = (voq, "issue_port")
            w[(voq, "first_ok")] = ("xb", f"first_ok__{p}")
            w[(voq, "r__ready")] = ("xb", f"r__{p}__ready")
            link(eg, "xb", ["valid"] + _FL + ["vl"], "i__{}", f"out__{p}__{{}}")
            w[("xb", f"out__{p}__ready")] = (eg, "i__ready")
            w[(eg, "fecn")] = ("cc", f"mark__{p}") if cfg.cc else (lambda outs: 0)
            link("mp", eg, ["valid"] + _FL + ["vl", "blocks"], f"eg__{p}__{{}}", "o__{}")
            w[(eg, "o__ready")] = ("mp", f"eg__{p}__ready")
            link("mp", rx, ["valid"] + _FL, f"v15__{p}__{{}}", "vl15__{}")
            w[(rx, "vl15__ready")] = ("mp", f"v15__{p}__ready")
            w[("mp", f"state__{p}")] = (ps, "state")
            link("mp", tx, range(nvl), f"fccl__{p}__{{}}", "fccl__{}")
            link("mp", tx, range(nvl), f"fctbs__{p}__{{}}", "fctbs__{}")
            for v in range(nvl):
                link(tx, "mp", ["valid"] + _FL, f"src__{v}__{{}}", f"src__{p}__{v}__{{}}")
                w[("mp", f"src__{p}__{v}__ready")] = (tx, f"src__{v}__ready")
            link(tx, "mp", ["valid"] + _FL, "src15__{}", f"src15__{p}__{{}}")
            w[("mp", f"src15__{p}__ready")] = (tx, "src15__ready")
            # counters
            link(pc, rx, LINK_RX_COUNTERS, "rx__{}", "counters__{}")
            link(pc, tx, LINK_TX_COUNTERS, "tx__{}", "counters__{}")
            link(pc, "mp", MGMT_PORT_COUNTERS, "mgmt__{}", f"{{}}__{p}")
            w[(pc, "link_downed")] = (ps, "link_downed")
            w[(pc, "route_drop")] = (ing, "dropped")
            w[(pc, "discard")] = ("rq", f"discard__{p}")
            w[(pc, "hoq_discard")] = ("rq", f"hoq_discard__{p}") if cfg.lifetimes else (lambda outs: 0)
            w[(pc, "life_discard")] = ("rq", f"life_discard__{p}") if cfg.lifetimes else (lambda outs: 0)
            if cfg.lifetimes:
                for k in range(2):
                    w[("mgmt", f"life_discards__{2 * p + k}")] = (pc, f"details__{k}")
            link("mgmt", pc, range(N_COUNTERS), f"counters__{p}__{{}}", "counters__{}")
        self.comp = Composite(blocks, w, ports=ports)
        # SwitchConfig.rx_register: the switch sees each link's inputs a cycle late; out of
        # reset, as an idle link that is down
        self._rx_late = {f"rx__{p}__{k}": 0 for p in range(n) for k in _RX} if cfg.rx_register else None

    def step(self, inp: dict) -> dict:
        cfg = self.cfg
        n = cfg.ports
        if self._rx_late is not None:
            now = {k: inp[k] for k in self._rx_late}
            inp = inp | self._rx_late
            self._rx_late = now
        top = {"mgmt": {k: inp[k] for k in _AXI_IN}, "mp": {k: inp[k] for k in _AXIS_IN}}
        top["mgmt"][f"mft_rd__{n}__mlid"] = 0
        for p in range(n):
            top[f"ing{p}"] = {"la": inp[f"rx__{p}__data"]}       # the flit entering the parser
            top[f"ps{p}"] = {"up": inp[f"rx__{p}__up"]}
            top[f"rx{p}"] = {f"rx__{k}": inp[f"rx__{p}__{k}"] for k in _RX}
            top[f"tx{p}"] = {"tx__ready": inp[f"tx__{p}__ready"]}
            top[f"va{p}"] = {"ready15": 0}
        o = self.comp.step(top)
        out = {k: o["mgmt"][k] for k in _AXI_OUT} | {k: o["mp"][k] for k in _AXIS_OUT}
        for p in range(n):
            out.update({f"tx__{p}__{k}": o[f"tx{p}"][f"tx__{k}"] for k in _TX})
        return out
