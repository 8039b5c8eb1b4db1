"""One switch port's link layer: receive + transmit + the port state machine.

The port state (IBA §14.2.5.6 PortInfo:PortState) is a register:

  * the PHY reports the link down (`rx.up` = 0)      -> Down (counted in `link_downed`)
  * management requests Down                          -> Down (counted)
  * Down and the PHY link up                          -> Init (IBA LinkUp)
  * management requests Armed in Init, Active in Armed -> that state
  * any other request is ignored and counted (`state_req_bad`)

Init passes VL15 and flow-control packets only; Armed receives data but transmits only
VL15; Active forwards everything. Down clears the credit state of both directions, so the
next bring-up starts from FC init packets.

Ports: `rx`/`tx` to the PHY (docs/interfaces.md); `host`: the switch side — `src[i]`/`src15` (packets
to transmit), `vl[i]`/`vl15` (received packets), `mgmt` (req, state), `state`, and the
counters `crx` (receive), `ctx` (transmit), `cport` (link_downed, state_req_bad).
"""
from amaranth.hdl import Module
from amaranth.lib import wiring

from contracts import link as specs
from contracts.config import SwitchConfig
from hw.common.ports import signature
from hw.link.link_rx import LinkRx
from hw.link.link_tx import LinkTx, drive_source
from hw.link.port_state import PortStateMachine

__all__ = ["LinkPort"]



class LinkPort(wiring.Component):
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        super().__init__(signature(specs.link_port(cfg)))

    def elaborate(self, platform):
        m = Module()
        cfg, h = self.cfg, self.host
        m.submodules.rx = lrx = LinkRx(cfg)
        m.submodules.tx = ltx = LinkTx(cfg)
        wiring.connect(m, wiring.flipped(self.rx), lrx.rx)
        wiring.connect(m, wiring.flipped(self.tx), ltx.tx)

        # ---- port state machine
        m.submodules.psm = psm = PortStateMachine()
        m.d.comb += [psm.up.eq(self.rx.up), psm.req.eq(h.mgmt.req), psm.want.eq(h.mgmt.state),
                     psm.data_rx.eq(lrx.data_rx)]
        state = psm.state
        m.d.comb += [h.state.eq(state), lrx.state.eq(state), ltx.state.eq(state)]

        # ---- receive <-> transmit: the peer's FCCL and our own to advertise
        wiring.connect(m, lrx.fc_rx, ltx.fc_rx)
        for i in range(cfg.data_vls):
            m.d.comb += ltx.local_fccl[i].eq(lrx.fccl[i])
            wiring.connect(m, wiring.flipped(h.vl[i]), lrx.vl[i])
            drive_source(m, cfg, ltx.src[i], h.src[i])
            m.d.comb += h.src[i].ready.eq(ltx.src[i].ready)
        wiring.connect(m, wiring.flipped(h.vl15), lrx.vl15)
        wiring.connect(m, wiring.flipped(h.src15), ltx.src15)
        wiring.connect(m, wiring.flipped(h.crx), lrx.counters)
        wiring.connect(m, wiring.flipped(h.ctx), ltx.counters)

        m.d.comb += [h.cport.link_downed.eq(psm.link_downed), h.cport.state_req_bad.eq(psm.state_req_bad)]
        return m
