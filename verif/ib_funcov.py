"""The switch's functional coverage model: what the switch promises, as bins, from the spec
(IBA Vol. 1 chapters 7 link layer, 14 subnet management, 16 performance management, 18
switches; docs/link-layer.md, docs/switch-core.md, docs/reliability.md, docs/registers.md),
and the samplers that fill them from the cocotb tests' lock-step runs.

Groups (bins for the run's config; the feature groups only where the config has the feature):

  packet       kind (unicast, raw, multicast, management, VL15 SMP) × input VL × output port
  route_drop   every reason the route lookup refuses a packet (contracts.defs.RouteDrop)
  rx_error     every error class of the receive checker (RxError) and of LinkRx's own drops
  credit       per VL: a packet sent with exactly one packet's worth of credit, FCTBS and the
               peer's FCCL wrapping at 12 bits, an FC packet resyncing the ABR (FCTBS != ABR:
               blocks were lost) or confirming it; no credit (PortXmitWait); an FC packet lost
  port_state   every arc of Down/Init/Armed/Active (IBA §7.2), data received in each state a
               packet can arrive in, a refused state request, a link lost
  drop         packets discarded after the route lookup: VL15 and relay drops of the
               management port, a transmit discard (port not Active), HOQLife and
               SwitchLifetime discards, a VL stall (IBA §18.2.5.4)
  vl_arb       VL arbitration (IBA §7.6.9): each data VL served from the high and from the low
               table, low served because the high-priority limit was reached, VL15 first
  contention   allocator contention: 1..N inputs requesting one output × the table its VL
               arbiter served (switch runs)
  failover     a packet redirected to its port's alternate; an adaptive packet kept on, or
               moved off, its LFT port (cfg.failover, cfg.adaptive)
  cc           an output marking FECN, each VL congested (cfg.cc, IBA Annex A10)
  axi          every register read, and written (a read-only one: refused with SLVERR), and
               an unmapped address read and written

Where a block's ports show the event the samplers read the ports (the block's inputs and
outputs of the cycle, as the lock-step checker or models.compose.Composite saw them); where
they do not (a credit state inside LinkTx, which table the VL arbiter served) they read the
golden model's state, compared with the previous cycle's.
"""
from __future__ import annotations

import re

from contracts.config import SwitchConfig
from contracts.defs import PortState, RouteDrop, RxError
from contracts.regmap import build_regmap
from verif.funcov import Coverage, Deltas

__all__ = ["declare", "attach", "RX_ERRORS"]

RX_ERRORS = [e.name.lower() for e in RxError if e != RxError.NONE] + [
    "state_drop", "vl15_dropped", "vl_invalid", "overrun", "fc_vl_invalid"]
_ARCS = [("Down", "Init"), ("Init", "Armed"), ("Armed", "Active"), ("Init", "Down"), ("Armed", "Down"),
         ("Active", "Down")]
_STATE = {int(s): s.name.capitalize() for s in PortState}
_CREDIT_VL = ["exactly one packet's worth", "FCTBS wraps", "FCCL wraps", "ABR resync (FCTBS != ABR)",
              "ABR confirmed (FCTBS == ABR)"]
_COUNTER = re.compile(r"(?:^|__)(?:(?:counters|crx|ctx|cport)__(\w+)|(state_req_bad|link_downed))$")


