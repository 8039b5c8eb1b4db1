"""The management port on Icarus and Verilator, in observe-mode lock-step with its model.

Around the block: a VL15 source per input (the receivers' VL15 buffers), a tap per input
(accepted data packets, some for the switch), an egress source per output, sinks with
random ready for every LinkTx source, a synchronous LFT read (the entry for the DLID
addressed in the previous cycle), port states, credit state changing at random, a
cocotbext-axi AxiStreamSink with pauses as the processor's receive side and an
AxiStreamSource (pauses too, tdest) as its send side, including malformed packets.

Checked apart from the model, from the packets: every VL15 packet from an input ends where
its DLID, the LFT and the port states say (the queue, a port's VL15 source, or counted as a
relay error), every processor packet where its tdest / LFT and VL say (or counted), every
egress packet intact and in order at its output's source, every data packet copied into the
queue or counted, and the counters add up.
"""
import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from contracts.config import CONFIGS
from contracts.counters import MGMT_PORT_COUNTERS
from contracts.defs import PortState
from contracts.streams import FLIT
from contracts.switch import mgmt_port
from models.mgmt_port import MgmtPortModel
from models.packet import LRH, to_flits
from verif.drivers import StreamSink, StreamSource, lrh_blocks
from verif.lockstep import LockstepObserver
from verif.runner import SIMS, run_cocotb
from verif.tb import TB


def _packet(rng, cfg, *, vl, dlid, nbytes=None, tag=b""):
    """LRH + tag + random bytes, PktLen consistent, 2 bytes in the VCRC's place. `dlid` may
    carry an extended LID's page above bit 16 (the LRH's reserved bits in front of PktLen; in
    the extended-LID mode the bits above the page are set at random: they are ignored)."""
    if nbytes is None:
        nbytes = rng.choice([8, 12, 36, 64, 100, 256, cfg.vl15_max_packet_bytes - 2])
    nbytes = max(8 + len(tag), nbytes - nbytes % 4)
    b = cfg.ext_lid_bits
    rsvd1 = (dlid >> 16 | (rng.getrandbits(5 - b) << b if b and rng.random() < 0.3 else 0)) if b else 0
    lrh = LRH(vl=vl, sl=rng.randrange(16), dlid=dlid & 0xFFFF, pktlen=nbytes // 4, slid=rng.randrange(1, 0xC000),
              rsvd1=rsvd1)
    body = lrh.pack() + tag
    body += bytes(rng.getrandbits(8) for _ in range(nbytes - len(body)))
    return body + bytes([rng.getrandbits(8), rng.getrandbits(8)])


def _pauses(rng, p):
    pattern = [rng.random() < p for _ in range(101)]
    return iter(lambda: pattern[rng.randrange(101)], None)


