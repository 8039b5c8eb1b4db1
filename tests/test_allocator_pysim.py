"""iSLIP allocator: RTL vs model in the Amaranth simulator, and matching properties."""
import random

import pytest

from hw.switch.allocator import ISlipAllocator
from models.allocator import ISlipModel, allocator_ports
from tb.common.pysim import pysim_lockstep


def _stim(n, cycles, rng, p_req=0.5, p_done=0.2):
    for _ in range(cycles):
        d = {f"req__{i}": rng.getrandbits(n) if rng.random() < p_req else 0 for i in range(n)}
        d.update({f"done__{i}": int(rng.random() < p_done) for i in range(n)})
        yield d


@pytest.mark.parametrize("n,iters", [(2, 1), (4, 1), (4, 3), (8, 2)])
def test_islip_lockstep(n, iters):
    rng = random.Random(n * 10 + iters)
    _, outs, qual = allocator_ports(n)
    seen = []

    def check(i, o):
        # a matching: each input at most once, only free requesters
        ins = [o[f"match_in__{x}"] for x in range(n) if o[f"match_valid__{x}"]]
        assert len(ins) == len(set(ins))
        seen.append(len(ins))

    pysim_lockstep(ISlipAllocator(n, iters), ISlipModel(n, iters), list(_stim(n, 400, rng)), outs, qual,
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
