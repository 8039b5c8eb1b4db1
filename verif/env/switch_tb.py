"""The whole-switch cocotb testbench, in the shape of verilog-ethernet's and cocotbext-axi's:
one object owning the clock and reset, a link peer per port (verif.ib.link_peer, with
idle and backpressure generators), a cocotbext-axi AxiLiteMaster for the registers (random
pauses on all five channels, so every handshake of the slave is exercised), cocotbext-axi
AxiStreamSink/Source for the management processor's packets (or the switch's firmware,
fw/, on them), the scoreboard (verif.env.switch_scoreboard) and the model in observe-mode
lock-step: every input the RTL sees, whoever drives it, reaches SwitchModel in the same
cycle, and every output is compared.

    tb = SwitchTB(dut, idle="bursty", backpressure="random")
    await tb.start()
    tb.env.program(routes, sl2vl)           # queued register writes, performed by the master
    await tb.programmed()
    tb.env.send(0, dlid, sl, 64)
    await tb.drain()
    await tb.read_counters()
    await tb.finish()                        # re-raises a lock-step divergence
    tb.env.check(); tb.env.check_counters()

The random number generator is seeded from the test's seed (TEST_SEED, verif.tb).
"""
from __future__ import annotations

import logging
import random

from contracts.counters import PORT_COUNTERS_LIST, counter_index
from contracts.streams import LINK_FLIT
from models.switch import SwitchModel, idle_inputs, switch_ports
from verif.env.switch_env import SwitchEnv
from verif.tb import TB, tb_config, tb_seed

__all__ = ["SwitchTB", "VERILATOR_ARGS"]

# the switch's Verilator build: the registers SwitchTB writes by a backdoor made writable
# (ib_switch_backdoor.vlt); every cocotb run of the switch top passes these, so that they
# share one build
VERILATOR_ARGS = [str(__import__("pathlib").Path(__file__).with_name("ib_switch_backdoor.vlt"))]


