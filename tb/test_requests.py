"""The request builder on Icarus and Verilator, in lock-step with its model, in a closed loop
with stand-ins for its neighbours written in the test:

  - VOQ buffers: per input, unicast queues of packets per (output, VL) and a multicast FIFO
    with the ports each packet still owes a copy to; a read started for a packet removes it
    (a copy strikes its port off), the reader is busy for a few cycles and reports done;
  - SL2VL: a table with some entries that are not data VLs, read for each input's copy;
  - VLArb per output: picks one of the VLs the builder says are ready, sometimes another
    one, sometimes none;
  - the allocator: matches free outputs to free inputs among the requests (random order),
    shows a match registered the next cycle, holds input and output until done;
  - downstream credit: FCTBS grows with every packet started, FCCL with the peer's returns,
    sometimes tight; ports leave and rejoin Active.
The neighbours answer combinationally within the cycle, as the hardware does (cocotb
ReadWrite: VLArb sees `ready`, the allocator sees `req`).

Checked apart from the model: a reader starts only for the packet at the head of the
queue it names, on the VL VLArb chose when the match was made, with the whole packet
fitting the credit of that moment; multicast copies go lowest port first; a copy is read
into the void exactly when its port was not Active or its VL not a data VL; every packet
is sent or discarded by the end.
"""
import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly, ReadWrite

from contracts.config import CONFIGS
from contracts.switch import requests
from models.credit import may_send
from models.requests import RequestBuilderModel
from verif.lockstep import LockstepObserver, visible
from verif.runner import SIMS, run_cocotb
from verif.tb import TB, tb_seed


