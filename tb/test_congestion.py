"""Congestion marking (hw/switch/congestion.py) on Icarus and Verilator, in lock-step with
its model, fed as the switch feeds it: every input writes packets into its buffer (sop
flits, some multicast, some flits that are not a sop) and starts reads of its queues' heads
(some multicast copies), outputs offer flits with random LRHs to egresses that take them or
not, and the ports' CC_PORT words change (thresholds, packet sizes, marking rates).

Checked apart from the model, with this test's own LRH decode: a marked packet is a sop
taken by its egress, on a VL the marker calls congested, with LNH 2 or 3 and PktLen at least
the port's packet size; `marked` counts the marks. The premise: queues rise above and fall
below the thresholds (congestion both set and cleared), and packets are marked and passed.
"""
import random
from collections import deque

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.switch import congestion
from models.congestion import CongestionModel
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB, tb_seed


class Traffic:
    def __init__(self, cfg, rng):
        self.cfg, self.rng = cfg, rng
        n, nvl = cfg.ports, cfg.data_vls
        self.n, self.nvl = n, nvl
        self.maxb = cfg.max_packet_blocks
        self.fifo = {(i, o, v): deque() for i in range(n) for o in range(n) for v in range(nvl)}
        self.room = nvl * cfg.buffer_blocks_per_vl          # blocks an input's buffer holds
        self.held = [0] * n
        self.cc = [0] * n
        self.seen = {"marks": 0, "passed": 0, "set": 0, "cleared": 0}
        self.last_cong = [0] * n
        self.marked = [0] * n

    def stim(self, cycles):
        rng, n, nvl, W = self.rng, self.n, self.nvl, self.cfg.data_width
        for c in range(cycles):
            if c % 500 == 0 or rng.random() < 0.002:         # the SM rewrites CC_PORT
                o = rng.randrange(n)
                self.cc[o] = rng.choice([0, 12, 14, 15, rng.randrange(16)]) | rng.randrange(3) << 8 \
                    | rng.choice([0, 0, 1, 3]) << 16
            drain = (c // 700) % 2 == 1                       # alternate filling and draining
            inp = {f"cc__{o}": self.cc[o] for o in range(n)}
            for i in range(n):
                # a read start: the head of one of this input's queues (before this cycle's write)
                full = [k for k in self.fifo if k[0] == i and self.fifo[k]]
                start = {"start": 0, "mc": 0, "port": rng.randrange(n), "vl": rng.randrange(nvl),
                         "blocks": rng.randrange(1, self.maxb + 1)}
                if full and rng.random() < (0.5 if drain else 0.15):
                    k = rng.choice(full)
                    b = self.fifo[k].popleft()
                    self.held[i] -= b
                    start.update(start=1, port=k[1], vl=k[2], blocks=b)
                elif rng.random() < 0.05:
                    start.update(start=1, mc=1)
                inp.update({f"deq__{i}__{k}": x for k, x in start.items()})
                # a write: a sop queues a packet when it is not multicast
                w = {"valid": int(rng.random() < 0.4), "sop": int(rng.random() < 0.5), "mcast": int(rng.random() < 0.1),
                     "port": rng.randrange(n), "vl": rng.randrange(nvl), "blocks": rng.randrange(1, self.maxb + 1)}
                if w["valid"] and w["sop"] and not w["mcast"]:
                    if drain or self.held[i] + w["blocks"] > self.room:
                        w["sop"] = 0
                    else:
                        self.fifo[(i, w["port"], w["vl"])].append(w["blocks"])
                        self.held[i] += w["blocks"]
                inp.update({f"enq__{i}__{k}": x for k, x in w.items()})
            for o in range(n):
                lnh = rng.choice([0, 1, 2, 2, 3, 3])
                pktlen = rng.choice([rng.randrange(20), rng.randrange(2048), 5, 15, 16, 32])
                lrh = rng.getrandbits(16) & ~3 | lnh                      # VL, LVer, SL, rsvd, LNH
                lrh = lrh << 48 | rng.getrandbits(16) << 32 | rng.getrandbits(5) << 27 | pktlen << 16 \
                    | rng.getrandbits(16)
                data = lrh << (W - 64) | rng.getrandbits(W - 64)
                inp.update({f"eg__{o}__valid": int(rng.random() < 0.6), f"eg__{o}__sop": int(rng.random() < 0.6),
                            f"eg__{o}__ready": int(rng.random() < 0.7), f"eg__{o}__vl": rng.randrange(nvl),
                            f"eg__{o}__data": data})
            yield inp

    def observe(self, inp, out):
        W = self.cfg.data_width
        for o in range(self.n):
            cong = out[f"congested__{o}"]
            self.seen["set"] += bool(cong & ~self.last_cong[o])
            self.seen["cleared"] += bool(self.last_cong[o] & ~cong)
            self.last_cong[o] = cong
            assert out[f"marked__{o}"] == self.marked[o], f"output {o}: marked {out[f'marked__{o}']}, " \
                                                          f"{self.marked[o]} marks seen"
            lrh = inp[f"eg__{o}__data"] >> (W - 64)
            lnh, pktlen = lrh >> 48 & 3, lrh >> 16 & 0x7FF          # byte 1 bits 1:0; bytes 4-5 bits 10:0
            taken = inp[f"eg__{o}__valid"] and inp[f"eg__{o}__sop"] and inp[f"eg__{o}__ready"]
            if out[f"mark__{o}"]:
                size = inp[f"cc__{o}"] >> 8 & 0xFF
                assert taken and cong >> inp[f"eg__{o}__vl"] & 1, (o, inp, out)
                assert lnh in (2, 3) and 4 * pktlen >= 64 * size, (o, lnh, pktlen, size)
                self.marked[o] += 1
                self.seen["marks"] += 1
            elif taken and cong >> inp[f"eg__{o}__vl"] & 1 and (lnh == 2 and pktlen >= 5):
                self.seen["passed"] += 1


@cocotb.test()
async def marking_under_traffic(dut):
    cfg = TB.peek_config()
    ins, outs, qual = congestion(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    t = Traffic(cfg, random.Random(tb_seed()))
    await cocotb_lockstep(dut, CongestionModel(cfg), t.stim(6000), outs, qual, on_cycle=t.observe, vcd=tb.vcd,
                          start_now=True)
    assert t.seen["marks"] > 50 and t.seen["passed"] > 50, t.seen
    assert t.seen["set"] > 10 and t.seen["cleared"] > 10, t.seen
    dut._log.info(f"{t.seen}")


def _top(cfg):
    from hw.switch.congestion import CongestionMarker
    return CongestionMarker(cfg)


@pytest.mark.parametrize("sim", SIMS)
def test_congestion(sim):
    run_cocotb(top=_top, name="ib_congestion", test_module="tb.test_congestion", sim=sim, cfg=CONFIGS["small-rxreg"])
