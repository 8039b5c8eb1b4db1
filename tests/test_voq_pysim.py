"""VOQ input buffer: RTL (linked lists of blocks) vs the queue-level model, in the Amaranth
simulator, under random traffic that respects the credit budget, random reads and random
backpressure; plus an independent scoreboard of order per queue and intact bytes."""
import random

import pytest

from contracts.config import CONFIGS
from contracts.switch import voq
from hw.switch.voq import VOQBuffer
from models.voq import VOQModel
from tb.voq_traffic import Traffic
from verif.lockstep import visible
from verif.pysim import pysim_lockstep


# in `make sim` only the width tb/test_voq.py does not run (W=512); the others, which it runs on
# Icarus and Verilator, in sim-long
@pytest.mark.parametrize("cfg_name", [c if c == "w512" else pytest.param(c, marks=pytest.mark.long)
                                      for c in ("small", "w128", "w512", "small-novcrc", "small-rxreg")])
def test_voq_lockstep(cfg_name):
    """small-rxreg has the adaptive and SwitchLifetime outputs (head_ar, head_old)."""
    cfg = CONFIGS[cfg_name]
    rng = random.Random(7)
    model = VOQModel(cfg)
    t = Traffic(cfg, rng, 150, model)
    _, outs, qual = voq(cfg).ports()
    pysim_lockstep(VOQBuffer(cfg), model, t.stim(6000), visible(outs), qual, on_cycle=t.observe)
    assert t.todo == 0, "traffic generator starved (credits never came back)"
    for k, pk in t.got.items():
        assert pk == t.sent[k][:len(pk)], f"queue {k}: order or data broken"
    assert sum(len(v) for k, v in t.got.items() if k[0] == "mc") > 10, "too few multicast copies read"
    assert t.voids > 3, "no complete bad packet was read into the void"
    assert sum(len(v) for v in t.got.values()) > 100
    assert not cfg.lifetimes or t.old_seen > 100, "no head grew old: head_old untested"
    assert t.ending_seen > 20, "ending never came before done: the hint is untested apart from done"
