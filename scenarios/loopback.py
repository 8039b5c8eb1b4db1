"""The loopback top (hw/top/loopback.py) as a named scenario: its plan (`PLAN`: every generator
sends COUNT packets to its partner) and its procedure, written once on a harness
(verif/harness.py): tb/test_loopback.py runs it under cocotb on Icarus and Verilator,
tests/test_native.py on the native Verilator binary (verif/native), with no Python per cycle.

Every generator sends `count` packets to its partner (ports paired); the procedure pauses
the generators with `run` mid-traffic and resumes them, waits for the top's own verdict
(`pass_` or `fail`), then holds the checkers to the generators: every packet arrived good,
in order, once; no fault anywhere. Returns per endpoint its checker's counters (latency
included) for the caller to report.
"""
from __future__ import annotations

from hw.top.loopback import LoopbackPlan, pair

__all__ = ["loopback_procedure", "CHK_ZERO", "COUNT", "PLAN"]

COUNT = 40
PLAN = LoopbackPlan(count=COUNT, expect=COUNT, len_mask=15, gap=0)

CHK_ZERO = ("rcv_bad", "rcv_errors", "icrc_err", "format_err", "pattern_err", "unknown_src", "seq_gap", "seq_lost",
            "seq_dup")


async def loopback_procedure(h, ports: int, count: int, *, max_cycles: int = 4000) -> list[dict]:
    await h.set(rst=1, run=0)
    await h.step(3)
    await h.set(rst=0)
    await h.step(2)
    await h.set(run=1)
    sent = [f"ep__{p}__sent_pkts" for p in range(ports)]
    await h.step(120)                          # pause mid-traffic: generators stop at a packet boundary
    await h.set(run=0)
    at_pause = await h.get_dict(sent)
    await h.step(100)
    held = await h.get_dict(sent)
    assert all(held[k] - at_pause[k] <= 1 for k in sent), f"generators kept sending while paused: {at_pause} -> {held}"
    await h.set(run=1)
    done, _ = await h.until(["pass_", "fail"], ">=", 1, max_cycles, 8)
    assert done, f"neither pass_ nor fail in {max_cycles} cycles"
    v = await h.get_dict(["cfg_done", "cfg_errors", "pass_", "fail"])
    assert v["cfg_done"] == 1 and v["cfg_errors"] == 0, "the AXI4-Lite set-up writes did not finish"
    out = []
    for p in range(ports):
        q = pair(p)
        names = [f"ep__{p}__chk__{k}" for k in ("rcv_good", "lat_min", "lat_max", "lat_sum") + CHK_ZERO]
        c = {k.rsplit("__", 1)[1]: x for k, x in (await h.get_dict(names)).items()}
        e = await h.get_dict([f"ep__{p}__state", f"ep__{q}__sent_pkts", f"ep__{q}__gen_done", f"ep__{p}__rx_fault"])
        assert e[f"ep__{p}__state"] == 4, f"endpoint {p} is not Active"
        assert e[f"ep__{q}__sent_pkts"] == count and e[f"ep__{q}__gen_done"] == 1, f"generator {q}: {e}"
        assert c["rcv_good"] == count, f"endpoint {p}: {c['rcv_good']} good packets of {count} from {q}"
        for k in CHK_ZERO:
            assert c[k] == 0, f"endpoint {p}: {k} = {c[k]}"
        assert e[f"ep__{p}__rx_fault"] == 0, f"endpoint {p}: link receive errors"
        out.append({"endpoint": p, "from": q, **c})
    assert v["pass_"] == 1 and v["fail"] == 0, f"the top's verdict: {v}"
    return out
