"""The native Verilator binaries (verif/native: our C++ main, driven a command a line over a
pipe, no Python per cycle) run the same procedures as the cocotb tests and reach the same
verdicts:

  - ib_loopback (config small at two ports): scenarios/loopback.py, as tb/test_loopback.py runs it;
  - ib_soak: scenarios/soak.py's procedure and books, as tb/test_soak.py and `make soak`
    run them, on a short soak with every fault kind;
  - the driver refuses what it cannot do, naming the command (an unknown port, a bad value).

The fabric's native binary is run by `make bench-fabric`, `make bench-failover` and `make
bench-ar` (each checks every round it measures) and by `make sim-long`
(tests/test_fabric_native.py).
"""
from __future__ import annotations

import asyncio
import functools

import pytest

from contracts.config import CONFIGS
from verif.runner import ROOT


@functools.cache
def _loopback_exe():
    from hw.fabric.fabric import module_ports
    from hw.top.loopback import Loopback
    from scenarios.loopback import PLAN
    from verif.native import build
    from verif.runner import generate_verilog
    # the top tb/test_loopback.py runs under cocotb on Icarus: on Verilator the same procedure
    # (scenarios/loopback.py) runs here, on the native binary, and not a second time under
    # cocotb (a second Verilator build of the same top)
    cfg = CONFIGS["small"]
    d = ROOT / "build" / "native" / f"loopback-{cfg.name}"
    top = Loopback(cfg, PLAN)
    src = generate_verilog(top, "ib_loopback", d / "ib_loopback.v")
    return cfg, build("ib_loopback", [src], d, cxx_opt="-O0", ports=module_ports(top), say=lambda s: None)


def test_native_loopback_pairs_exchange():
    from scenarios.loopback import COUNT, loopback_procedure
    from verif.harness import NativeHarness
    from verif.native import NativeSim
    cfg, exe = _loopback_exe()
    with NativeSim(exe) as s:
        res = asyncio.run(loopback_procedure(NativeHarness(s), cfg.ports, COUNT))
        assert s.cycles() > 220
    assert [r["rcv_good"] for r in res] == [COUNT] * cfg.ports
    assert all(0 < r["lat_min"] <= r["lat_max"] for r in res)


def test_native_driver_refuses_bad_commands():
    from verif.native import NativeError, NativeSim
    _, exe = _loopback_exe()
    with NativeSim(exe) as s:
        with pytest.raises(NativeError, match="no_such_port"):
            s.set(no_such_port=1)
        with pytest.raises(NativeError, match="no_such_port"):
            s.get("no_such_port")
        with pytest.raises(NativeError, match="frobnicate"):
            s.cmd("frobnicate 3")
        s.step(5)                                 # still answering after refusals
        assert s.cycles() == 5


@pytest.mark.long
def test_native_soak_books_balance():
    """A short soak on the native binary, every fault kind at a fault every 2^5 cycles: the
    books hold exactly (scenarios/soak.py: verdict), as under cocotb."""
    from scenarios.soak import PLAN, build_soak, kind_mask, run_one
    exe = build_soak(PLAN, say=lambda s: None, cxx_opt="-O0")
    raw = run_one(str(exe), PLAN, 4000, 5, kind_mask(""))
    assert not raw["problems"], raw["problems"]
