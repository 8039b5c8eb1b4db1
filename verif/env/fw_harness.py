"""The switch's firmware (fw/) running against the RTL in cocotb: its register interface over
a cocotbext-axi AxiLiteMaster, its packet port over AxiStreamSink (m_axis_mgmt: packets for
the switch) and AxiStreamSource (s_axis_mgmt: packets to send, tdest = IBA port or 0 for the
LFT). verif.env.switch_tb.SwitchTB(firmware=True) puts them together with the link peers
and an observe-mode lock-step, so the model runs the same firmware traffic.
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.regmap import build_regmap

__all__ = ["AxilRegs", "run_firmware"]


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
