"""Link receive (parser + per-VL buffers + credits): lock-step with its model on both
simulators, random traffic and every bad-input case of the link layer."""

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.defs import PortState, RxError
from contracts.link import link_rx
from models.credit import packet_blocks, taken_flits
from models.link_rx import LinkRxModel
from models.packet import BTH, LRH, FCPacket, Flit, build_data_packet, build_link_packet, from_flits, to_flits
from verif.ib.stimulus import RX_IDLE, Item, cycles, good_packet, idle_random
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB


def _data(cfg, rng, vl, size=None):
    p = good_packet(cfg, rng, vl=vl, payload_len=size if size is not None else rng.choice([0, 8, 40, 100, 200]))
    return Item("good", to_flits(p, cfg.data_width), 0, True, p)


def _fc(cfg, vl, fctbs, fccl=0, op=0):
    p = build_link_packet(FCPacket(op=op, fctbs=fctbs, vl=vl, fccl=fccl), cfg.crc_msb_first)
    return Item("link", to_flits(p, cfg.data_width, link=True), 0, False, p, link=True)


class Env:
    """Stimulus columns for LinkRx: rx stream, port state, ready of every buffer."""

    def __init__(self, tb, ready_p=0.7):
        self.tb, self.cfg, self.rng = tb, tb.cfg, tb.rng
        self.ins, self.outs, self.qual = link_rx(self.cfg).ports()
        self.bufs = [f"vl__{i}" for i in range(self.cfg.data_vls)] + ["vl15"]
        self.ready_p = ready_p
        self.model = LinkRxModel(self.cfg)
        self.got = {b: [] for b in self.bufs}     # delivered packets (bytes, bad)
        self._cur = {b: [] for b in self.bufs}

    def stim(self, items, state=PortState.ACTIVE, idle=0.2, tail=60, ready=None):
        ready_p = self.ready_p if ready is None else ready
        for c in list(cycles(items, idle_random(idle, self.rng))) + [dict(RX_IDLE)] * tail:
            c = dict(c, state=int(state))
            for b in self.bufs:
                c[f"{b}__ready"] = int(self.rng.random() < ready_p)
            yield c

    def observe(self, i, o):
        for b in self.bufs:
            if o[f"{b}__valid"] and i[f"{b}__ready"]:
                self._cur[b].append(o)
                if o[f"{b}__eop"]:
                    cur, last = self._cur[b], len(self._cur[b]) - 1
                    fl = [Flit(x[f"{b}__data"], bool(x[f"{b}__sop"]), k == last,
                               x[f"{b}__bytes"] if k == last else self.cfg.bytes_per_flit)
                          for k, x in enumerate(cur)]
                    self.got[b].append((from_flits(fl, self.cfg.data_width), bool(o[f"{b}__bad"])))
                    self._cur[b] = []

    async def run(self, stim):
        await cocotb_lockstep(self.tb.dut, self.model, stim, self.outs, self.qual, on_cycle=self.observe,
                              vcd=self.tb.vcd)

    def counter(self, name):
        return self.model.outputs(self.model.parser._out)[f"counters__{name}"]


async def _setup(dut, ready_p=0.7):
    tb = TB(dut, {**RX_IDLE, "state": int(PortState.ACTIVE)})
    await tb.reset()
    return Env(tb, ready_p)


@cocotb.test()
async def random_traffic_every_vl(dut):
    """Credit-respecting random traffic on every data VL and VL15 with random drain; each
    packet delivered once, intact, in order per VL."""
    env = await _setup(dut)
    cfg, rng = env.cfg, env.rng
    items, per_vl = [], {b: [] for b in env.bufs}
    sent_blocks = [0] * cfg.data_vls
    for _ in range(60):
        vl = rng.choice(list(range(cfg.data_vls)) + [15])
        it = _data(cfg, rng, vl, size=rng.choice([0, 16, 40, 64, 104, 120]))
        if vl != 15:
            n = packet_blocks(LRH.unpack(it.data).pktlen, cfg.credit_vcrc)
            if sent_blocks[vl] + n > cfg.buffer_blocks_per_vl // 2:
                continue                         # stay well inside the buffer (no FC loop here)
            sent_blocks[vl] += n
        items.append(it)
        per_vl["vl15" if vl == 15 else f"vl__{vl}"].append(it.data)
    await env.run(env.stim(items, ready=0.6, tail=400))
    for b in env.bufs:
        assert [d for d, _ in env.got[b]] == per_vl[b], f"{b}: delivered packets differ"
        assert not any(bad for _, bad in env.got[b])
    assert env.counter("rcv_pkts") == len(items)


