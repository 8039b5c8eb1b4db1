"""Link transmit: credit-checked packet scheduling and flow-control packet generation
(IBA §7.9; docs/link-layer.md).

Per data VL the sender keeps FCTBS (blocks sent, mod 4096) and FCCL (the latest credit limit
the peer advertised). Between packets, one flit per cycle, it picks in this order:

  1. a pending flow-control packet (lowest VL first). A VL's FC packet is pending when the
     local receiver's FCCL moved by at least `fc_update_blocks` (a quarter of the VL's
     buffer) since the last one sent, and for every VL each `fc_period` cycles. The first
     FC packet of each VL after bring-up is Op=1 (init).
  2. a VL15 packet (no flow control; port state Init, Armed or Active)
  3. a data packet, round robin over the data VLs, only in state Active and only if the
     whole packet fits: (FCCL - (FCTBS + n)) mod 4096 <= 2048 (IBA §7.9.4, virtual
     cut-through). FCTBS += n when it starts.

Link packets therefore go out only between data packets. In state Down the credit state is
cleared (FCTBS = FCCL = 0: no credit until the peer's FC packets arrive), a packet being sent
is abandoned, and everything the sources offer is drained and counted (`xmit_discards`),
but for a packet whose eop comes marked bad: its receiver has counted it already (one
packet, one count).
In any other state, a source whose head is not a sop (the tail of a packet cut by a
link-down) is drained too, so it can never wedge the port.

Ports:
  src[i], src15  In   packet streams (valid data sop eop bytes bad, ready out); a packet on
                      src[i] must carry VL i in its LRH. src[i] also carries `blocks`, the
                      packet's credit blocks from its LRH's PktLen (`packet_blocks`), valid
                      with the sop flit: the source computes it where it registers the flit
                      (`drive_source` does it for a source without a register), so the
                      credit test and `ready` never run through a PktLen decode
  fc_rx          In   FC packets received by this port's receiver: FCCL[vl] := fccl
  local_fccl[i]  In   the credit limit this port's receiver advertises for VL i
  state          In   port state
  tx             Out  to the PHY, registered, paced by tx.ready
  fctbs, fccl    Out  credit state per data VL (observability, tests, proof)
  counters       Out  xmit_pkts, xmit_words, xmit_wait, fc_sent, xmit_discards

In the switch the allocator tests the fit too, when it matches a packet; that test cannot see
a packet already matched for the same output and VL whose first flit has not reached this
transmitter yet (the output is released when the last flit is issued from the input buffer,
which for a packet of one or two flits can come before its sop is taken here), so the test
here is the one that guarantees credit, and it stays.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import link as specs
from contracts.config import SwitchConfig
from contracts.defs import PortState
from contracts.streams import FLIT
from hw.common.crc import CRC16_IB, crc16_wire, crc_network
from hw.common.layouts import LRHLayout, header_at
from hw.common.ports import signature
from hw.link.credit import CreditSender
from hw.link.link_rx import packet_blocks

__all__ = ["LinkTx", "drive_source"]


_FLIT = ("valid", *FLIT)


def drive_source(m: Module, cfg: SwitchConfig, src, stream, valid=None):
    """Drive LinkTx source `src` from a plain packet stream (contracts.streams.buffer's members, ready
    back), its `blocks` decoded from the LRH of the flit offered (for sources with no register
    of their own to compute it in: endpoints, the link-port harness). `valid` overrides the
    stream's valid (a demultiplexed stream)."""
    m.d.comb += [getattr(src, k).eq(getattr(stream, k)) for k in _FLIT[1:]]
    m.d.comb += src.valid.eq(stream.valid if valid is None else valid)
    lrh = header_at(stream.data, cfg.data_width, LRHLayout)
    m.d.comb += src.blocks.eq(packet_blocks(lrh.pktlen, cfg.credit_vcrc))


