"""The traffic generator alone on Icarus and Verilator: lock-step with its model under
random backpressure, and every packet it sent parsed independently (models.packet): VCRC
and ICRC valid, RC SEND Only, destinations in turn, PSNs 0, 1, 2 ... per destination,
the length the PSN gives, the pattern words, `count` packets then done."""
import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.endpoint import traffic_gen
from models.packet import Flit, from_flits, parse_data_packet
from models.traffic_gen import TrafficGenModel, pattern_word, payload_words
from verif.lockstep import cocotb_lockstep
from verif.runner import run_cocotb, sim_matrix
from verif.tb import TB

COUNT = 45


@cocotb.test()
async def packets_under_backpressure(dut):
    cfg = TB.peek_config()
    ins, outs, qual = traffic_gen(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    rng = tb.rng
    conf = dict(en=1, slid=0x21, dlid_base=0x40, ndest=4, sl=3, vl=cfg.data_vls - 1, qp=0x1234, len_min=2,
                len_mask=31, count=COUNT, gap=1)
    got, cur, last = [], [], {}

    def stim():
        for t in range(2500):
            yield dict(conf, now=t, o__ready=int(rng.random() < 0.7), en=int(t < 200 or t > 260))

    def obs(inp, act):
        last.update(act)
        if act["o__valid"] and inp["o__ready"]:
            cur.append(Flit(act["o__data"], bool(act["o__sop"]), bool(act["o__eop"]), act["o__bytes"]))
            if act["o__eop"]:
                got.append(from_flits(cur, cfg.data_width))
                cur.clear()

    await cocotb_lockstep(dut, TrafficGenModel(cfg), stim(), outs, qual, on_cycle=obs, vcd=tb.vcd, start_now=True)
    assert len(got) == COUNT and last["done"] == 1 and last["sent_pkts"] == COUNT
    psn = {}
    for k, pkt in enumerate(got):
        d = parse_data_packet(pkt)
        assert d.vcrc_ok and d.icrc_ok and d.pktlen_ok, f"packet {k}: VCRC/ICRC/PktLen"
        assert d.lrh.dlid == 0x40 + k % 4 and d.lrh.slid == 0x21 and d.lrh.sl == 3 and d.lrh.vl == cfg.data_vls - 1
        assert d.bth.opcode == 0x04 and d.bth.destqp == 0x1234 and d.bth.pkey == 0xFFFF
        want = psn.get(d.lrh.dlid, 0)
        assert d.bth.psn == want, f"packet {k} to {d.lrh.dlid:#x}: PSN {d.bth.psn}, expected {want}"
        psn[d.lrh.dlid] = want + 1
        p = payload_words(cfg, want, 2, 31)
        assert len(d.payload) == 4 * p, f"packet {k}: {len(d.payload)} payload bytes, the PSN gives {4 * p}"
        words = [int.from_bytes(d.payload[i:i + 4], "big") for i in range(0, len(d.payload), 4)]
        assert words[1:] == [pattern_word(0x21, want, j) for j in range(1, p)], f"packet {k}: pattern"


def _top(cfg):
    from hw.endpoint.traffic_gen import TrafficGen
    return TrafficGen(cfg)


# W=512 on one simulator in `make sim` (the other in `make sim-long`): docs/verification.md
@pytest.mark.parametrize("sim, cfg_name", sim_matrix(["small", "w512"], long=("verilator-w512",)))
def test_traffic_gen(sim, cfg_name):
    run_cocotb(top=_top, name="ib_traffic_gen", test_module="tb.test_traffic_gen", sim=sim, cfg=CONFIGS[cfg_name])
