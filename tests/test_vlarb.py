"""VL arbitration: RTL vs model (Amaranth simulator) and bandwidth shares following the
weights."""
import random
from collections import Counter

import pytest

from contracts.switch import vlarb
from hw.switch.vlarb import VLArbiter
from models.vlarb import VLArbModel
from verif.pysim import pysim_lockstep


def _entry(vl, w):
    return vl | w << 4


def _stim(nvl, e, rng, cycles):
    high = [_entry(rng.randrange(nvl + 1), rng.choice([0, 0, 1, 4, 20])) for _ in range(e)]
    low = [_entry(rng.randrange(nvl), rng.choice([0, 1, 2, 8, 64, 255])) for _ in range(e)]
    sent = 0
    for c in range(cycles):
        # `sent` never in two consecutive cycles (the contract; the switch holds an output
        # for at least two cycles after a match)
        sent = int(not sent and rng.random() < 0.6)
        if c % 97 == 0:
            high[rng.randrange(e)] = _entry(rng.randrange(nvl), rng.choice([0, 3, 9]))
        d = {"ready": rng.getrandbits(nvl), "ready15": int(rng.random() < 0.05),
             "limit": rng.choice([0, 1, 255]) if c % 50 == 0 else 1, "sent": sent,
             "blocks": rng.randrange(1, 40)}
        d.update({f"high__{k}": high[k] for k in range(e)})
        d.update({f"low__{k}": low[k] for k in range(e)})
        yield d


@pytest.mark.parametrize("nvl,e", [(1, 1), (2, 4), (4, 8), (8, 8)])
def test_vlarb_lockstep(nvl, e):
    rng = random.Random(nvl * 31 + e)
    _, outs, qual = vlarb(nvl, e).ports()
    pysim_lockstep(VLArbiter(nvl, e), VLArbModel(nvl, e), list(_stim(nvl, e, rng, 1500)), outs, qual)


def _shares(low, high=(), limit=255, nvl=4, e=8, blocks=4, cycles=4000):
    m = VLArbModel(nvl, e)
    inp = {"ready": (1 << nvl) - 1, "ready15": 0, "limit": limit, "sent": 1, "blocks": blocks}
    tab = {"low": list(low) + [(0, 0)] * (e - len(low)), "high": list(high) + [(0, 0)] * (e - len(high))}
    for t in ("low", "high"):
        inp.update({f"{t}__{k}": _entry(*tab[t][k]) for k in range(e)})
    got = Counter()
    for c in range(cycles):                 # a packet every second cycle
        o = m.step(dict(inp, sent=c % 2 == 0))
        if c % 2 == 0 and o["sel_valid"]:
            got[o["sel_vl"]] += blocks
    tot = sum(got.values())
    return {v: got[v] / tot for v in got}


def test_low_table_shares_follow_weights():
    s = _shares([(0, 8), (1, 16), (2, 32), (3, 8)])
    assert abs(s[0] - 0.125) < 0.01 and abs(s[1] - 0.25) < 0.01 and abs(s[2] - 0.5) < 0.01


def test_high_priority_limit():
    # unbounded: low never served while high is ready
    assert _shares([(1, 4)], high=[(0, 4)], limit=255).get(1, 0) == 0
    # limit 1 (4 KB = 64 blocks): about one 4-block low packet per 64 high blocks
    s = _shares([(1, 4)], high=[(0, 4)], limit=1)
    assert abs(s[1] - 4 / (64 + 4)) < 0.01
    # limit 0: one high packet, then one low
    assert abs(_shares([(1, 4)], high=[(0, 4)], limit=0)[1] - 0.5) < 0.01


def test_consecutive_sent_is_refused():
    m = VLArbModel(2, 2)
    inp = {"ready": 0b11, "ready15": 0, "limit": 255, "sent": 1, "blocks": 1,
           "low__0": _entry(0, 4), "low__1": _entry(1, 4), "high__0": 0, "high__1": 0}
    m.step(dict(inp, sent=0))              # the first choice is offered from the next cycle
    m.step(inp)
    with pytest.raises(ValueError, match="consecutive"):
        m.step(inp)


def test_vl15_first_and_unready_vls_skipped():
    m = VLArbModel(4, 2)
    base = {"ready": 0b0100, "ready15": 1, "limit": 255, "sent": 0, "blocks": 1,
            "low__0": _entry(1, 10), "low__1": _entry(2, 10), "high__0": 0, "high__1": 0}
    m.step(base)                            # (a cycle ahead: each choice is offered the next cycle)
    assert m.step(dict(base, ready15=0))["sel_vl"] == 15
    assert m.step(base)["sel_vl"] == 2