def declare(cov: Coverage, cfg: SwitchConfig) -> None:
    n, nvl = cfg.ports, cfg.data_vls
    ports, vls = range(n), range(nvl)
    cov.group("packet", "packet kind × input VL × output port", "IBA 7.7, 14.2.5.12, 18.2.4",
              [(k, v, o) for k in ("unicast", "raw", "multicast") for v in vls for o in ports]
              + [("management", v, "mgmt") for v in vls]
              + [("VL15 SMP", 15, "mgmt")] + [("VL15 SMP", 15, o) for o in ports])
    cov.group("route_drop", "route lookup refusals by reason", "IBA 18.2.4.3; RouteDrop",
              [r.name for r in RouteDrop if r != RouteDrop.NONE])
    cov.group("rx_error", "receive errors by class", "IBA 7.7.8, 7.8.2, 7.9.4, 16.1.3.5; RxError", RX_ERRORS)
    cov.group("credit", "credit states", "IBA 7.9.4",
              [(c, v) for c in _CREDIT_VL for v in vls] + ["no credit (PortXmitWait)", "FC packet lost (LPCRC)"])
    cov.group("port_state", "port state arcs, data in each state", "IBA 7.2, 14.2.5.6",
              [f"{a} -> {b}" for a, b in _ARCS] + [("data in", s) for s in ("Init", "Armed", "Active")]
              + ["refused state request", "link lost (LinkDowned)"])
    drops = ["VL15 dropped (management port)", "relay error (management port)",
             "management send discarded", "transmit discard (port not Active)"]
    if cfg.lifetimes:
        drops += ["HOQLife discard", "SwitchLifetime discard", "VL stall"]
    cov.group("drop", "discards after the route lookup", "IBA 18.2.5.4, 16.1.3.5", drops)
    cov.group("vl_arb", "VL arbitration", "IBA 7.6.9",
              [(t, v) for t in ("high", "low") for v in vls] + ["low after the high limit", "VL15 first"])
    cov.group("contention", "inputs requesting one output × the table served", "IBA 7.6.9, 18.2",
              [(d, t) for d in range(1, n + 1) for t in ("high", "low")])
    if cfg.failover:
        fo = ["redirected to the alternate"]
        if cfg.adaptive:
            fo += ["adaptive: LFT port kept", "adaptive: moved off the LFT port"]
        cov.group("failover", "failover and adaptive routing choices", "docs/reliability.md", fo)
    if cfg.cc:
        cov.group("cc", "congestion control marking", "IBA Annex A10",
                  [("FECN marked", o) for o in ports] + [("congested", v) for v in vls])
    rm = build_regmap(cfg)
    axi = []
    for r in rm.regs:
        axi += [(r.name, "read"), (r.name, "write" if r.access == "RW" else "write refused")]
    cov.group("axi", "AXI4-Lite register accesses", "docs/registers.md",
              axi + [("unmapped", "read"), ("unmapped", "write")])


# ------------------------------------------------------------------ samplers
class _Sampler:
    def __init__(self, cov: Coverage, cfg: SwitchConfig):
        self.cov, self.cfg = cov, cfg
        self.d = Deltas()

    def counters(self, out: dict):
        """Counter outputs (counters__x, crx__x, ctx__x, cport__x, with any prefix) that grew."""
        for k, v in out.items():
            m = _COUNTER.search(k)
            if m is None or not self.d(k, v):
                continue
            name = m.group(1) or m.group(2)
            if name in RX_ERRORS:
                self.cov.hit("rx_error", name)
                if name == "lpcrc":
                    self.cov.hit("credit", "FC packet lost (LPCRC)")
            elif name == "xmit_wait":
                self.cov.hit("credit", "no credit (PortXmitWait)")
            elif name == "xmit_discards":
                self.cov.hit("drop", "transmit discard (port not Active)")
            elif name == "state_req_bad":
                self.cov.hit("port_state", "refused state request")
            elif name == "link_downed":
                self.cov.hit("port_state", "link lost (LinkDowned)")

    def __call__(self, obj, inp, out):
        if out is not None:
            self.counters(out)


class _PortStates(_Sampler):
    """Arcs of every state output (`state`, `host__state`, `a__state`...) and data received
    (LinkRx's rcv_pkts growing, or PortStateModel's data_rx) in each state."""
    def __init__(self, cov, cfg):
        super().__init__(cov, cfg)
        self.prev: dict = {}

    def __call__(self, obj, inp, out):
        super().__call__(obj, inp, out)
        if out is None:
            return
        for k, v in out.items():
            if k == "state" or k.endswith("__state"):
                if v not in _STATE:
                    continue
                p = self.prev.get(k)
                self.prev[k] = v
                if p is not None and p != v:
                    self.cov.hit("port_state", f"{_STATE[p]} -> {_STATE[v]}")
                rcv = out.get(f"{k[:-len('state')]}crx__rcv_pkts")
                got = (rcv is not None and self.d(("rcv", k), rcv)) or (inp is not None and inp.get("data_rx"))
                if got and _STATE[v] != "Down":
                    self.cov.hit("port_state", ("data in", _STATE[v]))


class _LinkTx(_Sampler):
    """Credit states from LinkTx's FCTBS and FCCL (its outputs, or its state when nested)."""
    def __init__(self, cov, cfg):
        super().__init__(cov, cfg)
        self._prev: dict = {}

    def __call__(self, obj, inp, out):
        super().__call__(obj, inp, out)
        self._credit("", obj)

    def _credit(self, key, t):
        prev = self._prev.get(key)
        now = (list(t.fctbs), list(t.fccl))
        self._prev[key] = now
        if prev is None:
            return
        (pb, pl), (nb, nl) = prev, now
        restarted = set(getattr(t, "init", ()))       # a link down zeroes both (the FC init is owed again)
        for v in range(len(nb)):
            if v in restarted and nb[v] == 0 and nl[v] == 0:
                continue
            sent = (nb[v] - pb[v]) % 4096
            if nb[v] != pb[v] and sent < 2048:
                if (pl[v] - pb[v]) % 4096 == sent:
                    self.cov.hit("credit", ("exactly one packet's worth", v))
                if nb[v] < pb[v]:
                    self.cov.hit("credit", ("FCTBS wraps", v))
            if nl[v] < pl[v] and (nl[v] - pl[v]) % 4096 < 2048:
                self.cov.hit("credit", ("FCCL wraps", v))


