"""The AXI4-Lite writer of board tops without a processor (hw/endpoint/axil_writer.py) on
Icarus and Verilator, against a slave written here that pauses every channel at random and
refuses some addresses (SLVERR): every write arrives once, in order, with its data and all
byte strobes; each refused one is counted in `errors`; `done` rises after the last response
and nothing is written after it."""
import random

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from contracts.config import CONFIGS
from verif.runner import SIMS, run_cocotb
from verif.tb import TB

WRITES = [(0x14, 0x5), (0x0, 0x1), (0x200, 0xFF), (0x4000, 0x01020304), (0x18, 0xDEADBEEF), (0x100, 4)]
REFUSED = {0x0, 0x18}                      # read-only registers in the switch's map: SLVERR


@cocotb.test()
async def writes_in_order_errors_counted(dut):
    tb = TB(dut, {"awready": 0, "wready": 0, "bvalid": 0, "bresp": 0, "arready": 0, "rvalid": 0,
                  "rdata": 0, "rresp": 0})
    await tb.reset()
    rng = random.Random(4)
    got, aw, w = [], None, None
    pending_b = []
    for _ in range(600):
        await FallingEdge(dut.clk)
        dut.awready.value = int(aw is None and rng.random() < 0.6)
        dut.wready.value = int(w is None and rng.random() < 0.6)
        if pending_b and rng.random() < 0.5:
            dut.bvalid.value, dut.bresp.value = 1, pending_b[0]
        else:
            dut.bvalid.value = 0
        await ReadOnly()
        assert int(dut.arvalid.value) == 0, "the writer never reads"
        if int(dut.awvalid.value) and int(dut.awready.value):
            aw = int(dut.awaddr.value)
        if int(dut.wvalid.value) and int(dut.wready.value):
            assert int(dut.wstrb.value) == 0xF
            w = int(dut.wdata.value)
        if int(dut.bvalid.value) and int(dut.bready.value):
            pending_b.pop(0)
        if aw is not None and w is not None:
            assert not int(dut.done.value), "a write after done"
            got.append((aw, w))
            pending_b.append(2 if aw in REFUSED else 0)
            aw = w = None
    assert got == WRITES, got
    assert int(dut.done.value) == 1 and not pending_b
    assert int(dut.errors.value) == len([a for a, _ in WRITES if a in REFUSED])


def _top(cfg):
    from hw.endpoint.axil_writer import AxilWriter
    return AxilWriter(WRITES)


@pytest.mark.parametrize("sim", SIMS)
def test_axil_writer(sim):
    run_cocotb(top=_top, name="ib_axil_writer", test_module="tb.test_axil_writer", sim=sim, cfg=CONFIGS["small"])
