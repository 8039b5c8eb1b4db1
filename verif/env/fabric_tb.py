"""The RTL fabric (hw/fabric/fabric.py) under cocotb: Verilog for it, and drivers that cost
no Python while nothing happens, so that Verilator runs the data traffic alone.

  fabric_sources(cfg, plan, dir)   ib_fabric.v, ib_switch.v, ib_endpoint.v
  axil_master(dut, "sw3__s_axil") cocotbext-axi's AxiLiteMaster on switch 3's AXI4-Lite port
                                   (any bus: "s_axil" for a top's own), made once per bus
  MgmtStream(dut, "sw3", W)        switch 3's management streams: packets for the switch
                                   (tready while the firmware waits for one; woken by tvalid
                                   rising) and packets to send (tdest)
  start_firmware(dut, cfg, plan)   the switch firmware (fw/) on every switch of the fabric
  SMPort(dut, cfg)                 the SM's node: a tb LinkPeer on the top's port 0, run
                                   only while the SM talks (stop() before traffic)
"""
from __future__ import annotations

from pathlib import Path

from contracts.config import SwitchConfig
from contracts.streams import AXIS_IN, AXIS_OUT, LINK_FLIT
from verif.env.fw_harness import AxilRegs

__all__ = ["fabric_sources", "verilator_fabric_args", "FABRIC_CXX_OPT", "axil_master", "MgmtStream", "start_firmware",
           "SMPort"]


def fabric_sources(cfg: SwitchConfig, plan, out: Path, delay: int = 2) -> list[Path]:
    """The fabric's Verilog (ib_endpoint only when the plan has hardware endpoints)."""
    from hw.endpoint.endpoint import Endpoint
    from hw.fabric.fabric import FabricTop
    from hw.top.switch import IBSwitch
    from verif.runner import generate_verilog
    out.mkdir(parents=True, exist_ok=True)
    srcs = [generate_verilog(FabricTop(cfg, plan, delay), "ib_fabric", out / "ib_fabric.v"),
            generate_verilog(IBSwitch(cfg), "ib_switch", out / "ib_switch.v")]
    if plan.endpoints:
        srcs.append(generate_verilog(Endpoint(cfg), "ib_endpoint", out / "ib_endpoint.v"))
    return srcs


# Verilator works on the flattened instance tree: twelve switches cost twelve times one
# (over 9 minutes to convert a fat tree of 12). Hierarchical verilation converts ib_switch
# and ib_endpoint once each and instantiates the compiled blocks (about 100 s in all).
HIER_VLT = """`verilator_config
hier_block -module "ib_switch"
hier_block -module "ib_endpoint"
"""


# the fabric's C++ at -O2: -O0 (the regression's level for one switch) runs the fabric at
# 44 cycles/s, -O2 at 317-429 (measured idle, 12 switches + 31 endpoints), for about 5
# minutes more of compiling on 2 cores
FABRIC_CXX_OPT = "-O2"


def verilator_fabric_args(out: Path, endpoints: bool = True) -> list[str]:
    """Verilator options for the fabric: hierarchical blocks for the switch and (if the
    fabric has any) the endpoint."""
    vlt = out / "hier.vlt"
    vlt.write_text(HIER_VLT if endpoints else HIER_VLT.replace('hier_block -module "ib_endpoint"\n', ""))
    return ["--hierarchical", str(vlt)]


def axil_master(dut, bus: str):
    """cocotbext-axi's AxiLiteMaster on the ports `<bus>_*` of a cocotb dut (bus "sw3__s_axil"
    for switch 3 of a fabric, "s_axil" for a top's own). Its channels wait on events while
    idle: no Python runs per cycle while no access is under way. Its tasks belong to the
    cocotb test that makes it (cocotb ends them with the test): make one per test and bus."""
    from cocotbext.axi import AxiLiteBus, AxiLiteMaster
    m = AxiLiteMaster(AxiLiteBus.from_prefix(dut, bus), dut.clk, dut.rst)
    for side in (m.write_if, m.read_if):         # their banners and per-access lines: quiet
        side.log.setLevel("WARNING")
    return m


