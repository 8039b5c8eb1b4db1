"""Management receive queue on Icarus and Verilator, in observe-mode lock-step with its
model: a writer that admits whole packets only (as the switch's writers will), and a
cocotbext-axi AxiStreamSink with random pauses (tready low) as the management processor.
Checked apart from the model: every packet arrives once, in order, byte for byte, with its
input port and bad mark in tuser; nothing overflows. And a writer that ignores `free`:
the excess is dropped and counted, what was kept arrives intact."""
import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamSink

from contracts.config import CONFIGS
from contracts.switch import mgmt_queue
from models.mgmt_queue import MgmtQueueModel
from models.packet import to_flits
from verif.lockstep import LockstepObserver
from verif.runner import SIMS, run_cocotb
from verif.tb import TB


def depth_for(cfg) -> int:
    return cfg.mgmt_queue_flits


async def _setup(dut, pause):
    """Reset, an AxiStreamSink as the processor (`pause(rng)` -> its tready pause
    generator), the observe-mode lock-step started."""
    cfg = TB.peek_config()
    d = depth_for(cfg)
    ins, outs, qual = mgmt_queue(cfg, d).ports()
    tb = TB(dut, {k: 0 for k in ins if k != "m_axis_tready"})
    await tb.reset()
    rng = random.Random(tb.rng.random())
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.clk, dut.rst)
    sink.set_pause_generator(pause(rng))
    obs = LockstepObserver(dut, MgmtQueueModel(cfg, d), ins, outs, qual, vcd=tb.vcd).start()
    return cfg, d, rng, sink, obs


def _random_pauses(rng):
    pattern = [rng.random() < 0.6 for _ in range(101)]
    return iter(lambda: pattern[rng.randrange(101)], None)


@cocotb.test()
async def whole_packets_under_backpressure(dut):
    cfg, d, rng, sink, obs = await _setup(dut, _random_pauses)
    max_bytes = cfg.vl15_max_packet_bytes
    sent = []
    for _ in range(40):
        n = rng.choice([1, 7, 8, 9, 64, 290, max_bytes, rng.randrange(1, max_bytes + 1)])
        body = bytes(rng.getrandbits(8) for _ in range(n))
        port, bad = rng.randrange(256), int(rng.random() < 0.2)          # every bit of the field
        flits = to_flits(body, cfg.data_width, bad=bool(bad))
        # admit the whole packet or wait: `free` counts flit slots (bounded: a queue that
        # never frees space fails here rather than hanging)
        for _wait in range(20 * d + 1000):
            if int(dut.free.value) >= len(flits):
                break
            await FallingEdge(dut.clk)
            dut.i__valid.value = 0
        else:
            raise AssertionError(f"free stayed below {len(flits)} flits: the queue does not drain")
        for f in flits:
            await FallingEdge(dut.clk)
            for k, v in (("valid", 1), ("data", f.data), ("sop", int(f.sop)), ("eop", int(f.eop)),
                         ("bytes", f.nbytes if f.eop else 0), ("bad", int(f.bad)), ("port", port)):
                getattr(dut, f"i__{k}").value = v
            if rng.random() < 0.3:                         # gaps inside a packet too
                await FallingEdge(dut.clk)
                dut.i__valid.value = 0
        sent.append((body, port, bad))
        await FallingEdge(dut.clk)
        dut.i__valid.value = 0
    got = []
    for _ in range(len(sent)):
        got.append(await with_timeout(sink.recv(), 200 * d * 10, "ns"))      # 10 ns clock
    for _ in range(20):
        await FallingEdge(dut.clk)
    await obs.stop()
    for k, ((body, port, bad), fr) in enumerate(zip(sent, got, strict=True)):
        assert bytes(fr.tdata) == body, f"packet {k}: bytes differ"
        users = fr.tuser if isinstance(fr.tuser, list) else [fr.tuser]
        assert all(u & 0xFF == port for u in users), f"packet {k}: tuser port {users} != {port}"
        assert users[-1] >> 8 == bad, f"packet {k}: bad mark {users[-1] >> 8} != {bad}"
    assert int(dut.overflow.value) == 0 and int(dut.pkts_in.value) == len(sent)


@cocotb.test()
async def a_writer_that_ignores_free_is_counted(dut):
    """Flits offered to a full queue are dropped and counted (`overflow`), the queue keeps
    what it had (its memory plus the flit on the output) and delivers it intact."""
    hold = [True]
    cfg, d, rng, sink, obs = await _setup(dut, lambda rng: iter(lambda: hold[0], None))
    n = d + 9
    bodies = [bytes(rng.getrandbits(8) for _ in range(cfg.bytes_per_flit)) for _ in range(n)]
    for b in bodies:                                         # one-flit packets, back to back
        f = to_flits(b, cfg.data_width)[0]
        await FallingEdge(dut.clk)
        for k, v in (("valid", 1), ("data", f.data), ("sop", 1), ("eop", 1), ("bytes", len(b)), ("bad", 0),
                     ("port", 3)):
            getattr(dut, f"i__{k}").value = v
    await FallingEdge(dut.clk)
    dut.i__valid.value = 0
    kept = d + 1                                             # the memory and the output stage
    assert int(dut.overflow.value) == n - kept and int(dut.free.value) == 0
    hold[0] = False
    got = [bytes((await with_timeout(sink.recv(), 100 * d * 10, "ns")).tdata) for _ in range(kept)]
    for _ in range(10):
        await FallingEdge(dut.clk)
    await obs.stop()
    assert got == bodies[:kept] and int(dut.free.value) == d


def _top(cfg):
    from hw.switch.mgmt_queue import MgmtQueue
    return MgmtQueue(cfg, depth_for(cfg))


@pytest.mark.parametrize("cfg_name", ["small", "w512"])
@pytest.mark.parametrize("sim", SIMS)
def test_mgmt_queue(sim, cfg_name):
    run_cocotb(top=_top, name="ib_mgmt_queue", test_module="tb.test_mgmt_queue", sim=sim, cfg=CONFIGS[cfg_name])
