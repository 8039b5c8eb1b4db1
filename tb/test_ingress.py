"""An input port's ingress (route lookup + VOQ write) on Icarus and Verilator, in lock-step
with its model.

Around the block: an accepted stream of packets with gaps (every LID range: unicast DLIDs
whose LFT entry is a physical port, 0 (the management port), N + 1 or 255; DLID 0 (whose
entry says "the switch"), beyond the LFT, permissive; MLIDs inside and beyond the MFT; some
tails marked bad), the flits on the link a cycle (two with cfg.rx_register) before they are
accepted, the table entries for each packet's DLID two cycles after its first flit was on the
link as the switch's block RAMs deliver them (anything, management bits included, where the
DLID has no entry in that table), the input's SL2VL words and the AR groups a cycle after it
(junk in every other cycle), port states (and failover redirects) changing at random,
credit returns from the VOQ at random.

Checked apart from the model, packet by packet against the route lookup's reference
function (models.route, itself checked against the RTL in tests/test_route.py): every
routed packet reaches the VOQ write port whole, with its output or port mask, output VL,
SL, input VL and blocks; a refused packet writes nothing, its blocks come back on its VL,
and it is a relay error unless it is for the management port or its
tail is bad (then the receiver's error counts it alone); the
management tap sees every flit, `here` at the sop exactly for the packets the tables give
the management port; the credit returned adds up.
"""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.defs import RouteDrop
from contracts.switch import accepted_lag, ingress
from models.credit import packet_blocks
from models.ingress import IngressModel
from models.packet import LRH, from_flits, to_flits
from models.route import for_switch, route, route_lid
from verif.lockstep import cocotb_lockstep, visible
from verif.runner import SIMS, run_cocotb
from verif.tb import TB, tb_seed

IN_PORT = 2


