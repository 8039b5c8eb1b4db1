"""Port specification of the management block (hw/mgmt/mgmt.py SwitchMgmt: AXI4-Lite registers,
the tables, the per-port counters; docs/registers.md), from its side (contracts/ports.py).
Its register resets are contracts.regmap's."""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.counters import COUNTERS_PER_PORT
from contracts.ports import In, Out, Sig, Spec
from contracts.regmap import build_regmap, reset_values
from contracts.streams import AXIL_QUAL, axil
from contracts.switch import VLARB_ENTRY

__all__ = ["mgmt"]


def mgmt(cfg: SwitchConfig, lookups: int = 1, sl2vl_lookups: int | None = None, staged_lookups: int = 0) -> Spec:
    """SwitchMgmt with `lookups` LFT and MFT read ports (the first `staged_lookups` of them
    read through the block RAM's output register: their entries come two cycles after the
    address, the others' one), `sl2vl_lookups` SL2VL ones, and each input port's SL2VL
    words (`sl2vl_row[in][out * 2 + SL // 8]`, registers)."""
    n = cfg.ports
    sl2vl_lookups = lookups if sl2vl_lookups is None else sl2vl_lookups
    rv = reset_values(cfg)
    hoq = build_regmap(cfg)["HOQ_LIFE"].unpack(rv["HOQ_LIFE"][0]) if cfg.lifetimes else {}
    return Spec({
        **axil(),
        "port_req": Out(Sig({"req": Out(1), "state": Out(3)})).array(n),
        "port_state": In(3).array(n),
        "limit_high": Out(8).array(n),
        **({"alt_port": Out(8, init=rv["ALT_PORT"][0]).array(n)} if cfg.failover else {}),
        **({"hoq_life": Out(5, init=hoq["hoq_life"]).array(n),
            "vl_stall": Out(3, init=hoq["vl_stall_count"]).array(n),
            "switch_life": Out(5, init=rv["SWITCH_LIFE"][0]), "life_discards": In(32).array(2 * n)}
           if cfg.lifetimes else {}),
        **({"ar_group": Out(8).array(n)} if cfg.adaptive else {}),
        **({"cc_port": Out(32).array(n), "cc_marked": In(32).array(n)} if cfg.cc else {}),
        "switch_lid": Out(cfg.lid_bits),
        "mgmt_tx_errors": In(32),
        "counters": In(32).array(n, COUNTERS_PER_PORT),
        "lft_rd": Out(Sig({"dlid": In(cfg.lid_bits), "port": Out(8)})).array(lookups),
        "sl2vl_rd": Out(Sig({"index": In(range(2 * n * n)), "word": Out(32)})).array(sl2vl_lookups),
        "sl2vl_row": Out(32).array(n, 2 * n),
        "mft_rd": Out(Sig({"mlid": In(range(max(cfg.mft_entries, 2))), "mask": Out(n + 1)})).array(lookups),
        "vlarb_high": Out(VLARB_ENTRY).array(n, cfg.vlarb_entries),
        "vlarb_low": Out(VLARB_ENTRY).array(n, cfg.vlarb_entries),
    }, {**AXIL_QUAL, "port_req.state": "port_req.req"})
