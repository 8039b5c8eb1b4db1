"""Golden model of the port state machine (docs/link-layer.md, IBA §14.2.5.6)."""
from __future__ import annotations

from contracts.defs import PortState

__all__ = ["PortStateModel",]

_SAT = 0xFFFFFFFF


class PortStateModel:
    def __init__(self):
        self.state = PortState.DOWN
        self.link_downed = 0
        self.state_req_bad = 0

    def step(self, inp: dict) -> dict:
        """inp: up, req, want, data_rx. Returns state (and `active`: it is Active),
        link_downed, state_req_bad (registered).
        A data packet received while Armed makes the port Active (IBA §7.2)."""
        out = {"state": int(self.state), "active": int(self.state == PortState.ACTIVE),
               "link_downed": self.link_downed, "state_req_bad": self.state_req_bad}
        state, req, want = self.state, inp["req"], inp["want"]
        if not inp["up"] or (req and want == PortState.DOWN):
            if state != PortState.DOWN and not inp["up"]:       # the link was lost, not put down
                self.link_downed = min(self.link_downed + 1, _SAT)
            self.state = PortState.DOWN
        elif state == PortState.DOWN:
            self.state = PortState.INIT
            if req:
                self.state_req_bad = min(self.state_req_bad + 1, _SAT)
        elif req:
            if state == PortState.INIT and want == PortState.ARMED:
                self.state = PortState.ARMED
            elif state == PortState.ARMED and want == PortState.ACTIVE:
                self.state = PortState.ACTIVE
            else:
                self.state_req_bad = min(self.state_req_bad + 1, _SAT)
        if state == PortState.ARMED and inp["data_rx"] and self.state == PortState.ARMED:
            self.state = PortState.ACTIVE
        return out