class MgmtStream:
    """A switch's m_axis_mgmt (packets for it: tuser = {bad, IBA port}) and s_axis_mgmt."""

    def __init__(self, dut, prefix: str, width: int):
        import cocotb
        self.dut, self.nb = dut, width // 8
        self.m = {k: getattr(dut, f"{prefix}__m_axis_mgmt_{k}") for k in (*AXIS_OUT, "tready")}
        self.s = {k: getattr(dut, f"{prefix}__s_axis_mgmt_{k}") for k in (*AXIS_IN, "tready")}
        self.m["tready"].value = 0
        for k in AXIS_IN:
            self.s[k].value = 0
        self.lock = cocotb.triggers.Lock()

    async def recv(self) -> tuple[bytes, int, bool]:
        """The next packet; tready is high only while this runs, so packets the firmware
        is not ready for wait in the switch's management queue (and overflow it, counted
        in VL15Dropped, as on real hardware)."""
        from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
        m = self.m
        buf = bytearray()
        if not int(m["tvalid"].value):
            await RisingEdge(m["tvalid"])
        await FallingEdge(self.dut.clk)
        m["tready"].value = 1
        while True:
            await ReadOnly()
            if int(m["tvalid"].value):                     # taken at the next rising edge
                keep = int(m["tkeep"].value)
                buf += int(m["tdata"].value).to_bytes(self.nb, "little")[:bin(keep).count("1")]
                if int(m["tlast"].value):
                    u = int(m["tuser"].value)
                    await FallingEdge(self.dut.clk)
                    m["tready"].value = 0
                    return bytes(buf), u & 0xFF, bool(u >> 8)
            await FallingEdge(self.dut.clk)

    async def send(self, pkt: bytes, tdest: int):
        from cocotb.triggers import FallingEdge, ReadOnly
        s = self.s
        async with self.lock:
            for i in range(0, len(pkt), self.nb):
                chunk = pkt[i:i + self.nb]
                await FallingEdge(self.dut.clk)
                s["tdata"].value = int.from_bytes(chunk, "little")
                s["tkeep"].value = (1 << len(chunk)) - 1
                s["tlast"].value = int(i + self.nb >= len(pkt))
                s["tdest"].value = tdest
                s["tvalid"].value = 1
                while True:
                    await ReadOnly()
                    if int(s["tready"].value):
                        break
                    await FallingEdge(self.dut.clk)
            await FallingEdge(self.dut.clk)
            s["tvalid"].value = 0


async def _serve(fw, stream: MgmtStream, log: list | None):
    while True:
        pkt, port, bad = await stream.recv()
        if log is not None:
            log.append(("rx", pkt, port, bad))
        if bad:
            continue
        for out, dest in await fw.receive(pkt, port):
            if log is not None:
                log.append(("tx", out, dest, False))
            await stream.send(out, dest or 0)


async def _watch(dut, fw, stream: MgmtStream, polling: dict, log: list | None):
    """The firmware's periodic look at its ports (traps): every polling["every"] cycles,
    none while that is 0."""
    from cocotb.triggers import ClockCycles
    while True:
        await ClockCycles(dut.clk, polling["every"] or 1024)
        if not polling["every"]:
            continue
        for out, dest in await fw.poll():
            if log is not None:
                log.append(("tx", out, dest, False))
            await stream.send(out, dest or 0)


def start_firmware(dut, cfg: SwitchConfig, plan, log: list | None = None, polling: dict | None = None) -> list:
    """The firmware on every switch (NodeInfo GUIDs 0x0002c903000000<k+1>, descriptions the
    switches' names). `polling` ({"every": cycles}, changed by the caller at any time; 0 =
    off): how often each firmware looks at its ports for traps (AXI reads: off during
    bring-up, where the SM sets every state itself). Returns the SwitchFirmware objects."""
    import cocotb

    from fw.agent import SwitchFirmware
    from fw.sma import NodeIdentity
    fws = []
    for k, name in enumerate(plan.switches):
        regs = AxilRegs(axil_master(dut, f"sw{k}__s_axil"), cfg)
        fw = SwitchFirmware(regs, NodeIdentity(node_guid=0x0002C90300000000 + k + 1, description=name))
        stream = MgmtStream(dut, f"sw{k}", cfg.data_width)
        cocotb.start_soon(_serve(fw, stream, log))
        if polling is not None:
            cocotb.start_soon(_watch(dut, fw, stream, polling, log))
        fws.append(fw)
    return fws