class SwitchTB:
    def __init__(self, dut, *, seed: int | None = None, idle: str | None = None, backpressure: str | None = None,
                 p: float = 0.1, model: bool = True, firmware: bool = False, per_vl_queues: bool = False,
                 axi_pause: float = 0.3, mgmt_pause: float = 0.2, tb: TB | None = None):
        """idle / backpressure: None, 'random' or 'bursty' (p: their share of cycles);
        firmware: the switch's SMA/PMA (fw/) answer on the management port, else packets for
        the switch are collected in env.mgmt_rx and env.mgmt_send queues the processor's."""
        self.dut = dut
        self.cfg = tb_config()
        self.seed = tb_seed() if seed is None else seed
        self.rng = random.Random(self.seed)
        self.tb = tb or TB(dut, idle_inputs(self.cfg))
        self._env_args = (per_vl_queues, idle, backpressure, p)
        self.env = self._new_env()
        self.model, self.firmware = model, firmware
        self.axi_pause, self.mgmt_pause = axi_pause, mgmt_pause
        self.obs = None
        self.watchers = []                   # f(inputs, outputs) after each cycle's observe
        self.fw = self.fw_log = None
        self._stop = False

    def _new_env(self) -> SwitchEnv:
        per_vl_queues, idle, backpressure, p = self._env_args
        env = SwitchEnv(self.cfg, self.rng, per_vl_queues=per_vl_queues)
        env.set_idle_generator(idle, p)
        env.set_backpressure_generator(backpressure, p)
        return env

    @property
    def vcd(self):
        return self.tb.vcd

    async def start(self):
        import cocotb
        from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamSink, AxiStreamSource

        from verif.drivers import axil_pauses, stream_pauses
        from verif.env.fw_harness import AxilRegs
        dut, cfg = self.dut, self.cfg
        await self.tb.reset()
        self.axi = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        axil_pauses(self.axi, self.rng, p_pause=self.axi_pause)
        self.regs = AxilRegs(self.axi, cfg)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_mgmt"), dut.clk, dut.rst)
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_mgmt"), dut.clk, dut.rst)
        stream_pauses(self.sink, self.rng, self.mgmt_pause)
        for drv in (self.axi.write_if, self.axi.read_if, self.sink, self.src):   # they log every frame at INFO
            drv.log.setLevel(logging.WARNING)
        self._run_env()
        if self.firmware:
            from fw.agent import SwitchFirmware
            from fw.sma import NodeIdentity
            from verif.env.fw_harness import run_firmware
            self.fw_log = []
            self.fw = SwitchFirmware(self.regs, NodeIdentity(description="switch-under-test"))
            cocotb.start_soon(run_firmware(self.fw, self.sink, self.src, self.fw_log))
        else:
            cocotb.start_soon(self._mgmt())
        return self

    def _run_env(self):
        """The model in lock-step from this cycle (the first out of reset), the link peers
        and the register accesses of self.env."""
        import cocotb

        from verif.lockstep import LockstepObserver
        if self.model:
            ins, outs, qual = switch_ports(self.cfg)
            self.obs = LockstepObserver(self.dut, SwitchModel(self.cfg), ins, outs, qual, vcd=self.vcd,
                                        start_now=True).start()
        cocotb.start_soon(self._links())
        cocotb.start_soon(self._registers())

    async def restart(self):
        """A reset in the middle of the run: the lock-step so far is closed (its divergence
        re-raised), rst is asserted for 3 cycles with every input idle, and the switch must
        then behave exactly as one out of power-up: a fresh model in lock-step from the first
        cycle, fresh link peers (the links retrain with the switch), a fresh environment
        (tables empty again); the AXI master and streams carry on (they follow rst). Returns
        the environment of the run before the reset. (Not with the firmware: it keeps state.)"""
        assert not self.firmware, "SwitchTB.restart: the firmware's state would outlive the reset"
        await self.finish()
        await self.cycles(2)                 # the link and register loops see the stop
        self._stop = False
        old, self.env = self.env, self._new_env()
        await self.tb.reset()
        self._run_env()
        if not self.firmware:
            import cocotb
            cocotb.start_soon(self._mgmt_send())
        return old

    async def _links(self):
        """The link peers, every cycle: drive rx__* and tx__*__ready, then observe tx__*."""
        from cocotb.triggers import FallingEdge, ReadOnly
        dut, env, n = self.dut, self.env, self.cfg.ports
        tx = [f"tx__{p}__{k}" for p in range(n) for k in ("valid", *LINK_FLIT)]
        h_out = {k: getattr(dut, k) for k in tx}
        h_in = {}
        first = True
        while not self._stop:
            if not first:
                await FallingEdge(dut.clk)
            first = False
            inp = env.link_inputs()
            for k, v in inp.items():
                h = h_in.get(k)
                if h is None:
                    h = h_in[k] = getattr(dut, k)
                h.value = v
            await ReadOnly()
            out = {k: int(h.value) for k, h in h_out.items()}
            env.observe(inp, out)
            for f in self.watchers:
                f(inp, out)

    async def _registers(self):
        """The register accesses the environment queued, performed by the AXI4-Lite master."""
        from cocotb.triggers import FallingEdge
        env = self.env
        while not self._stop:
            if not env.axi:
                await FallingEdge(self.dut.clk)
                continue
            addr, value = env.axi.popleft()
            env.axi_inflight += 1
            if value is None:
                env.reads[addr] = await self.axi.read_dword(addr)
            else:
                await self.axi.write_dword(addr, value)
            env.axi_inflight -= 1

    async def _mgmt(self):
        """The management processor when no firmware runs: collect the packets for the
        switch, send what env.mgmt_send queued."""
        import cocotb

        async def rx():
            while True:
                f = await self.sink.recv()
                users = f.tuser if isinstance(f.tuser, list) else [f.tuser]
                self.env.mgmt_rx.append((bytes(f.tdata), users[0] & 0xFF, bool(users[-1] >> 8)))
        cocotb.start_soon(rx())
        await self._mgmt_send()

    async def _mgmt_send(self):
        from cocotb.triggers import FallingEdge
        from cocotbext.axi import AxiStreamFrame
        while not self._stop:
            if self.env.mgmt_packets:
                pkt, dest = self.env.mgmt_packets.popleft()
                await self.src.send(AxiStreamFrame(pkt, tdest=dest))
            else:
                await FallingEdge(self.dut.clk)

    # ---------------------------------------------------------------- waiting
    async def cycles(self, n: int = 1):
        from cocotb.triggers import FallingEdge
        for _ in range(n):
            await FallingEdge(self.dut.clk)

    async def until(self, cond, timeout: int = 20000, what: str = "condition"):
        for _ in range(timeout):
            if cond():
                return
            await self.cycles(1)
        raise AssertionError(f"SwitchTB: {what} not reached in {timeout} cycles")

    async def programmed(self, timeout: int = 20000):
        """Until every queued register access is done."""
        await self.until(lambda: not self.env.registers_busy, timeout, "register programming")

    async def drain(self, quiet: int = 100, timeout: int = 40000):
        """Until every promised copy left, the peers sent everything, and no data flit left
        any port for `quiet` cycles (bad packets may be dropped, so silence ends it)."""
        env = self.env
        await self.until(lambda: env.outstanding() <= 0 and not env.peers_busy and env.idle_for() > quiet,
                         timeout, "drain")

    async def preset_mgmt_port_counters(self, value: int):
        """A backdoor write of every counter of the management port (MGMT_PORT_COUNTERS, every
        port) to `value`, in the RTL (its registers, written between two clock edges) and in
        the model alike, so that the lock-step goes on: a 32-bit counter's carry into bit 31
        and its saturation are 2^31 and 2^32 events away, out of any simulation's reach.
        Call right after a falling edge (`await tb.cycles(1)`)."""
        from contracts.counters import MGMT_PORT_COUNTERS
        for c in MGMT_PORT_COUNTERS:
            for i in range(self.cfg.ports):
                self._internal("mgmt_port", f"{c}__{i}").value = value
        if self.obs is not None:
            model = self.obs.core.model
            blk = model.blocks["mgmt_port"]
            for c in MGMT_PORT_COUNTERS:
                blk.c[c] = [value] * self.cfg.ports
            model.comp.changed("mgmt_port")

    def _internal(self, block: str, name: str):
        """The handle of signal `name` of the switch's block `block`: in the hierarchy the
        project's Verilog keeps, or by its flat name in a flattened netlist (a mutant's,
        tb/mutate.py; a gate-level one)."""
        try:
            return getattr(getattr(self.dut, block), name)
        except AttributeError:
            return self.dut[f"{block}.{name}"]

    async def read_counters(self, names=PORT_COUNTERS_LIST):
        for p in range(self.cfg.ports):
            for c in names:
                env = self.env
                env.reads[env.counter_addr(p, c)] = await self.regs.read("COUNTERS", counter_index(p, c))

    async def finish(self):
        """Stop the link peers and the lock-step; re-raise its first divergence."""
        await self.cycles(2)
        self._stop = True
        if self.obs is not None:
            return await self.obs.stop()
        return 0