@cocotb.test()
async def fc_packets_resync_the_abr(dut):
    """IBA §7.9.4: every FC packet sets the receiver's ABR to its FCTBS. One that agrees with
    the blocks received confirms the ABR; one ahead of it (blocks the sender counted that never
    arrived: lost on the wire) moves the ABR on, and the advertised FCCL with it; one behind."""
    env = await _setup(dut)
    cfg, rng = env.cfg, env.rng
    items, abr = [], [0] * cfg.data_vls
    for k in range(12):
        vl = k % cfg.data_vls
        it = _data(cfg, rng, vl, size=rng.choice([0, 16, 40]))
        items.append(it)
        abr[vl] = (abr[vl] + packet_blocks(LRH.unpack(it.data).pktlen, cfg.credit_vcrc)) % 4096
        if k % 3 == 2:                           # confirm, then as if 1..3 blocks were lost, then back
            lost = rng.randrange(1, 4)
            items += [_fc(cfg, vl, abr[vl]), _fc(cfg, vl, (abr[vl] + lost) % 4096), _fc(cfg, vl, abr[vl])]
    await env.run(env.stim(items, ready=0.8, tail=200))
    assert env.model.abr == abr
    assert env.counter("rcv_pkts") == 12


@cocotb.test()
async def overrun_sender_is_dropped(dut):
    """A sender exceeding its credit: the packet that does not fit is dropped and counted
    (ExcessiveBufferOverrunErrors); other VLs are untouched."""
    env = await _setup(dut, ready_p=0.0)         # nothing drains: the buffer fills
    cfg, rng = env.cfg, env.rng
    big = _data(cfg, rng, 0, size=cfg.mtu)
    n = packet_blocks(LRH.unpack(big.data).pktlen, cfg.credit_vcrc)
    fit = cfg.buffer_blocks_per_vl // n
    other = _data(cfg, rng, 1 % cfg.data_vls if cfg.data_vls > 1 else 15, size=32)
    items = [_data(cfg, rng, 0, size=cfg.mtu) for _ in range(fit + 2)] + [other]
    await env.run(env.stim(items, ready=0.0, tail=5))
    assert env.counter("overrun") == 2
    assert env.counter("rcv_pkts") == fit + 1
    assert env.model.free[0] == cfg.buffer_blocks_per_vl - fit * n


@cocotb.test()
async def bad_vl_and_state_cases(dut):
    """Data on an unconfigured VL; FC packet for an unconfigured VL (an error when Active,
    ignored in Init); data VLs in Init are dropped but VL15 passes; Armed receives data;
    Down drops everything and clears ABR."""
    env = await _setup(dut)
    cfg, rng = env.cfg, env.rng
    bad_vl = cfg.data_vls if cfg.data_vls < 15 else 14
    await env.run(env.stim([_data(cfg, rng, bad_vl), _fc(cfg, bad_vl, 5, 9), _fc(cfg, 15, 1, 1),
                            _fc(cfg, 0, 77, 100)]))
    assert env.counter("vl_invalid") == 1 and env.counter("fc_vl_invalid") == 2
    assert env.model.abr[0] == 77
    await env.run(env.stim([_data(cfg, rng, 0), _data(cfg, rng, 15), _fc(cfg, bad_vl, 6, 3), _fc(cfg, 15, 2, 2)],
                           state=PortState.INIT))
    assert env.counter("state_drop") == 1 and len(env.got["vl15"]) == 1
    assert env.counter("fc_vl_invalid") == 2            # in Init, credits for unconfigured VLs are ignored
    await env.run(env.stim([_data(cfg, rng, 0)], state=PortState.ARMED))
    assert len(env.got["vl__0"]) == 1
    await env.run(env.stim([_data(cfg, rng, 15)], state=PortState.DOWN))
    assert env.counter("state_drop") == 2 and env.model.abr[0] == 0