class Env:
    def __init__(self, cfg, rng):
        self.cfg, self.rng = cfg, rng
        n, nvl = cfg.ports, cfg.data_vls
        self.n, self.nvl = n, nvl
        # every kind of LFT entry among the DLIDs the packets use (1..63), the rest random
        kinds = [0, 255, n + 1, n + 7] + list(range(1, n + 1)) * 3
        # (extended LIDs: every page's DLIDs 1..63 so; the LFT is indexed as cfg.lft_index says)
        self.lft = [rng.choice(kinds) for _ in range(cfg.lft_size)]
        for page in range(1 << cfg.ext_lid_bits):
            used = (kinds * 64)[:63]
            rng.shuffle(used)
            base = page * cfg.lft_entries
            self.lft[base + 1:base + 64] = used
            self.lft[base] = 0                   # DLID 0 is reserved even where its entry says "switch"
        self.mft = [rng.getrandbits(n + 1) if rng.random() < 0.7 else rng.choice([0, 1, 2 << IN_PORT])
                    for _ in range(cfg.mft_entries)]
        self.sl2vl = [sum(rng.choice(list(range(nvl)) * 4 + [nvl, 15]) << (4 * k) for k in range(8))
                      for _ in range(2 * n * n)]
        self.active = {p for p in range(n) if rng.random() < 0.8}
        self.flits = []                          # (flit, packet index) to drive, None = a gap
        self.packets = []                        # (bytes, LRH, bad, expected decision)
        self.hdr = 0
        self.written, self._w = [], []           # packets seen on the VOQ write port (bytes, head fields)
        self.tapped, self._t = [], []
        self.released = [0] * nvl
        self.rel_sent = [0] * nvl
        self.dropped = 0
        self.cycle = 0

    def packet(self):
        cfg, rng = self.cfg, self.rng
        dlid = rng.choice([rng.randrange(1, min(64, cfg.lft_entries))] * 6
                          + [0, 0xFFFF, rng.randrange(cfg.lft_entries, 0xC000),
                             0xC000 + rng.randrange(cfg.mft_entries), 0xC000 + rng.randrange(cfg.mft_entries),
                             0xC000 + cfg.mft_entries + rng.randrange(2 * cfg.mft_entries),    # just beyond
                             rng.randrange(0xC000 + cfg.mft_entries, 0xFFFF)])
        nbytes = rng.choice([24, 28, 64, 100, 252, cfg.mtu + 60])
        # extended LIDs: the page in the LRH's reserved bits (bits above ext_lid_bits are
        # ignored: set some), on every kind of DLID - a page other than 0 on DLID 0, an MLID
        # or the permissive DLID is invalid
        rsvd1 = rng.getrandbits(5) if cfg.ext_lid_bits and rng.random() < 0.7 else 0
        lrh = LRH(vl=rng.randrange(self.nvl), sl=rng.randrange(16), dlid=dlid, pktlen=nbytes // 4,
                  slid=rng.randrange(1, 0xC000), lnh=rng.choice([0, 1, 2, 2, 3]), rsvd1=rsvd1)   # raw too
        body = lrh.pack() + bytes(rng.getrandbits(8) for _ in range(nbytes - 8 + 2))
        bad = rng.random() < 0.1
        want = route(cfg, IN_PORT, lrh, self.lft, self.sl2vl, self.active, self.mft)
        here = for_switch(cfg, lrh, self.lft, self.mft)
        k = len(self.packets)
        self.packets.append((body, lrh, bad, want, here))
        for f in to_flits(body, cfg.data_width, bad=bad):
            self.flits.append((f, k))
            while rng.random() < 0.15:
                self.flits.append(None)

    def stim(self, npackets):
        """The inputs cycle by cycle, planned first: the link's flits with gaps (`la`), the same
        flits on `acc` 1 cycle later (2 with cfg.rx_register), the table entries of a first
        flit's DLID 2 cycles after it was on the link, the input's SL2VL words and the AR groups
        1 cycle after it, junk in every input in the other cycles; port states (and failover
        redirects) changing at random."""
        cfg, rng, n = self.cfg, self.rng, self.n
        for _ in range(npackets):
            self.packet()
        junk = lambda bits: rng.getrandbits(bits)  # noqa: E731
        link = list(self.flits) + [None] * 6
        lag = accepted_lag(cfg)
        total = len(link) + lag + 4
        active, redirect, states = set(self.active), set(), []
        for _c in range(total):
            if rng.random() < 0.05:
                active = {p for p in range(n) if rng.random() < 0.8}
                if cfg.failover:
                    redirect = {p for p in range(n) if p not in active and rng.random() < 0.5}
            states.append((active, redirect))
        groups = {}                     # link cycle of a first flit -> the AR groups served after it
        for c, item in enumerate(link):
            if item is not None and item[0].sop:
                k = item[1]
                body, lrh, bad, _w, here = self.packets[k]
                pinned = None
                if cfg.adaptive:
                    masks = [junk(n) if rng.random() < 0.6 else 0 for _ in range(n)]
                    groups[c] = masks
                    pinned = {o: [y for y in range(n) if masks[o] >> y & 1] for o in range(n)}
                act, red = states[c + 2]
                want = route(cfg, IN_PORT, lrh, self.lft, self.sl2vl, act, self.mft, red, pinned)
                self.packets[k] = (body, lrh, bad, want, here)
        at = lambda c: link[c] if 0 <= c < len(link) else None  # noqa: E731
        for c in range(total):
            inp = {"acc__valid": 0, "acc__data": 0, "acc__sop": 0, "acc__eop": 0, "acc__bytes": 0,
                   "acc__bad": 0, "acc__vl": 0, "acc__blocks": 0,
                   "lft_port": junk(8), "mft_mask": junk(n + 1), "la": junk(cfg.data_width)}
            inp.update({f"sl2vl_row__{j}": junk(32) for j in range(2 * n)})
            if cfg.adaptive:
                inp.update({f"ar_mask__{o}": junk(n) for o in range(n)})
            if at(c) is not None:                        # the flit on the link
                inp["la"] = at(c)[0].data
            head = at(c - 1)
            if head is not None and head[0].sop:         # its route's head stage
                inp.update({f"sl2vl_row__{j}": self.sl2vl[IN_PORT * 2 * n + j] for j in range(2 * n)})
                if cfg.adaptive:
                    inp.update({f"ar_mask__{o}": m for o, m in enumerate(groups[c - 1])})
            head = at(c - 2)
            if head is not None and head[0].sop:         # its table entries
                lrh = self.packets[head[1]][1]
                # the entries for the DLID; where the DLID has none (beyond a table, the
                # other LID range), anything: the block must not look at it
                d = lrh.dlid
                mi = d - 0xC000
                e = cfg.lft_index(route_lid(cfg, lrh))
                entry = (self.lft[e] if e is not None else 0 if d == 0
                         else rng.choice([0, 1, 0xFF, junk(8)]))
                mask = self.mft[mi] if 0 <= mi < cfg.mft_entries else rng.choice([1, junk(n + 1)])
                inp.update(lft_port=entry, mft_mask=mask)
            a = at(c - lag)
            if a is not None:                            # the flit accepted by the link layer
                f, k = a
                lrh = self.packets[k][1]
                if f.sop:
                    self.hdr = lrh.to_int()
                inp.update({"acc__valid": 1, "acc__data": f.data, "acc__sop": int(f.sop), "acc__eop": int(f.eop),
                            "acc__bytes": f.nbytes if f.eop else 0, "acc__bad": int(f.bad), "acc__vl": lrh.vl,
                            "acc__blocks": packet_blocks(lrh.pktlen)})
            inp["acc__hdr"] = self.hdr
            act, red = states[c]
            inp["port_active"] = sum(1 << p for p in act)
            if cfg.failover:
                inp["redirect"] = sum(1 << p for p in red)
            rv = rng.random() < 0.2
            ivl, blocks = rng.randrange(self.nvl), rng.randrange(1, cfg.max_packet_blocks + 1)
            inp.update({"rel__valid": int(rv), "rel__ivl": ivl, "rel__blocks": blocks})
            if rv:
                self.rel_sent[ivl] += blocks
            yield inp
        for _ in range(4):
            yield {k: 0 for k in ingress(self.cfg).ports()[0]} | {"acc__hdr": self.hdr}

    def observe(self, inp, out):
        cfg = self.cfg
        W = cfg.data_width
        if out["w__valid"]:
            from models.packet import Flit
            if out["w__sop"]:
                self._w = []
                self._head = {k: out[f"w__{k}"] for k in ("dest", "ovl", "mask", "mcast", "sl", "ivl", "blocks")}
            self._w.append(Flit(out["w__data"], bool(out["w__sop"]), bool(out["w__eop"]), out["w__bytes"],
                                bad=bool(out["w__bad"])))
            if out["w__eop"]:
                self.written.append((from_flits(self._w, W), self._head, self._w[-1].bad))
        if out["tap__valid"]:
            from models.packet import Flit
            if out["tap__sop"]:
                self._t = []
                self._here = out["tap__here"]
            self._t.append(Flit(out["tap__data"], bool(out["tap__sop"]), bool(out["tap__eop"]), out["tap__bytes"]))
            if out["tap__eop"]:
                self.tapped.append((from_flits(self._t, W), self._here))
        for v in range(self.nvl):
            self.released[v] += out[f"release__{v}"]
        self.dropped += out["dropped"]
        self.cycle += 1

    def check(self):
        n, nvl = self.n, self.nvl
        routed = [(b, h, bad, w) for b, h, bad, w, _ in self.packets if w[0] == RouteDrop.NONE]
        assert len(self.written) == len(routed), f"{len(self.written)} packets written, {len(routed)} routed"
        for (body, h, bad, want), (got, head, gbad) in zip(routed, self.written, strict=True):
            assert got == body and gbad == bad, "a routed packet changed on its way into the VOQ"
            mc = 0xC000 <= h.dlid < 0xFFFF
            assert head["mcast"] == mc and head["sl"] == h.sl and head["ivl"] == h.vl
            assert head["blocks"] == packet_blocks(h.pktlen)
            if mc:
                assert head["mask"] == want[1], (hex(h.dlid), head, want)
            else:
                assert (head["dest"], head["ovl"]) == want[1:], (hex(h.dlid), head, want)
        refused = [(h, here, bad) for _b, h, bad, w, here in self.packets if w[0] != RouteDrop.NONE]
        back = [self.rel_sent[v] + sum(packet_blocks(h.pktlen) for h, _, _ in refused if h.vl == v)
                for v in range(nvl)]
        assert self.released == back, f"credit returned {self.released}, expected {back}"
        # a relay error: a refused packet that ended good and was not for the management port
        assert self.dropped == sum(1 for _h, here, bad in refused if not here and not bad)
        assert [t[0] for t in self.tapped] == [p[0] for p in self.packets], "the tap missed or changed a packet"
        assert [t[1] for t in self.tapped] == [int(p[4]) for p in self.packets], "`here` disagrees with the tables"
        return {w[0] for *_x, w, _ in self.packets}, n


@cocotb.test()
async def route_and_write(dut):
    cfg = TB.peek_config()
    ins, outs, qual = ingress(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    env = Env(cfg, random.Random(tb_seed()))
    await cocotb_lockstep(dut, IngressModel(cfg, IN_PORT), env.stim(400), visible(outs), qual,
                          on_cycle=env.observe, vcd=tb.vcd, start_now=True)
    seen, _n = env.check()
    assert seen == set(RouteDrop), f"not every route outcome was exercised: {sorted(seen)}"
    assert any(p[4] for p in env.packets) and env.dropped > 0


def _top(cfg):
    from hw.switch.ingress import Ingress
    return Ingress(cfg, IN_PORT)


@pytest.mark.parametrize("cfg_name", ["small", "small-ext", "small-rxreg"])
@pytest.mark.parametrize("sim", SIMS)
def test_ingress(sim, cfg_name):
    run_cocotb(top=_top, name="ib_ingress", test_module="tb.test_ingress", sim=sim, cfg=CONFIGS[cfg_name])
