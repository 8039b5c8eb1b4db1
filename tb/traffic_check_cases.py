"""Packets for the traffic checker's tests (tb/test_traffic_check.py on Icarus and Verilator,
tests/test_traffic_check_pysim.py in the Amaranth simulator): good ones and one of each fault
the checker must name, each with the counters it must move, built here from models.packet
(apart from the checker and its model)."""
from models.crc import CRC16
from models.packet import BTH, LNH, LRH, build_data_packet
from models.traffic_gen import gen_packet, pattern_word, payload_words

__all__ = ["SRC", "NSRC", "LMIN", "LMASK", "fault_cases"]

SRC, NSRC, LMIN, LMASK = 0x30, 4, 1, 15


def fault_cases(cfg, rng):
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
