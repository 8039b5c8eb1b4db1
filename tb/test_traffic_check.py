"""The traffic checker alone on Icarus and Verilator: lock-step with its model on packets
built here (models.packet), good ones and one of each fault the checker must name: a
payload word changed with the ICRC recomputed (pattern), changed without (ICRC and
pattern), a wrong opcode, a length the PSN does not give, an unknown source, a PSN gap, a
duplicate, a packet marked bad; the counters end equal to the tallies kept here."""
import cocotb
import pytest

from hw.common.config import CONFIGS
from models.crc import CRC16
from models.packet import BTH, LNH, LRH, build_data_packet, to_flits
from models.traffic_check import CHECK_COUNTERS, TrafficCheckModel, traffic_check_ports
from models.traffic_gen import gen_packet, pattern_word, payload_words
from tb.common.lockstep import cocotb_lockstep
from tb.common.runner import SIMS, run_cocotb
from tb.common.tb import TB

SRC, NSRC, LMIN, LMASK = 0x30, 4, 1, 15


def _cases(cfg, rng):
    """(packet bytes, marked bad, counters it must move) in order."""
    psn = {s: 0 for s in range(SRC, SRC + NSRC)}
    out = []

    def good(s):
        p = gen_packet(cfg, slid=s, dlid=9, sl=0, vl=0, qp=1, psn=psn[s], ts=0, len_min=LMIN, len_mask=LMASK)
        psn[s] += 1
        return p

    def rebuild(s, n, *, opcode=0x04, words=None):
        p = words if words is not None else payload_words(cfg, n, LMIN, LMASK)
        pay = [0] + [pattern_word(s, n, k) for k in range(1, p)]
        pkt = build_data_packet(LRH(lnh=LNH.IBA_LOCAL, dlid=9, slid=s), b"".join(w.to_bytes(4, "big") for w in pay),
                                BTH(opcode=opcode, psn=n, destqp=1))
        return pkt

    for _ in range(70):
        s = SRC + rng.randrange(NSRC)
        kind = rng.choice(["good"] * 6 + ["pattern", "icrc", "opcode", "length", "unknown", "gap", "dup", "bad"])
        if kind == "good":
            out.append((good(s), False, {"rcv_good"}))
        elif kind in ("pattern", "icrc"):
            n = psn[s]
            if payload_words(cfg, n, LMIN, LMASK) < 2:
                out.append((good(s), False, {"rcv_good"}))
                continue
            psn[s] += 1
            p = payload_words(cfg, n, LMIN, LMASK)
            pay = [0] + [pattern_word(s, n, j) for j in range(1, p)]
            pay[rng.randrange(1, p)] ^= 1 << rng.randrange(32)
            pkt = build_data_packet(LRH(lnh=LNH.IBA_LOCAL, dlid=9, slid=s),
                                    b"".join(w.to_bytes(4, "big") for w in pay), BTH(psn=n, destqp=1))
            if kind == "icrc":          # the ICRC of the packet before the change (VCRC redone)
                orig = rebuild(s, n)
                body = pkt[:-6] + orig[-6:-2]
                pkt = body + CRC16.wire(body)
                out.append((pkt, False, {"rcv_errors", "icrc_err", "pattern_err"}))
            else:
                out.append((pkt, False, {"rcv_errors", "pattern_err"}))
        elif kind == "opcode":
            out.append((rebuild(s, psn[s], opcode=0x00), False, {"rcv_errors", "format_err"}))
            psn[s] += 1
        elif kind == "length":
            n = psn[s]
            p = payload_words(cfg, n, LMIN, LMASK)
            out.append((rebuild(s, n, words=p + 1 if p < cfg.mtu // 4 else p - 1), False, {"rcv_errors", "format_err"}))
            psn[s] += 1
        elif kind == "unknown":
            out.append((gen_packet(cfg, slid=SRC + NSRC + 3, dlid=9, sl=0, vl=0, qp=1, psn=0, ts=0, len_min=LMIN,
                                   len_mask=LMASK), False, {"rcv_errors", "unknown_src"}))
        elif kind == "gap":
            psn[s] += 2
            out.append((good(s), False, {"rcv_good", "seq_gap", ("seq_lost", 2)}))
        elif kind == "dup":
            if psn[s] == 0:
                out.append((good(s), False, {"rcv_good"}))
                continue
            psn[s] -= 1
            out.append((good(s), False, {"rcv_errors", "seq_dup"}))
        else:
            out.append((good(s), True, {"rcv_bad"}))
            # the receiver learned nothing from it: the next packet of s shows a gap of 1
            out.append((good(s), False, {"rcv_good", "seq_gap", ("seq_lost", 1)}))
    return out


@cocotb.test()
async def every_fault_named(dut):
    cfg = TB.peek_config()
    ins, outs, qual = traffic_check_ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    cases = _cases(cfg, tb.rng)
    want = {n: 0 for n in CHECK_COUNTERS if not n.startswith("lat")}
    for _, _, moves in cases:
        want["rcv_pkts"] += 1
        for mv in moves:
            name, amount = mv if isinstance(mv, tuple) else (mv, 1)
            want[name] += amount
    last = {}

    def stim():
        t = 0
        idle = dict(i__valid=0, i__data=0, i__sop=0, i__eop=0, i__bytes=0, i__bad=0)
        common = dict(src_base=SRC, len_min=LMIN, len_mask=LMASK)
        for pkt, bad, _ in cases:
            for f in to_flits(pkt, cfg.data_width, bad=bad):
                yield dict(common, now=t, i__valid=1, i__data=f.data, i__sop=int(f.sop), i__eop=int(f.eop),
                           i__bytes=f.nbytes, i__bad=int(f.bad))
                t += 1
            for _ in range(tb.rng.choice([0, 0, 1, 2])):
                yield dict(common, now=t, **idle)
                t += 1
        for _ in range(5):
            yield dict(common, now=t, **idle)
            t += 1

    await cocotb_lockstep(dut, TrafficCheckModel(cfg, NSRC), stim(), outs, qual, vcd=tb.vcd, start_now=True,
                          on_cycle=lambda i, a: last.update(a))
    got = {n: last[f"counters__{n}"] for n in want}
    assert got == want, f"counters {got}\n expected {want}"
    assert all(want[k] for k in ("icrc_err", "pattern_err", "format_err", "seq_gap", "seq_dup", "rcv_bad")), \
        f"the random case mix missed a fault kind: {want}"


def _top(cfg):
    from hw.endpoint.traffic_check import TrafficCheck
    return TrafficCheck(cfg, NSRC)


@pytest.mark.parametrize("cfg_name", ["small", "w512"])
@pytest.mark.parametrize("sim", SIMS)
def test_traffic_check(sim, cfg_name):
    run_cocotb(top=_top, name="ib_traffic_check", test_module="tb.test_traffic_check", sim=sim,
               cfg=CONFIGS[cfg_name])
