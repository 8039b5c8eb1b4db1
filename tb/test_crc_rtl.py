"""CRC generators (VCRC, ICRC with variant-field masks, LPCRC) in lock-step with their model
on Icarus and Verilator, for every W and every last-flit byte count."""
import random

import cocotb
import pytest

from contracts.config import CONFIGS
from contracts.link import crc_bank
from models.crc_bank import CRCBankModel
from models.packet import BTH, LNH, LRH, build_data_packet, to_flits
from verif.lockstep import cocotb_lockstep, visible
from verif.runner import run_cocotb, sim_matrix
from verif.tb import TB

IDLE = {"valid": 0, "sop": 0, "eop": 0, "data": 0, "bytes": 0}


def _messages(width, rng):
    """Packet bodies (LRH..payload, what the ICRC covers) of every length mod W/8, local and
    global, plus plain random byte strings."""
    nb = width // 8
    out = []
    for k in range(1, nb + 1):
        for lnh in (LNH.IBA_LOCAL, LNH.IBA_GLOBAL):
            base = 8 + 12 + (40 if lnh == LNH.IBA_GLOBAL else 0)
            total = base + ((k - base) % nb) + nb * rng.randrange(0, 3)
            grh = bytes(rng.getrandbits(8) for _ in range(40)) if lnh == LNH.IBA_GLOBAL else None
            pkt = build_data_packet(LRH(lnh=lnh, vl=rng.randrange(16), dlid=rng.randrange(1, 0xC000)),
                                    bytes(rng.getrandbits(8) for _ in range(total - base)),
                                    BTH(fecn=rng.getrandbits(1), becn=1, psn=rng.getrandbits(24)), grh)
            out.append(pkt[:-6])          # drop ICRC and VCRC: LRH..payload
        out.append(bytes(rng.getrandbits(8) for _ in range(k + nb * rng.randrange(0, 2))))
    return out


@cocotb.test()
async def crc_lockstep_every_byte_count(dut):
    tb = TB(dut, IDLE)
    await tb.reset()
    W = tb.cfg.data_width
    rng = random.Random(3)
    stim = []
    for msg in _messages(W, rng):
        for f in to_flits(msg, W):
            stim.append({"valid": 1, "sop": int(f.sop), "eop": int(f.eop), "data": f.data,
                         "bytes": f.nbytes if f.eop else rng.randrange(1 << (W // 8).bit_length())})
        if rng.random() < 0.3:
            stim.append(dict(IDLE, data=rng.getrandbits(W)))
    _, outs, qual = crc_bank(W).ports()
    core = await cocotb_lockstep(dut, CRCBankModel(W), stim, visible(outs), qual, vcd=tb.vcd)
    assert core.cycle == len(stim)


def _top(cfg):
    from hw.common.crc import CRCBank
    return CRCBank(cfg.data_width)


# each width on one simulator at least in `make sim` (the rest in `make sim-long`): docs/verification.md
@pytest.mark.parametrize("sim, cfg_name", sim_matrix(["small", "w128", "w256", "w512"],
                                                     long=("icarus-w512", "verilator-w128", "verilator-w256")))
def test_crc_rtl(sim, cfg_name):
    run_cocotb(top=_top, name="ib_crc_bank", test_module="tb.test_crc_rtl", sim=sim,
               cfg=CONFIGS[cfg_name])