class SMPort:
    """The SM's node on the fabric's port 0 (or host `port` of the plan's hosts): a LinkPeer
    (verif.ib.link_peer) driven cycle by cycle while it has something to send or receive,
    asleep otherwise (woken by the switch's tx valid rising, by `send`, or every 64 cycles
    to send its FC packets), so the fabric runs at Verilator's speed between MADs.
    `send(pkt)`, `await recv(match, timeout)`, `cycles` (the fabric's own cycle count);
    `stop()` before traffic. With `on_packet`, every packet received is handed to it
    (on_packet(pkt), in the simulator's thread) instead of being kept for `recv`; `vls`:
    the node's data VLs (LinkPeer)."""

    def __init__(self, dut, cfg: SwitchConfig, rng, port: int = 0, on_packet=None, vls: int | None = None):
        import cocotb

        from verif.ib.link_peer import LinkPeer
        self.dut, self.cfg, self.port, self.on_packet = dut, cfg, port, on_packet
        self.peer = LinkPeer(cfg, port, rng, vls=vls)
        self._run = False
        self._kick = cocotb.triggers.Event()
        self._got = cocotb.triggers.Event()

    @property
    def cycles(self) -> int:
        return int(self.dut.now.value)

    def start(self):
        import cocotb
        self._run = True
        cocotb.start_soon(self._loop())
        return self

    def stop(self):
        self._run = False
        self._kick.set()

    async def _loop(self):
        from cocotb.triggers import ClockCycles, FallingEdge, First, ReadOnly, RisingEdge
        d = self.dut
        j = self.port
        keys = [f"tx__{j}__{k}" for k in ("valid", *LINK_FLIT)]
        hs = {k: getattr(d, k) for k in keys}
        tx_valid = hs[f"tx__{j}__valid"]
        hin = {}
        pr = self.peer
        driving = False                       # the last cycle driven put a flit on rx
        while self._run:
            # asleep, the inputs keep their last values: only once they are idle (a flit
            # left on them would be taken again every cycle: the switch counts the repeats
            # of a packet's last flit as framing errors)
            if not pr.busy and not pr.rxq and not pr._cur and not int(tx_valid.value) and not driving:
                self._kick.clear()
                t = await First(RisingEdge(tx_valid), self._kick.wait(), ClockCycles(d.clk, 64))
                if not self._run:
                    break
                if isinstance(t, ClockCycles):
                    pr.fc_due = True
            await FallingEdge(d.clk)
            inp = pr.inputs()
            driving = bool(inp.get(f"rx__{j}__valid"))
            for k, v in inp.items():
                h = hin.get(k)
                if h is None:
                    h = hin[k] = getattr(d, k)
                h.value = v
            await ReadOnly()
            n = len(pr.got)
            pr.observe(inp, {k: int(h.value) for k, h in hs.items()})
            if len(pr.got) != n:
                if self.on_packet is not None:
                    got, pr.got[:] = list(pr.got), []
                    for b in got:
                        self.on_packet(b)
                else:
                    self._got.set()
        await FallingEdge(d.clk)
        for k in ("valid", "sop", "eop", "link", "bad"):
            getattr(d, f"rx__{j}__{k}").value = 0

    def send(self, pkt: bytes):
        from models.packet import to_flits
        self.peer.queue(pkt, to_flits(pkt, self.cfg.data_width))
        self._kick.set()

    async def recv(self, match=lambda b: True, timeout: int = 3000) -> bytes | None:
        from cocotb.triggers import ClockCycles, First
        end = self.cycles + timeout
        while True:
            for k, b in enumerate(self.peer.got):
                if match(b):
                    return self.peer.got.pop(k)
            left = end - self.cycles
            if left <= 0:
                return None
            self._got.clear()
            await First(self._got.wait(), ClockCycles(self.dut.clk, left))
