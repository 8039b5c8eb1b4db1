"""Run order for `make sim`: the longest items first, so that no long simulation starts last
and runs alone at the end.

`make sim` runs pytest-xdist with `--dist loadgroup`: the tests of a group (xdist_group: the
fabric simulator's, which share the numba cores one worker compiles) go to one worker, the
largest group first; every other test is a unit of its own, handed out in the order below as
the workers ask for work. (The slow items: measured on this project's 2-core machine class,
from a fresh clone; longest first.)"""

_SLOW_FIRST = [
    "tb/test_switch.py::test_switch[icarus-small]",
    "tb/test_switch.py::test_switch_rxreg[icarus]",
    "tb/test_switch.py::test_switch[verilator-small]",
    "tb/test_switch.py::test_switch_rxreg[verilator]",
    "tests/test_netsim_rtl.py::test_every_rtl_packet_is_checked_good_and_timed[k4]",
    "tb/test_opensm_rtl.py::test_opensm_rtl[verilator]",
    "tb/test_soak.py::test_soak[icarus]",
    "tb/test_link_pair.py::test_link_pair[verilator-64]",
    "tb/test_soak.py::test_soak[verilator]",
    "tb/test_link_pair.py::test_link_pair[icarus-5]",
]


def pytest_addoption(parser):
    # `make gate` (tb/test_gate.py, marker gate): which config, which simulator
    parser.addoption("--gate-config", default="small", help="make gate: the config of the synthesized switch")
    parser.addoption("--gate-sim", default="icarus", choices=["icarus", "verilator"],
                     help="make gate: the simulator of the netlist")
    parser.addoption("--gate-resynth", action="store_true", help="make gate: synthesize even if up to date")


def pytest_collection_modifyitems(session, config, items):
    rank = {nodeid: k for k, nodeid in enumerate(_SLOW_FIRST)}
    slow = sorted((it for it in items if it.nodeid in rank), key=lambda it: rank[it.nodeid])
    items[:] = slow + [it for it in items if it.nodeid not in rank]
