"""Port state machine (IBA §14.2.5.6 PortInfo:PortState; rules in docs/link-layer.md).

  up          In   the PHY reports the link up
  req, want   In   a management request for state `want` (one-cycle pulse)
  data_rx     In   a data packet arrived: Armed -> Active (IBA §7.2: a port in LinkArm goes
                   to LinkActive when told to or when it receives a data packet)
  state       Out  Down 1, Init 2, Armed 3, Active 4 (registered)
  active      Out  state is Active (from the register)
  link_downed, state_req_bad  Out  32-bit saturating counters. link_downed (PMA
                   LinkDownedCounter, IBA §16.1.3.5: the times the link "failed the link error
                   recovery process and downed the link") counts a lost physical link only, not
                   a Down the subnet manager asked for
"""
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring

from contracts import link as specs
from contracts.defs import PortState
from hw.common.ports import signature

__all__ = ["PortStateMachine"]


class PortStateMachine(wiring.Component):
    def __init__(self):
        super().__init__(signature(specs.port_state()))

    def elaborate(self, platform):
        m = Module()
        state = self.state
        go_down = Signal()
        bad_req = Signal()
        m.d.comb += go_down.eq(~self.up | (self.req & (self.want == PortState.DOWN)))
        with m.If(go_down):
            m.d.sync += state.eq(PortState.DOWN)
        with m.Elif(state == PortState.DOWN):
            m.d.sync += state.eq(PortState.INIT)                       # IBA LinkUp
            m.d.comb += bad_req.eq(self.req)
        with m.Elif(self.req):
            with m.If((state == PortState.INIT) & (self.want == PortState.ARMED)):
                m.d.sync += state.eq(PortState.ARMED)
            with m.Elif((state == PortState.ARMED) & (self.want == PortState.ACTIVE)):
                m.d.sync += state.eq(PortState.ACTIVE)
            with m.Else():
                m.d.comb += bad_req.eq(1)
                with m.If((state == PortState.ARMED) & self.data_rx):
                    m.d.sync += state.eq(PortState.ACTIVE)
        with m.Elif((state == PortState.ARMED) & self.data_rx):
            m.d.sync += state.eq(PortState.ACTIVE)
        m.d.comb += self.active.eq(state == PortState.ACTIVE)
        for c, hit in ((self.link_downed, ~self.up & (state != PortState.DOWN)), (self.state_req_bad, bad_req)):
            with m.If(hit & (c != 0xFFFFFFFF)):
                m.d.sync += c.eq(c + 1)
        return m
