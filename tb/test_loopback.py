"""`ib_loopback` on Icarus and Verilator: the switch with a hardware endpoint on every port
(traffic generators and checkers, ports paired), programmed after reset by its own AXI4-Lite
writer, with no software in the loop. Every generator sends COUNT packets to its partner;
the test holds the checkers to the generators (every packet arrived good, in order, once;
no fault anywhere), pauses and resumes the generators with `run`, and reports latency."""
import cocotb
import pytest

from hw.common.config import CONFIGS
from hw.top.loopback import LoopbackPlan, pair
from tb.common.runner import SIMS, run_cocotb
from tb.common.tb import TB

COUNT = 40
PLAN = LoopbackPlan(count=COUNT, expect=COUNT, len_mask=15, gap=0)


def _v(dut, name):
    return int(getattr(dut, name).value)


@cocotb.test()
async def pairs_exchange(dut):
    from cocotb.triggers import FallingEdge
    cfg = TB.peek_config()
    n = cfg.ports
    tb = TB(dut, {"run": 0})
    await tb.reset()
    dut.run.value = 1
    paused = False
    for t in range(4000):
        await FallingEdge(dut.clk)
        if t == 120:                    # pause mid-traffic: generators stop at a packet boundary
            dut.run.value, paused = 0, True
            sent_at_pause = [_v(dut, f"ep__{p}__sent_pkts") for p in range(n)]
        if paused and t == 220:
            held = [_v(dut, f"ep__{p}__sent_pkts") for p in range(n)]
            assert all(h - s <= 1 for h, s in zip(held, sent_at_pause, strict=True)), \
                f"generators kept sending while paused: {sent_at_pause} -> {held}"
            dut.run.value, paused = 1, False
        if _v(dut, "pass_") or _v(dut, "fail"):
            break
    assert _v(dut, "cfg_done") == 1 and _v(dut, "cfg_errors") == 0, "the AXI4-Lite set-up writes did not finish"
    for p in range(n):
        q = pair(p)
        c = lambda k, p=p: _v(dut, f"ep__{p}__chk__{k}")  # noqa: E731
        assert _v(dut, f"ep__{p}__state") == 4, f"endpoint {p} is not Active"
        assert _v(dut, f"ep__{q}__sent_pkts") == COUNT and _v(dut, f"ep__{q}__gen_done") == 1
        assert c("rcv_good") == COUNT, f"endpoint {p}: {c('rcv_good')} good packets of {COUNT} from {q}"
        for k in ("rcv_bad", "rcv_errors", "icrc_err", "format_err", "pattern_err", "unknown_src", "seq_gap",
                  "seq_lost", "seq_dup"):
            assert c(k) == 0, f"endpoint {p}: {k} = {c(k)}"
        assert _v(dut, f"ep__{p}__rx_fault") == 0, f"endpoint {p}: link receive errors"
        dut._log.info(f"endpoint {p}: {c('rcv_good')} packets from {q}, latency min {c('lat_min')} "
                      f"mean {c('lat_sum') / c('rcv_good'):.1f} max {c('lat_max')} cycles")
    assert _v(dut, "pass_") == 1 and _v(dut, "fail") == 0


def _top(cfg):
    from hw.top.loopback import Loopback
    return Loopback(cfg, PLAN)


@pytest.mark.parametrize("cfg_name", ["small"])
@pytest.mark.parametrize("sim", SIMS)
def test_loopback(sim, cfg_name):
    run_cocotb(top=_top, name="ib_loopback", test_module="tb.test_loopback", sim=sim, cfg=CONFIGS[cfg_name])
