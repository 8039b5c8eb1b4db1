"""The traffic checker's `check_icrc` switch in the Amaranth simulator, in lock-step with its
model: a packet whose only fault is its ICRC (one bit of the ICRC field flipped, the VCRC
recomputed so the link receiver would pass it) is an ICRC error with the check and a good
packet without it; every other fault is named the same either way (tb/test_traffic_check.py
runs the checker with the check on Icarus and Verilator)."""
import random

from contracts.config import CONFIGS
from contracts.endpoint import traffic_check
from hw.endpoint.traffic_check import TrafficCheck
from models.crc import CRC16
from models.packet import to_flits
from models.traffic_check import TrafficCheckModel
from models.traffic_gen import gen_packet
from tb.traffic_check_cases import LMASK, LMIN, NSRC, SRC, fault_cases
from verif.pysim import pysim_lockstep


def _icrc_only(cfg, slid, psn):
    p = gen_packet(cfg, slid=slid, dlid=9, sl=0, vl=0, qp=1, psn=psn, ts=0, len_min=LMIN, len_mask=LMASK)
    body = bytearray(p[:-2])
    body[-1] ^= 0x10                            # last ICRC byte
    return bytes(body) + CRC16.wire(bytes(body))


def _run(cfg, check_icrc):
    cases = [(pkt, bad) for pkt, bad, _ in fault_cases(cfg, random.Random(5))]
    # then one packet of a source the mix never uses (one more known source): ICRC alone wrong
    cases.append((_icrc_only(cfg, SRC + NSRC, 0), False))
    _, outs, qual = traffic_check(cfg).ports()
    last = {}

    def stim():
        t = 0
        common = dict(src_base=SRC, len_min=LMIN, len_mask=LMASK)
        idle = dict(i__valid=0, i__data=0, i__sop=0, i__eop=0, i__bytes=0, i__bad=0)
        for pkt, bad in cases:
            for f in to_flits(pkt, cfg.data_width, bad=bad):
                yield dict(common, now=t, i__valid=1, i__data=f.data, i__sop=int(f.sop), i__eop=int(f.eop),
                           i__bytes=f.nbytes, i__bad=int(f.bad))
                t += 1
            yield dict(common, now=t, **idle)
            t += 1
        for _ in range(5):
            yield dict(common, now=t, **idle)
            t += 1

    core = pysim_lockstep(TrafficCheck(cfg, NSRC + 1, check_icrc=check_icrc),
                          TrafficCheckModel(cfg, NSRC + 1, check_icrc=check_icrc), stim(), outs, qual,
                          on_cycle=lambda i, a: last.update(a))
    assert core.cycle > 100
    c = {k[len("counters__"):]: v for k, v in last.items()}
    assert c["rcv_pkts"] == len(cases)
    return c


def test_check_icrc_switch():
    cfg = CONFIGS["small"]
    on, off = _run(cfg, True), _run(cfg, False)
    assert on["icrc_err"] >= 2, "the case mix had no ICRC-corrupted packet besides the last"
    assert off["icrc_err"] == 0
    assert off["rcv_good"] == on["rcv_good"] + 1           # the ICRC-only packet
    assert off["rcv_errors"] == on["rcv_errors"] - 1
    same = ("rcv_bad", "format_err", "pattern_err", "unknown_src", "seq_gap", "seq_lost", "seq_dup")
    assert {k: off[k] for k in same} == {k: on[k] for k in same}