class Env:
    """Everything around the block, one call of `drive()` / `sample()` per cycle."""

    def __init__(self, dut, cfg, rng):
        self.dut, self.cfg, self.rng = dut, cfg, rng
        n, nvl = cfg.ports, cfg.data_vls
        self.n, self.nvl = n, nvl
        # extended LIDs: the pages 0..2^b - 1 above the 16-bit DLID (`page` picks one at random)
        self.pages = 1 << cfg.ext_lid_bits
        self.lid = self.page() | rng.randrange(1, 64)
        # LFT, by LID: every kind of entry (0 the management port, 1..N, N+1 and 255 invalid)
        # for the LIDs 1..63 of every page; none (255) elsewhere
        self.lft = {pg << 16 | d: rng.choice([0, 255, n + 1] + list(range(1, n + 1)) * 3)
                    for pg in range(self.pages) for d in range(1, 64)}
        self.state = [rng.choice([PortState.DOWN, PortState.INIT, PortState.ARMED, PortState.ACTIVE,
                                  PortState.ACTIVE]) for _ in range(n)]
        self.state[0] = PortState.ACTIVE
        self.v15 = [StreamSource(f"v15__{i}", _pauses(rng, 0.2)) for i in range(n)]
        self.eg = [StreamSource(f"eg__{o}", _pauses(rng, 0.3), blocks_of=lrh_blocks(cfg.data_width, cfg.credit_vcrc))
                   for o in range(n)]
        self.eg_vls = [[] for _ in range(n)]
        self.eg_sent = [[] for _ in range(n)]
        self.sinks = {(o, v): StreamSink(f"src__{o}__{v}", cfg.data_width, _pauses(rng, 0.25))
                      for o in range(n) for v in range(nvl)}
        self.sinks15 = [StreamSink(f"src15__{o}", cfg.data_width, _pauses(rng, 0.25)) for o in range(n)]
        self.taps = [[] for _ in range(n)]        # per input: flits to drive (dicts), None = a gap
        self.tap_sent = []                        # (input, packet bytes, for the switch?)
        self.fccl = [[0] * nvl for _ in range(n)]
        self.fctbs = [[0] * nvl for _ in range(n)]
        self.last_dlid = 0
        self.cycle = 0

    def page(self):
        return self.rng.randrange(self.pages) << 16 if self.pages > 1 else 0

    def entry(self, lid):
        """The LFT entry of `lid` ({page, DLID}): what the management block reads for it."""
        return self.lft.get(lid, 0xFF)

    # ---- stimulus
    def vl15(self, i, pkt):
        self.v15[i].send(to_flits(pkt, self.cfg.data_width))

    def egress(self, o, pkt, vl):
        self.eg[o].send(to_flits(pkt, self.cfg.data_width))
        self.eg_vls[o].append(vl)
        self.eg_sent[o].append(pkt)

    def tap(self, i, pkt, here):
        fl = to_flits(pkt, self.cfg.data_width)
        blocks = -(-len(pkt) // 64)
        for f in fl:
            self.taps[i].append({"valid": 1, "data": f.data, "sop": int(f.sop), "eop": int(f.eop),
                                 "bytes": f.nbytes, "bad": 0, "blocks": blocks, "here": int(here)})
            if self.rng.random() < 0.2:
                self.taps[i].append(None)
        self.tap_sent.append((i, pkt, here))

    @property
    def busy(self):
        return any(s.busy for s in self.v15 + self.eg) or any(self.taps)

    def drive(self):
        d, rng = self.dut, self.rng
        w = {}
        for s in self.v15:
            w.update(s.inputs())
        for o, s in enumerate(self.eg):
            w.update(s.inputs())
            w[f"eg__{o}__vl"] = self.eg_vls[o][0] if self.eg_vls[o] else 0
        for i in range(self.n):
            f = self.taps[i].pop(0) if self.taps[i] else None
            f = f or {"valid": 0, "data": 0, "sop": 0, "eop": 0, "bytes": 0, "bad": 0, "blocks": 0, "here": 0}
            w.update({f"dat__{i}__{k}": v for k, v in f.items()})
        for (o, v), s in self.sinks.items():
            w[f"src__{o}__{v}__ready"] = s.next_ready()
        for o, s in enumerate(self.sinks15):
            w[f"src15__{o}__ready"] = s.next_ready()
        if self.cycle % 37 == 0:                  # credit comes and goes
            for o in range(self.n):
                for v in range(self.nvl):
                    self.fctbs[o][v] = rng.randrange(4096)
                    self.fccl[o][v] = (self.fctbs[o][v] + rng.choice([0, 1, 3, 8, 40, 600, 2047, 2048, 3000])) % 4096
        for o in range(self.n):
            w[f"state__{o}"] = self.state[o]
            for v in range(self.nvl):
                w[f"fccl__{o}__{v}"], w[f"fctbs__{o}__{v}"] = self.fccl[o][v], self.fctbs[o][v]
        w["switch_lid"] = self.lid
        w["lft_port"] = self.entry(self.last_dlid)
        for k, v in w.items():
            getattr(d, k).value = v

    def sample(self):
        d = self.dut
        val = lambda k: int(getattr(d, k).value)  # noqa: E731
        for i, s in enumerate(self.v15):
            s.advance(val(f"v15__{i}__ready"))
        for o, s in enumerate(self.eg):
            r = val(f"eg__{o}__ready")
            if s.cur is not None and r and s.cur.eop:
                self.eg_vls[o].pop(0)
            s.advance(r)
        fields = ("valid", *FLIT)
        for (o, v), s in self.sinks.items():
            s.observe({f"src__{o}__{v}__{k}": val(f"src__{o}__{v}__{k}") for k in fields})
        for o, s in enumerate(self.sinks15):
            s.observe({f"src15__{o}__{k}": val(f"src15__{o}__{k}") for k in fields})
        self.last_dlid = val("lft_dlid")
        self.cycle += 1


async def _run_env(env, stop):
    while not stop[0]:
        await FallingEdge(env.dut.clk)
        env.drive()
        await ReadOnly()
        env.sample()


def _route15(env, pkt):
    """Where a VL15 packet from an input goes: ("queue",), ("port", o) or ("relay_err",)."""
    h = LRH.unpack(pkt[:8])
    lid = h.dlid | (h.rsvd1 % env.pages) << 16          # extended LIDs: the page above the DLID
    e = env.entry(lid)
    uni = 0 < h.dlid < 0xC000
    if lid == 0xFFFF or lid == env.lid or (uni and e == 0):    # permissive: page 0 only
        return ("queue",)
    if uni and 1 <= e <= env.n and env.state[e - 1] >= PortState.INIT:
        return ("port", e - 1)
    return ("relay_err",)


def _route_cpu(env, pkt, tdest):
    """Where a processor packet goes: ("port15", o), ("data", o, vl), ("discard", o), ("error",)."""
    h = LRH.unpack(pkt[:8])
    if len(pkt) != 4 * h.pktlen + 2 or len(pkt) > env.cfg.vl15_max_packet_bytes:
        return ("error",)
    lid = h.dlid | (h.rsvd1 % env.pages) << 16
    port = tdest or (env.entry(lid) if 0 < h.dlid < 0xC000 else 0)
    if not 1 <= port <= env.n:
        return ("error",)
    o = port - 1
    if h.vl == 15:
        return ("port15", o) if env.state[o] >= PortState.INIT else ("discard", o)
    if h.vl < env.nvl and env.state[o] == PortState.ACTIVE:
        return ("data", o, h.vl)
    return ("discard", o)


async def _setup(dut):
    cfg = TB.peek_config()
    qd, sd = cfg.mgmt_queue_flits, cfg.mgmt_send_flits
    ins, outs, qual = mgmt_port(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins if not k.startswith("s_axis") and k != "m_axis_mgmt_tready"})
    await tb.reset()
    rng = random.Random(tb.rng.random())
    env = Env(dut, cfg, rng)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_mgmt"), dut.clk, dut.rst)
    # the processor reads nothing for the first 1500 cycles (the queue fills: drops are
    # counted), then with random pauses
    pauses = _pauses(rng, 0.4)
    t0 = [0]

    def held():
        t0[0] += 1
        return True if t0[0] < 1500 else next(pauses)
    sink.set_pause_generator(iter(held, None))
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_mgmt"), dut.clk, dut.rst)
    src.set_pause_generator(_pauses(rng, 0.3))
    obs = LockstepObserver(dut, MgmtPortModel(cfg, qd, sd), ins, outs, qual, vcd=tb.vcd, start_now=True).start()
    stop = [False]
    cocotb.start_soon(_run_env(env, stop))
    return cfg, rng, env, sink, src, obs, stop, t0


