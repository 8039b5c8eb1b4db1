"""The first packets after set-up, as a user's own testbench sees them: the switch's
Verilog exactly as `make verilog` writes it (hw/verilog.py: no simulator-specific
rewrite), set up through its registers alone (the LFT and the port states, by the register
map of docs/registers.md), the management processor's streams tied idle (nothing toggles
them), and on every port a partner that sends flow-control packets as a real port does: an
init FC packet (Op 1) per data VL as soon as the link is up, then one every `FC_EVERY`
cycles, and data packets only within the credit the switch advertised.

Traffic to every output starts in the first cycle after the last set-up write: every port
sends one packet to every other port, back to back. Checked: the first packet out of every
output, byte for byte, is the packet sent to it first (the switch changes nothing of a VL 0
packet: SL2VL keeps VL 0, the VCRC it regenerates is the same); every packet arrives once,
good, in order per input, on the port the LFT names; the switch never sends beyond the
credit a partner granted (LinkPeer's check).

This is the regression test of a divergence between the simulators found by an independent
testbench (docs/verification.md, "Icarus and the time-0 evaluation"): under Icarus the first
packet out of port 0 left as thousands of bytes of its first flit repeated, because Icarus
never evaluated the `always @*` blocks whose inputs do not change after time 0. Run with
NO_TIME0_FIX=1 it shows that failure again (the Verilog without hw.verilog's
time-0 trigger).
"""
import os
import random
from pathlib import Path

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.defs import PortState, iba_port
from contracts.regmap import build_regmap
from contracts.streams import LINK_FLIT
from models.packet import BTH, LRH, build_data_packet, to_flits
from verif.ib.link_peer import LinkPeer
from verif.runner import SIMS, run_cocotb
from verif.tb import TB, tb_config, tb_seed

FC_EVERY = 64
CFG_NAME = "small"


