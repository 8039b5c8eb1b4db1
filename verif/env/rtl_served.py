"""The ibsim-protocol server (fabric/ibsim_server.py) in front of the RTL fabric
(hw/fabric/fabric.py) under cocotb, so that unmodified OpenSM and infiniband-diags manage
switches that are the RTL itself rather than the MAD-level model of them.

`RtlMadFabric` is what the server needs of a fabric (the interface fabric/mad_fabric.py
gives it), with the RTL behind it:
  cas             a host's agents (fw/ca.py: NodeInfo, PortInfo with Init -> Armed ->
                  Active, P_KeyTable, a PMA) on every host of the plan (plan.hosts: the
                  CAs whose links are the fabric top's ports), the GUIDs MadFabric gives
  inject(h, pkt)  the packet leaves host h's port: a tb LinkPeer (verif.env.fabric_tb.SMPort
                  on top port h) sends it into the switch it is cabled to, flit by flit,
                  within the credit the switch advertised
  what arrives    at a host is its agents' (their answers go back out of the same port);
                  what is for the host's software goes to `deliver(h, pkt)` (the server)
  run_until_idle  lets the simulation run `step` cycles: the RTL is never idle in the MAD
                  fabric's sense, so the server bounces a request nobody answered once it
                  has been inside `settle_cycles` cycles (status 110, as ibsim's)
  poll            nothing: the firmware polls its ports in simulated time
                  (verif.env.fabric_tb.start_firmware's `polling`)
  cycles          the fabric's own cycle count (its `now` output)

Everything runs in the simulator's thread: the server's loop is a cocotb task
(`cocotb.start_soon(server.serve())`), its socket reads never wait while a MAD is inside
the fabric, and the tools are processes of their own (fabric.ibsim_host.tool_env).
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.streams import LINK_FLIT
from fabric.mad_fabric import host_agents
from fw.ca import CAAgent

__all__ = ["RtlMadFabric", "host_idle_inputs"]


def host_idle_inputs(plan) -> dict:
    """The fabric top's inputs at rest: every host port's link up and idle, every cable up."""
    d = {"link_up": (1 << max(1, len(plan.cables))) - 1}
    for h in range(len(plan.hosts)):
        d.update({f"rx__{h}__up": 1, f"tx__{h}__ready": 1})
        for k in ("valid", *LINK_FLIT):
            d[f"rx__{h}__{k}"] = 0
    return d


class RtlMadFabric:
    def __init__(self, dut, cfg: SwitchConfig, plan, topo, fws: list, rng, *, step: int = 256,
                 settle_cycles: int = 20_000):
        from verif.env.fabric_tb import SMPort
        self.dut, self.cfg, self.plan, self.topo = dut, cfg, plan, topo
        self.sm_ca = plan.sm_ca
        self.fws = fws
        self.names = list(plan.switches)
        self.index = {n: k for k, n in enumerate(plan.switches)}
        self.step, self.settle_cycles = step, settle_cycles
        self.deliver = None
        self.cas: dict[str, CAAgent] = host_agents(topo, cfg, plan.hosts)     # MadFabric's GUIDs
        self.received = {h: 0 for h in plan.hosts}
        # each host's link carries the VLs of its agent's port (VLCap: VL0 alone), so it sends
        # flow control for VL0 only, as OpenSM configures the switch port (OperationalVLs 1)
        self.ports = {h: SMPort(dut, cfg, rng, port=j, on_packet=self._arrival(h), vls=1).start()
                      for j, h in enumerate(plan.hosts)}

    @property
    def cycles(self) -> int:
        return int(self.dut.now.value)

    def inject(self, node: str, pkt: bytes):
        self.ports[node].send(pkt)

    async def run_until_idle(self):
        from cocotb.triggers import ClockCycles
        await ClockCycles(self.dut.clk, self.step)

    async def poll(self, first: int = 0, count: int | None = None):
        return None

    def _arrival(self, node: str):
        def arrive(pkt: bytes):
            self.received[node] += 1
            replies, up = self.cas[node].receive(pkt)
            for r in replies:
                self.ports[node].send(r)
            if up is not None and self.deliver is not None:
                self.deliver(node, up)
        return arrive

    def stop(self):
        for p in self.ports.values():
            p.stop()