class _LinkRx(_Sampler):
    """ABR resync (IBA §7.9.4: a received FC packet's FCTBS replaces the ABR; when they differ
    the receiver had lost blocks) from LinkRx's fc_rx output and its ABR before the cycle."""
    def __init__(self, cov, cfg):
        super().__init__(cov, cfg)
        self.abr = [None, None]      # the ABR after the last two cycles

    def __call__(self, obj, inp, out):
        super().__call__(obj, inp, out)
        # fc_rx is registered: the FC packet it shows set the ABR in the cycle before, so the
        # ABR it found is the one from two cycles back
        prev = self.abr[0]
        self.abr = [self.abr[1], list(obj.abr)]
        if out is None or prev is None or not out.get("fc_rx__valid"):
            return
        v = out["fc_rx__vl"]
        if v < len(prev) and out.get("fc_rx__op") == 0:
            self.cov.hit("credit", ("ABR confirmed (FCTBS == ABR)" if out["fc_rx__fctbs"] == prev[v]
                                    else "ABR resync (FCTBS != ABR)", v))


class _Ingress(_Sampler):
    def __call__(self, obj, inp, out):
        # a packet's first flit at the VOQ write (written or refused): the model's record of
        # its route (models/ingress.py last_route, set in that cycle)
        if out is None or not out.get("_head") or obj.last_route is None:
            return
        r = obj.last_route
        lrh, (reason, where, _vl), mcast, here = r["lrh"], r["decision"], r["mcast"], r["here"]
        ivl = r["ivl"]
        cfg = self.cfg
        if here:
            self.cov.hit("packet", ("management", ivl, "mgmt"))
        if reason != RouteDrop.NONE:
            self.cov.hit("route_drop", RouteDrop(reason).name)
            return
        if mcast:
            for o in range(cfg.ports):
                if where >> o & 1:
                    self.cov.hit("packet", ("multicast", ivl, o))
        else:
            self.cov.hit("packet", ("raw" if lrh.lnh < 2 else "unicast", ivl, where))
            if cfg.failover and not r["active"] >> where & 1 and r["redirect"] >> where & 1:
                self.cov.hit("failover", "redirected to the alternate")
            if cfg.adaptive and r["ar"]:
                lft = r["lft_port"] & 0x7F
                moved = lft >= 1 and lft - 1 != where
                self.cov.hit("failover", "adaptive: moved off the LFT port" if moved else "adaptive: LFT port kept")


class _MgmtPort(_Sampler):
    def __call__(self, obj, inp, out):
        if out is None:
            return
        n = self.cfg.ports
        for p in range(n):
            if self.d(("fs", p), out[f"for_switch__{p}"]):
                self.cov.hit("packet", ("VL15 SMP", 15, "mgmt"))
            if self.d(("v15", p), out[f"v15_dropped__{p}"]):
                self.cov.hit("drop", "VL15 dropped (management port)")
            if self.d(("re", p), out[f"relay_err__{p}"]):
                self.cov.hit("drop", "relay error (management port)")
            if self.d(("xd", p), out[f"xmit_discards__{p}"]):
                self.cov.hit("drop", "management send discarded")
            if out.get(f"src15__{p}__valid") and out.get(f"src15__{p}__sop") and inp.get(f"src15__{p}__ready"):
                self.cov.hit("packet", ("VL15 SMP", 15, p))


class _VLArb(_Sampler):
    def __init__(self, cov, cfg):
        super().__init__(cov, cfg)
        self.offer = None            # the offer shown this cycle (made in the last)

    def __call__(self, obj, inp, out):
        shown, self.offer = self.offer, obj.offer
        if inp is None or shown is None:
            return
        valid, vl, behind = shown
        if valid and vl == 15:
            self.cov.hit("vl_arb", "VL15 first")
        if valid and inp["sent"] and behind is not None:
            table, k = behind
            self.cov.hit("vl_arb", (table, vl))
            if table == "low":
                ent = [(inp[f"high__{j}"] & 0xF, inp[f"high__{j}"] >> 4 & 0xFF) for j in range(obj.e)]
                ready = {v for v in range(obj.nvl) if inp["ready"] >> v & 1}
                if any(v in ready and w for v, w in ent):
                    self.cov.hit("vl_arb", "low after the high limit")