@cocotb.test()
async def vl15_full_and_too_long(dut):
    """VL15 has no flow control: a packet that does not fit its buffer, or is longer than
    a VL15 packet may be, is dropped and counted (VL15Dropped)."""
    env = await _setup(dut, ready_p=0.0)
    cfg, rng = env.cfg, env.rng
    small = [_data(cfg, rng, 15, size=200) for _ in range(8)]
    long = _data(cfg, rng, 15, size=min(cfg.mtu, 400))
    await env.run(env.stim(small + [long], ready=0.0, tail=5))
    used = env.model.vl15_used
    assert env.counter("vl15_dropped") >= 1 and used <= cfg.vl15_buffer_blocks * 64 // cfg.bytes_per_flit
    assert env.counter("rcv_pkts") + env.counter("vl15_dropped") == 9


@cocotb.test()
async def link_down_mid_packet(dut):
    """`up` falls inside a packet: it is ended bad in the buffer, ABR clears, and traffic
    after the link returns is delivered."""
    env = await _setup(dut)
    cfg, rng = env.cfg, env.rng
    a = _data(cfg, rng, 0, size=200)
    stim = list(env.stim([_fc(cfg, 0, 40, 0)], tail=3))
    stim += [c for c in env.stim([a], tail=0)][:3]
    stim += [dict(s, rx__up=0, rx__valid=0) for s in env.stim([], tail=4)]
    b = _data(cfg, rng, 0, size=40)
    stim += list(env.stim([b], tail=40))
    await env.run(iter(stim))
    assert [bad for _, bad in env.got["vl__0"]] == [True, False]
    assert env.got["vl__0"][1][0] == b.data
    assert env.counter("truncated") == 1


@cocotb.test()
async def runaway_packet_cut_at_its_charge(dut):
    """A packet longer than its PktLen says, by less than a block past what it was charged:
    the buffer takes exactly the flits its PktLen pays for, the last of them marked eop +
    bad, drops the rest, and the PktLen fault is counted; the next packet is intact."""
    env = await _setup(dut, ready_p=1.0)
    cfg, rng = env.cfg, env.rng
    nb = cfg.bytes_per_flit
    short = LRH(vl=0, lnh=2, dlid=5, slid=7)
    stated = build_data_packet(short, bytes(40), BTH())              # PktLen of a 40-byte payload
    pktlen = LRH.unpack(stated).pktlen
    charged_flits = taken_flits(pktlen, nb, cfg.credit_vcrc)         # the most flits the buffer takes
    extra = charged_flits * nb - len(stated) + nb                    # runs one flit past the charge
    assert 0 < charged_flits * nb + nb - len(stated) < 64 + nb
    body = build_data_packet(short, bytes(40 + extra), BTH(), pktlen=pktlen)
    assert len(body) > charged_flits * nb and len(body) - charged_flits * nb <= nb + 3
    runaway = Item("runaway", to_flits(body, cfg.data_width), RxError.PKTLEN, True, body)
    after = _data(cfg, rng, 0, size=16)
    await env.run(env.stim([runaway, after], tail=80))
    (cut, bad), (nxt, nxt_bad) = env.got["vl__0"]
    assert bad and len(cut) == charged_flits * nb and cut == body[:charged_flits * nb]
    assert nxt == after.data and not nxt_bad
    assert env.counter("pktlen") == 1


# ---------------------------------------------------------------------- pytest entry
def _top(cfg):
    from hw.link.link_rx import LinkRx
    return LinkRx(cfg)


@pytest.mark.parametrize("cfg_name", ["small", "w256", "small-novcrc"])
@pytest.mark.parametrize("sim", SIMS)
def test_link_rx(sim, cfg_name):
    run_cocotb(top=_top, name="ib_link_rx", test_module="tb.test_link_rx", sim=sim, cfg=CONFIGS[cfg_name])
