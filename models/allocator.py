"""Golden model of the iSLIP switch allocator (McKeown, "The iSLIP scheduling algorithm for
input-queued switches", IEEE/ACM ToN 1999), packet-granular, cycle by cycle.

See hw/switch/allocator.py for the port contract. `step(inputs)` returns the registered
outputs of this cycle and advances one clock edge.
"""
from __future__ import annotations

__all__ = ["ISlipModel",]


def _rr(cands: set[int], ptr: int, n: int) -> int | None:
    for k in range(n):
        j = (ptr + k) % n
        if j in cands:
            return j
    return None


class ISlipModel:
    def __init__(self, n: int, iterations: int = 1, fair_every: int = 1):
        """fair_every = K > 1: depth priority with every K-th match of an output a plain
        round-robin grant (hw/switch/allocator.py); 1: plain iSLIP."""
        self.n, self.iterations, self.k = n, iterations, fair_every
        self.g = [0] * n
        self.gh = [0] * n                         # pointer of the grants among deep requesters
        self.count = [0] * n                      # matches per output, mod K
        self.a = [0] * n
        self.in_busy: dict[int, int] = {}        # input -> output it holds
        self.match = {}                           # registered: output -> input (this cycle's pulse)

    def step(self, inp: dict) -> dict:
        n = self.n
        out = {f"match_valid__{o}": int(o in self.match) for o in range(n)}
        out.update({f"match_in__{o}": self.match.get(o, 0) for o in range(n)})
        out["out_busy"] = sum(1 << o for o in self.in_busy.values())
        out["in_busy"] = sum(1 << i for i in self.in_busy)

        # tails release their input and output for matching in this same cycle
        for i in [i for i in self.in_busy if inp[f"done__{i}"]]:
            del self.in_busy[i]
        free_in = {i for i in range(n) if i not in self.in_busy}
        free_out = set(range(n)) - set(self.in_busy.values())
        req = {i: {o for o in free_out if inp[f"req__{i}"] >> o & 1} for i in free_in}
        match = {}
        for it in range(self.iterations):
            grants = {}
            plain = {}
            for o in free_out:
                cand = {i for i in free_in if o in req[i]}
                deep = {i for i in cand if inp.get(f"deep__{i}", 0) >> o & 1} if self.k > 1 else set()
                plain[o] = not deep or self.count[o] == self.k - 1
                gi = _rr(cand, self.g[o], n) if plain[o] else _rr(deep, self.gh[o], n)
                if gi is not None:
                    grants.setdefault(gi, set()).add(o)
            for i, outs in grants.items():
                o = _rr(outs, self.a[i], n)
                match[o] = i
                free_in.discard(i)
                free_out.discard(o)
                if it == 0:                       # pointers move on first-round accepts only
                    if plain[o]:
                        self.g[o] = (i + 1) % n
                    else:
                        self.gh[o] = (i + 1) % n
                    self.a[i] = (o + 1) % n
        for o in match:
            self.count[o] = (self.count[o] + 1) % self.k if self.k > 1 else 0
        for o, i in match.items():
            self.in_busy[i] = o
        self.match = match
        out.update({f"new_valid__{o}": int(o in match) for o in range(n)})
        out.update({f"new_in__{o}": match.get(o, 0) for o in range(n)})
        return out
