"""The switch's firmware (fw/) running against the RTL in cocotb: its register interface over
a cocotbext-axi AxiLiteMaster, its packet port over AxiStreamSink (m_axis_mgmt: packets for
the switch) and AxiStreamSource (s_axis_mgmt: packets to send, tdest = IBA port or 0 for the
LFT), and the switch's link peers (tb.common.switch_env.SwitchEnv) driven cycle by cycle
beside them, so that an observe-mode lock-step (tb.common.lockstep.LockstepObserver) sees
every input the RTL sees and the model runs the same firmware traffic.
"""
from __future__ import annotations

from hw.common.config import SwitchConfig
from hw.mgmt.regmap import build_regmap

__all__ = ["AxilRegs", "run_firmware", "run_link_peers"]


class AxilRegs:
    """fw.hw.SwitchRegs over AXI4-Lite (cocotbext-axi AxiLiteMaster); `accesses` counts them."""

    def __init__(self, axi, cfg: SwitchConfig):
        self.axi, self.cfg = axi, cfg
        self.rm = build_regmap(cfg)
        self.accesses = 0

    async def read(self, reg: str, index: int = 0) -> int:
        self.accesses += 1
        return await self.axi.read_dword(self.rm[reg].addr(index))

    async def write(self, reg: str, index: int, value: int) -> None:
        r = self.rm[reg]
        if r.access != "RW":
            raise PermissionError(f"register {reg} is read-only")
        self.accesses += 1
        await self.axi.write_dword(r.addr(index), value & 0xFFFFFFFF)


async def run_firmware(fw, sink, src, log: list | None = None):
    """The management processor's main loop: each packet from the receive queue (tuser: the
    IBA port it came in on, bit 8 its bad mark) goes to the firmware; what it returns is
    sent (tdest: the port, 0 to route by the LFT). Packets marked bad are dropped, as a
    channel adapter drops a packet with a bad CRC. `log` gets ("rx", bytes, port, bad) and
    ("tx", bytes, tdest, False)."""
    from cocotbext.axi import AxiStreamFrame
    while True:
        f = await sink.recv()
        users = f.tuser if isinstance(f.tuser, list) else [f.tuser]
        pkt, port = bytes(f.tdata), users[0] & 0xFF
        if log is not None:
            log.append(("rx", pkt, port, bool(users[-1] >> 8)))
        if users[-1] >> 8:
            fw.stats.setdefault("rx_bad", 0)
            fw.stats["rx_bad"] += 1
            continue
        for out, dest in await fw.receive(pkt, port):
            if log is not None:
                log.append(("tx", out, dest, False))
            await src.send(AxiStreamFrame(out, tdest=dest or 0))


async def run_link_peers(dut, env, stop: list):
    """Drive the link side (rx__*, tx__*__ready) from `env` every cycle and let it observe the
    tx side, until stop[0]. AXI4-Lite and AXI4-Stream belong to cocotbext-axi here."""
    from cocotb.triggers import FallingEdge, ReadOnly
    n = env.cfg.ports
    tx_keys = [f"tx__{p}__{k}" for p in range(n) for k in ("valid", "data", "sop", "eop", "bytes", "link", "bad")]
    handles = {k: getattr(dut, k) for k in tx_keys}
    while not stop[0]:
        await FallingEdge(dut.clk)
        inp = {k: v for k, v in env.inputs().items() if k.startswith(("rx__", "tx__"))}
        for k, v in inp.items():
            getattr(dut, k).value = v
        await ReadOnly()
        env.observe(inp, {k: int(h.value) for k, h in handles.items()})
