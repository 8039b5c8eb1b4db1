"""The management receive queue: packets for the switch, to the management processor over
AXI4-Stream (docs/management.md).

A FIFO of W-bit flits in a memory read synchronously (block RAM). Writers admit a whole
packet or none: a packet may start only while `free` (flit slots not holding a flit) is at
least the flits it will take, so the queue never pushes back on the datapath mid-packet
and never stalls a VOQ reader behind a slow processor. A flit written without room is
dropped and counted (`overflow`: a writer that broke the rule; stays 0 in the switch).

  i          In   flits: valid data sop eop bytes bad, `port` (the IBA port the packet came
                  in on; taken on every flit, constant within a packet); no ready
  free       Out  free flit slots (registered count: what a writer checks at a sop)
  m_axis_*   Out  AXI4-Stream master (tdata tkeep tlast tuser tvalid, In tready): packet
                  byte 0 in byte lane 0 (tdata[7:0]); tkeep marks the valid bytes (all on
                  a flit that is not the last); tuser = {bad, port[7:0]}: `bad` (bit 8) is
                  the packet's end mark on the tlast beat (EBP: the processor drops it)
  pkts_in, overflow  Out  32-bit saturating counters

Timing: a flit written in cycle t is on the output from t + 2 (one cycle to count it, one
for the synchronous read), and is held there until `tready`.
"""
from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory

from contracts import switch as specs
from contracts.config import SwitchConfig
from hw.common.ports import signature

__all__ = ["MgmtQueue"]


class MgmtQueue(wiring.Component):
    def __init__(self, cfg: SwitchConfig, depth_flits: int | None = None):
        depth_flits = cfg.mgmt_queue_flits if depth_flits is None else depth_flits
        if depth_flits < 2:
            raise ValueError(f"MgmtQueue.depth_flits: {depth_flits}, must be at least 2")
        self.cfg, self.depth = cfg, depth_flits
        super().__init__(signature(specs.mgmt_queue(cfg, depth_flits)))

    def elaborate(self, platform):
        m = Module()
        cfg, d = self.cfg, self.depth
        w, nb, bw = cfg.data_width, cfg.bytes_per_flit, cfg.bytes_width
        width = w + bw + 1 + 1 + 8                     # data, bytes, eop, bad, port
        m.submodules.mem = mem = Memory(shape=width, depth=d, init=[])
        wp = mem.write_port()
        rp = mem.read_port(domain="sync")
        wr_ptr = Signal(range(d))
        rd_ptr = Signal(range(d))
        count = Signal(range(d + 1))                   # flits in the memory (not in the output stage)
        out_valid = Signal()
        i = self.i
        do_write = Signal()
        do_read = Signal()
        m.d.comb += [
            do_write.eq(i.valid & (count < d)),
            do_read.eq((count != 0) & (~out_valid | self.m_axis_tready)),
            wp.addr.eq(wr_ptr), wp.en.eq(do_write), wp.data.eq(Cat(i.data, i.bytes, i.eop, i.bad, i.port)),
            rp.addr.eq(rd_ptr), rp.en.eq(do_read),
        ]
        with m.If(do_write):
            m.d.sync += wr_ptr.eq(Mux(wr_ptr == d - 1, 0, wr_ptr + 1))
        with m.If(do_read):
            m.d.sync += rd_ptr.eq(Mux(rd_ptr == d - 1, 0, rd_ptr + 1))
        m.d.sync += [count.eq(count + do_write - do_read), self.free.eq(d - (count + do_write - do_read)),
                     out_valid.eq(do_read | (out_valid & ~self.m_axis_tready))]

        # the output stage: the read port's data (held while it is not read again)
        data, nbytes = rp.data[:w], rp.data[w:w + bw]
        eop, bad, port = rp.data[w + bw], rp.data[w + bw + 1], rp.data[w + bw + 2:]
        lanes = [data[w - 8 * (k + 1):w - 8 * k] for k in range(nb)]       # packet byte k -> lane k
        keep = Signal(nb)
        for k in range(nb):
            m.d.comb += keep[k].eq(~eop | (nbytes > k))
        m.d.comb += [self.m_axis_tvalid.eq(out_valid), self.m_axis_tdata.eq(Cat(*lanes)),
                     self.m_axis_tkeep.eq(keep), self.m_axis_tlast.eq(eop), self.m_axis_tuser.eq(Cat(port, bad))]

        for c, hit in ((self.pkts_in, do_write & i.sop), (self.overflow, i.valid & (count >= d))):
            with m.If(hit & (c != 0xFFFFFFFF)):
                m.d.sync += c.eq(c + 1)
        return m
