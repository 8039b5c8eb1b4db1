"""The fault-injection soak (scenarios/soak.py; hw/top/soak.py; docs/reliability.md): the switch
with a hardware endpoint on every port and a fault injector on every wire, under random faults
(flipped bits, bad lengths, EBP, lost flow-control packets, rogue senders over credit, cable
cuts, ports set Down by management). No Python in the inner loop: the test sleeps while the
hardware runs, then reads every counter and holds the books (scenarios/soak_books.py):

  - every packet sent was delivered good exactly once, or discarded and counted;
  - no packet was delivered corrupted, twice or out of order;
  - no endpoint waited longer than the stall bound for a good packet while traffic ran (the
    switch never wedged);
  - every fault kind was injected.

In `make sim` a short soak (scenarios.soak.SHORT: 3,000 packets on Verilator with a fault
every 2^5 cycles on average, 600 on Icarus with one every 2^4 and a shorter HOQLife);
`make soak` (bench/soak.py) runs 10^7 packets per seed on the native Verilator binary and
prints the books.
"""
import pytest

from scenarios.soak import SHORT, run_soak
from verif.runner import SIMS


@pytest.mark.parametrize("sim", SIMS)
def test_soak(sim):
    packets, rate, plan = SHORT[sim]
    run_soak(sim, packets, rate_log2=rate, plan=plan)
