"""`ib_fabric`: a fabric of our switches, cabled as a net file says (fabric.topology), with a
hardware endpoint (hw/endpoint: traffic generator and checker on a link layer) on every
channel adapter but the plan's hosts: the subnet manager's node and any others named, whose
links are the top's own ports (a testbench is their channel adapter: a host's agents, an
SM, the ibsim-protocol server's clients).

Every switch is one instance of the module `ib_switch` (its Verilog generated once for the
fabric's SwitchConfig, so Verilator compiles it once however many switches there are), every
endpoint one of `ib_endpoint`. A cable is a pair of `delay`-cycle pipelines (the wire and
the PHYs), always ready; `link_up[k]` (cable k of `FabricPlan.cables`, both directions)
is the cable: low, nothing crosses it, and both ends see the link down at once or, built
with `los`, `los_cycles` cycles later (an input: the PHYs' loss-of-signal detection time).

Ports (for cocotb):
  rx__<h>__*, tx__<h>__*   host h (plan.hosts; 0 is the SM's node): flits into / out of
                        the switch port it is cabled to, with no wire delay (the same names
                        as a switch's ports, so a tb LinkPeer drives it)
  sw<k>__s_axil_*, sw<k>__m_axis_mgmt_*, sw<k>__s_axis_mgmt_*   switch k's management
                        (its firmware runs on them)
  ep<j>__gen__*, ep<j>__chk__*, ep<j>__auto_active   endpoint j's configuration (its LID,
                        destinations, ...: set by the SM's driver once LIDs are assigned)
  ep<j>__sent_pkts, ep<j>__counters__*, ep<j>__state, ep<j>__crx__*   its counters
  link_up               In, a bit per cable
  now                   Out, the shared time base (cycles since reset)
  los_cycles            In (with `los`), 12 bits: cycles from a cable's cut to its ends seeing
                        the link down (0: at once)
  mon_sw<k>_p<p>        Out (with `monitor`): bit 16, a data packet starts leaving switch k's
                        IBA port p this cycle; bits 15:0, its DLID (benchmarks: which port a
                        flow leaves on, cycle by cycle, with no simulator internals); 0 in
                        a cycle with no such start
  mon_ep<j>             Out (with `monitor`), endpoint j's link, wire side, data packets only
                        (not FC packets): bit 34, a packet's first flit leaves the endpoint;
                        bit 33, a packet's first flit arrives at it; bit 32, a packet's last
                        flit arrives; bits 31:16, the DLID of the packet leaving (with bit 34);
                        bits 15:0, the SLID of the packet arriving (with bit 33); 0 in a cycle
                        with none of these (netsim/rtl.py times every packet from them)
"""
from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, ClockSignal, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from contracts.config import SwitchConfig
from contracts.streams import LINK_FLIT
from fabric.topology import Topology
from hw.common.stream import link_rx_signature, link_tx_signature
from hw.endpoint.endpoint import Endpoint
from hw.top.switch import IBSwitch

__all__ = ["FabricTop", "FabricPlan", "module_ports"]

_FL = ("valid", *LINK_FLIT)


def module_ports(component: wiring.Component) -> list[tuple[str, bool, int]]:
    """(Verilog port name, is input, width) of a component's top-level ports. A component
    made only to be asked is not elaborated: Amaranth is told so (no UnusedElaboratable)."""
    component._MustUse__silence = True
    out = []
    for path, flow, value in component.signature.flatten(component):
        name = "__".join(str(p) for p in path)
        out.append((name, flow.flow == wiring.Flow.In, len(value)))
    return out


