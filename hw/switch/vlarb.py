"""VL arbitration for one output port (IBA §7.6.9, VLArbitrationTable).

Chooses the VL whose packet may use the output next:

  1. VL15 first, whenever it has a packet ready.
  2. The high-priority table, while it has a ready entry and the high-priority blocks sent
     since a low-priority packet last went are below LimitOfHighPriority x 4 KB (255 =
     unbounded; 0 = one packet); the limit only binds when a low entry is ready.
  3. Otherwise the low-priority table.

Within a table: the current entry keeps the output while its VL has packets ready and its
remaining weight (64-byte units) is positive; otherwise the next entry after it, in table
order (wrapping, the current entry last), with a non-zero weight and a ready VL is taken and
starts with its full weight. A packet may overrun the remaining weight (it is never split);
the entry is then exhausted.

Ports:
  ready[v]     In   data VL v has a packet that may go (some input holds one and the
                    downstream link has credit for all of it)
  ready15      In   a VL15 packet is waiting
  high[k], low[k]  In  table entries: vl (4), weight (8)
  limit        In   LimitOfHighPriority
  sel_valid    Out  some VL may go; sel_vl its VL (15 for VL15)      (registered)
  sent         In   a packet on sel_vl started this cycle, `blocks` long: update the state

A cycle ahead (docs/switch-core.md, "Allocation"): the choice shown in cycle t+1 is the one
the rules above make from `ready` and `ready15` of cycle t and the tables' state after every
packet sent before t; it is registered, so the allocation that uses it does not wait for
this arbitration in its own cycle. A `sent` in cycle t consumes the entry behind the choice
shown in t (with `blocks` and the weights of cycle t+1) and moves the state at the edge
after t+1; the choice computed in t+1 already sees the moved state (the consumption is
applied combinationally in front of the scan), so it is exact from cycle t+2 on. The choice
shown in t+1 does not see it: `sent` must not come in two consecutive cycles (the model
raises). The switch never does that: a match holds its output from the next cycle until at
least the cycle after (docs/switch-core.md).
"""
from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from hw.common.ports import signature

__all__ = ["VLArbiter"]

HIGH_UNIT_BLOCKS = 64          # LimitOfHighPriority unit: 4 KB = 64 blocks


class VLArbiter(wiring.Component):
    def __init__(self, data_vls: int, entries: int, block_bits: int = 8):
        self.data_vls, self.entries = data_vls, entries
        super().__init__(signature(specs.vlarb(data_vls, entries, block_bits)))

    def _table(self, m, name, table, ptr, rem):
        """(any, entry index, vl) of the entry that would be served in this table."""
        e = self.entries
        elig = Signal(e, name=f"{name}_elig")
        for k in range(e):
            vl = table[k].vl
            vl_ready = Mux(vl < self.data_vls, self.ready.bit_select(vl[:max(1, (self.data_vls - 1).bit_length())], 1)
                           if self.data_vls > 1 else self.ready[0], 0)
            keep = (ptr == k) & (rem != 0)
            m.d.comb += elig[k].eq(vl_ready & (keep | (table[k].weight != 0)))
        # scan from the current entry if it has weight left, else from the one after it
        start = Signal(range(max(e, 2)), name=f"{name}_start")
        m.d.comb += start.eq(Mux(rem != 0, ptr, Mux(ptr == e - 1, 0, ptr + 1)))
        upper = Signal(e, name=f"{name}_upper")
        m.d.comb += upper.eq(elig & (Const((1 << e) - 1, e) << start)[:e])

        def first(v):
            c = Const(e - 1, range(max(e, 2)))
            for j in reversed(range(e)):
                c = Mux(v[j], j, c)
            return c
        idx = Signal(range(max(e, 2)), name=f"{name}_idx")
        m.d.comb += idx.eq(Mux(upper.any(), first(upper), first(elig)))
        vlsel = Signal(4, name=f"{name}_vl")
        for k in range(e):
            with m.If(idx == k):
                m.d.comb += vlsel.eq(table[k].vl)
        return elig.any(), idx, vlsel

    def elaborate(self, platform):
        m = Module()
        e = self.entries
        hptr = Signal(range(max(e, 2)), init=e - 1)     # so that the first scan starts at entry 0
        hrem = Signal(9)
        lptr = Signal(range(max(e, 2)), init=e - 1)
        lrem = Signal(9)
        hcount = Signal(range(255 * HIGH_UNIT_BLOCKS + 256))   # high blocks since the last low packet

        # the choice a `sent` consumed (registered), applied in front of this cycle's scan:
        # the effective state, which the state registers take at the edge
        c_high = Signal()                  # a high-table entry was served
        c_low = Signal()                   # a low-table entry was served
        c_idx = Signal(range(max(e, 2)))
        c_blocks = Signal.like(self.blocks)
        e_hptr, e_lptr = Signal.like(hptr), Signal.like(lptr)
        e_hrem, e_lrem = Signal.like(hrem), Signal.like(lrem)
        e_hcount = Signal.like(hcount)

        def consumed(ptr, rem, table, name):
            w = Signal(9, name=f"w_{name}")
            for k in range(e):
                with m.If(c_idx == k):
                    m.d.comb += w.eq(table[k].weight)
            base = Mux((c_idx == ptr) & (rem != 0), rem, w)
            return Mux(base > c_blocks, base - c_blocks, 0)

        m.d.comb += [
            e_hptr.eq(Mux(c_high, c_idx, hptr)), e_hrem.eq(Mux(c_high, consumed(hptr, hrem, self.high, "hi"), hrem)),
            e_lptr.eq(Mux(c_low, c_idx, lptr)), e_lrem.eq(Mux(c_low, consumed(lptr, lrem, self.low, "lo"), lrem)),
            e_hcount.eq(Mux(c_high, Mux(hcount + c_blocks > 255 * HIGH_UNIT_BLOCKS, 255 * HIGH_UNIT_BLOCKS,
                                        hcount + c_blocks), Mux(c_low, 0, hcount))),
        ]
        m.d.sync += [hptr.eq(e_hptr), hrem.eq(e_hrem), lptr.eq(e_lptr), lrem.eq(e_lrem), hcount.eq(e_hcount)]

        h_any, h_idx, h_vl = self._table(m, "hi", self.high, e_hptr, e_hrem)
        l_any, l_idx, l_vl = self._table(m, "lo", self.low, e_lptr, e_lrem)
        may_high = Signal()
        m.d.comb += may_high.eq((self.limit == 255) | (e_hcount == 0) | (e_hcount < self.limit * HIGH_UNIT_BLOCKS)
                                | ~l_any)
        use_high = Signal()
        m.d.comb += use_high.eq(h_any & may_high)

        # the choice for the next cycle, registered with the entry behind it
        s15, s_high, s_low = Signal(), Signal(), Signal()
        s_idx = Signal(range(max(e, 2)))
        m.d.sync += [
            self.sel_valid.eq(self.ready15 | h_any | l_any),
            self.sel_vl.eq(Mux(self.ready15, 15, Mux(use_high, h_vl, l_vl))),
            s15.eq(self.ready15), s_high.eq(use_high), s_low.eq(~use_high & l_any),
            s_idx.eq(Mux(use_high, h_idx, l_idx)),
        ]
        go = self.sent & ~s15
        m.d.sync += [c_high.eq(go & s_high), c_low.eq(go & s_low), c_idx.eq(s_idx), c_blocks.eq(self.blocks)]
        return m
