"""Board top for the ULX3S (Lattice ECP5-85F, amaranth-boards `ULX3S_85F_Platform`):
the switch with a hardware endpoint on every port, ports looped back in pairs on chip
(hw/top/loopback.py), results on the LEDs and a text report on the FTDI UART
(docs/fpga.md).

  clock   the 25 MHz oscillator through the ECP5 PLL (EHXPLLL) to `freq_mhz`
  reset   held until the PLL locks (synchronised)
  LEDs    0 pass (every checker received `expect` packets, no fault), 1 fail (any fault),
          2 the AXI set-up writes are done, 3 heartbeat (1-2 Hz), 4..7 ports 0..3 Active
  button  FIRE 1 held pauses the generators
  UART    115200 baud 8N1, every second: the time, pass/fail, then one line per port
          (state, packets sent, good, bad, errors, sequence gaps, a link receive error seen,
          latency min/max in cycles) in hexadecimal
"""
from __future__ import annotations

from amaranth.hdl import ClockDomain, ClockSignal, Elaboratable, Instance, Module, Signal
from amaranth.lib.cdc import ResetSynchronizer

from contracts.config import SwitchConfig
from hw.board.report import Report
from hw.top.loopback import Loopback, LoopbackPlan

__all__ = ["ULX3SLoopback", "pll_params", "report_template"]


def pll_params(f_in: float, f_out: float) -> dict:
    """EHXPLLL dividers for f_out from f_in (MHz), feedback from CLKOP: f_out = f_in /
    CLKI_DIV * CLKFB_DIV, VCO = f_out * CLKOP_DIV in 400..800 MHz, PFD >= 3.125 MHz
    (Lattice TN1263). The closest achievable output is chosen; it is reported in `f_out`."""
    best = None
    for clki in range(1, 129):
        pfd = f_in / clki
        if pfd < 3.125:
            break
        for fb in range(1, 81):
            fo = pfd * fb
            for op in range(1, 129):
                vco = fo * op
                if 400 <= vco <= 800:
                    err = abs(fo - f_out)
                    if best is None or err < best[0]:
                        best = (err, clki, fb, op, fo)
                    break
    if best is None:
        raise ValueError(f"pll_params: no EHXPLLL setting reaches {f_out} MHz from {f_in} MHz")
    _, clki, fb, op, fo = best
    return {"CLKI_DIV": clki, "CLKFB_DIV": fb, "CLKOP_DIV": op, "f_out": fo}


def report_template(ports: int) -> tuple[list, list[str]]:
    """(template, field names) of the UART report; fields index Loopback outputs."""
    names = ["now", "cfg_done", "cfg_errors", "pass_", "fail"]
    tmpl: list = ["IBLB t=", (0, 8), " cfg=", (1, 1), "/", (2, 4), " pass=", (3, 1), " fail=", (4, 1), "\r\n"]
    for p in range(ports):
        base = len(names)
        names += [f"ep{p}.{k}" for k in ("state", "sent_pkts", "chk.rcv_good", "chk.rcv_bad", "chk.rcv_errors",
                                         "chk.seq_gap", "rx_fault", "chk.lat_min", "chk.lat_max")]
        tmpl += [f"p{p} st=", (base, 1), " sent=", (base + 1, 8), " good=", (base + 2, 8), " bad=", (base + 3, 8),
                 " err=", (base + 4, 8), " gap=", (base + 5, 8), " rxf=", (base + 6, 1), " lat=", (base + 7, 4),
                 "/", (base + 8, 4), "\r\n"]
    return tmpl, names


def _field(core: Loopback, name: str):
    obj = core
    for part in name.split("."):
        if part.startswith("ep") and part[2:].isdigit():
            obj = core.ep[int(part[2:])]
        else:
            obj = getattr(obj, part)
    return obj


class ULX3SLoopback(Elaboratable):
    def __init__(self, cfg: SwitchConfig, plan: LoopbackPlan | None = None, freq_mhz: float = 50.0,
                 baud: int = 115200):
        # the checkers leave the ICRC out on the board: the 85F is full (docs/fpga.md)
        self.cfg, self.plan = cfg, plan or LoopbackPlan(check_icrc=False)
        self.pll = pll_params(25.0, freq_mhz)
        self.freq_mhz = self.pll["f_out"]
        self.baud = baud

    def elaborate(self, platform):
        m = Module()
        clk25 = platform.request("clk25")
        m.domains.sync = ClockDomain("sync")
        clkop, lock = Signal(), Signal()
        p = self.pll
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI="25", a_FREQUENCY_PIN_CLKOP=f"{self.freq_mhz:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1", a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=p["CLKI_DIV"], p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=p["CLKOP_DIV"],
            p_CLKOP_CPHASE=p["CLKOP_DIV"] - 1, p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP", p_CLKFB_DIV=p["CLKFB_DIV"],
            i_CLKI=clk25.i, i_RST=0, i_STDBY=0, i_CLKFB=clkop, i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=0,
            i_PHASESTEP=0, i_PHASELOADREG=0, i_PLLWAKESYNC=0, i_ENCLKOP=0,
            o_CLKOP=clkop, o_LOCK=lock)
        m.d.comb += ClockSignal("sync").eq(clkop)
        m.submodules.rst = ResetSynchronizer(~lock, domain="sync")

        m.submodules.core = core = Loopback(self.cfg, self.plan)
        pause = platform.request("button_fire", 1)
        m.d.comb += core.run.eq(~pause.i)

        leds = [platform.request("led", k) for k in range(8)]
        m.d.comb += [leds[0].o.eq(core.pass_), leds[1].o.eq(core.fail), leds[2].o.eq(core.cfg_done),
                     leds[3].o.eq(core.now[int(self.freq_mhz * 1e6).bit_length() - 2])]
        for k in range(min(4, self.cfg.ports)):
            m.d.comb += leds[4 + k].o.eq(core.ep[k].state == 4)

        tmpl, names = report_template(self.cfg.ports)
        clk_hz = int(self.freq_mhz * 1e6)
        m.submodules.report = rep = Report([_field(core, n) for n in names], tmpl,
                                           divisor=max(2, round(clk_hz / self.baud)), period=clk_hz)
        uart = platform.request("uart", 0)
        m.d.comb += uart.tx.o.eq(rep.tx)
        return m