class LinkTx(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(specs.link_tx(cfg)))

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        W, nvl = cfg.data_width, cfg.data_vls
        tx, state = self.tx, self.state
        srcs = list(self.src) + [self.src15]
        VL15 = nvl

        down = state == PortState.DOWN
        active = state == PortState.ACTIVE
        can_load = ~tx.valid | tx.ready

        senders = []
        for v in range(nvl):
            c = CreditSender(cfg.max_packet_blocks.bit_length() + 1)
            m.submodules[f"credit{v}"] = c
            senders.append(c)
            m.d.comb += [self.fctbs[v].eq(c.fctbs), self.fccl[v].eq(c.fccl), c.clear.eq(down),
                         c.fc_valid.eq(~down & self.fc_rx.valid & (self.fc_rx.vl == v)),
                         c.fc_fccl.eq(self.fc_rx.fccl)]
        fctbs = Array(self.fctbs)
        in_pkt = Signal()
        sel = Signal(range(nvl + 1))
        rr = Signal(range(nvl))
        pending = Signal(nvl)
        init = Signal(nvl, init=(1 << nvl) - 1)
        last_sent = Array(Signal(12, name=f"last_sent{i}") for i in range(nvl))
        timer = Signal(range(cfg.fc_period))

        # blocks of the packet at the head of each data source (its `blocks`, from its sop
        # flit's LRH)
        nbits = cfg.max_packet_blocks.bit_length() + 1
        ok = []
        for v in range(nvl):
            n = Signal(nbits, name=f"n{v}")
            m.d.comb += n.eq(self.src[v].blocks)
            # IBA §7.9.4: the whole packet must fit, (FCCL - (FCTBS + n)) mod 4096 <= 2048
            m.d.comb += senders[v].n.eq(n)
            o = Signal(name=f"eligible{v}")
            m.d.comb += o.eq(self.src[v].valid & self.src[v].sop & senders[v].ok & active)
            ok.append((o, n))
        elig = Cat(o for o, _ in ok)

        # round robin: first eligible VL at or after rr
        pick = Signal(range(nvl))
        any_elig = elig.any()
        with m.Switch(rr):
            for r in range(nvl):
                with m.Case(r):
                    order = [(r + k) % nvl for k in range(nvl)]
                    choice = Const(order[-1], range(nvl))
                    for v in reversed(order):
                        choice = Mux(elig[v], v, choice)
                    m.d.comb += pick.eq(choice)

        # lowest pending FC VL
        fc_vl = Signal(range(nvl))
        for v in reversed(range(nvl)):
            with m.If(pending[v]):
                m.d.comb += fc_vl.eq(v)

        # the FC flit (IBA §7.9.4): Op FCTBS VL FCCL, LPCRC (least-significant byte first unless
        # SwitchConfig.crc_msb_first)
        fc_body = Signal(32)
        lp = Signal(16)
        fc_vl4 = Signal(4)
        fc_op = Signal(4)
        m.d.comb += [
            fc_vl4.eq(fc_vl),
            fc_op.eq(init.bit_select(fc_vl, 1)),          # Op 1 = init, 0 = normal
            fc_body.eq(Cat(Array(self.local_fccl)[fc_vl], fc_vl4, fctbs[fc_vl], fc_op)),
            lp.eq(crc_network(CRC16_IB, Const(CRC16_IB.init, 16), fc_body, 4) ^ CRC16_IB.xorout),
        ]
        first, second = crc16_wire(lp, self.cfg.crc_msb_first)       # SwitchConfig.crc_msb_first
        fc_flit = Cat(Const(0, W - 48), second, first, fc_body)

        # events
        load_data = Signal()           # a data/VL15 flit is loaded this cycle
        load_fc = Signal()
        start = Signal()               # ... and it starts a packet
        start_sel = Signal(range(nvl + 1))
        sent_vl = Signal(range(nvl))
        discard_eops = Signal(range(nvl + 2))
        remnant_eops = Signal(nvl + 1)

        with m.If(down):
            # credit state restarts; drain the sources
            # at bring-up every VL owes an FC init packet
            m.d.sync += [in_pkt.eq(0), pending.eq((1 << nvl) - 1), init.eq((1 << nvl) - 1), timer.eq(0),
                         tx.valid.eq(0)]
            for v in range(nvl):
                m.d.sync += last_sent[v].eq(0)
            for s in srcs:
                m.d.comb += s.ready.eq(1)
            m.d.comb += discard_eops.eq(sum((s.valid & s.eop & ~s.bad) for s in srcs))
        with m.Else():
            # Remnants: a source showing a non-sop flit that is not the packet being sent
            # holds the tail of a packet cut by a link-down; drain it so it cannot wedge
            # the port, and count it discarded.
            for k, s in enumerate(srcs):
                remnant = s.valid & ~s.sop & ~(in_pkt & (sel == k))
                with m.If(remnant):
                    m.d.comb += s.ready.eq(1)
                m.d.comb += remnant_eops[k].eq(remnant & s.eop & ~s.bad)
            m.d.comb += discard_eops.eq(sum(remnant_eops[k] for k in range(nvl + 1)))
            # FC packets received: the peer's credit limit (IBA §7.9.4)
            wrap = timer == cfg.fc_period - 1
            m.d.sync += timer.eq(Mux(wrap, 0, timer + 1))
            # an update is due once the advertised limit moved by fc_update_blocks (a quarter
            # of the buffer): FC packets on every freed block would steal a slot per packet
            changed = Cat(((self.local_fccl[v] - last_sent[v])[:12] >= cfg.fc_update_blocks)
                          for v in range(nvl))
            sent_mask = Mux(load_fc, 1 << sent_vl, 0)
            m.d.sync += pending.eq((pending | changed | Mux(wrap, (1 << nvl) - 1, 0)) & ~sent_mask)

            with m.If(can_load):
                m.d.sync += tx.valid.eq(0)
                with m.If(in_pkt):
                    s = Array(srcs)[sel]
                    with m.If(s.valid):
                        m.d.comb += [s.ready.eq(1), load_data.eq(1)]
                        m.d.sync += [tx.valid.eq(1), tx.data.eq(s.data), tx.sop.eq(0), tx.eop.eq(s.eop),
                                     tx.bytes.eq(s.bytes), tx.bad.eq(s.bad), tx.link.eq(0)]
                        with m.If(s.eop):
                            m.d.sync += in_pkt.eq(0)
                with m.Elif(pending.any()):
                    m.d.comb += [load_fc.eq(1), sent_vl.eq(fc_vl)]
                    m.d.sync += [tx.valid.eq(1), tx.data.eq(fc_flit), tx.sop.eq(1), tx.eop.eq(1),
                                 tx.bytes.eq(6), tx.bad.eq(0), tx.link.eq(1),
                                 last_sent[fc_vl].eq(Array(self.local_fccl)[fc_vl]),
                                 init.eq(init & ~(1 << fc_vl))]
                with m.Elif(self.src15.valid & self.src15.sop):
                    m.d.comb += [start.eq(1), start_sel.eq(VL15)]
                with m.Elif(any_elig):
                    m.d.comb += [start.eq(1), start_sel.eq(pick)]
                    m.d.comb += Array(c.start for c in senders)[pick].eq(1)
                    m.d.sync += rr.eq(Mux(pick == nvl - 1, 0, pick + 1))
                with m.If(start):
                    s = Array(srcs)[start_sel]
                    m.d.comb += [s.ready.eq(1), load_data.eq(1)]
                    m.d.sync += [tx.valid.eq(1), tx.data.eq(s.data), tx.sop.eq(1), tx.eop.eq(s.eop),
                                 tx.bytes.eq(s.bytes), tx.bad.eq(s.bad), tx.link.eq(0),
                                 in_pkt.eq(~s.eop), sel.eq(start_sel)]

        # counters
        # XmitWait: Active, between packets, a data packet waiting, and none starts
        waiting = Cat(self.src[v].valid & self.src[v].sop for v in range(nvl)).any() & active & ~in_pkt
        start_lrh = header_at(Array(srcs)[start_sel].data, W, LRHLayout)
        incs = {
            "xmit_pkts": (start, 1),
            "xmit_words": (start, start_lrh.pktlen),
            "xmit_wait": (waiting & ~(start & (start_sel != VL15)), 1),
            "fc_sent": (load_fc, 1),
            "xmit_discards": (discard_eops != 0, discard_eops),
        }
        for name, (hit, amount) in incs.items():
            c = getattr(self.counters, name)
            nxt = c + amount
            with m.If(hit):
                m.d.sync += c.eq(Mux(nxt > 0xFFFFFFFF, 0xFFFFFFFF, nxt))
        return m
