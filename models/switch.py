"""Golden model of the whole switch (hw/top/switch.py), composed of the block models with
models.compose.Composite. The glue (route decision, drop/skip, credit returns, allocation
requests, crossbar selection) is modelled from docs/switch-core.md in `SwitchGlue`.

Top-level ports as in the RTL: rx__<p>__*, tx__<p>__* and s_axil_*.
"""
from __future__ import annotations

from hw.common.config import SwitchConfig
from hw.common.defs import RX_ERROR_COUNTERS, PortState, RouteDrop
from hw.mgmt.regmap import PORT_COUNTERS_LIST, mft_words
from models.allocator import ISlipModel, allocator_ports
from models.compose import Composite
from models.credit import may_send
from models.egress import EgressModel, egress_ports
from models.link_rx import LinkRxModel, link_rx_ports
from models.link_tx import LinkTxModel, link_tx_ports
from models.mgmt import N_COUNTERS, MgmtModel, mgmt_ports
from models.mgmt_port import MgmtPortModel, mgmt_port_ports
from models.packet import LRH
from models.port_state import PortStateModel, port_state_ports
from models.route import for_switch, route
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
_SAT = 0xFFFFFFFF
_AXI_OUT = ["s_axil_awready", "s_axil_wready", "s_axil_bvalid", "s_axil_bresp", "s_axil_arready", "s_axil_rvalid",
            "s_axil_rdata", "s_axil_rresp"]


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