class Neighbours:
    def __init__(self, dut, cfg, rng):
        self.dut, self.cfg, self.rng = dut, cfg, rng
        n, nvl = cfg.ports, cfg.data_vls
        self.n, self.nvl = n, nvl
        self.uq = [{(o, v): [] for o in range(n) for v in range(nvl)} for _ in range(n)]
        self.mcq = [[] for _ in range(n)]                 # [blocks, owed mask, sl, id]
        self.reader = [None] * n                          # cycles left until done
        self.sl2vl = [sum(rng.choice(list(range(nvl)) * 6 + [nvl, 15]) << (4 * k) for k in range(8))
                      for _ in range(2 * n * n)]
        self.active = (1 << n) - 1
        self.fctbs = [[rng.randrange(4096) for _ in range(nvl)] for _ in range(n)]
        self.fccl = [[(self.fctbs[o][v] + 6) % 4096 for v in range(nvl)] for o in range(n)]
        self.busy_in = {}                                 # allocator: input -> output held
        self.match = {}                                   # registered matches: output -> input
        self.at_match = {}                                # output -> (VL, credit (fccl, fctbs) of that VL)
        self.sent, self.voided = [], []
        self.next_id = 0
        self.prev_active = self.active                    # the ports Active last cycle (a discard's decision)
        self.voiding = [False] * n                        # the reader runs a copy into the void
        self.done_bad = [0] * n                           # the reader's done this cycle is a bad packet's
        self.counts = {"copies": 0, "voids": 0, "deep": 0, "starts": 0, "tight": 0}

    def add_packets(self, k):
        rng, n, nvl = self.rng, self.n, self.nvl
        for _ in range(k):
            i = rng.randrange(n)
            blocks = rng.choice([1, 1, 2, 5, self.cfg.max_packet_blocks])
            self.next_id += 1
            if rng.random() < 0.25:
                owed = rng.getrandbits(n) & ~(1 << i) or (1 << ((i + 1) % n))
                self.mcq[i].append([blocks, owed, rng.randrange(16), self.next_id])
            else:
                self.uq[i][(rng.randrange(n), rng.randrange(nvl))].append((blocks, self.next_id))

    @property
    def pending(self):
        return sum(len(q) for u in self.uq for q in u.values()) + sum(len(m) for m in self.mcq)

    def drive_state(self):
        d, n, nvl, rng = self.dut, self.n, self.nvl, self.rng
        for i in range(n):
            for o in range(n):
                ne = sum(1 << v for v in range(nvl) if self.uq[i][(o, v)])
                dp = sum(1 << v for v in range(nvl) if len(self.uq[i][(o, v)]) >= 2)
                getattr(d, f"q__{i}__nonempty__{o}").value = ne
                getattr(d, f"q__{i}__deep__{o}").value = dp
                for v in range(nvl):
                    q = self.uq[i][(o, v)]
                    getattr(d, f"q__{i}__head_blocks__{o}__{v}").value = q[0][0] if q else rng.randrange(8)
            h = self.mcq[i][0] if self.mcq[i] else None
            d_ = {"mc_valid": int(h is not None), "mc_mask": h[1] if h else 0, "mc_sl": h[2] if h else 0,
                  "mc_blocks": h[0] if h else 0, "busy": int(self.reader[i] is not None),
                  "done": int(self.reader[i] == 0),
                  # the reader's last two cycles or the one before (done only ever with ending)
                  "ending": int(self.reader[i] is not None and self.reader[i] <= 2),
                  # a quarter of the packets ended bad (a discard of one counts nothing)
                  "done_bad": int(self.reader[i] == 0 and rng.random() < 0.25)}
            self.done_bad[i] = d_["done_bad"]
            for k, v in d_.items():
                getattr(d, f"q__{i}__{k}").value = v
            if h:
                port = min(o for o in range(n) if h[1] >> o & 1)
                word = self.sl2vl[(i * n + port) * 2 + h[2] // 8]
            else:
                word = rng.getrandbits(32)
            getattr(d, f"mc_sl2vl_word__{i}").value = word
        d.active.value = self.active
        for o in range(n):
            for v in range(nvl):
                getattr(d, f"fccl__{o}__{v}").value = self.fccl[o][v]
                getattr(d, f"fctbs__{o}__{v}").value = self.fctbs[o][v]
        d.alloc__in_busy.value = sum(1 << i for i in self.busy_in)
        for o in range(n):
            getattr(d, f"alloc__match_valid__{o}").value = int(o in self.match)
            getattr(d, f"alloc__match_in__{o}").value = self.match.get(o, rng.randrange(n))
            getattr(d, f"alloc__new_valid__{o}").value = 0
            getattr(d, f"alloc__new_in__{o}").value = 0

    def drive_vlarb(self):
        d, n, rng = self.dut, self.n, self.rng
        self.sel = {}
        for o in range(n):
            ready = int(getattr(d, f"va__{o}__ready").value)
            vls = [v for v in range(self.nvl) if ready >> v & 1]
            r = rng.random()
            if vls and r < 0.85:
                sv, vl = 1, rng.choice(vls)
            elif r < 0.93:                                 # a VL that is not ready (the builder must cope)
                sv, vl = 1, rng.randrange(self.nvl)
            else:
                sv, vl = 0, rng.randrange(self.nvl)
            getattr(d, f"va__{o}__sel_valid").value = sv
            getattr(d, f"va__{o}__sel_vl").value = vl
            self.sel[o] = (sv, vl)

    def drive_alloc(self):
        d, n, rng = self.dut, self.n, self.rng
        req = [int(getattr(d, f"alloc__req__{i}").value) for i in range(n)]
        done = [int(getattr(d, f"alloc__done__{i}").value) for i in range(n)]
        self.deep_seen = sum(int(getattr(d, f"alloc__deep__{i}").value) != 0 for i in range(n))
        free_in = [i for i in range(n) if i not in self.busy_in or done[i]]
        held = {o for i, o in self.busy_in.items() if not done[i]}
        free_out = [o for o in range(n) if o not in held]
        rng.shuffle(free_in)
        self.new = {}
        for i in free_in:
            outs = [o for o in free_out if req[i] >> o & 1 and o not in self.new]
            if outs:
                o = rng.choice(outs)
                self.new[o] = i
        for o, i in self.new.items():
            getattr(d, f"alloc__new_valid__{o}").value = 1
            getattr(d, f"alloc__new_in__{o}").value = i
        self.done = done

    def edge(self):
        """What happens at the clock edge, from the builder's outputs of this cycle."""
        d, n, nvl, rng = self.dut, self.n, self.nvl, self.rng
        for o in self.new:
            sv, vl = self.sel[o]
            assert sv and self.active >> o & 1, f"a match for output {o}, which VLArb did not pick or is not Active"
            self.at_match[o] = (vl, self.fccl[o][vl], self.fctbs[o][vl])
        for i in range(n):
            if self.done[i]:
                self.busy_in.pop(i, None)
        for i in range(n):
            # a copy read into the void counts (a relay error) when it ends, unless its packet
            # ended bad (its receiver counted it)
            ends = self.reader[i] == 0
            want = int(ends and self.voiding[i] and not self.done_bad[i])
            got = int(getattr(d, f"discard__{i}").value)
            assert got == want, (f"input {i}: discard {got}, expected {want} (void read ending "
                                 f"{ends and self.voiding[i]}, tail bad {self.done_bad[i]})")
            if ends:
                self.voiding[i] = False
            if self.reader[i] is not None:
                self.reader[i] = None if self.reader[i] == 0 else self.reader[i] - 1
            if not int(getattr(d, f"rd__{i}__start").value):
                continue
            assert self.reader[i] is None, f"input {i}: a read started while its reader was busy"
            port = int(getattr(d, f"rd__{i}__port").value)
            mc, void = int(getattr(d, f"rd__{i}__mc").value), int(getattr(d, f"rd__{i}__void").value)
            self.reader[i] = rng.choice([0, 0, 1, 3, 6])
            self.counts["starts"] += 1
            if void:
                h = self.mcq[i][0]
                lowest = min(o for o in range(n) if h[1] >> o & 1)
                assert port == lowest, f"input {i}: discard read for port {port}, lowest owed {lowest}"
                vl = self.sl2vl[(i * n + port) * 2 + h[2] // 8] >> (4 * (h[2] % 8)) & 0xF
                was = self.prev_active
                self.voiding[i] = True
                assert not (was >> port & 1) or vl >= nvl, \
                    f"input {i}: copy for port {port} (Active, VL {vl}) read into the void"
                self._strike(i, port)
                self.voided.append((h[3], port))
                self.counts["voids"] += 1
                continue
            assert self.match.get(port) == i, f"input {i}: a read for output {port} without its match"
            vl, fccl, fctbs = self.at_match[port]
            assert int(getattr(d, f"rd__{i}__vl").value) == vl, f"input {i}: VL other than VLArb's choice"
            if mc:
                h = self.mcq[i][0]
                lowest = min(o for o in range(n) if h[1] >> o & 1)
                assert port == lowest, f"input {i}: copy for port {port} before port {lowest}"
                cvl = self.sl2vl[(i * n + port) * 2 + h[2] // 8] >> (4 * (h[2] % 8)) & 0xF
                assert cvl == vl, f"input {i}: copy on VL {vl}, SL2VL says {cvl}"
                blocks, pid = h[0], h[3]
                self._strike(i, port)
                self.counts["copies"] += 1
            else:
                q = self.uq[i][(port, vl)]
                assert q, f"input {i}: a read for the empty queue ({port}, VL {vl})"
                blocks, pid = q.pop(0)
            assert may_send(fccl, fctbs, blocks), f"input {i}: {blocks} blocks matched without the credit"
            self.fctbs[port][vl] = (self.fctbs[port][vl] + blocks) % 4096
            self.sent.append((pid, port))
        self.prev_active = self.active
        self.match = dict(self.new)
        for o, i in self.new.items():
            self.busy_in[i] = o
        self.counts["deep"] += self.deep_seen
        # the peers return credit; sometimes little; ports come and go
        for o in range(n):
            for v in range(nvl):
                room = (self.fccl[o][v] - self.fctbs[o][v]) % 4096
                if room < 60 and rng.random() < 0.15:
                    self.fccl[o][v] = (self.fccl[o][v] + rng.choice([1, 2, 8])) % 4096
                if rng.random() < 0.01:          # now and then the largest window (IBA §7.9.4:
                    # at most 2048 blocks beyond FCTBS), at the edge of what fits
                    self.fccl[o][v] = (self.fctbs[o][v] + rng.choice([2048, 2047, 2046, 2044, 2041])) % 4096
                elif rng.random() < 0.01:        # or back to a narrow one
                    self.fccl[o][v] = (self.fctbs[o][v] + rng.randrange(8)) % 4096
                # a head packet waiting for credit
                if any(q[(o, v)] and not may_send(self.fccl[o][v], self.fctbs[o][v], q[(o, v)][0][0])
                       for q in self.uq):
                    self.counts["tight"] += 1
        if rng.random() < 0.01:
            self.active ^= 1 << rng.randrange(n)
        if rng.random() < 0.02:
            self.active = (1 << n) - 1

    def _strike(self, i, port):
        h = self.mcq[i][0]
        h[1] &= ~(1 << port)
        if not h[1]:
            self.mcq[i].pop(0)


@cocotb.test()
async def closed_loop(dut):
    cfg = TB.peek_config()
    ins, outs, qual = requests(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    rng = random.Random(tb_seed())
    nb = Neighbours(dut, cfg, rng)
    nb.drive_state()
    obs = LockstepObserver(dut, RequestBuilderModel(cfg), ins, visible(outs), qual, vcd=tb.vcd,
                           start_now=True).start()
    nb.add_packets(80)
    for c in range(4000):
        if c:
            await FallingEdge(dut.clk)
            nb.drive_state()
        await ReadWrite()
        nb.drive_vlarb()
        await ReadWrite()
        nb.drive_alloc()
        await ReadOnly()
        nb.edge()
        if c in (700, 1400, 2100):
            nb.add_packets(80)
        if c > 2400 and c % 100 == 0:             # the end: every port Active, credit for all
            nb.active = (1 << cfg.ports) - 1
            nb.fccl = [[(x + 2048) % 4096 for x in row] for row in nb.fctbs]
        if c > 2500 and nb.pending == 0 and all(r is None for r in nb.reader):
            break
    await FallingEdge(dut.clk)
    await obs.stop()
    assert nb.pending == 0, f"{nb.pending} packets never sent"
    ids = [p for p, _ in nb.sent] + [p for p, _ in nb.voided]
    assert len(nb.sent) > 100 and nb.counts["copies"] > 10 and nb.counts["voids"] > 0, nb.counts
    assert nb.counts["deep"] > 0 and nb.counts["tight"] > 0, nb.counts
    assert len(set(ids)) <= nb.next_id
    dut._log.info(f"{len(nb.sent)} reads, {nb.counts}, {obs.cycles} cycles in lock-step")


def _top(cfg):
    from hw.switch.requests import RequestBuilder
    return RequestBuilder(cfg)


@pytest.mark.parametrize("cfg_name", ["small", "small-vl1"])
@pytest.mark.parametrize("sim", SIMS)
def test_requests(sim, cfg_name):
    cfg = CONFIGS["small"]
    if cfg_name == "small-vl1":
        cfg = cfg.replace(name="small-vl1", data_vls=1)
    run_cocotb(top=_top, name="ib_requests", test_module="tb.test_requests", sim=sim, cfg=cfg)
