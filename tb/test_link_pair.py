"""Two link endpoints back to back through a wire model (delay, corruption, link down):
lock-step with the composed model on both simulators, plus a scoreboard independent of the
model: every uncorrupted packet delivered exactly once and in order per VL, corrupted ones
counted, the receive buffers never overrun (no `overrun` count, no lost packet), credits
recovering after lost FC packets, and the 12-bit credit counters wrapping."""

import os

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.defs import PortState
from contracts.link import link_pair
from models.credit import packet_blocks
from models.link_pair import LinkPairModel
from models.packet import LRH, to_flits
from verif.drivers import StreamSink, StreamSource
from verif.ib.stimulus import good_packet, idle_random, ready_random
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB, tb_params

DELAYS = [0, 5, 64]


class Pair:
    def __init__(self, tb, delay, drain_p=0.5, corrupt_p=0.0):
        self.tb, self.cfg, self.rng = tb, tb.cfg, tb.rng
        cfg = self.cfg
        self.ins, self.outs, self.qual = link_pair(cfg).ports()
        self.model = LinkPairModel(cfg)
        self.delay = delay
        self.srcs, self.sinks = {}, {}
        for side in "ab":
            for b in [f"src__{i}" for i in range(cfg.data_vls)] + ["src15"]:
                self.srcs[f"{side}__{b}"] = StreamSource(f"{side}__{b}", idle_random(0.1, self.rng))
            for b in [f"vl__{i}" for i in range(cfg.data_vls)] + ["vl15"]:
                self.sinks[f"{side}__{b}"] = StreamSink(f"{side}__{b}", cfg.data_width,
                                                        ready_random(drain_p, self.rng))
        self.sent = {k: [] for k in self.srcs}
        self.corrupt_p = corrupt_p
        self.corrupted = set()            # wire bytes of packets hit by corruption
        self.last = {}
        self.link_up = 1
        self.mgmt = {"a": None, "b": None}
        self.cycle = 0
        self.max_fctbs_seen = 0
        self.wraps = 0

    def queue(self, side, vl, pkt):
        name = f"{side}__src15" if vl == 15 else f"{side}__src__{vl}"
        self.srcs[name].send(to_flits(pkt, self.cfg.data_width))
        self.sent[name].append(pkt)

    def busy(self):
        return any(s.busy for s in self.srcs.values())

    def inputs(self):
        cfg = self.cfg
        inp = {}
        for s in self.srcs.values():
            inp.update(s.inputs())
        for k, s in self.sinks.items():
            inp[f"{k}__ready"] = s.next_ready()
        for side in "ab":
            req = self.mgmt[side]
            inp[f"{side}__mgmt__req"] = int(req is not None)
            inp[f"{side}__mgmt__state"] = int(req or 0)
            self.mgmt[side] = None
        inp["link_up"] = self.link_up
        inp["delay"] = self.delay
        inp["a_ready"] = inp["b_ready"] = 1
        inp["a2b_flip"] = inp["b2a_flip"] = 0
        if self.corrupt_p and self.rng.random() < self.corrupt_p:
            inp[self.rng.choice(["a2b_flip", "b2a_flip"])] = 1 << self.rng.randrange(cfg.data_width)
        return inp

    def observe(self, i, o):
        self.last = o
        for s in self.sinks.values():
            s.observe(o)
        self.cycle += 1

    def advance(self):
        for k, s in self.srcs.items():
            s.advance(self.last[f"{k}__ready"])

    def stim(self, until, limit=200000):
        """Yield inputs until `until()` is true (and sources are idle) or `limit` cycles."""
        n = 0
        while n < limit and not until():
            inp = self.inputs()
            yield inp
            self.advance()
            n += 1

    async def run(self, until, limit=200000, start_now=False):
        await cocotb_lockstep(self.tb.dut, self.model, self.stim(until, limit), self.outs, self.qual,
                              on_cycle=self.observe, vcd=self.tb.vcd, start_now=start_now)

    async def bring_up(self, after_reset=False):
        """Down -> Init (PHY up) -> Armed -> Active on both sides."""
        await self.run(lambda: self.last.get("a__state") == PortState.INIT, 20, start_now=after_reset)
        for st in (PortState.ARMED, PortState.ACTIVE):
            self.mgmt = {"a": st, "b": st}
            await self.run(lambda st=st: self.last.get("a__state") == st, 5)

    def delivered(self, side):
        """Received packets (bytes, bad) per source queue name of the far side."""
        far = "b" if side == "a" else "a"
        out = {}
        for i in range(self.cfg.data_vls):
            out[f"{side}__src__{i}"] = self.sinks[f"{far}__vl__{i}"].packets
        out[f"{side}__src15"] = self.sinks[f"{far}__vl15"].packets
        return out


