"""One procedure, two ways to run it: a harness is the handful of operations a test of a
self-contained top needs (drive inputs, read ports, let cycles pass, wait for a condition,
AXI4-Lite accesses), written once as `async` methods for

  CocotbHarness(dut)   a cocotb test on Icarus or Verilator (writes at falling edges; cycles
                       pass under one Timer, no Python per cycle)
  NativeHarness(sim)   the Verilator binary with our C++ main (verif/native), over its pipe

so that a procedure such as the soak's (scenarios/soak.py) is the same code in `make sim`
on both simulators and in `make soak` natively. Both start and end every operation just
after a falling edge of `clk`: inputs set there are sampled at the next rising edge, and
`get` reads what the logic shows in that cycle.
"""
from __future__ import annotations

__all__ = ["CocotbHarness", "NativeHarness"]

_OPS = {"==": int.__eq__, "!=": int.__ne__, ">=": int.__ge__, "<=": int.__le__, ">": int.__gt__, "<": int.__lt__}


class CocotbHarness:
    def __init__(self, dut, period_ns: int = 10):
        self.dut, self.period_ns = dut, period_ns
        self._h = {}
        self._axil = {}                          # bus -> its AXI4-Lite master (made for this test)

    def _master(self, bus: str):
        from verif.env.fabric_tb import axil_master
        if bus not in self._axil:
            self._axil[bus] = axil_master(self.dut, bus)
        return self._axil[bus]

    def _sig(self, name):
        h = self._h.get(name)
        if h is None:
            h = self._h[name] = getattr(self.dut, name)
        return h

    async def set(self, values: dict | None = None, **kw):
        for k, v in {**(values or {}), **kw}.items():
            self._sig(k).value = int(v)

    async def get(self, *names: str):
        vals = [int(self._sig(n).value) for n in names]
        return vals[0] if len(names) == 1 else vals

    async def get_dict(self, names: list[str]) -> dict[str, int]:
        return {n: int(self._sig(n).value) for n in names}

    async def step(self, n: int):
        """n clock cycles, with Python asleep for all of them."""
        from cocotb.triggers import FallingEdge, Timer
        if n <= 0:
            return
        if n > 1:
            await Timer((n - 1) * self.period_ns, unit="ns")
        await FallingEdge(self.dut.clk)

    async def until(self, expr: str | list[str], op: str, value: int, max_cycles: int, chunk: int = 1):
        names = expr.split("+") if isinstance(expr, str) else list(expr)
        f = _OPS[op]
        n = 0
        while not f(sum(int(self._sig(x).value) for x in names), value):
            if n >= max_cycles:
                return False, n
            k = min(chunk, max_cycles - n)
            await self.step(k)
            n += k
        return True, n

    async def axi_write(self, prefix: str, addr: int, data: int) -> int:
        """One AXI4-Lite write on bus `prefix` (cocotbext-axi); returns BRESP."""
        from cocotb.triggers import FallingEdge

        resp = await self._master(prefix).write(addr, (data & 0xFFFFFFFF).to_bytes(4, "little"))
        await FallingEdge(self.dut.clk)          # operations end just after a falling edge
        return int(resp.resp)

    async def axi_read(self, prefix: str, *addrs: int) -> list[int]:
        from cocotb.triggers import FallingEdge

        bus = self._master(prefix)
        out = [await bus.read_dword(a) for a in addrs]
        await FallingEdge(self.dut.clk)          # operations end just after a falling edge
        return out


class NativeHarness:
    """The same operations on a running verif.native.NativeSim."""

    def __init__(self, sim):
        self.sim = sim

    async def set(self, values: dict | None = None, **kw):
        self.sim.set(values, **kw)

    async def get(self, *names: str):
        return self.sim.get(*names)

    async def get_dict(self, names: list[str]) -> dict[str, int]:
        return self.sim.get_dict(names)

    async def step(self, n: int):
        if n > 0:
            self.sim.step(n)

    async def until(self, expr, op: str, value: int, max_cycles: int, chunk: int = 1):
        return self.sim.until(expr, op, value, max_cycles, chunk)

    async def axi_write(self, prefix: str, addr: int, data: int) -> int:
        return self.sim.axi_write(prefix, addr, data)

    async def axi_read(self, prefix: str, *addrs: int) -> list[int]:
        return self.sim.axi_read(prefix, *addrs)
