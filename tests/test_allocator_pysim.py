"""iSLIP allocator: RTL vs model in the Amaranth simulator, and matching properties."""
import random

import pytest

from contracts.switch import allocator
from hw.switch.allocator import ISlipAllocator
from models.allocator import ISlipModel
from verif.pysim import pysim_lockstep


def _stim(n, cycles, rng, p_req=0.5, p_done=0.2):
    for _ in range(cycles):
        d = {f"req__{i}": rng.getrandbits(n) if rng.random() < p_req else 0 for i in range(n)}
        d.update({f"deep__{i}": d[f"req__{i}"] & rng.getrandbits(n) for i in range(n)})
        d.update({f"done__{i}": int(rng.random() < p_done) for i in range(n)})
        yield d


@pytest.mark.parametrize("n,iters,k", [(2, 1, 1), (4, 1, 1), (4, 3, 1), (8, 2, 1), (4, 1, 2), (8, 2, 8)])
def test_islip_lockstep(n, iters, k):
    rng = random.Random(n * 10 + iters + 100 * k)
    _, outs, qual = allocator(n).ports()
    seen = []

    def check(i, o):
        # a matching: each input at most once, only free requesters
        ins = [o[f"match_in__{x}"] for x in range(n) if o[f"match_valid__{x}"]]
        assert len(ins) == len(set(ins))
        seen.append(len(ins))

    pysim_lockstep(ISlipAllocator(n, iters, k), ISlipModel(n, iters, k), list(_stim(n, 400, rng)), outs, qual,
                   on_cycle=check)
    assert sum(seen) > 0


def test_full_request_matrix_reaches_full_matching():
    """All inputs requesting all outputs, no releases: iSLIP with one iteration needs a
    few cycles to desynchronise; once matched, the pairs hold."""
    n = 4
    m = ISlipModel(n, 1)
    req = {f"req__{i}": (1 << n) - 1 for i in range(n)} | {f"done__{i}": 0 for i in range(n)}
    for _ in range(2 * n):
        o = m.step(req)
    assert o["in_busy"] == (1 << n) - 1 and o["out_busy"] == (1 << n) - 1


@pytest.mark.parametrize("k", [2, 8])
def test_depth_priority_never_starves_a_shallow_queue(k):
    """Inputs 1 and 2 keep deep queues for output 0, input 0 a shallow one: deep requesters
    win the grants, but every K-th match of the output is a plain round-robin grant with its
    own pointer, so input 0 is granted within N plain grants (N x K matches). (With one
    shared pointer the deep grants could keep moving it past input 0 for ever.)"""
    n = 4
    m = ISlipModel(n, 1, k)
    busy = {}
    grants = []
    for _ in range(40 * n * k):
        done = {i: 1 for i in list(busy) if busy[i] == 0}
        for i in done:
            del busy[i]
        inp = {f"req__{i}": 1 if i < 3 and i not in busy else 0 for i in range(n)}
        inp.update({f"deep__{i}": 1 if i in (1, 2) else 0 for i in range(n)})
        inp.update({f"done__{i}": done.get(i, 0) for i in range(n)})
        m.step(inp)
        for i in busy:
            busy[i] -= 1
        for _o, i in m.match.items():
            busy[i] = 2
            grants.append(i)
    gaps = [b - a for a, b in zip([-1] + [x for x, i in enumerate(grants) if i == 0],
                                  [x for x, i in enumerate(grants) if i == 0], strict=False)]
    assert gaps and max(gaps) <= n * k, f"input 0 waited {max(gaps, default='for ever')} matches (K={k})"
    assert grants.count(0) <= len(grants) / k + 1          # the deep queues get the rest
