"""Link transmit: lock-step with its model on both simulators. Credits are returned by a
scripted peer; checked independently of the model: no data packet beyond the peer's credit
limit, order per VL, link packets only between data packets, VL15 before data, and every
link packet (in every test, bring-up included) one good 6-byte flit for an existing VL,
never marked bad."""

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.defs import PortState
from contracts.link import link_tx
from models.credit import MOD, packet_blocks
from models.link_tx import LinkTxModel
from models.packet import LRH, Flit, from_flits, parse_link_packet, to_flits
from verif.drivers import StreamSource, lrh_blocks
from verif.ib.stimulus import good_packet, idle_random, ready_random
from verif.lockstep import cocotb_lockstep
from verif.runner import SIMS, run_cocotb
from verif.tb import TB


class PeerScript:
    """Stands in for the far receiver: grants credit per VL with FC packets on fc_rx, never
    more than `window` blocks beyond what it has seen."""

    def __init__(self, cfg, rng, window):
        self.cfg, self.rng, self.window = cfg, rng, window
        self.received = [0] * cfg.data_vls        # blocks seen on the wire (unwrapped)

    def fc_inputs(self):
        if self.rng.random() < 0.05:
            v = self.rng.randrange(self.cfg.data_vls)
            return {"fc_rx__valid": 1, "fc_rx__op": 0, "fc_rx__fctbs": 0, "fc_rx__vl": v,
                    "fc_rx__fccl": (self.received[v] + self.window) % MOD}
        return {"fc_rx__valid": 0, "fc_rx__op": 0, "fc_rx__fctbs": 0, "fc_rx__vl": 0, "fc_rx__fccl": 0}


async def _run(dut, n_packets=40, state_plan=None, ready_p=0.8, window=None, bad_p=0.0):
    tb = TB(dut)
    cfg, rng = tb.cfg, tb.rng
    ins, outs, qual = link_tx(cfg).ports()
    srcs = [StreamSource(f"src__{v}", idle_random(0.2, rng), blocks_of=lrh_blocks(cfg.data_width, cfg.credit_vcrc))
            for v in range(cfg.data_vls)]
    srcs.append(StreamSource("src15", idle_random(0.2, rng)))
    sent = {s.p: [] for s in srcs}
    for _ in range(n_packets):
        k = rng.randrange(len(srcs))
        vl = 15 if k == cfg.data_vls else k
        pkt = good_packet(cfg, rng, vl=vl, payload_len=rng.choice([0, 30, 100, 250]))
        bad = rng.random() < bad_p                   # its tail marked bad (EBP) by its source
        srcs[k].send(to_flits(pkt, cfg.data_width, bad=bad))
        sent[srcs[k].p].append((pkt, bad) if bad_p else pkt)
    peer = PeerScript(cfg, rng, cfg.buffer_blocks_per_vl if window is None else window)
    bp = ready_random(ready_p, rng)
    local = [rng.randrange(MOD) for _ in range(cfg.data_vls)]
    wire: list[dict] = []
    last = {}
    state_plan = state_plan or (lambda cyc: PortState.ACTIVE)

    def stim():
        cyc = 0
        while cyc < 8000 and (any(s.busy for s in srcs) or cyc < 50):
            inp = {}
            for s in srcs:
                inp.update(s.inputs())
            inp.update(peer.fc_inputs())
            if rng.random() < 0.02:
                local[rng.randrange(cfg.data_vls)] = rng.randrange(MOD)
            inp.update({f"local_fccl__{v}": local[v] for v in range(cfg.data_vls)})
            inp["state"] = int(state_plan(cyc))
            inp["tx__ready"] = int(next(bp))
            yield inp
            for s in srcs:
                s.advance(last[f"{s.p}__ready"])
            cyc += 1
        for _ in range(20):
            yield dict(inp, tx__ready=1, fc_rx__valid=0, **{f"{s.p}__valid": 0 for s in srcs})

    granted = [0] * cfg.data_vls       # unwrapped credit limit granted so far, per VL
    used = [0] * cfg.data_vls

    def observe(i, o):
        last.update(o)
        if i["fc_rx__valid"]:
            v = i["fc_rx__vl"]
            granted[v] = max(granted[v], peer.received[v] + peer.window)
        if o["tx__valid"] and i["tx__ready"]:
            wire.append(o)
            if o["tx__link"]:                       # every link packet, checked on its own
                assert o["tx__sop"] and o["tx__eop"] and o["tx__bytes"] == 6 and not o["tx__bad"], \
                    f"link packet flit {o}: must be one flit of 6 bytes, sop, eop, not bad"
                fc, ok = parse_link_packet((o["tx__data"] >> (cfg.data_width - 48)).to_bytes(6, "big"),
                                           cfg.crc_msb_first)
                assert ok, "link packet with a bad LPCRC"
                assert fc.op in (0, 1) and fc.vl < cfg.data_vls, f"FC packet for VL {fc.vl}, op {fc.op}"
            if o["tx__sop"] and not o["tx__link"]:
                lrh = LRH.unpack(o["tx__data"].to_bytes(cfg.bytes_per_flit, "big"))
                if lrh.vl != 15:
                    n = packet_blocks(lrh.pktlen, cfg.credit_vcrc)
                    used[lrh.vl] += n
                    peer.received[lrh.vl] += n       # the peer drains at once
                    assert used[lrh.vl] <= granted[lrh.vl], \
                        f"VL{lrh.vl}: {used[lrh.vl]} blocks sent, only {granted[lrh.vl]} granted"


    model = LinkTxModel(cfg)
    await tb.reset()
    await cocotb_lockstep(dut, model, stim(), outs, qual, on_cycle=observe, vcd=tb.vcd, start_now=True)
    return cfg, sent, wire, peer, model, used


