"""Fast lock-step of the receive parser against its model in the Amaranth simulator."""
import random

import pytest

from contracts.config import CONFIGS
from contracts.link import rx_parser
from hw.link.rx_parser import RxParser
from models.rx_parser import RxParserModel
from verif.ib.stimulus import RX_IDLE, cycles, idle_random, make_item, mixed_items
from verif.pysim import pysim_lockstep


@pytest.mark.parametrize("cfg_name", ["small", "w128", "small-msb"])
def test_rx_parser_pysim_lockstep(cfg_name):
    cfg = CONFIGS[cfg_name]
    rng = random.Random(1)
    items = mixed_items(cfg, rng, 60) + [make_item("good", cfg, rng)]
    stim = list(cycles(items, idle_random(0.2, rng))) + [dict(RX_IDLE)] * 3
    _, outs, qual = rx_parser(cfg).ports()
    pysim_lockstep(RxParser(cfg), RxParserModel(cfg), stim, outs, qual)
