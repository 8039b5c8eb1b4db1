"""Egress rewrite: RTL vs model in the Amaranth simulator; every output packet carries the
output VL, a correct VCRC, its ICRC and all other bytes unchanged — for every last-flit
byte count (including the VCRC split over two flits); packets whose length disagrees with
PktLen pass without stalling, changed only where PktLen puts the VCRC."""
import random

import pytest

from contracts.config import CONFIGS
from hw.switch.egress import Egress
from models.egress import EgressModel
from tb.egress_traffic import EgressTraffic
from verif.pysim import pysim_lockstep


@pytest.mark.parametrize("cfg_name", ["small", "w128", "w512", "small-msb"])
def test_egress_lockstep(cfg_name):
    cfg = CONFIGS[cfg_name]
    t = EgressTraffic(cfg, random.Random(5), 120)
    pysim_lockstep(Egress(cfg), EgressModel(cfg), t.stim(), t.outs, t.qual, on_cycle=t.observe)
    t.check()