def _packets(cfg, wire):
    """Split the transmitted flits into packets; check link packets sit between packets."""
    out, cur = [], None
    for o in wire:
        f = Flit(o["tx__data"], bool(o["tx__sop"]), bool(o["tx__eop"]),
                 o["tx__bytes"] if o["tx__eop"] else cfg.bytes_per_flit)
        if o["tx__link"]:
            assert cur is None, "link packet inside a data packet"
            out.append(("link", from_flits([f], cfg.data_width)))
            continue
        if f.sop:
            assert cur is None, "sop inside a packet"
            cur = []
        cur.append(f)
        if f.eop:
            out.append(("data", from_flits(cur, cfg.data_width)))
            cur = None
    return out


@cocotb.test()
async def credits_order_and_link_packets(dut):
    cfg, sent, wire, peer, model, used = await _run(dut, n_packets=120)
    pkts = _packets(cfg, wire)
    got = {k: [] for k in sent}
    used = [0] * cfg.data_vls
    for kind, b in pkts:
        if kind == "link":
            fc, ok = parse_link_packet(b, cfg.crc_msb_first)
            assert ok and fc.op in (0, 1) and fc.vl < cfg.data_vls
            continue
        lrh = LRH.unpack(b)
        if lrh.vl == 15:
            got["src15"].append(b)
            continue
        got[f"src__{lrh.vl}"].append(b)
        used[lrh.vl] += packet_blocks(lrh.pktlen, cfg.credit_vcrc)
    for k in sent:
        assert got[k] == sent[k], f"{k}: packets differ or out of order"
    # FCTBS counts exactly the blocks sent (mod 4096)
    for v in range(cfg.data_vls):
        assert used[v] % MOD == model.fctbs[v]
    first_fc = [parse_link_packet(b, cfg.crc_msb_first)[0] for k, b in pkts if k == "link"][:cfg.data_vls]
    assert all(f.op == 1 for f in first_fc), "first FC packet of each VL is an init packet"


@cocotb.test()
async def no_credit_no_data(dut):
    """With no FC packet from the peer there is no credit: only VL15 and link packets go."""
    tb_window = 0
    cfg, sent, wire, peer, model, _ = await _run(dut, n_packets=12, window=tb_window)
    pkts = _packets(cfg, wire)
    assert all(LRH.unpack(b).vl == 15 for k, b in pkts if k == "data")
    assert model.counters["xmit_wait"] > 0


@cocotb.test()
async def states_gate_and_down_discards(dut):
    """Init/Armed: no data VL packets; Down: sources drained and counted, credit cleared."""
    plan = lambda c: PortState.INIT if c < 300 else (PortState.DOWN if c < 330 else PortState.ACTIVE)  # noqa: E731
    cfg, sent, wire, peer, model, _ = await _run(dut, n_packets=20, state_plan=plan)
    assert model.counters["xmit_discards"] >= 1


@cocotb.test()
async def down_drains_bad_tails_uncounted(dut):
    """Down: every packet the sources offer is drained; one whose tail comes marked bad (its
    receiver has counted it already: one packet, one count, docs/link-layer.md) is not
    counted in xmit_discards, every other one is."""
    cfg, sent, wire, peer, model, _ = await _run(dut, n_packets=30, state_plan=lambda c: PortState.DOWN,
                                                 bad_p=0.4)
    pkts = [b for kind, b in _packets(cfg, wire) if kind == "data"]
    assert not pkts, f"{len(pkts)} data packets left in Down"
    good = sum(1 for lst in sent.values() for _p, bad in lst if not bad)
    bad = sum(1 for lst in sent.values() for _p, bad in lst if bad)
    assert bad and good, "the stimulus needs both kinds"
    assert model.counters["xmit_discards"] == good, \
        f"xmit_discards {model.counters['xmit_discards']}, but {good} good packets drained ({bad} bad ones)"


def _top(cfg):
    from hw.link.link_tx import LinkTx
    return LinkTx(cfg)


@pytest.mark.parametrize("cfg_name", ["small", "w256", "small-msb", "small-novcrc"])
@pytest.mark.parametrize("sim", SIMS)
def test_link_tx(sim, cfg_name):
    run_cocotb(top=_top, name="ib_link_tx", test_module="tb.test_link_tx", sim=sim, cfg=CONFIGS[cfg_name])