def _traffic(p, n, sides="ab", sizes=(0, 16, 64, 200, 500)):
    cfg, rng = p.cfg, p.rng
    for _ in range(n):
        side = rng.choice(sides)
        vl = rng.choice(list(range(cfg.data_vls)) * 4 + [15])
        size = rng.choice([s for s in sizes if s <= cfg.mtu] + [rng.randrange(cfg.mtu + 1)])
        if vl == 15:
            size = min(size, 200)
        p.queue(side, vl, good_packet(cfg, rng, vl=vl, payload_len=size))


def _check_clean(p):
    """Without corruption: every data-VL packet delivered exactly once, intact, in order
    per VL. VL15 has no flow control (IBA §7.6.5): a VL15 packet may be dropped when the
    far VL15 buffer is full, but then it is counted, and the rest keep their order."""
    for side in "ab":
        far = "b" if side == "a" else "a"
        got = p.delivered(side)
        for q, pkts in p.sent.items():
            if not q.startswith(side):
                continue
            assert not any(bad for _, bad in got[q]), f"{q}: a packet arrived marked bad"
            if q.endswith("src15"):
                it = iter(pkts)
                assert all(any(d == s for s in it) for d, _ in got[q]), f"{q}: VL15 order or content broken"
                assert len(got[q]) + p.last[f"{far}__crx__vl15_dropped"] == len(pkts)
            else:
                assert [d for d, _ in got[q]] == pkts, f"{q}: delivered packets differ"
        assert p.last[f"{far}__crx__overrun"] == 0


def _delay():
    return tb_params()["delay"]


async def _pair(dut, drain_p=0.5, corrupt_p=0.0):
    tb = TB(dut, {"link_up": 1, "delay": _delay()})
    await tb.reset()
    p = Pair(tb, _delay(), drain_p, corrupt_p)
    await p.bring_up(after_reset=True)
    return p


@cocotb.test()
async def random_traffic_all_vls(dut):
    """Both directions, every VL, random drain: lossless, exactly once, in order."""
    p = await _pair(dut, drain_p=0.4)
    _traffic(p, tb_params()["packets"])
    await p.run(lambda: not p.busy(), limit=100000)
    await p.run(lambda: False, limit=600)          # let the far buffers drain
    assert not p.busy(), "the link stalled"
    _check_clean(p)
    # the credit loop stayed lossless: FCTBS on each side counts exactly the blocks sent
    for side in "ab":
        for i in range(p.cfg.data_vls):
            blocks = sum(packet_blocks(LRH.unpack(b).pktlen) for b in p.sent[f"{side}__src__{i}"])
            port = getattr(p.model, side)
            assert port.tx.fctbs[i] == blocks % 4096


@cocotb.test()
async def credit_wraparound(dut):
    """Long one-way stream of small packets on one VL (VL1 at the 5-cycle wire, else VL0):
    FCTBS/ABR/FCCL cross 4096 (several times on a long run) with nothing lost."""
    p = await _pair(dut, drain_p=0.9)
    cfg = p.cfg
    blocks_target = tb_params()["wrap_blocks"]
    vl = _delay() % cfg.data_vls                 # VL0 at the 0- and 64-cycle wires, VL1 at 5
    sent_blocks = 0
    while sent_blocks < blocks_target:
        pkt = good_packet(cfg, p.rng, vl=vl, lnh=2, payload_len=p.rng.choice([0, 40, 100]))
        p.queue("a", vl, pkt)
        sent_blocks += packet_blocks(LRH.unpack(pkt).pktlen)
    await p.run(lambda: not p.busy() and len(p.sinks[f"b__vl__{vl}"].packets) == len(p.sent[f"a__src__{vl}"]),
                limit=400000)
    assert sent_blocks >= 4096, "the run must cross the 12-bit wrap"
    _check_clean(p)
    assert p.model.a.tx.fctbs[vl] == sent_blocks % 4096
    assert p.model.b.rx.abr[vl] == sent_blocks % 4096 or p.model.b.rx.abr[vl] == p.model.a.tx.fctbs[vl]


