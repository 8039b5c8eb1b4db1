"""Per-VL credit accounting blocks (IBA §7.9), shared by LinkTx / LinkRx and proved in
formal/credit_proof.py.

All counters are 12 bits and wrap at 4096; credits are 64-byte blocks.
"""
from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CreditSender", "CreditReceiver", "fits"]


def fits(fccl, fctbs, n):
    """The whole packet of n blocks fits the credit: (FCCL - (FCTBS + n)) mod 4096 <= 2048
    (IBA §7.9.4), as an Amaranth expression. The one copy of the test: CreditSender,
    the switch's request builder and the management port's send path use it."""
    return (fccl - fctbs - n)[:12] <= 2048


class CreditSender(wiring.Component):
    """Sender side of one data VL.

      n         In   blocks of the packet at the head of the queue
      ok        Out  the whole packet fits: (FCCL - (FCTBS + n)) mod 4096 <= 2048 (IBA §7.9.4)
      start     In   the packet starts now: FCTBS += n (IBA §7.9.3)
      fc_valid  In   an FC packet from the peer arrived: FCCL := fc_fccl
      clear     In   link down: FCTBS := FCCL := 0 (no credit until the peer's FC packets)
      fctbs, fccl Out  the registers
    """

    def __init__(self, nbits: int, *, _mutant_slack: int = 0):
        # _mutant_slack: an off-by-N credit check, only for the proof's self-test (formal/)
        self._slack = _mutant_slack
        super().__init__({
            "n": In(nbits), "ok": Out(1), "start": In(1),
            "fc_valid": In(1), "fc_fccl": In(12), "clear": In(1),
            "fctbs": Out(12), "fccl": Out(12),
        })

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.ok.eq(fits(self.fccl, self.fctbs, self.n - self._slack))
        with m.If(self.clear):
            m.d.sync += [self.fctbs.eq(0), self.fccl.eq(0)]
        with m.Else():
            with m.If(self.start):
                m.d.sync += self.fctbs.eq(self.fctbs + self.n)
            with m.If(self.fc_valid):
                m.d.sync += self.fccl.eq(self.fc_fccl)
        return m


class CreditReceiver(wiring.Component):
    """Receiver side of one data VL.

      n         In   blocks of a packet arriving for this VL (its sop)
      arrive    In   such a packet is offered to the buffer now
      accept    Out  arrive and it fits: n <= free. A sender that obeys its credits always
                     fits: n > FCCL - ABR = min(free, 2048) = free is IBA's overrun
      overrun   Out  arrive and it does not fit (ExcessiveBufferOverrunErrors)
      release   In   blocks freed this cycle (a packet's eop left the buffer)
      fc_valid  In   an FC packet from the peer: ABR := fc_fctbs (IBA §7.9.4)
      clear     In   link down: ABR := 0 (the buffer keeps its contents and free count)
      free, abr Out  the registers; fccl Out = (ABR + free) mod 4096, free <= 2048 by config
    """

    def __init__(self, capacity: int, nbits: int):
        if not 0 < capacity <= 2048:
            raise ValueError(f"CreditReceiver: capacity must be 1..2048 blocks, got {capacity}")
        self.capacity = capacity
        super().__init__({
            "n": In(nbits), "arrive": In(1), "accept": Out(1), "overrun": Out(1),
            "release": In(nbits), "fc_valid": In(1), "fc_fctbs": In(12), "clear": In(1),
            "free": Out(range(capacity + 1), init=capacity), "abr": Out(12), "fccl": Out(12),
        })

    def elaborate(self, platform):
        m = Module()
        fits = self.n <= self.free
        m.d.comb += [
            self.accept.eq(self.arrive & fits),
            self.overrun.eq(self.arrive & ~fits),
            self.fccl.eq(self.abr + self.free),
        ]
        m.d.sync += self.free.eq(self.free - Mux(self.accept, self.n, 0) + self.release)
        with m.If(self.clear):
            m.d.sync += self.abr.eq(0)
        with m.Elif(self.fc_valid):
            m.d.sync += self.abr.eq(self.fc_fctbs)
        with m.Elif(self.accept):
            m.d.sync += self.abr.eq(self.abr + self.n)
        return m