@dataclass
class FabricPlan:
    """Who is where: switches (index -> topology name), endpoints (index -> CA name), the SM
    node, the hosts (the CAs whose links are the top's ports: the SM node first), and the
    cables (switch or endpoint ends, ports) in a fixed order."""
    switches: list[str]
    endpoints: list[str]
    sm_ca: str
    sm_attach: tuple[int, int]            # (switch index, IBA port) the SM node is cabled to
    cables: list[tuple[tuple[str, int, int], tuple[str, int, int]]]   # ((kind, index, port), ...)
    hosts: tuple[str, ...] = ()           # top port h <-> hosts[h] (default: the SM node alone)
    host_attach: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        if not self.hosts:
            self.hosts, self.host_attach = (self.sm_ca,), (self.sm_attach,)

    @classmethod
    def from_topology(cls, topo: Topology, sm_ca: str | None = None, hosts=None) -> FabricPlan:
        """hosts: CA names cabled to the top's ports besides the SM's node (every CA: "all");
        the others get hardware endpoints."""
        sws = [n.name for n in topo.switches()]
        cas = [n.name for n in topo.hcas()]
        if not cas:
            raise ValueError("FabricPlan: the fabric has no channel adapter for the SM's node")
        sm_ca = sm_ca or cas[0]
        if sm_ca not in cas:
            raise ValueError(f"FabricPlan: no channel adapter {sm_ca!r}")
        more = [c for c in cas if c != sm_ca] if hosts == "all" else list(hosts or ())
        for h in more:
            if h not in cas:
                raise ValueError(f"FabricPlan: host {h!r} is no channel adapter of the fabric")
        host_names = [sm_ca] + [h for h in dict.fromkeys(more) if h != sm_ca]
        eps = [c for c in cas if c not in host_names]
        si = {n: k for k, n in enumerate(sws)}
        ei = {n: k for k, n in enumerate(eps)}
        for c in cas:
            n = topo.nodes[c]
            if len(n.ports) != 1 or 1 not in n.ports:
                raise ValueError(f"FabricPlan: CA {c} must be cabled on its port 1 (and only there)")
        attach = []
        for h in host_names:
            (hsw, hport), = topo.nodes[h].ports.values()
            if hsw not in si:
                raise ValueError(f"FabricPlan: host {h} is not cabled to a switch")
            attach.append((si[hsw], hport))
        cables = []
        for a, pa, b, pb in topo.links():
            if a in host_names or b in host_names:
                continue
            end = []
            for x, px in ((a, pa), (b, pb)):
                end.append(("sw", si[x], px) if x in si else ("ep", ei[x], px))
            if end[0][0] == "ep" and end[1][0] == "ep":
                raise ValueError(f"FabricPlan: {a} and {b} are two endpoints cabled together")
            cables.append((end[0], end[1]))
        return cls(sws, eps, sm_ca, attach[0], cables, tuple(host_names), tuple(attach))

    def endpoint_at(self) -> dict[tuple[int, int], int]:
        """(switch index, IBA port) -> the endpoint cabled there."""
        at = {}
        for a, b in self.cables:
            for x, y in ((a, b), (b, a)):
                if x[0] == "sw" and y[0] == "ep":
                    at[(x[1], x[2])] = y[1]
        return at


