"""Golden model of the management block (hw/mgmt/mgmt.py), cycle by cycle: the AXI4-Lite
handshakes and the register/table contents, from the register map description."""
from __future__ import annotations

from contracts.config import MTU_CODES, SwitchConfig
from contracts.counters import COUNTERS_PER_PORT
from contracts.regmap import ID_MAGIC, VERSION, build_regmap, mft_words, reset_values

__all__ = ["MgmtModel", "table_defaults_model", "sweep_cycles_model"]

OKAY, SLVERR = 0, 2
_TABLES = ["SL2VL", "VLARB_HIGH", "VLARB_LOW", "LFT", "MFT"]


def table_defaults_model(cfg: SwitchConfig) -> dict[str, list[int]]:
    """Reset contents: the register map's contract (contracts.regmap.reset_values: every LFT
    entry drops, the low VLArb table gives each data VL one entry of weight 4, no alternate
    ports, lifetimes never, everything else zero)."""
    return reset_values(cfg)


def sweep_cycles_model(cfg: SwitchConfig) -> int:
    """After reset the LFT and MFT are swept back to their reset values one word of each per
    cycle (docs/registers.md): as many cycles as the longer table has 32-bit words."""
    rm = build_regmap(cfg)
    return max(cfg.lft_size // 4, rm["MFT"].count)


class MgmtModel:
    def __init__(self, cfg: SwitchConfig, lookups: int = 1, sl2vl_lookups: int | None = None,
                 staged_lookups: int = 0):
        self.cfg, self.lookups, self.staged = cfg, lookups, staged_lookups
        self.sl2vl_lookups = lookups if sl2vl_lookups is None else sl2vl_lookups
        self.rm = build_regmap(cfg)
        self.t = table_defaults_model(cfg)
        self.b = {"valid": 0, "resp": 0}
        self.r = {"valid": 0, "data": 0, "resp": 0}
        n = cfg.ports
        self.req = [(0, 0)] * n
        # LFT/MFT lookups are registered reads: the address taken at the last edge, looked
        # up in the table as it is now (a write at that same edge is seen: transparent)
        self.lk_dlid = [0] * self.lookups
        self.lk_mlid = [0] * self.lookups
        # the staged lookups (k < staged_lookups, read through the block RAM's output
        # register) show a cycle later what the others show: (LFT port, MFT mask) per lookup
        self.lk_late = [(0xFF, 0)] * staged_lookups
        # after reset: the tables are being swept back to their reset values (already so
        # here); no AXI request is taken and lookups answer the reset values meanwhile
        self.sweep = sweep_cycles_model(cfg)
        self.lk_swept = True
        for t in ("VLARB_HIGH", "VLARB_LOW"):              # registers of 16 bits
            self.t[t] = [x & 0xFFFF for x in self.t[t]]

    def _ro_value(self, name, idx, inp):
        c, rm = self.cfg, self.rm
        if name == "ID":
            return ID_MAGIC
        if name == "VERSION":
            return VERSION
        if name == "CONFIG0":
            return rm["CONFIG0"].pack(ports=c.ports, data_vls=c.data_vls, bytes_per_flit=c.bytes_per_flit,
                                      mtu_code=MTU_CODES[c.mtu], islip_iterations=c.islip_iterations,
                                      crc_msb_first=int(c.crc_msb_first), credit_vcrc=int(c.credit_vcrc),
                                      rx_register=int(c.rx_register), failover=int(c.failover))
        if name == "CONFIG1":
            return rm["CONFIG1"].pack(buffer_blocks_per_vl=c.buffer_blocks_per_vl,
                                      vl15_buffer_blocks=c.vl15_buffer_blocks, vlarb_entries=c.vlarb_entries,
                                      ext_lid_bits=c.ext_lid_bits)
        if name == "CONFIG2":
            return rm["CONFIG2"].pack(lft_entries=c.lft_entries, mft_entries=c.mft_entries)
        if name == "CONFIG3":
            return rm["CONFIG3"].pack(lifetimes=int(c.lifetimes), adaptive=int(c.adaptive), cc=int(c.cc),
                                      lifetime_unit_log2=c.lifetime_unit_log2, cc_unit=c.cc_unit,
                                      min_switch_life=c.min_switch_life)
        if name == "MGMT_TX_ERRORS":
            return inp["mgmt_tx_errors"]
        if name == "PORT_STATE":
            return inp[f"port_state__{idx}"]
        if name == "CC_MARKED":
            return inp[f"cc_marked__{idx}"]
        if name == "LIFE_DISCARDS":
            return inp[f"life_discards__{idx}"]
        if name == "COUNTERS":
            p, k = divmod(idx, COUNTERS_PER_PORT)
            return inp[f"counters__{p}__{k}"]
        return self.t[name][idx]            # LIMIT_HIGH, ALT_PORT and the tables

    def lft_port(self, lid: int) -> int:
        """The LFT entry a lookup of `lid` reads (extended mode: page lid >> 16 of
        lft_entries entries); 255 beyond a page's entries."""
        low, page = lid & 0xFFFF, lid >> 16
        if low >= self.cfg.lft_entries:
            return 0xFF
        e = page * self.cfg.lft_entries + low
        return (self.t["LFT"][e // 4] >> (8 * (e % 4))) & 0xFF

    def peek(self, inp: dict) -> dict:
        """This cycle's outputs without the clock edge (cheaper than a copy of the tables)."""
        return self.step(inp, commit=False)

    def step(self, inp: dict, commit: bool = True) -> dict:
        n = self.cfg.ports
        sweeping = self.sweep > 0
        aw_ok = inp["s_axil_awvalid"] and inp["s_axil_wvalid"] and not self.b["valid"] and not sweeping
        ar_ok = inp["s_axil_arvalid"] and not self.r["valid"] and not sweeping
        out = {"s_axil_awready": int(aw_ok), "s_axil_wready": int(aw_ok), "s_axil_arready": int(ar_ok),
               "s_axil_bvalid": self.b["valid"], "s_axil_bresp": self.b["resp"],
               "s_axil_rvalid": self.r["valid"], "s_axil_rdata": self.r["data"], "s_axil_rresp": self.r["resp"]}
        for p in range(n):
            out[f"port_req__{p}__req"], out[f"port_req__{p}__state"] = self.req[p]
            out[f"limit_high__{p}"] = self.t["LIMIT_HIGH"][p]
            if self.cfg.failover:
                out[f"alt_port__{p}"] = self.t["ALT_PORT"][p]
            if self.cfg.adaptive:
                out[f"ar_group__{p}"] = self.t["AR_GROUP"][p]
            if self.cfg.cc:
                out[f"cc_port__{p}"] = self.t["CC_PORT"][p]
            if self.cfg.lifetimes:
                out[f"hoq_life__{p}"] = self.t["HOQ_LIFE"][p] & 0x1F
                out[f"vl_stall__{p}"] = self.t["HOQ_LIFE"][p] >> 5
        if self.cfg.lifetimes:
            out["switch_life"] = self.t["SWITCH_LIFE"][0]
        out["switch_lid"] = self.t["SWITCH_LID"][0]
        looked = []
        for k in range(self.lookups):                       # registered table reads
            port = 0xFF if self.lk_swept else self.lft_port(self.lk_dlid[k])
            words = mft_words(self.cfg)
            mlid = self.lk_mlid[k]
            mask = 0
            if mlid < self.cfg.mft_entries and not self.lk_swept:
                mask = sum(self.t["MFT"][mlid * words + w] << (32 * w) for w in range(words))
            mask &= (1 << (n + 1)) - 1                      # bit 0: the management port
            looked.append((port, mask))
            port, mask = self.lk_late[k] if k < self.staged else (port, mask)
            out[f"lft_rd__{k}__port"], out[f"mft_rd__{k}__mask"] = port, mask
        rows = 2 * n
        for p in range(n):                                  # each input's SL2VL words
            for j in range(rows):
                out[f"sl2vl_row__{p}__{j}"] = self.t["SL2VL"][p * rows + j]
        for k in range(self.sl2vl_lookups):                 # same cycle; k serves input k mod N only
            idx = inp[f"sl2vl_rd__{k}__index"]
            own = idx // (2 * n) == k % n
            out[f"sl2vl_rd__{k}__word"] = self.t["SL2VL"][idx] if own else 0
        e = self.cfg.vlarb_entries
        for t in ("high", "low"):
            for o in range(n):
                for j in range(e):
                    w = self.t[f"VLARB_{t.upper()}"][o * e + j]
                    out[f"vlarb_{t}__{o}__{j}"] = (w & 0xF) | ((w >> 8) & 0xFF) << 4

        if not commit:
            return out
        self.lk_dlid = [inp[f"lft_rd__{k}__dlid"] for k in range(self.lookups)]
        self.lk_mlid = [inp[f"mft_rd__{k}__mlid"] for k in range(self.lookups)]
        self.lk_swept = sweeping
        self.lk_late = looked[:self.staged]
        self.sweep = max(0, self.sweep - 1)
        # ---- clock edge: AXI reads see the contents before this edge's write
        if ar_ok:
            d = self.rm.decode(inp["s_axil_araddr"] & ~3)
            self.r = {"valid": 1, "data": self._ro_value(d[0].name, d[1], inp) if d else 0,
                      "resp": OKAY if d else SLVERR}
        elif self.r["valid"] and inp["s_axil_rready"]:
            self.r = dict(self.r, valid=0)
        self.req = [(0, st) for (_r, st) in self.req]
        if aw_ok:
            d = self.rm.decode(inp["s_axil_awaddr"] & ~3)
            ok = d is not None and d[0].access == "RW"
            self.b = {"valid": 1, "resp": OKAY if ok else SLVERR}
            if ok:
                reg, idx = d
                strb, data = inp["s_axil_wstrb"], inp["s_axil_wdata"]
                if reg.name == "PORT_STATE":
                    if strb & 1:
                        self.req[idx] = (1, data & 7)
                elif reg.name in ("LIMIT_HIGH", "ALT_PORT", "HOQ_LIFE", "AR_GROUP"):
                    if strb & 1:
                        self.t[reg.name][idx] = data & 0xFF
                elif reg.name == "SWITCH_LIFE":
                    if strb & 1:
                        self.t[reg.name][idx] = data & 0x1F
                else:
                    old = self.t[reg.name][idx]
                    mask = sum(0xFF << (8 * k) for k in range(4) if strb >> k & 1)
                    if reg.name.startswith("VLARB"):
                        mask &= 0xFFFF
                    if reg.name == "SWITCH_LID":
                        mask &= (1 << self.cfg.lid_bits) - 1
                    if reg.name == "CC_PORT":
                        mask &= 0xFFFFFF0F                      # bits 7:4 reserved
                    self.t[reg.name][idx] = (old & ~mask) | (data & mask)
        elif self.b["valid"] and inp["s_axil_bready"]:
            self.b = dict(self.b, valid=0)
        return out