class SwitchGlue:
    """The top-level logic between the blocks, registers included."""

    def __init__(self, cfg: SwitchConfig, mgmt: MgmtModel):
        self.cfg, self.mg = cfg, mgmt
        n = cfg.ports
        self.skip = [False] * n
        self.relay = [0] * n
        self.m_vl = [0] * n
        self.m_mc = [False] * n
        self.discarding = [False] * n
        self.disc_start = [None] * n            # a discard read decided last cycle starts now: its port
    def _route(self, p, hdr, active):
        """(reason, dest, ovl, for the management port?) of a packet's LRH."""
        t = self.mg.t
        lft = [(t["LFT"][d // 4] >> (8 * (d % 4))) & 0xFF for d in range(self.cfg.lft_entries)]
        words = mft_words(self.cfg)
        mft = [sum(t["MFT"][m * words + w] << (32 * w) for w in range(words)) for m in range(self.cfg.mft_entries)]
        lrh = LRH.unpack(hdr.to_bytes(8, "big"))
        return (*route(self.cfg, p, lrh, lft, t["SL2VL"], active, mft), for_switch(self.cfg, lrh, lft, mft))

    def peek(self, inp: dict) -> dict:
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        o = inp["all"]
        cfg = self.cfg
        n, nvl = cfg.ports, cfg.data_vls
        g = lambda b, k: o.get(b, {}).get(k, 0)  # noqa: E731
        out = {}
        active = {p for p in range(n) if g(f"ps{p}", "state") == PortState.ACTIVE}
        drops = [False] * n
        to_mgmt = [False] * n
        accs = []
        for p in range(n):
            rx = f"rx{p}"
            acc = {k: g(rx, f"acc__{k}") for k in ("valid", "data", "sop", "eop", "bytes", "bad", "hdr", "vl",
                                                    "blocks")}
            reason, dest, ovl, mcast, sl, here = RouteDrop.NONE, 0, 0, False, 0, False
            if acc["valid"] and acc["sop"]:
                lrh = LRH.unpack(acc["hdr"].to_bytes(8, "big"))
                mcast, sl = 0xC000 <= lrh.dlid < 0xFFFF, lrh.sl
                reason, dest, ovl, here = self._route(p, acc["hdr"], active)
            to_mgmt[p] = here
            # the management port's tap: the accepted stream, `here` at a sop for the switch
            out.update({f"mp.dat__{p}__{k}": acc[k] for k in ["valid"] + _FL + ["blocks"]})
            out[f"mp.dat__{p}__here"] = int(here)
            drop = bool(acc["valid"] and acc["sop"] and reason != RouteDrop.NONE)
            drops[p] = drop
            write = acc["valid"] and not drop and not (self.skip[p] and not acc["sop"])
            out.update({f"voq{p}.w__valid": int(write), f"voq{p}.w__dest": dest if not mcast else 0,
                        f"voq{p}.w__ovl": ovl, f"voq{p}.w__blocks": acc["blocks"], f"voq{p}.w__ivl": acc["vl"],
                        f"voq{p}.w__mcast": int(mcast), f"voq{p}.w__mask": dest if mcast else 0,
                        f"voq{p}.w__sl": sl})
            out.update({f"voq{p}.w__{k}": acc[k] for k in _FL})
            for v in range(nvl):
                rel = g(f"voq{p}", "rel__blocks") if g(f"voq{p}", "rel__valid") and g(f"voq{p}", "rel__ivl") == v else 0
                rel += acc["blocks"] if drop and acc["vl"] == v else 0
                out[f"rx{p}.release__{v}"] = rel
            accs.append(acc)
        # multicast: the copy each input's multicast head owes next (lowest port first)
        sl2vl = self.mg.t["SL2VL"]
        mc = []                                  # per input: (port, VL, can go) or None
        for i in range(n):
            q = f"voq{i}"
            if not g(q, "mc_valid"):
                mc.append(None)
                continue
            owed, sl = g(q, "mc_mask"), g(q, "mc_sl")
            port = min((k for k in range(n) if owed >> k & 1), default=n - 1)
            vl = (sl2vl[(i * n + port) * 2 + sl // 8] >> (4 * (sl % 8))) & 0xF
            mc.append((port, vl, port in active and vl < nvl))
        hold = [self.discarding[i] or (mc[i] is not None and not mc[i][2]) for i in range(n)]
        # matches registered last cycle start readers now; an input whose multicast copy
        # cannot go is read into the void when idle (a discard read)
        starts = {}
        for oo in range(n):
            if g("alloc", f"match_valid__{oo}"):
                starts[g("alloc", f"match_in__{oo}")] = oo
        in_busy = g("alloc", "in_busy")
        disc_go = [bool(mc[i] is not None and not mc[i][2] and not self.discarding[i] and not g(f"voq{i}", "busy")
                        and not in_busy >> i & 1 and i not in starts) for i in range(n)]
        done = [bool(g(f"voq{i}", "done") and not (self.discarding[i] or disc_go[i])) for i in range(n)]
        free_in = [not in_busy >> i & 1 or done[i] for i in range(n)]

        # allocation
        def fits(oo, v, blocks):
            return may_send(g(f"tx{oo}", f"fccl__{v}"), g(f"tx{oo}", f"fctbs__{v}"), blocks)

        def mc_for(i, oo, v):                    # input i's multicast copy is for (oo, v) and fits
            return (mc[i] is not None and mc[i][2] and mc[i][0] == oo and mc[i][1] == v
                    and fits(oo, v, g(f"voq{i}", "mc_blocks")))
        use_mc = {}
        for oo in range(n):
            ready = 0
            for v in range(nvl):
                if oo in active and any(not hold[i] and free_in[i] and (
                        (g(f"voq{i}", f"nonempty__{oo}") >> v & 1
                         and fits(oo, v, g(f"voq{i}", f"head_blocks__{oo}__{v}")))
                        or mc_for(i, oo, v)) for i in range(n)):
                    ready |= 1 << v
            out[f"va{oo}.ready"] = ready
            sel_valid, sel = g(f"va{oo}", "sel_valid"), g(f"va{oo}", "sel_vl") % max(nvl, 1)
            sel = sel if nvl > 1 else 0
            for i in range(n):
                use_mc[i, oo] = mc_for(i, oo, sel)
                uc = (g(f"voq{i}", f"nonempty__{oo}") >> sel & 1
                      and fits(oo, sel, g(f"voq{i}", f"head_blocks__{oo}__{sel}")))
                req = sel_valid and (uc or use_mc[i, oo]) and oo in active and not hold[i]
                out.setdefault(f"alloc.req__{i}", 0)
                out[f"alloc.req__{i}"] |= int(bool(req)) << oo
                deep = uc and not use_mc[i, oo] and g(f"voq{i}", f"deep__{oo}") >> sel & 1
                out.setdefault(f"alloc.deep__{i}", 0)
                out[f"alloc.deep__{i}"] |= int(bool(deep)) << oo
            newv, newi = g("alloc", f"new_valid__{oo}"), g("alloc", f"new_in__{oo}")
            out[f"va{oo}.sent"] = newv
            out[f"va{oo}.blocks"] = (g(f"voq{newi}", "mc_blocks") if use_mc[newi, oo]
                                     else g(f"voq{newi}", f"head_blocks__{oo}__{sel}"))
        # crossbar: each flit on an input's read register names its output; an input starts
        # issuing a packet only while no other input's flit waits at that output untaken
        for i in range(n):
            port = starts.get(i, 0)
            q = f"voq{i}"
            disc = self.disc_start[i]            # (the head cannot change before it starts)
            out.update({f"{q}.rd_start": int(i in starts or disc is not None), f"{q}.rd_void": int(disc is not None),
                        f"{q}.rd_port": port if i in starts else (disc if disc is not None
                                                                    else mc[i][0] if mc[i] else n - 1),
                        f"{q}.rd_vl": self.m_vl[port], f"{q}.rd_mc": int(self.m_mc[port] if i in starts else 1),
                        f"alloc.done__{i}": int(done[i])})
            out[f"{q}.r__ready"] = int(bool(g(q, "r__void") or g(f"eg{g(q, 'r__port')}", "i__ready")))
        feeding = {}                             # output -> the input whose flit is for it
        for i in range(n):
            q = f"voq{i}"
            if g(q, "r__valid") and not g(q, "r__void"):
                if g(q, "r__port") in feeding:
                    raise AssertionError(f"SwitchModel: inputs {feeding[g(q, 'r__port')]} and {i} both hold a "
                                         f"flit for output {g(q, 'r__port')}")
                feeding[g(q, "r__port")] = i
        waiting = {oo for oo in feeding if not g(f"eg{oo}", "i__ready")}
        for i in range(n):
            out[f"voq{i}.first_ok"] = int(g(f"voq{i}", "issue_port") not in waiting)
        for oo in range(n):
            i = feeding.get(oo)
            q = f"voq{i}"
            out[f"eg{oo}.i__valid"] = int(i is not None)
            out.update({f"eg{oo}.i__{k}": g(q, f"r__{k}") if i is not None else 0 for k in _FL})
            out[f"eg{oo}.i__vl"] = g(q, "r__vl") if i is not None else 0
        # counters to management
        for p in range(n):
            rx, tx = f"rx{p}", f"tx{p}"
            vals = {"PortXmitData": g(tx, "counters__xmit_words"), "PortRcvData": g(rx, "counters__rcv_words"),
                    "PortXmitPkts": g(tx, "counters__xmit_pkts"), "PortRcvPkts": g(rx, "counters__rcv_pkts"),
                    "PortXmitWait": g(tx, "counters__xmit_wait"),
                    "PortRcvErrors": sum(g(rx, f"counters__{c}") for c in RX_ERROR_COUNTERS) & 0xFFFFFFFF,
                    "PortXmitDiscards": g(tx, "counters__xmit_discards"),
                    "ExcessiveBufferOverrunErrors": g(rx, "counters__overrun"),
                    "VL15Dropped": min(g(rx, "counters__vl15_dropped") + g("mp", f"v15_dropped__{p}"), _SAT),
                    "LinkDownedCounter": g(f"ps{p}", "link_downed"),
                    "PortRcvSwitchRelayErrors": min(self.relay[p] + g("mp", f"relay_err__{p}"), _SAT),
                    "VL15ForSwitch": g("mp", f"for_switch__{p}"),
                    "PortRcvRemotePhysicalErrors": g(rx, "counters__ebp"),
                    "MgmtRcvPkts": g("mp", f"rcv__{p}"), "MgmtXmitPkts": g("mp", f"xmit__{p}"),
                    "MgmtXmitDiscards": g("mp", f"xmit_discards__{p}")}
            for k in range(N_COUNTERS):
                name = PORT_COUNTERS_LIST[k] if k < len(PORT_COUNTERS_LIST) else None
                out[f"mgmt.counters__{p}__{k}"] = vals[name] if name else 0
        if not commit:
            return out
        # ---- registers
        for p in range(n):
            acc = accs[p]
            if acc["valid"] and acc["sop"]:
                self.skip[p] = drops[p] and not acc["eop"]
            elif acc["valid"] and acc["eop"]:
                self.skip[p] = False
            self.relay[p] = min(self.relay[p] + (drops[p] and not to_mgmt[p]) + disc_go[p], _SAT)
            self.disc_start[p] = mc[p][0] if disc_go[p] else None
            if disc_go[p]:
                self.discarding[p] = True
            elif g(f"voq{p}", "done"):
                self.discarding[p] = False
        for oo in range(n):
            if g("alloc", f"new_valid__{oo}"):
                self.m_vl[oo] = g(f"va{oo}", "sel_vl")
                self.m_mc[oo] = use_mc[g("alloc", f"new_in__{oo}"), oo]
        return out


class SwitchModel:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        n, nvl = cfg.ports, cfg.data_vls
        self.mgmt = MgmtModel(cfg, n + 1, 2 * n)           # LFT lookup n: the management port's
        self.mp = MgmtPortModel(cfg, cfg.mgmt_queue_flits, cfg.mgmt_send_flits)
        blocks = {"glue": None, "mgmt": self.mgmt, "mp": self.mp,
                  "alloc": ISlipModel(n, cfg.islip_iterations, cfg.islip_fair_every)}
        for p in range(n):
            blocks.update({f"ps{p}": PortStateModel(), f"rx{p}": LinkRxModel(cfg, buffered=False),
                           f"tx{p}": LinkTxModel(cfg), f"voq{p}": VOQModel(cfg), f"eg{p}": EgressModel(cfg),
                           f"va{p}": VLArbModel(nvl, cfg.vlarb_entries)})
        self.glue = SwitchGlue(cfg, self.mgmt)
        blocks["glue"] = self.glue
        self.blocks = blocks
        wires = {("glue", "all"): lambda outs: outs}
        # everything the glue computes, by "block.port" name
        glue_ports = set()
        for p in range(n):
            glue_ports |= {f"voq{p}.w__{k}" for k in ["valid", "dest", "ovl", "blocks", "ivl", "mcast", "mask", "sl"]
                           + _FL}
            glue_ports |= {f"rx{p}.release__{v}" for v in range(nvl)}
            glue_ports |= {f"va{p}.ready", f"va{p}.sent", f"va{p}.blocks", f"alloc.req__{p}", f"alloc.deep__{p}",
                           f"alloc.done__{p}"}
            glue_ports |= {f"voq{p}.rd_start", f"voq{p}.rd_port", f"voq{p}.rd_vl", f"voq{p}.rd_mc", f"voq{p}.r__ready",
                           f"voq{p}.rd_void", f"voq{p}.first_ok"}
            glue_ports |= {f"eg{p}.i__{k}" for k in ["valid", "vl"] + _FL}
            glue_ports |= {f"mgmt.counters__{p}__{k}" for k in range(N_COUNTERS)}
            glue_ports |= {f"mp.dat__{p}__{k}" for k in ["valid"] + _FL + ["blocks", "here"]}
        for gp in glue_ports:
            blk, port = gp.split(".")
            wires[(blk, port)] = ("glue", gp)
        for p in range(n):
            wires[(f"ps{p}", "req")] = ("mgmt", f"port_req__{p}__req")
            wires[(f"ps{p}", "want")] = ("mgmt", f"port_req__{p}__state")
            wires[("mgmt", f"port_state__{p}")] = (f"ps{p}", "state")
            wires[(f"rx{p}", "state")] = (f"ps{p}", "state")
            wires[(f"ps{p}", "data_rx")] = (f"rx{p}", "data_rx")
            wires[(f"tx{p}", "state")] = (f"ps{p}", "state")
            for k in ("valid", "op", "fctbs", "vl", "fccl"):
                wires[(f"tx{p}", f"fc_rx__{k}")] = (f"rx{p}", f"fc_rx__{k}")
            for v in range(nvl):
                wires[(f"tx{p}", f"local_fccl__{v}")] = (f"rx{p}", f"fccl__{v}")
            wires[(f"va{p}", "limit")] = ("mgmt", f"limit_high__{p}")
            # the management port between the receivers' VL15 buffers, egress and LinkTx
            for k in ["valid"] + _FL:
                wires[("mp", f"v15__{p}__{k}")] = (f"rx{p}", f"vl15__{k}")
                wires[(f"tx{p}", f"src15__{k}")] = ("mp", f"src15__{p}__{k}")
                wires[("mp", f"eg__{p}__{k}")] = (f"eg{p}", f"o__{k}")
                for v in range(nvl):
                    wires[(f"tx{p}", f"src__{v}__{k}")] = ("mp", f"src__{p}__{v}__{k}")
            wires[("mp", f"eg__{p}__vl")] = (f"eg{p}", "o__vl")
            wires[(f"rx{p}", "vl15__ready")] = ("mp", f"v15__{p}__ready")
            wires[("mp", f"src15__{p}__ready")] = (f"tx{p}", "src15__ready")
            wires[(f"eg{p}", "o__ready")] = ("mp", f"eg__{p}__ready")
            wires[("mp", f"state__{p}")] = (f"ps{p}", "state")
            for v in range(nvl):
                wires[("mp", f"src__{p}__{v}__ready")] = (f"tx{p}", f"src__{v}__ready")
                wires[("mp", f"fccl__{p}__{v}")] = (f"tx{p}", f"fccl__{v}")
                wires[("mp", f"fctbs__{p}__{v}")] = (f"tx{p}", f"fctbs__{v}")
            for j in range(cfg.vlarb_entries):
                wires[(f"va{p}", f"high__{j}")] = ("mgmt", f"vlarb_high__{p}__{j}")
                wires[(f"va{p}", f"low__{j}")] = ("mgmt", f"vlarb_low__{p}__{j}")
        wires[("mp", "switch_lid")] = ("mgmt", "switch_lid")
        wires[("mp", "lft_port")] = ("mgmt", f"lft_rd__{n}__port")
        wires[("mgmt", f"lft_rd__{n}__dlid")] = ("mp", "lft_dlid")
        wires[("mgmt", "mgmt_tx_errors")] = ("mp", "tx_errors")
        ports = {"glue": ({"all"}, glue_ports), "mgmt": mgmt_ports(cfg, n + 1, 2 * n)[:2],
                 "mp": mgmt_port_ports(cfg)[:2],
                 "alloc": allocator_ports(n)[:2]}
        for p in range(n):
            ports.update({f"ps{p}": port_state_ports()[:2], f"rx{p}": link_rx_ports(cfg, buffered=False)[:2],
                          f"tx{p}": link_tx_ports(cfg)[:2], f"voq{p}": voq_ports(cfg)[:2],
                          f"eg{p}": egress_ports()[:2], f"va{p}": vlarb_ports(nvl, cfg.vlarb_entries)[:2]})
        self.comp = Composite(blocks, wires, ports=ports)

    def step(self, inp: dict) -> dict:
        n = self.cfg.ports
        top = {"mgmt": {k: inp[k] for k in _AXI_IN}}
        top["mgmt"].update({f"{t}_rd__{p}__{a}": 0 for p in range(n) for t, a in
                            (("lft", "dlid"), ("sl2vl", "index"), ("mft", "mlid"))})
        top["mgmt"][f"mft_rd__{n}__mlid"] = 0
        top["mp"] = {k: inp[k] for k in _AXIS_IN}
        top["mgmt"].update({f"sl2vl_rd__{p}__index": 0 for p in range(n, 2 * n)})
        for p in range(n):
            top[f"ps{p}"] = {"up": inp[f"rx__{p}__up"]}
            top[f"rx{p}"] = {f"rx__{k}": inp[f"rx__{p}__{k}"] for k in _RX}
            top[f"tx{p}"] = {"tx__ready": inp[f"tx__{p}__ready"]}
            top[f"va{p}"] = {"ready15": 0}
        o = self.comp.step(top)
        out = {k: o["mgmt"][k] for k in _AXI_OUT} | {k: o["mp"][k] for k in _AXIS_OUT}
        for p in range(n):
            out.update({f"tx__{p}__{k}": o[f"tx{p}"][f"tx__{k}"] for k in _TX})
        return out