class _Requests(_Sampler):
    def __init__(self, cov, cfg):
        super().__init__(cov, cfg)
        self.stalled = set()

    def __call__(self, obj, inp, out):
        if out is None or not self.cfg.lifetimes:
            return
        for o in range(self.cfg.ports):
            if out.get(f"hoq_discard__{o}"):
                self.cov.hit("drop", "HOQLife discard")
            if out.get(f"life_discard__{o}"):
                self.cov.hit("drop", "SwitchLifetime discard")
        now = {k for k, left in obj.stall_left.items() if left}
        if now - self.stalled:
            self.cov.hit("drop", "VL stall")
        self.stalled = now


class _Congestion(_Sampler):
    def __call__(self, obj, inp, out):
        if out is None:
            return
        for o in range(self.cfg.ports):
            if out[f"mark__{o}"]:
                self.cov.hit("cc", ("FECN marked", o))
            for v in range(self.cfg.data_vls):
                if out[f"congested__{o}"] >> v & 1:
                    self.cov.hit("cc", ("congested", v))


class _Mgmt(_Sampler):
    def __init__(self, cov, cfg):
        super().__init__(cov, cfg)
        self.rm = build_regmap(cfg)

    def _reg(self, addr):
        d = self.rm.decode(addr)
        return "unmapped" if d is None else d[0].name

    def __call__(self, obj, inp, out):
        if inp is None or out is None:
            return
        if inp["s_axil_arvalid"] and out["s_axil_arready"]:
            self.cov.hit("axi", (self._reg(inp["s_axil_araddr"]), "read"))
        if inp["s_axil_awvalid"] and out["s_axil_awready"] and inp["s_axil_wvalid"] and out["s_axil_wready"]:
            name = self._reg(inp["s_axil_awaddr"])
            if name == "unmapped":
                self.cov.hit("axi", ("unmapped", "write"))
            else:
                self.cov.hit("axi", (name, "write" if self.rm[name].access == "RW" else "write refused"))


class _Switch:
    """The composed switch: every block's sampler on its own inputs and outputs, and the
    contention cross (the allocator's requests per output × the table its VL arbiter served)."""
    def __init__(self, cov, cfg, model):
        self.cov, self.cfg = cov, cfg
        self.children = {name: _for(type(m).__name__, cov, cfg) for name, m in model.comp.blocks.items()}
        self.shown: dict = {}

    def __call__(self, obj, inp, out):
        comp = obj.comp
        li, lo = comp.last_inputs, comp.last_outputs
        for name, s in self.children.items():
            if s is not None:
                s(comp.blocks[name], li[name], lo[name])
        n = self.cfg.ports
        ai = li.get("alloc")
        for o in range(n):
            vb = comp.blocks.get(f"vlarb{o}")
            shown, self.shown[o] = self.shown.get(o), vb.offer if vb is not None else None
            if ai is None or shown is None or not shown[0] or shown[2] is None:
                continue
            d = sum(1 for i in range(n) if ai[f"req__{i}"] >> o & 1)
            if d:
                self.cov.hit("contention", (d, shown[2][0]))


_SAMPLERS = {
    "IngressModel": _Ingress, "MgmtPortModel": _MgmtPort, "VLArbModel": _VLArb, "RequestBuilderModel": _Requests,
    "CongestionModel": _Congestion, "MgmtModel": _Mgmt, "LinkTxModel": _LinkTx, "LinkRxModel": _LinkRx,
    "PortStateModel": _PortStates, "RxParserModel": _Sampler,
}


class _Both:
    def __init__(self, *ss):
        self.ss = ss

    def __call__(self, obj, inp, out):
        for s in self.ss:
            s(obj, inp, out)


def _for(name: str, cov, cfg):
    if name in ("LinkPortModel", "LinkPairModel"):
        # nested LinkRx/LinkTx/PortState: counters and states from the host side, credit from LinkTx's state
        return _Both(_PortStates(cov, cfg), _LinkTxNested(cov, cfg))
    cls = _SAMPLERS.get(name)
    return cls(cov, cfg) if cls is not None else None


class _LinkTxNested(_LinkTx):
    def __call__(self, obj, inp, out):
        for key, t in (("a", obj.a.tx), ("b", obj.b.tx)) if hasattr(obj, "a") else (("", obj.tx),):
            self._credit(key, t)


def attach(model, cov: Coverage, cfg: SwitchConfig):
    """A sampler `f(inputs, outputs)` for a lock-step run of `model` (None: nothing to sample)."""
    declare(cov, cfg)
    if hasattr(model, "comp") and hasattr(model.comp, "blocks"):
        s = _Switch(cov, cfg, model)
    else:
        s = _for(type(model).__name__, cov, cfg)
    if s is None:
        return None
    return lambda inp, out: s(model, inp, out)