def setup_writes(cfg) -> list[tuple[int, int]]:
    """LFT: LID p + 1 -> IBA port p + 1 (Verilog port p); every port Armed, then Active."""
    rm = build_regmap(cfg)
    words: dict[int, int] = {}
    for p in range(cfg.ports):
        lid = p + 1
        w = words.setdefault(lid // 4, 0xFFFFFFFF)
        words[lid // 4] = (w & ~(0xFF << (8 * (lid % 4)))) | (iba_port(p) << (8 * (lid % 4)))
    out = [(rm["LFT"].addr(i), w) for i, w in sorted(words.items())]
    for st in (PortState.ARMED, PortState.ACTIVE):
        out += [(rm["PORT_STATE"].addr(p), int(st)) for p in range(cfg.ports)]
    return out


def packet(cfg, rng, src: int, dst: int, psn: int) -> bytes:
    lrh = LRH(vl=0, sl=0, lnh=2, dlid=dst + 1, slid=src + 1)
    payload = bytes(rng.getrandbits(8) for _ in range(rng.choice([4, 16, 40, 64, 96])))
    bth = BTH(opcode=0x04, pkey=0xFFFF, destqp=0x11, psn=psn)
    return build_data_packet(lrh, payload, bth, msb_first=cfg.crc_msb_first)


@cocotb.test()
async def first_packets_after_setup(dut):
    from cocotb.triggers import FallingEdge, ReadOnly
    from cocotbext.axi import AxiLiteBus, AxiLiteMaster
    cfg = tb_config()
    n = cfg.ports
    rng = random.Random(tb_seed())
    idle = {f"rx__{p}__{k}": 0 for p in range(n) for k in ("valid", *LINK_FLIT)}
    idle |= {f"rx__{p}__up": 1 for p in range(n)} | {f"tx__{p}__ready": 1 for p in range(n)}
    # the management processor's streams: tied idle for the whole test
    idle |= {"s_axis_mgmt_tvalid": 0, "s_axis_mgmt_tdata": 0, "s_axis_mgmt_tkeep": 0, "s_axis_mgmt_tlast": 0,
             "s_axis_mgmt_tdest": 0, "m_axis_mgmt_tready": 0}
    tb = TB(dut, idle)
    await tb.reset()
    peers = [LinkPeer(cfg, p, rng, fc_every=FC_EVERY, fc_init=True) for p in range(n)]
    for pr in peers:
        pr.fc_due = True                       # the init FC packets go out at once
    handles = {}

    def h(name):
        if name not in handles:
            handles[name] = getattr(dut, name)
        return handles[name]

    outs = [f"tx__{p}__{k}" for p in range(n) for k in ("valid", *LINK_FLIT)]
    sent: dict[int, list[bytes]] = {q: [] for q in range(n)}     # per output, in the order sent to it
    by_pair: dict[tuple[int, int], list[bytes]] = {}
    state = {"traffic": False}

    async def run_peers():
        while True:
            await FallingEdge(dut.clk)
            ins = {}
            for pr in peers:
                ins.update(pr.inputs())
            for k, v in ins.items():
                h(k).value = v
            await ReadOnly()
            o = {k: int(h(k).value) for k in outs}
            for pr in peers:
                pr.observe(ins, o)

    cocotb.start_soon(run_peers())
    axi = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    for addr, data in setup_writes(cfg):
        await axi.write_dword(addr, data)
    # traffic to every output from the first cycle after set-up
    for k in range(n - 1):
        for p in range(n):
            q = (p + 1 + k) % n
            body = packet(cfg, rng, p, q, len(by_pair.get((p, q), [])))
            by_pair.setdefault((p, q), []).append(body)
            sent[q].append(body)
            peers[p].queue(body, to_flits(body, cfg.data_width))
    state["traffic"] = True
    total = sum(len(v) for v in sent.values())
    for _ in range(20000):
        await FallingEdge(dut.clk)
        if sum(len(pr.got) + len(pr.got_bad) for pr in peers) >= total and not any(pr.busy for pr in peers):
            break
    for _ in range(100):
        await FallingEdge(dut.clk)
    for q, pr in enumerate(peers):
        got = pr.got
        assert not pr.got_bad, f"output {q}: {len(pr.got_bad)} packets ended bad, the first {pr.got_bad[0][:24].hex()}"
        assert got, (f"output {q}: nothing arrived; a packet under way of {len(pr._cur)} flits, the first "
                     f"{pr._cur[0].data:#x}" if pr._cur else f"output {q}: nothing arrived")
        first = sent[q][0]
        assert got[0] == first, (f"output {q} (IBA port {q + 1}): the first packet differs: {len(got[0])} bytes "
                                 f"{got[0][:32].hex()}..., sent {len(first)} bytes {first[:32].hex()}...")
        for p in range(n):
            if p == q:
                continue
            from_p = [b for b in got if LRH.unpack(b).slid == p + 1]
            assert from_p == by_pair[(p, q)], f"output {q}: packets from input {p} lost, changed or reordered"
        assert len(got) == len(sent[q]), f"output {q}: {len(got)} packets, {len(sent[q])} sent to it"
    dut._log.info(f"{total} packets, the first on every output intact")


def _top(cfg):
    from hw.top.switch import IBSwitch
    return IBSwitch(cfg)


@pytest.mark.parametrize("sim", SIMS)
def test_first_packets(sim, monkeypatch):
    """This module's cocotb test on the Verilog `make verilog` writes, with PCAP=1: every
    packet on every port goes to a pcap, and Wireshark's dissector (tshark) reads each
    output's file: the n - 1 data packets sent to it, each with that output's LID as its
    DLID, beside the flow-control packets."""
    import subprocess

    from hw.verilog import switch_verilog
    from verif.env.switch_tb import VERILATOR_ARGS
    from verif.runner import ROOT
    monkeypatch.setenv("PCAP", "1")
    cfg = CONFIGS[CFG_NAME]
    fix = not os.environ.get("NO_TIME0_FIX")
    tag = f"ib_switch-{cfg.name}-first{'' if fix else '-nofix'}"
    src = switch_verilog(cfg, ROOT / "build" / "sim" / f"{tag}-{sim}-src", time0_fix=fix)
    res = run_cocotb(top=None, name="ib_switch", test_module="tb.test_first_packets", sim=sim, cfg=cfg,
                     sources=[src], tag=tag, rerun_with_waves=False, verilator_args=VERILATOR_ARGS)
    pdir = Path(res["results"]).parent / "pcap"          # the run's own directory (make coverage: build/coverage)
    for q in range(cfg.ports):
        f = pdir / f"tx{q}.pcap"
        ts = subprocess.run(["tshark", "-r", str(f), "-T", "fields", "-e", "infiniband.lrh.dlid"],
                            capture_output=True, text=True, timeout=120)
        dlids = [int(x, 0) for x in ts.stdout.split()]
        assert dlids == [q + 1] * (cfg.ports - 1), f"{f}: DLIDs {dlids} ({ts.stderr.strip()})"
    assert (pdir / "rx0.pcap").stat().st_size > 24
