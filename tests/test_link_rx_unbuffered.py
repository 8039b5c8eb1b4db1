"""LinkRx without its data-VL buffers (as the switch uses it): RTL vs model in the Amaranth
simulator; accepted packets leave on `acc` intact and credits return through `release`."""
import random

from contracts.config import CONFIGS
from contracts.defs import PortState
from contracts.link import link_rx
from hw.link.link_rx import LinkRx
from models.link_rx import LinkRxModel
from models.packet import Flit, from_flits
from verif.ib.stimulus import RX_IDLE, cycles, idle_random, make_item
from verif.pysim import pysim_lockstep


def test_unbuffered_lockstep_and_release():
    cfg = CONFIGS["small"]
    rng = random.Random(4)
    ins, outs, qual = link_rx(cfg, buffered=False).ports()
    items = [make_item("good", cfg, rng) for _ in range(30)]
    # keep within each VL's credit: packets of at most buffer/4 blocks, releases come back
    pending = []          # (cycle due, vl, blocks)
    got, cur = [], []
    state = {"cyc": 0}

    def stim():
        for c in list(cycles(items, idle_random(0.3, rng))) + [dict(RX_IDLE)] * 200:
            c = dict(c, state=int(PortState.ACTIVE), vl15__ready=1)
            rel = [0] * cfg.data_vls
            for p in [p for p in pending if p[0] <= state["cyc"]]:
                if rel[p[1]] == 0:
                    rel[p[1]] = p[2]
                    pending.remove(p)
            c.update({f"release__{i}": rel[i] for i in range(cfg.data_vls)})
            yield c
            state["cyc"] += 1

    def observe(i, o):
        if o["acc__valid"]:
            if o["acc__sop"]:
                state["blocks"], state["vl"] = o["acc__blocks"], o["acc__vl"]
            cur.append(Flit(o["acc__data"], bool(o["acc__sop"]), bool(o["acc__eop"]),
                            o["acc__bytes"] if o["acc__eop"] else cfg.bytes_per_flit))
            if o["acc__eop"]:
                got.append(from_flits(cur, cfg.data_width))
                cur.clear()
                pending.append((state["cyc"] + rng.randrange(1, 30), state["vl"], state["blocks"]))

    model = LinkRxModel(cfg, buffered=False)
    pysim_lockstep(LinkRx(cfg, buffered=False), model, stim(), outs, qual, on_cycle=observe)
    want = [it.data for it in items if not it.link]
    assert got == want
    assert model.free == [cfg.buffer_blocks_per_vl] * cfg.data_vls