@cocotb.test()
async def corruption_counted_and_credit_recovers(dut):
    """Random bit flips on the wire: corrupted data packets are marked bad (VCRC) or
    dropped, corrupted FC packets are dropped (LPCRC); the rest arrive exactly once in order,
    and credit lost with dropped packets returns with the next FC packet (the link never
    stalls)."""
    p = await _pair(dut, drain_p=0.6, corrupt_p=0.02)
    _traffic(p, tb_params()["packets"], sides="a")
    await p.run(lambda: not p.busy() and p.cycle % 512 == 0, limit=100000)
    assert not p.busy(), "the link stalled: credit did not recover"
    crx = {k.split("__")[-1]: v for k, v in p.last.items() if k.startswith("b__crx__")}
    errs = sum(crx[k] for k in ("vcrc", "pktlen", "lver", "short", "long", "lpcrc", "link_format", "framing",
                                "vl_invalid", "overrun"))
    got = p.delivered("a")
    for q, pkts in p.sent.items():
        if not q.startswith("a"):
            continue
        good = [d for d, bad in got[q] if not bad]
        # delivered good packets are a subsequence of what was sent, in order, each once
        it = iter(pkts)
        assert all(any(d == s for s in it) for d in good), f"{q}: order or content broken"
    assert crx["overrun"] == 0
    delivered = sum(len(v) for v in got.values())
    assert delivered + errs >= sum(len(v) for k, v in p.sent.items() if k.startswith("a"))


@cocotb.test()
async def link_down_and_back(dut):
    """The link drops mid-traffic: both ports go Down (LinkDowned), credit state clears,
    a packet cut in flight arrives marked bad; after bring-up traffic flows again."""
    p = await _pair(dut, drain_p=0.7)
    _traffic(p, 20)
    await p.run(lambda: p.cycle > 150, limit=400)
    p.link_up = 0
    await p.run(lambda: False, limit=10)
    assert p.last["a__state"] == PortState.DOWN and p.last["a__cport__link_downed"] == 1
    assert p.model.a.tx.fctbs == [0] * p.cfg.data_vls and p.model.b.rx.abr == [0] * p.cfg.data_vls
    p.link_up = 1
    await p.bring_up()
    before = {k: len(s.packets) for k, s in p.sinks.items()}
    _traffic(p, 10)
    await p.run(lambda: not p.busy(), limit=50000)
    await p.run(lambda: False, limit=300)
    assert not p.busy(), "no traffic after the link came back"
    assert sum(len(s.packets) - before[k] for k, s in p.sinks.items()) > 0


def _top_factory(max_delay):
    def top(cfg):
        from hw.link.link_pair import LinkPair
        return LinkPair(cfg, max_delay)
    return top


@pytest.mark.parametrize("delay", DELAYS)
@pytest.mark.parametrize("sim", SIMS)
def test_link_pair(sim, delay):
    cfg = CONFIGS["small"]
    long_run = sim == "verilator"
    params = {"delay": delay, "packets": 120 if long_run else 50, "wrap_blocks": 5000 if long_run else 4500}
    # The 12-bit wrap is the same arithmetic at every delay, and the run is in lock-step with
    # the model (bound by Python: ~32k cycles): it crosses the wrap twice, once per simulator
    # and once per VL: Icarus (a tenth of Verilator's speed) on VL1 at the 5-cycle wire,
    # Verilator on VL0 at the 64-cycle wire (the most credit in flight)
    # (`make coverage`, Verilator only, wraps at every delay: both VLs' wrap bins)
    wraps_at = {"icarus": [5], "verilator": [max(DELAYS)]}[sim]
    if os.environ.get("RTL_COVERAGE", "0") not in ("", "0"):
        wraps_at = DELAYS
    cases = None
    if delay not in wraps_at:
        cases = ["random_traffic_all_vls", "corruption_counted_and_credit_recovers", "link_down_and_back"]
    # Verilator: one build for every delay (an input of the fixture); Icarus compiles in
    # seconds but runs the 64-stage wire's shift registers every cycle, so it gets a wire of
    # just the length it runs
    run_cocotb(top=_top_factory(max(DELAYS) if sim == "verilator" else delay), name="ib_link_pair",
               test_module="tb.test_link_pair", sim=sim, cfg=cfg, tag=f"ib_link_pair-{cfg.name}-d{delay}",
               params=params, seed=delay + 1, testcase=cases)
