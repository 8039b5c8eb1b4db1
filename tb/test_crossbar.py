"""The crossbar on Icarus and Verilator, in lock-step with its model.

Around it, written in the test: N readers that behave as the VOQ buffer's read side (a
one-flit output register per input, a flit issued only into an empty or emptying register,
the first flit of a packet only while `first_ok`, flits of packets read into the void
marked `void`), an output given to one input at a time from the start of its packet until
its last flit is issued (as the allocator does), and egress sinks with random `ready`.

Checked apart from the model: every output receives exactly the packets sent to it, whole,
one after another (never interleaved), with their VL, in order per input; void packets go
nowhere; every reader drains.
"""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.streams import FLIT
from contracts.switch import crossbar
from models.crossbar import CrossbarModel
from models.packet import Flit, from_flits, to_flits
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB, tb_seed

_FL = list(FLIT)


class Readers:
    def __init__(self, cfg, rng, npackets):
        self.cfg, self.rng = cfg, rng
        n = cfg.ports
        self.n = n
        self.todo = [[] for _ in range(n)]                # per input: (port, vl, void, flits)
        self.sent = {(i, o): [] for i in range(n) for o in range(n)}
        for _ in range(npackets):
            i, o = rng.randrange(n), rng.randrange(n)
            body = bytes(rng.getrandbits(8) for _ in range(rng.choice([8, 30, 64, 100, 200])))
            void = rng.random() < 0.1
            pkt = (o, rng.randrange(max(cfg.data_vls, 2)), void, to_flits(body, cfg.data_width, bad=rng.random() < 0.1))
            self.todo[i].append(pkt)
            if not void:
                self.sent[(i, o)].append((body, pkt[1], pkt[3][-1].bad))
        self.cur = [None] * n                             # the packet being read: [port, vl, void, flits, issued]
        self.reg = [None] * n                             # the output register: (flit, port, vl, void)
        self.holder = {}                                  # output -> input holding it (allocator)
        self.ready = [1] * n
        self.got = {(i, o): [] for i in range(n) for o in range(n)}
        self._rx = [None] * n                             # per output: (input, flits) being received
        self.cycle = 0

    def idle(self):
        return not any(self.todo) and not any(self.cur) and not any(self.reg)

    def stim(self, max_cycles):
        rng, n = self.rng, self.n
        for _ in range(max_cycles):
            inp = {}
            for i in range(n):
                r = self.reg[i]
                inp.update({f"r__{i}__valid": int(r is not None), f"r__{i}__void": int(bool(r and r[3])),
                            f"r__{i}__port": r[1] if r else rng.randrange(n), f"r__{i}__vl": r[2] if r else 0})
                f = r[0] if r else None
                inp.update({f"r__{i}__data": f.data if f else 0, f"r__{i}__sop": int(bool(f and f.sop)),
                            f"r__{i}__eop": int(bool(f and f.eop)), f"r__{i}__bytes": f.nbytes if f and f.eop else 0,
                            f"r__{i}__bad": int(bool(f and f.bad))})
                c = self.cur[i]
                inp[f"issue_port__{i}"] = c[0] if c else (self.reg[i][1] if self.reg[i] else 0)
            for o in range(n):
                self.ready[o] = int(rng.random() < 0.7)
                inp[f"out__{o}__ready"] = self.ready[o]
            yield inp
            if self.idle():
                break

    def observe(self, inp, out):
        """The clock edge: outputs take flits, readers issue, packets start."""
        n = self.n
        W = self.cfg.data_width
        for o in range(n):
            if out[f"out__{o}__valid"] and inp[f"out__{o}__ready"]:
                f = Flit(out[f"out__{o}__data"], bool(out[f"out__{o}__sop"]), bool(out[f"out__{o}__eop"]),
                         out[f"out__{o}__bytes"], bad=bool(out[f"out__{o}__bad"]))
                owners = [i for i in range(n) if self.reg[i] and not self.reg[i][3] and self.reg[i][1] == o]
                assert len(owners) == 1, f"output {o} took a flit from inputs {owners}"
                i = owners[0]
                if f.sop:
                    assert self._rx[o] is None, f"output {o}: a packet from input {i} inside another one"
                    self._rx[o] = (i, [], out[f"out__{o}__vl"])
                rx = self._rx[o]
                assert rx is not None and rx[0] == i, f"output {o}: flits of two packets interleaved"
                rx[1].append(f)
                if f.eop:
                    self.got[(i, o)].append((from_flits(rx[1], W), rx[2], f.bad))
                    self._rx[o] = None
        for i in range(n):
            taken = self.reg[i] is not None and out[f"r__{i}__ready"]
            if taken:
                self.reg[i] = None
            c = self.cur[i]
            if c is not None and self.reg[i] is None:
                first = c[4] == 0
                if not first or c[2] or out[f"first_ok__{i}"]:
                    self.reg[i] = (c[3][c[4]], c[0], c[1], c[2])
                    c[4] += 1
                    if c[4] == len(c[3]):                  # last flit issued: the output is free
                        self.cur[i] = None
                        if not c[2]:
                            del self.holder[c[0]]
            if self.cur[i] is None and self.todo[i]:
                o, vl, void, flits = self.todo[i][0]
                if void or o not in self.holder:
                    self.todo[i].pop(0)
                    self.cur[i] = [o, vl, void, flits, 0]
                    if not void:
                        self.holder[o] = i
        self.cycle += 1

    def check(self):
        for k, want in self.sent.items():
            assert self.got[k] == want, f"input {k[0]} -> output {k[1]}: {len(self.got[k])} packets, {len(want)} sent"
        return sum(len(x) for x in self.got.values())


@cocotb.test()
async def packets_through(dut):
    cfg = TB.peek_config()
    ins, outs, qual = crossbar(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    rd = Readers(cfg, random.Random(tb_seed()), 300)
    await cocotb_lockstep(dut, CrossbarModel(cfg), rd.stim(20000), outs, qual, on_cycle=rd.observe, vcd=tb.vcd,
                          start_now=True)
    assert rd.idle(), "the readers did not drain"
    delivered = rd.check()
    assert delivered > 200
    dut._log.info(f"{delivered} packets in {rd.cycle} cycles")


def _top(cfg):
    from hw.switch.crossbar import Crossbar
    from verif.clocked import Clocked
    return Clocked(Crossbar(cfg))


@pytest.mark.parametrize("cfg_name", ["small"])
@pytest.mark.parametrize("sim", SIMS)
def test_crossbar(sim, cfg_name):
    run_cocotb(top=_top, name="ib_crossbar", test_module="tb.test_crossbar", sim=sim, cfg=CONFIGS[cfg_name])
