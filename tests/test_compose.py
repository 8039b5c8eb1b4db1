"""Model composition: a VOQ buffer feeding an egress rewrite, wired the way the switch will
wire them (data forward, ready backward in the same cycle). The composed model is held in
lock-step with the same composition in RTL."""
import random

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from contracts.config import CONFIGS
from contracts.streams import FLIT
from contracts.switch import egress, voq
from hw.switch.egress import Egress
from hw.switch.voq import VOQBuffer
from models.compose import Composite
from models.egress import EgressModel
from models.packet import Flit, from_flits, parse_data_packet, to_flits
from models.voq import VOQModel
from verif.ib.stimulus import good_packet
from verif.pysim import pysim_lockstep

CFG = CONFIGS["small"]


class VoqEgress(wiring.Component):
    """RTL of the fixture: VOQ -> egress, out port 0 read for VL 0 only."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.voq = VOQBuffer(cfg)
        self.eg = Egress(cfg)
        super().__init__({
            "w": self.voq.signature.members["w"],
            "rd_start": In(1), "rd_vl": In(range(max(cfg.data_vls, 2))), "out_vl": In(4),
            "o": self.eg.signature.members["o"],
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.voq = voq = self.voq
        m.submodules.eg = eg = self.eg
        wiring.connect(m, wiring.flipped(self.w), voq.w)
        wiring.connect(m, wiring.flipped(self.o), eg.o)
        m.d.comb += [voq.rd_start.eq(self.rd_start), voq.rd_port.eq(0), voq.rd_vl.eq(self.rd_vl), voq.first_ok.eq(1)]
        for k in ("valid", *FLIT):
            m.d.comb += getattr(eg.i, k).eq(getattr(voq.r, k))
        m.d.comb += [eg.i.vl.eq(self.out_vl), voq.r.ready.eq(eg.i.ready)]
        return m


class VoqEgressModel:
    def __init__(self, cfg):
        flit = ["valid", *FLIT]
        wires = {("eg", f"i__{k}"): ("voq", f"r__{k}") for k in flit}
        wires[("voq", "r__ready")] = ("eg", "i__ready")
        self.voq = VOQModel(cfg)
        self.c = Composite({"voq": self.voq, "eg": EgressModel(cfg)}, wires,
                           ports={"voq": voq(cfg).ports()[:2], "eg": egress(cfg).ports()[:2]})

    def step(self, inp):
        top = {"voq": {**{k: v for k, v in inp.items() if k.startswith("w__")},
                       "rd_start": inp["rd_start"], "rd_port": 0, "rd_vl": inp["rd_vl"], "rd_mc": 0,
                       "rd_void": 0, "first_ok": 1,
                       "w__mcast": 0, "w__mask": 0, "w__sl": 0},
               "eg": {"i__vl": inp["out_vl"], "o__ready": inp["o__ready"], "fecn": 0}}
        o = self.c.step(top)
        return {k: v for k, v in o["eg"].items() if k.startswith("o__")}


def test_composed_model_in_lockstep_with_composed_rtl():
    rng = random.Random(12)
    nb = CFG.bytes_per_flit
    pkts = [good_packet(CFG, rng, lnh=2, payload_len=rng.choice([0, 12, 40, 100])) for _ in range(25)]
    model = VoqEgressModel(CFG)
    got, cur = [], []
    st = {"k": 0, "f": 0}

    def stim():
        for _ in range(3000):
            inp = {f"w__{k}": 0
                   for k in ("valid", *FLIT, "dest", "ovl", "blocks", "ivl")}
            if st["k"] < len(pkts) and rng.random() < 0.7:
                fl = to_flits(pkts[st["k"]], CFG.data_width)
                f = fl[st["f"]]
                inp.update({"w__valid": 1, "w__data": f.data, "w__sop": int(f.sop), "w__eop": int(f.eop),
                            "w__bytes": f.nbytes, "w__blocks": CFG.max_packet_blocks})
                st["f"] += 1
                if st["f"] == len(fl):
                    st["k"], st["f"] = st["k"] + 1, 0
            busy = model.voq.cur is not None
            inp.update(rd_start=int(not busy and bool(model.voq.q[(0, 0)]) and rng.random() < 0.5), rd_vl=0,
                       out_vl=3, o__ready=int(rng.random() < 0.8))
            yield inp

    def observe(i, o):
        if o["o__valid"] and i["o__ready"]:
            cur.append(Flit(o["o__data"], bool(o["o__sop"]), bool(o["o__eop"]), o["o__bytes"] if o["o__eop"] else nb))
            if o["o__eop"]:
                got.append(from_flits(cur, CFG.data_width))
                cur.clear()

    outs = [f"o__{k}" for k in ("valid", *FLIT, "vl")]
    qual = {k: "o__valid" for k in outs[1:]}
    pysim_lockstep(VoqEgress(CFG), model, stim(), outs, qual, on_cycle=observe)
    assert len(got) == len(pkts)
    for p, b in zip(pkts, got, strict=True):
        d = parse_data_packet(b)
        assert d.vcrc_ok and d.icrc_ok and d.lrh.vl == 3 and b[1:-2] == p[1:-2]


def test_a_misspelt_wire_is_an_error_not_a_zero():
    ports = {"voq": voq(CFG).ports()[:2], "eg": egress(CFG).ports()[:2]}
    blocks = {"voq": VOQModel(CFG), "eg": EgressModel(CFG)}
    with pytest.raises(KeyError, match="voq.r__vaild: voq has no such output"):
        Composite(blocks, {("eg", "i__valid"): ("voq", "r__vaild")}, ports=ports)
    with pytest.raises(KeyError, match="eg.i__vlid: eg has no such input"):
        Composite(blocks, {("eg", "i__vlid"): ("voq", "r__valid")}, ports=ports)
    with pytest.raises(KeyError, match="no block 'vq'"):
        Composite(blocks, {("eg", "i__valid"): ("vq", "r__valid")}, ports=ports)
    c = Composite(blocks, {("eg", "i__valid"): ("voq", "r__valid")}, ports=ports)
    with pytest.raises(KeyError, match="driven by nothing"):
        c.step({"voq": {}, "eg": {}})
