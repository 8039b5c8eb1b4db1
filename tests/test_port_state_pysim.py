"""Port state machine: RTL (Amaranth simulator) in lock-step with the model on random
inputs, and the IBA rules written out by hand: a data packet takes an Armed port Active
(IBA §7.2), LinkDownedCounter counts a lost link but not a Down the SM asked for
(IBA §16.1.3.5)."""
import random

from contracts.defs import PortState
from hw.link.port_state import PortStateMachine
from models.port_state import PortStateModel
from verif.pysim import pysim_lockstep

OUTS = ["state", "link_downed", "state_req_bad"]
IDLE = {"up": 1, "req": 0, "want": 0, "data_rx": 0}


def _run(stim):
    seen = []
    pysim_lockstep(PortStateMachine(), PortStateModel(), stim, OUTS, on_cycle=lambda i, o: seen.append(o))
    return seen


def test_random_inputs_in_lockstep():
    rng = random.Random(3)
    stim = [{"up": int(rng.random() < 0.95), "req": int(rng.random() < 0.3), "want": rng.randrange(8),
             "data_rx": int(rng.random() < 0.2)} for _ in range(3000)]
    seen = _run(stim)
    states = {o["state"] for o in seen}
    assert states == {1, 2, 3, 4}, states


def test_iba_rules_by_hand():
    A, D, I, ACT = PortState.ARMED, PortState.DOWN, PortState.INIT, PortState.ACTIVE
    stim = ([IDLE] * 2                                         # Down -> Init (link up)
            + [dict(IDLE, req=1, want=A), IDLE]               # Init -> Armed
            + [dict(IDLE, data_rx=1), IDLE]                    # a data packet: Armed -> Active
            + [dict(IDLE, req=1, want=D), IDLE, IDLE]          # the SM takes it Down: not counted
            + [dict(IDLE, req=1, want=A), IDLE]
            + [dict(IDLE, up=0), IDLE, IDLE])                  # the link is lost: counted
    seen = _run(stim)
    st = [o["state"] for o in seen]
    assert st[:3] == [D, I, I] and st[3] == A and st[5] == ACT, st
    assert st[7] == D and seen[9]["link_downed"] == 0, (st, seen[9])
    assert st[10] == A and st[12] == D and seen[13]["link_downed"] == 1, (st, seen[-1])
    # data while Init does not activate
    seen = _run([IDLE, IDLE, dict(IDLE, data_rx=1), IDLE])
    assert [o["state"] for o in seen] == [D, I, I, I]