class FabricTop(wiring.Component):
    def __init__(self, cfg: SwitchConfig, plan: FabricPlan, delay: int = 2, *, los: bool = False,
                 monitor: bool = False):
        if not 0 <= delay <= 64:
            raise ValueError(f"FabricTop: delay must be 0..64 cycles, got {delay}")
        self.cfg, self.plan, self.delay, self.los, self.monitor = cfg, plan, delay, los, monitor
        self._sw_ports = module_ports(IBSwitch(cfg))
        self._ep_ports = module_ports(Endpoint(cfg))
        nh = len(plan.hosts)
        members = {"rx": In(link_rx_signature(cfg)).array(nh), "tx": Out(link_tx_signature(cfg)).array(nh),
                   "link_up": In(max(1, len(plan.cables))), "now": Out(32)}
        for k in range(len(plan.switches)):
            for name, is_in, width in self._sw_ports:
                if name.startswith(("s_axil_", "m_axis_mgmt_", "s_axis_mgmt_")):
                    members[f"sw{k}__{name}"] = In(width) if is_in else Out(width)
        for j in range(len(plan.endpoints)):
            for name, _is_in, width in self._ep_ports:
                if name.startswith(("gen__", "chk__", "auto_active", "mgmt__")):
                    members[f"ep{j}__{name}"] = In(width)
                elif name.startswith(("sent_pkts", "gen_done", "state", "counters__", "crx__", "ctx__")):
                    members[f"ep{j}__{name}"] = Out(width)
        if los:
            members["los_cycles"] = In(12)
        if monitor:
            for k in range(len(plan.switches)):
                for p in range(1, cfg.ports + 1):
                    members[f"mon_sw{k}_p{p}"] = Out(17)
            for j in range(len(plan.endpoints)):
                members[f"mon_ep{j}"] = Out(35)
        super().__init__(members)

    def _wire(self, m, src: dict, dst: dict, up, name: str):
        """dst <- src through `delay` cycles; nothing arrives while the link is down."""
        cur = {k: src[k] for k in _FL}
        for d in range(self.delay):
            nxt = {k: Signal(len(cur[k]), name=f"{name}_d{d}_{k}") for k in _FL}
            m.d.sync += [nxt[k].eq(cur[k]) for k in _FL]
            cur = nxt
        m.d.comb += [dst[k].eq(cur[k] & up if k == "valid" else cur[k]) for k in _FL]

    def elaborate(self, platform):
        m = Module()
        cfg, plan = self.cfg, self.plan
        n = cfg.ports
        m.d.sync += self.now.eq(self.now + 1)
        # every instance port as a signal: sw[k][name], ep[j][name]
        sw = [{nm: Signal(w, name=f"sw{k}_{nm}") for nm, _i, w in self._sw_ports} for k in range(len(plan.switches))]
        ep = [{nm: Signal(w, name=f"ep{j}_{nm}") for nm, _i, w in self._ep_ports} for j in range(len(plan.endpoints))]
        for k, sigs in enumerate(sw):
            kw = {("i_" if i else "o_") + nm: sigs[nm] for nm, i, _w in self._sw_ports}
            m.submodules[f"sw{k}"] = Instance("ib_switch", i_clk=ClockSignal(), i_rst=ResetSignal(), **kw)
            for nm, is_in, _w in self._sw_ports:
                if nm.startswith(("s_axil_", "m_axis_mgmt_", "s_axis_mgmt_")):
                    top = getattr(self, f"sw{k}__{nm}")
                    m.d.comb += sigs[nm].eq(top) if is_in else top.eq(sigs[nm])
        for j, sigs in enumerate(ep):
            kw = {("i_" if i else "o_") + nm: sigs[nm] for nm, i, _w in self._ep_ports}
            m.submodules[f"ep{j}"] = Instance("ib_endpoint", i_clk=ClockSignal(), i_rst=ResetSignal(), **kw)
            m.d.comb += sigs["now"].eq(self.now)
            for nm, is_in, _w in self._ep_ports:
                if f"ep{j}__{nm}" in self.signature.members:
                    top = getattr(self, f"ep{j}__{nm}")
                    m.d.comb += sigs[nm].eq(top) if is_in else top.eq(sigs[nm])
            m.d.comb += sigs["tx__ready"].eq(1)

        def side(kind, idx, port, direction):
            """The flit signals of one end: direction 'out' (what it sends) or 'in'."""
            if kind == "sw":
                pre = f"tx__{port - 1}__" if direction == "out" else f"rx__{port - 1}__"
                return {k: sw[idx][pre + k] for k in _FL}, sw[idx], f"rx__{port - 1}__up", f"tx__{port - 1}__ready"
            pre = "tx__" if direction == "out" else "rx__"
            return {k: ep[idx][pre + k] for k in _FL}, ep[idx], "rx__up", "tx__ready"

        used = {k: set() for k in range(len(sw))}
        for c, (a, b) in enumerate(plan.cables):
            up = self.link_up[c]
            seen = up                                # what the PHYs report
            if self.los:                             # down for los_cycles cycles before they see it
                down = Signal(12, name=f"c{c}_down")
                with m.If(up):
                    m.d.sync += down.eq(0)
                with m.Elif(down != 0xFFF):
                    m.d.sync += down.eq(down + 1)
                seen = up | (down < self.los_cycles)
            for x, y in ((a, b), (b, a)):
                src, xs, _upx, readyx = side(*x, "out")
                dst, ys, upy, _ry = side(*y, "in")
                self._wire(m, src, dst, up, f"c{c}_{x[0]}{x[1]}p{x[2]}")
                m.d.comb += ys[upy].eq(seen)
                if x[0] == "sw":
                    m.d.comb += xs[readyx].eq(1)
            for x in (a, b):
                if x[0] == "sw":
                    used[x[1]].add(x[2])
        # the hosts (the SM's node first): the top's own ports, cabled straight to their switch ports
        for h, (k, port) in enumerate(plan.host_attach):
            used[k].add(port)
            for kk in _FL:
                m.d.comb += [sw[k][f"rx__{port - 1}__{kk}"].eq(getattr(self.rx[h], kk)),
                             getattr(self.tx[h], kk).eq(sw[k][f"tx__{port - 1}__{kk}"])]
            m.d.comb += [sw[k][f"rx__{port - 1}__up"].eq(self.rx[h].up),
                         sw[k][f"tx__{port - 1}__ready"].eq(self.tx[h].ready)]
        if self.monitor:
            w = cfg.data_width
            for k in range(len(sw)):
                for p in range(1, n + 1):
                    t = {f: sw[k][f"tx__{p - 1}__{f}"] for f in ("valid", "sop", "link", "data")}
                    start = t["valid"] & t["sop"] & ~t["link"]
                    m.d.comb += getattr(self, f"mon_sw{k}_p{p}").eq(
                        Mux(start, Cat(t["data"][w - 32:w - 16], start), 0))
            for j in range(len(ep)):                 # LRH: DLID in bytes 2-3, SLID in bytes 6-7
                t = {f: ep[j][f"tx__{f}"] for f in ("valid", "sop", "link", "data")}
                r = {f: ep[j][f"rx__{f}"] for f in ("valid", "sop", "eop", "link", "data")}
                t_sop = t["valid"] & t["sop"] & ~t["link"]
                r_sop = r["valid"] & r["sop"] & ~r["link"]
                r_eop = r["valid"] & r["eop"] & ~r["link"]
                m.d.comb += getattr(self, f"mon_ep{j}").eq(Cat(
                    Mux(r_sop, r["data"][w - 64:w - 48], 0), Mux(t_sop, t["data"][w - 32:w - 16], 0),
                    r_eop, r_sop, t_sop))
        # ports cabled to nothing: the link is down
        for k in range(len(sw)):
            for p in range(1, n + 1):
                if p not in used[k]:
                    m.d.comb += [sw[k][f"rx__{p - 1}__up"].eq(0), sw[k][f"tx__{p - 1}__ready"].eq(1)]
        return m
