"""What the firmware needs from the switch: its register map (contracts/regmap.py) by name.

`SwitchRegs` is the interface (async, because on the RTL every access is an AXI4-Lite
transaction that takes cycles). `RegisterFile` implements it in plain Python over the same
register map, for agent tests without a simulator: registers and tables start at the
register map's reset values (contracts.regmap.reset_values, as the RTL's) and hold what was
written, PORT_STATE follows the rules of the port state machine (docs/link-layer.md) and
counters are what the test sets them to.
"""
from __future__ import annotations

from typing import Protocol

from contracts.config import SwitchConfig
from contracts.counters import COUNTERS_PER_PORT, PORT_COUNTERS_LIST
from contracts.defs import PortState
from contracts.regmap import build_regmap, reset_values

__all__ = ["SwitchRegs", "RegisterFile"]



class SwitchRegs(Protocol):
    cfg: SwitchConfig

    async def read(self, reg: str, index: int = 0) -> int: ...

    async def write(self, reg: str, index: int, value: int) -> None: ...


class RegisterFile:
    """The register map in memory; `up[p]` is physical port p's link (0-based Verilog index)."""

    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.rm = build_regmap(cfg)
        self.mem: dict[tuple[str, int], int] = {}
        self.state = [PortState.INIT] * cfg.ports          # links up, as after training
        self.counters = [[0] * COUNTERS_PER_PORT for _ in range(cfg.ports)]
        self.writes: list[tuple[str, int, int]] = []
        self.resets = reset_values(cfg)

    def counter(self, port: int, name: str) -> int:
        return self.counters[port][PORT_COUNTERS_LIST.index(name)]

    def set_counter(self, port: int, name: str, value: int):
        self.counters[port][PORT_COUNTERS_LIST.index(name)] = value

    async def read(self, reg: str, index: int = 0) -> int:
        self.rm[reg].addr(index)                            # IndexError names the register
        if reg == "PORT_STATE":
            return int(self.state[index])
        if reg == "COUNTERS":
            p, k = divmod(index, COUNTERS_PER_PORT)
            return self.counters[p][k]
        reset = self.resets.get(reg)
        return self.mem.get((reg, index), reset[index] if reset else 0)

    async def write(self, reg: str, index: int, value: int) -> None:
        r = self.rm[reg]
        r.addr(index)
        if r.access != "RW":
            raise PermissionError(f"register {reg} is read-only")
        self.writes.append((reg, index, value))
        if reg == "PORT_STATE":
            s, want = self.state[index], value & 7
            if want == PortState.DOWN:
                self.state[index] = PortState.DOWN
            elif (s, want) in ((PortState.INIT, PortState.ARMED), (PortState.ARMED, PortState.ACTIVE)):
                self.state[index] = PortState(want)
            return
        self.mem[(reg, index)] = value & 0xFFFFFFFF
