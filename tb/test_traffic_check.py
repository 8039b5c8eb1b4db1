"""The traffic checker alone on Icarus and Verilator: lock-step with its model on packets
built in tb/traffic_check_cases.py (models.packet), good ones and one of each fault the checker must name: a
payload word changed with the ICRC recomputed (pattern), changed without (ICRC and
pattern), a wrong opcode, a length the PSN does not give, an unknown source, a PSN gap, a
duplicate, a packet marked bad; the counters end equal to the tallies kept here."""
import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.counters import CHECK_COUNTERS
from contracts.endpoint import traffic_check
from models.packet import to_flits
from models.traffic_check import TrafficCheckModel
from tb.traffic_check_cases import LMASK, LMIN, NSRC, SRC, fault_cases
from verif.lockstep import cocotb_lockstep
from verif.runner import run_cocotb, sim_matrix
from verif.tb import TB


@cocotb.test()
async def every_fault_named(dut):
    cfg = TB.peek_config()
    ins, outs, qual = traffic_check(cfg).ports()
    tb = TB(dut, {k: 0 for k in ins})
    await tb.reset()
    cases = fault_cases(cfg, tb.rng)
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


# W=512 on one simulator in `make sim` (the other in `make sim-long`): docs/verification.md
@pytest.mark.parametrize("sim, cfg_name", sim_matrix(["small", "w512"], long=("verilator-w512",)))
def test_traffic_check(sim, cfg_name):
    run_cocotb(top=_top, name="ib_traffic_check", test_module="tb.test_traffic_check", sim=sim,
               cfg=CONFIGS[cfg_name])
