"""Run order for `make sim`: the longest items first, so that with pytest-xdist's two workers
no long simulation starts last and runs alone at the end (seconds: measured on this
project's 2-core CI machine class, cocotb test time of each item; unlisted items keep
their collection order after these)."""

_SLOW_FIRST = [
    "tb/test_switch.py::test_switch[verilator-w128]",
    "tb/test_switch.py::test_switch[icarus-small]",
    "tb/test_link_pair.py::test_link_pair[verilator-64]",
    "tb/test_switch.py::test_switch[verilator-small]",
    "tb/test_link_pair.py::test_link_pair[verilator-0]",
    "tb/test_rx_parser.py::test_rx_parser[icarus-w512]",
    "tb/test_link_pair.py::test_link_pair[verilator-5]",
    "tb/test_link_pair.py::test_link_pair[icarus-0]",
]


def pytest_collection_modifyitems(session, config, items):
    rank = {nodeid: k for k, nodeid in enumerate(_SLOW_FIRST)}
    items.sort(key=lambda it: rank.get(it.nodeid, len(rank)))