@cocotb.test()
async def relay_queue_and_send(dut):
    cfg, rng, env, sink, src, obs, stop, t0 = await _setup(dut)
    n, nvl = cfg.ports, cfg.data_vls
    # VL15 packets at the inputs: for the switch, routed, unroutable
    # (extended LIDs: in any page; the permissive DLID, 0 and MLIDs out of page 0 are invalid)
    # (the permissive DLID and the switch's LID weighted up; its DLID also in another page)
    other = env.lid ^ (env.pages - 1) << 16
    # (enough for the switch to overflow the receive queue while the processor reads nothing:
    # VL15Dropped counts)
    dl_choices = [0xFFFF] * 24 + [env.lid] * 16 + [other] * 4 + [0, 0xC001, 70, env.lid ^ 1] + list(range(1, 64))
    v15_sent = []
    for _ in range(16 * n):
        i = rng.randrange(n)
        d = rng.choice(dl_choices)
        pkt = _packet(rng, cfg, vl=15, dlid=d if d in (env.lid, other) else d | env.page(), tag=b"V15" + bytes([i]))
        env.vl15(i, pkt)
        v15_sent.append((i, pkt))
    # egress packets (data VLs), marked so that they can be told from the processor's
    for o in range(n):
        for k in range(6):
            vl = rng.randrange(nvl)
            env.egress(o, _packet(rng, cfg, vl=vl, dlid=5, nbytes=rng.choice([8, 64, 200]), tag=b"EG" + bytes([o, k])),
                       vl)
    # data packets at the taps, some for the switch
    for _ in range(4 * n):
        i = rng.randrange(n)
        env.tap(i, _packet(rng, cfg, vl=rng.randrange(nvl), dlid=9, nbytes=rng.choice([24, 64, 256])),
                here=rng.random() < 0.7)
    # the processor's packets: directed, by the LFT, every VL kind, malformed ones
    cpu_sent = []
    for k in range(5 * n):
        vl = rng.choice([15, 15, 0, nvl - 1, min(nvl, 14)])
        tdest = rng.choice([0] + list(range(1, n + 1)) + [n + 1])
        pkt = _packet(rng, cfg, vl=vl, dlid=env.page() | rng.randrange(1, 64), tag=b"CPU" + bytes([k]),
                      nbytes=rng.choice([12, 64, 256]))
        fault = rng.random()
        if k == 1 or fault < 0.08:
            pkt = pkt[:-4]                                     # shorter than its PktLen
        elif k == 2 or fault < 0.12:
            pkt = pkt + bytes(cfg.vl15_max_packet_bytes)       # beyond the limit (at least one of each)
        cpu_sent.append((pkt, tdest))
        await src.send(AxiStreamFrame(pkt, tdest=tdest))
    # a ragged beat: tkeep not all ones before the last (dropped as malformed)
    good = _packet(rng, cfg, vl=15, dlid=3, nbytes=64, tag=b"RAG")
    nb = cfg.bytes_per_flit
    if len(good) > nb:
        ragged = AxiStreamFrame(good, tdest=1)
        ragged.tkeep = [1] * len(good)
        ragged.tkeep[1] = 0
        await src.send(ragged)
        cpu_sent.append((None, 1))
    # a second wave once the processor reads again (t0 counts its tready draws): packets for
    # the switch spaced so that most find room, and more of the processor's data packets
    while t0[0] < 1600:
        await FallingEdge(dut.clk)
    for k in range(6 * n):
        for _ in range(rng.randrange(5, 80)):
            await FallingEdge(dut.clk)
        i = rng.randrange(n)
        env.tap(i, _packet(rng, cfg, vl=rng.randrange(nvl), dlid=9, nbytes=rng.choice([24, 64, 100, 256])),
                here=rng.random() < 0.8)
        pkt = _packet(rng, cfg, vl=15, dlid=rng.choice([0xFFFF, env.lid]), tag=b"V15" + bytes([i]))
        env.vl15(i, pkt)
        v15_sent.append((i, pkt))
        pkt = _packet(rng, cfg, vl=rng.randrange(nvl), dlid=env.page() | rng.randrange(1, 64),
                      tag=b"CPU" + bytes([100 + k]),
                      nbytes=rng.choice([12, 64, 256]))
        tdest = rng.choice([0, 1 + rng.randrange(n)])
        cpu_sent.append((pkt, tdest))
        await src.send(AxiStreamFrame(pkt, tdest=tdest))
    # run until everything has moved (every processor packet sent or counted)
    def cpu_done():
        return (sum(int(getattr(dut, f"{c}__{o}").value) for c in ("xmit", "xmit_discards") for o in range(n))
                + int(dut.tx_errors.value))
    for _ in range(60000):
        await FallingEdge(dut.clk)
        if not env.busy and src.empty() and src.idle() and cpu_done() == len(cpu_sent):
            break
    quiet = 0
    for _ in range(20000):                        # the processor reads again, the queue drains
        await FallingEdge(dut.clk)
        quiet = quiet + 1 if t0[0] > 1500 and not int(dut.m_axis_mgmt_tvalid.value) else 0
        if quiet > 200:
            break
    got = []
    while not sink.empty():
        got.append(sink.recv_nowait())
    stop[0] = True
    cycles = obs.cycles
    await obs.stop()
    c = {name: [int(getattr(dut, f"{name}__{i}").value) for i in range(n)] for name in MGMT_PORT_COUNTERS}
    tx_errors = int(dut.tx_errors.value)

    dut._log.info(f"{cycles} cycles; counters {c}, tx_errors {tx_errors}; {len(got)} packets queued")
    # ---- VL15 from the inputs
    queued = [(bytes(f.tdata), f.tuser if isinstance(f.tuser, list) else [f.tuser]) for f in got]
    out15 = [[p for p, _bad in env.sinks15[o].packets] for o in range(n)]
    exp_err = [0] * n
    exp_sw = [0] * n
    for i, pkt in v15_sent:
        r = _route15(env, pkt)
        if r[0] == "port":
            assert pkt in out15[r[1]], f"VL15 packet from input {i} (DLID {LRH.unpack(pkt[:8]).dlid:#x}) " \
                                       f"not at port {r[1]}"
            out15[r[1]].remove(pkt)
        elif r[0] == "relay_err":
            exp_err[i] += 1
        else:
            exp_sw[i] += 1
    assert c["for_switch"] == exp_sw, f"for_switch {c['for_switch']} != {exp_sw}"
    v15_q = [q for q in queued if q[0][8:11] == b"V15"]
    assert len(v15_q) + sum(c["v15_dropped"]) == sum(exp_sw)
    assert sum(c["v15_dropped"]) > 0, "the receive queue never overflowed"
    for body, users in v15_q:
        i = body[11]
        assert (i, body) in v15_sent and _route15(env, body) == ("queue",)
        assert all(u & 0xFF == i + 1 for u in users), f"tuser {users} for a packet from input {i}"
    # ---- data taps
    dat_q = [q for q in queued if q[0][8:11] != b"V15"]
    here = [(i, p) for i, p, h in env.tap_sent if h]
    for body, users in dat_q:
        i = (users[0] & 0xFF) - 1
        assert (i, body) in here, "a queued data packet that was not for the switch"
    tap_err = len(here) - len(dat_q)
    assert sum(c["relay_err"]) == sum(exp_err) + tap_err, (c["relay_err"], exp_err, tap_err)
    assert sum(c["rcv"]) == len(queued)
    # ---- the processor's packets
    exp_x, exp_d, exp_e = [0] * n, [0] * n, 0
    datas = {(o, v): [p for p, _ in env.sinks[o, v].packets] for o in range(n) for v in range(nvl)}
    for pkt, tdest in cpu_sent:
        r = ("error",) if pkt is None else _route_cpu(env, pkt, tdest)
        if r[0] == "port15":
            assert pkt in out15[r[1]], f"processor VL15 packet (tdest {tdest}) not at port {r[1]}"
            out15[r[1]].remove(pkt)
            exp_x[r[1]] += 1
        elif r[0] == "data":
            assert pkt in datas[r[1], r[2]], f"processor packet (tdest {tdest}) not at port {r[1]} VL {r[2]}"
            datas[r[1], r[2]].remove(pkt)
            exp_x[r[1]] += 1
        elif r[0] == "discard":
            exp_d[r[1]] += 1
        else:
            exp_e += 1
    assert all(not x for x in out15), f"VL15 packets nobody sent: {[len(x) for x in out15]}"
    assert c["xmit"] == exp_x and c["xmit_discards"] == exp_d and tx_errors == exp_e, \
        (c["xmit"], exp_x, c["xmit_discards"], exp_d, tx_errors, exp_e)
    # ---- egress packets: intact, in order, on their VL
    for o in range(n):
        for v in range(nvl):
            exp = [p for p in env.eg_sent[o] if LRH.unpack(p[:8]).vl == v]
            assert datas[o, v] == exp, f"egress packets at port {o} VL {v} differ"


def _top(cfg):
    from hw.switch.mgmt_port import MgmtPort
    return MgmtPort(cfg)


@pytest.mark.parametrize("cfg_name", ["small", "w512", "small-ext"])
@pytest.mark.parametrize("sim", SIMS)
def test_mgmt_port(sim, cfg_name):
    run_cocotb(top=_top, name="ib_mgmt_port", test_module="tb.test_mgmt_port", sim=sim, cfg=CONFIGS[cfg_name])
