"""Run order for `make sim`: the longest items first, spread over pytest-xdist's workers, so
that no long simulation starts last and runs alone at the end.

xdist's load scheduler hands each of its n workers a first chunk of consecutive items,
max(2, (items / n) // 4) of them, then gives the rest out in order as workers ask. So the
k-th slow item goes to the front of worker k mod n's first chunk; the others keep their
collection order. (Seconds: cocotb test time of each item measured on this project's 2-core
machine class; longest first.)"""

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
    "tb/test_link_pair.py::test_link_pair[icarus-0]",
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
    rest = [it for it in items if it.nodeid not in rank]
    workers = getattr(config.option, "numprocesses", None) or 1
    if not isinstance(workers, int) or workers < 2:
        items[:] = slow + rest
        return
    chunk = max(2, (len(items) // workers) // 4)
    chunks = [rest[k * chunk:(k + 1) * chunk] for k in range(workers)]
    tail = rest[workers * chunk:]
    for j, it in enumerate(slow):
        chunks[j % workers].insert(j // workers, it)
    # a worker's chunk may now be longer than `chunk`: what spills over goes on in order
    out = []
    spill = []
    for c in chunks:
        out += c[:chunk]
        spill += c[chunk:]
    items[:] = out + spill + tail
