"""Endpoint blocks in the Amaranth simulator (fast; the cocotb tests run them on Icarus and
Verilator): the generator and the endpoint in lock-step with their models, the packets
parsed independently; and the 4-port ib_loopback end to end."""
import random

import pytest
from amaranth.sim import Simulator

from contracts.config import CONFIGS
from contracts.endpoint import endpoint, traffic_gen
from hw.endpoint.endpoint import Endpoint
from hw.endpoint.traffic_gen import TrafficGen
from hw.top.loopback import Loopback, LoopbackPlan
from models.endpoint import EndpointModel
from models.packet import Flit, from_flits, parse_data_packet
from models.traffic_gen import TrafficGenModel
from tb.endpoint_traffic import SelfLoop
from verif.pysim import pysim_lockstep


@pytest.mark.parametrize("cfg_name", ["small", "w128", "w512", "small-msb"])
def test_gen_lockstep(cfg_name):
    cfg = CONFIGS[cfg_name]
    rng = random.Random(3)
    _, outs, qual = traffic_gen(cfg).ports()
    conf = dict(en=1, slid=0x21, dlid_base=0x30, ndest=3, sl=5, vl=cfg.data_vls - 1, qp=0x123, len_min=1,
                len_mask=63, count=25, gap=2)
    got, cur = [], []

    def obs(inp, act):
        if act["o__valid"] and inp["o__ready"]:
            cur.append(Flit(act["o__data"], act["o__sop"], act["o__eop"], act["o__bytes"]))
            if act["o__eop"]:
                got.append(from_flits(cur, cfg.data_width))
                cur.clear()

    stim = (dict(conf, now=t, o__ready=int(rng.random() < 0.7)) for t in range(1500))
    pysim_lockstep(TrafficGen(cfg), TrafficGenModel(cfg), stim, outs, qual, on_cycle=obs)
    assert len(got) == 25
    msb = cfg.crc_msb_first
    assert all(parse_data_packet(p, msb).vcrc_ok and parse_data_packet(p, msb).icrc_ok for p in got)


@pytest.mark.parametrize("cfg_name", ["small", "w512"])
def test_endpoint_self_loop_faults(cfg_name):
    cfg = CONFIGS[cfg_name]
    _, outs, qual = endpoint(cfg).ports()
    loop = SelfLoop(cfg, random.Random(11), cycles=1500, count=60, ready_p=0.9, drop_p=0.1, flip_p=0.15)
    pysim_lockstep(Endpoint(cfg), EndpointModel(cfg), loop.stim(), outs, qual, on_cycle=loop.observe)
    loop.check()
    assert loop.dropped and loop.flipped


def test_loopback_pysim():
    cfg = CONFIGS["small"]
    dut = Loopback(cfg, LoopbackPlan(count=20, expect=20))
    res = {}

    async def bench(ctx):
        ctx.set(dut.run, 1)
        for _ in range(1500):
            await ctx.tick()
            if ctx.get(dut.pass_) or ctx.get(dut.fail):
                break
        res.update(passed=ctx.get(dut.pass_), fail=ctx.get(dut.fail),
                   good=[ctx.get(dut.ep[p].chk.rcv_good) for p in range(cfg.ports)])

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert res["passed"] == 1 and res["fail"] == 0 and res["good"] == [20] * cfg.ports
