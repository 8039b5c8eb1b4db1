"""Switch management: an AXI4-Lite slave (`s_axil_*`) over the register map of
contracts/regmap.py, holding the switch's tables.

Protocol (AXI4-Lite, one transaction at a time per direction):
  Addresses are word addresses with the low two bits ignored (`wstrb` selects bytes).
  write  `awready` = `wready` = awvalid & wvalid & no response pending: address and data are
         taken together in one cycle; the write happens at that edge; `bvalid` rises the next
         cycle with OKAY (0) or SLVERR (2: unmapped address or read-only register) and holds
         until `bready`. `wstrb` selects bytes of table entries and RW registers.
  read   `arready` = no read response pending; `rvalid` rises the next cycle with the data
         (tables are synchronous RAMs read at the accepting edge) and holds until `rready`;
         unmapped addresses answer SLVERR with data 0.

Datapath side:
  port_req[p]     Out  a PORT_STATE write: one-cycle `req` pulse with `state` (LinkPort mgmt)
  port_state[p]   In   current port state, read back through PORT_STATE
  limit_high[p]   Out  LimitOfHighPriority
  counters[p][c]  In   32-bit counters, read through COUNTERS
  lft_rd[k]       lookup ports: `dlid` In (cfg.lid_bits: in extended mode the page above the
                  16-bit DLID; entry page * lft_entries + DLID), `port` Out the next cycle, or
                  two cycles later for the first `staged_lookups` ports (an IBA port number:
                  0 management, 1..N physical, 255 drop; 255 for a LID the LFT has no entry for)
  sl2vl_rd[k]     lookup ports: `index` In (register index of SL2VL), `word` Out, same cycle;
                  port k serves input port k mod N (an index outside that input's
                  (in * N + out) * 2 + half words reads 0)
  mft_rd[k]       lookup ports: `mlid` In (MLID - 0xC000), `mask` Out (N + 1 bits: bit 0 the
                  management port, bit p IBA port p), when `lft_rd[k]` answers
  sl2vl_row[p][j] Out  SL2VL word p * 2N + j (input p's words: output j // 2, SLs 8 * (j % 2) ..)
  vlarb_high[o][j], vlarb_low[o][j]  Out  the VLArb tables as VLArbiter entries (vl, weight)

Memories (docs/fpga.md): LFT and MFT are RAMs whose every read port is synchronous, so they
become block RAM: a lookup's address is taken at a clock edge and its entry comes out in the
next cycle; a staged lookup (the route lookups of the inputs, docs/switch-core.md "Route and
VOQ write") reads its own copy, a BlockRAM (hw/common/bram.py), through the block RAM's
output register: two cycles. The reads are transparent for the AXI write port: an entry
written at the edge that takes the address is the one read. A memory has one write port and one read port per
lookup; yosys replicates it once per read port (a block RAM has two ports: one writes, one
reads), e.g. 6 copies of the LFT at 4 ports (4 inputs, the VL15 relay, AXI reads).
SL2VL and the VLArb tables are registers: each input's route reads all of its SL2VL words at
once (`sl2vl_row`: the output VL of every output, computed before the LFT names the output),
and the table is small (64 bits per input/output pair: 1 Kbit at 4 ports, 16 Kbit at 16).

Reset: the registers take their reset values at once; the LFT and MFT (block RAM, which a
reset cannot clear) are swept back to their reset values, one word of each per cycle, in
the `sweep_cycles(cfg)` cycles after reset (LFT entries 255, MFT masks 0). Until the sweep
is done no AXI4-Lite request is accepted (awready, arready low) and every lookup answers the
reset value (LFT 255, MFT 0), so nothing is routed by a table left over from before the
reset.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory

from contracts import mgmt as specs
from contracts.config import MTU_CODES, SwitchConfig
from contracts.regmap import ID_MAGIC, VERSION, build_regmap, mft_words, reset_values
from contracts.streams import AXIL_ADDR_BITS
from hw.common.bram import BlockRAM
from hw.common.logic import or_all
from hw.common.ports import signature

__all__ = ["SwitchMgmt", "AXIL_ADDR_BITS", "table_defaults", "sweep_cycles"]

OKAY, SLVERR = 0, 2


def sweep_cycles(cfg: SwitchConfig) -> int:
    """Cycles after reset until the LFT and MFT hold their reset values again: one word of
    each per cycle (the LFT has 4 entries a word)."""
    rm = build_regmap(cfg)
    return max(rm["LFT"].count, rm["MFT"].count)


def table_defaults(cfg: SwitchConfig) -> dict[str, list[int]]:
    """Reset contents of the RW registers and tables (word per index): the register map's
    (contracts.regmap.reset_values, the one definition)."""
    return reset_values(cfg)


def _in_range(addr, r):
    """addr within register (array) r; no `>= 0` comparison for offset 0 (lint: UNSIGNED)."""
    below = addr < r.end
    return below if r.offset == 0 else (addr >= r.offset) & below


def _decode(addr, r):
    """(hit, index): whether word address `addr` falls in register (array) r, and the element.

    An array whose offset is aligned to its size rounded up to a power of two (every array of
    build_regmap) decodes from bit slices: `hit` compares the address bits above the array
    with a constant and `index` is the bits below, so an element is selected by a binary
    multiplexer on a few bits (not by one full-width comparison per element); otherwise the
    element is (addr - offset) / 4 behind two comparisons."""
    bits = max(0, (r.count - 1).bit_length())
    lo = 2 + bits
    if r.offset % (1 << lo) == 0 and lo < AXIL_ADDR_BITS:
        hit = addr[lo:] == (r.offset >> lo)
        if bits == 0:
            return hit, Const(0, 1)
        idx = addr[2:lo]
        if r.count != 1 << bits:
            hit = hit & (idx < r.count)
        return hit, idx
    return _in_range(addr, r), ((addr - r.offset) >> 2)[:max(1, bits)]


def _in_bank(x, b, rows):
    """x is one of bank b's rows (no constant comparison for bank 0)."""
    return (x < rows) if b == 0 else ((x >= b * rows) & (x < (b + 1) * rows))


class SwitchMgmt(wiring.Component):
    TABLES = ["LFT", "MFT"]                      # in RAM; SL2VL and VLArb tables are registers

    def __init__(self, cfg: SwitchConfig, lookups: int = 1, sl2vl_lookups: int | None = None,
                 staged_lookups: int = 0):
        if not 0 <= staged_lookups <= lookups:
            raise ValueError(f"SwitchMgmt: staged_lookups {staged_lookups} must be within 0..lookups ({lookups})")
        self.cfg, self.lookups, self.staged = cfg, lookups, staged_lookups
        self.sl2vl_lookups = lookups if sl2vl_lookups is None else sl2vl_lookups
        self.regmap = build_regmap(cfg)
        if self.regmap.size > (1 << AXIL_ADDR_BITS):
            raise ValueError(f"SwitchMgmt: register map needs {self.regmap.size:#x} bytes, more than the "
                             f"{AXIL_ADDR_BITS}-bit AXI4-Lite window")
        super().__init__(signature(specs.mgmt(cfg, lookups, self.sl2vl_lookups, staged_lookups)))

    def elaborate(self, platform):
        m = Module()
        cfg, rm = self.cfg, self.regmap
        n = cfg.ports
        defaults = table_defaults(cfg)

        # ---- tables in RAM
        mems = {}
        wports = {}
        rports = {}
        for t in self.TABLES:
            r = rm[t]
            mem = Memory(shape=32, depth=r.count, init=defaults[t])
            m.submodules[f"mem_{t.lower()}"] = mem
            mems[t] = mem
            wports[t] = mem.write_port(granularity=8)
            rports[t] = mem.read_port(domain="sync")
        # the sweep after reset (see the docstring)
        nsweep = sweep_cycles(cfg)
        sweep = Signal(range(nsweep + 1))
        sweeping = Signal()
        swept_addr = Signal(init=1)              # the lookups' addresses were taken during the sweep
        swept_addr2 = Signal(init=1)             # ... two cycles ago (the staged lookups)
        m.d.comb += sweeping.eq(sweep != nsweep)
        m.d.sync += [swept_addr.eq(sweeping), swept_addr2.eq(swept_addr)]
        with m.If(sweeping):
            m.d.sync += sweep.eq(sweep + 1)

        def copy_of(t, k, wd=0):
            """A block RAM copy of table t for staged lookup k (hw/common/bram.py: read latency
            2, the AXI write and the sweep written into every copy as into the memory)."""
            b = BlockRAM(32, rm[t].count, 8, defaults[t])
            m.submodules[f"{t.lower()}_lookup{k}_{wd}"] = b
            wp = wports[t]
            m.d.comb += [b.w_addr.eq(wp.addr), b.w_data.eq(wp.data), b.w_en.eq(wp.en), b.r_en.eq(1)]
            return b

        # lookup ports: LFT word dlid/4, byte dlid%4. Staged ones (k < staged): the block RAM
        # copy's two cycles, byte and range check delayed alike; the others: synchronous reads
        # of the memory, transparent for the write port (see the docstring)
        words = mft_words(cfg)
        for k in range(self.lookups):
            staged = k < self.staged
            lk = self.lft_rd[k]
            # word {page, DLID[log2 P - 1:2]}; entries with low bits 0 or >= 0xC000 are never
            # written by the SM, so only "beyond the page's entries" needs a check here
            addr = Cat(lk.dlid[2:(cfg.lft_entries - 1).bit_length()], lk.dlid[16:])
            byte = Signal(2, name=f"lft_byte{k}")
            inside = Signal(name=f"lft_inside{k}")
            m.d.sync += [byte.eq(lk.dlid[:2]), inside.eq(lk.dlid[:16] < cfg.lft_entries)]
            if staged:
                b = copy_of("LFT", k)
                m.d.comb += b.r_addr.eq(addr)
                data, swept = b.r_data, swept_addr2
                byte2 = Signal(2, name=f"lft_byte{k}_2")
                inside2 = Signal(name=f"lft_inside{k}_2")
                m.d.sync += [byte2.eq(byte), inside2.eq(inside)]
                byte, inside = byte2, inside2
            else:
                p = mems["LFT"].read_port(domain="sync", transparent_for=(wports["LFT"],))
                m.d.comb += p.addr.eq(addr)
                data, swept = p.data, swept_addr
            m.d.comb += lk.port.eq(Mux(inside & ~swept, data.word_select(byte, 8), 0xFF))
            parts = []
            for wd in range(words):
                if staged:
                    mp = copy_of("MFT", k, wd)
                    m.d.comb += mp.r_addr.eq(self.mft_rd[k].mlid * words + wd)
                    parts.append(mp.r_data)
                else:
                    mp = mems["MFT"].read_port(domain="sync", transparent_for=(wports["MFT"],))
                    m.d.comb += mp.addr.eq(self.mft_rd[k].mlid * words + wd)
                    parts.append(mp.data)
            m.d.comb += self.mft_rd[k].mask.eq(Mux(swept, 0, Cat(*parts)[:n + 1]))

        # ---- SL2VL: registers, one 2N-word bank per input port; lookup port k serves input
        # k mod N, so it is a 2N-word multiplexer, not a 2N^2-word one
        rows = 2 * n
        sl2vl = [Signal(32, name=f"sl2vl_{k}") for k in range(rm["SL2VL"].count)]
        for k in range(self.sl2vl_lookups):
            b = k % n
            idx = self.sl2vl_rd[k].index
            inside = _in_bank(idx, b, rows)
            bank = Array(sl2vl[b * rows:(b + 1) * rows])
            row = (idx - b * rows)[:max(1, (rows - 1).bit_length())]
            m.d.comb += self.sl2vl_rd[k].word.eq(Mux(inside, bank[row], 0))
        for p in range(n):                       # each input's words, for its route lookup
            m.d.comb += [self.sl2vl_row[p][j].eq(sl2vl[p * rows + j]) for j in range(rows)]

        # ---- VLArb tables: registers, reset to the defaults
        vlregs = {}
        for t, port in (("VLARB_HIGH", self.vlarb_high), ("VLARB_LOW", self.vlarb_low)):
            regs = [Signal(16, init=defaults[t][k] & 0xFFFF, name=f"{t.lower()}_{k}") for k in range(rm[t].count)]
            vlregs[t] = Array(regs)
            for o in range(n):
                for j in range(cfg.vlarb_entries):
                    r = regs[o * cfg.vlarb_entries + j]
                    m.d.comb += [port[o][j].vl.eq(r[0:4]), port[o][j].weight.eq(r[8:16])]

        limit = Array(self.limit_high)

        # ---- write channel
        aw_ok = Signal()
        m.d.comb += aw_ok.eq(self.s_axil_awvalid & self.s_axil_wvalid & ~self.s_axil_bvalid & ~sweeping)
        m.d.comb += [self.s_axil_awready.eq(aw_ok), self.s_axil_wready.eq(aw_ok)]
        waddr = Signal(AXIL_ADDR_BITS)      # the low two bits select bytes: wstrb does that
        m.d.comb += waddr.eq(self.s_axil_awaddr & ~3)
        wresp = Signal(2)
        m.d.comb += wresp.eq(SLVERR)
        for p in range(n):
            m.d.sync += self.port_req[p].req.eq(0)
        # Register writes decode to one enable per register element (never an Array on the
        # left of an assignment: that elaborates to a case over every element for every
        # element, O(count^2) Verilog -- 30 MB of management block at 64 ports).
        elem_we = {r.name: Signal(r.count, name=f"we_{r.name.lower()}") for r in rm.regs
                   if r.access == "RW" and r.name not in mems}
        with m.If(aw_ok):
            m.d.sync += self.s_axil_bvalid.eq(1)
            m.d.sync += self.s_axil_bresp.eq(wresp)
            for r in rm.regs:
                if r.access != "RW":
                    continue
                hit, widx = _decode(waddr, r)
                with m.If(hit):
                    m.d.comb += wresp.eq(OKAY)
                    if r.name in mems:
                        wp = wports[r.name]
                        m.d.comb += [wp.addr.eq(widx), wp.data.eq(self.s_axil_wdata), wp.en.eq(self.s_axil_wstrb)]
                    elif r.count == 1:
                        m.d.comb += elem_we[r.name].eq(1)
                    else:
                        m.d.comb += elem_we[r.name].eq(1 << widx)
        with m.Elif(self.s_axil_bvalid & self.s_axil_bready):
            m.d.sync += self.s_axil_bvalid.eq(0)
        # the sweep owns the tables' write ports (no AXI write is accepted meanwhile)
        with m.If(sweeping):
            for t, value in (("LFT", 0xFFFFFFFF), ("MFT", 0)):
                wp = wports[t]
                m.d.comb += [wp.addr.eq(sweep), wp.data.eq(value), wp.en.eq(Mux(sweep < rm[t].count, 0xF, 0))]
        strb = self.s_axil_wstrb
        wdata = self.s_axil_wdata
        for k in range(n):
            with m.If(elem_we["PORT_STATE"][k] & strb[0]):
                m.d.sync += [self.port_req[k].req.eq(1), self.port_req[k].state.eq(wdata[:3])]
            with m.If(elem_we["LIMIT_HIGH"][k] & strb[0]):
                m.d.sync += self.limit_high[k].eq(wdata[:8])
            if cfg.failover:
                with m.If(elem_we["ALT_PORT"][k] & strb[0]):
                    m.d.sync += self.alt_port[k].eq(wdata[:8])
            if cfg.adaptive:
                with m.If(elem_we["AR_GROUP"][k] & strb[0]):
                    m.d.sync += self.ar_group[k].eq(wdata[:8])
            if cfg.cc:
                for b, (lo, hi) in enumerate(((0, 4), (8, 16), (16, 24), (24, 32))):
                    with m.If(elem_we["CC_PORT"][k] & strb[b]):
                        m.d.sync += self.cc_port[k][lo:hi].eq(wdata[lo:hi])
            if cfg.lifetimes:
                with m.If(elem_we["HOQ_LIFE"][k] & strb[0]):
                    m.d.sync += [self.hoq_life[k].eq(wdata[:5]), self.vl_stall[k].eq(wdata[5:8])]
        if cfg.lifetimes:
            with m.If(elem_we["SWITCH_LIFE"][0] & strb[0]):
                m.d.sync += self.switch_life.eq(wdata[:5])
        for b in range(-(-cfg.lid_bits // 8)):
            with m.If(elem_we["SWITCH_LID"][0] & strb[b]):
                hi = min(8 * b + 8, cfg.lid_bits)
                m.d.sync += self.switch_lid[8 * b:hi].eq(wdata[8 * b:hi])
        for k, reg in enumerate(sl2vl):
            for b in range(4):
                with m.If(elem_we["SL2VL"][k] & strb[b]):
                    m.d.sync += reg[8 * b:8 * b + 8].eq(wdata[8 * b:8 * b + 8])
        for t, regs in vlregs.items():
            for k, reg in enumerate(regs):
                for b in range(2):
                    with m.If(elem_we[t][k] & strb[b]):
                        m.d.sync += reg[8 * b:8 * b + 8].eq(wdata[8 * b:8 * b + 8])

        # ---- read channel
        ar_ok = Signal()
        m.d.comb += [ar_ok.eq(self.s_axil_arvalid & ~self.s_axil_rvalid & ~sweeping), self.s_axil_arready.eq(ar_ok)]
        raddr = Signal(AXIL_ADDR_BITS)
        m.d.comb += raddr.eq(self.s_axil_araddr & ~3)
        rreg = Signal(32)           # value of a register read, latched at accept
        rsrc = Signal(range(len(self.TABLES) + 1))   # 0: rreg, k+1: table k
        rerr = Signal()
        decoded = {r.name: _decode(raddr, r) for r in rm.regs}
        for t in self.TABLES:
            m.d.comb += [rports[t].addr.eq(decoded[t][1]), rports[t].en.eq(0)]
        # the registers' values, AND-OR'ed by their (exclusive) hits: no priority chain
        reg_hits = [(decoded[r.name][0], self._reg_value(r, decoded[r.name][1], limit, vlregs, sl2vl))
                    for r in rm.regs if r.name not in mems]
        with m.If(ar_ok):
            m.d.sync += [self.s_axil_rvalid.eq(1), rsrc.eq(0),
                         rerr.eq(~Cat(h for h, _ in decoded.values()).any()),
                         rreg.eq(or_all(Mux(h, v, 0) for h, v in reg_hits))]
            for t in self.TABLES:
                with m.If(decoded[t][0]):
                    m.d.comb += rports[t].en.eq(1)
                    m.d.sync += rsrc.eq(self.TABLES.index(t) + 1)
        with m.Elif(self.s_axil_rvalid & self.s_axil_rready):
            m.d.sync += self.s_axil_rvalid.eq(0)
        table_data = Array([rreg] + [rports[t].data for t in self.TABLES])
        m.d.comb += [self.s_axil_rdata.eq(Mux(rerr, 0, table_data[rsrc])),
                     self.s_axil_rresp.eq(Mux(rerr, SLVERR, OKAY))]
        return m

    def _reg_value(self, r, idx, limit, vlregs, sl2vl):
        cfg, rm = self.cfg, self.regmap
        if r.name == "ID":
            return Const(ID_MAGIC, 32)
        if r.name == "VERSION":
            return Const(VERSION, 32)
        if r.name == "CONFIG0":
            return Const(rm["CONFIG0"].pack(ports=cfg.ports, data_vls=cfg.data_vls,
                                            bytes_per_flit=cfg.bytes_per_flit, mtu_code=MTU_CODES[cfg.mtu],
                                            islip_iterations=cfg.islip_iterations,
                                            crc_msb_first=int(cfg.crc_msb_first),
                                            credit_vcrc=int(cfg.credit_vcrc),
                                            rx_register=int(cfg.rx_register),
                                            failover=int(cfg.failover)), 32)
        if r.name == "CONFIG1":
            return Const(rm["CONFIG1"].pack(buffer_blocks_per_vl=cfg.buffer_blocks_per_vl,
                                            vl15_buffer_blocks=cfg.vl15_buffer_blocks,
                                            vlarb_entries=cfg.vlarb_entries,
                                            ext_lid_bits=cfg.ext_lid_bits), 32)
        if r.name == "CONFIG2":
            return Const(rm["CONFIG2"].pack(lft_entries=cfg.lft_entries, mft_entries=cfg.mft_entries), 32)
        if r.name == "CONFIG3":
            return Const(rm["CONFIG3"].pack(lifetimes=int(cfg.lifetimes), adaptive=int(cfg.adaptive),
                                            cc=int(cfg.cc), lifetime_unit_log2=cfg.lifetime_unit_log2,
                                            cc_unit=cfg.cc_unit, min_switch_life=cfg.min_switch_life), 32)
        if r.name == "PORT_STATE":
            return Array(self.port_state)[idx]
        if r.name == "LIMIT_HIGH":
            return limit[idx]
        if r.name == "ALT_PORT":
            return Array(self.alt_port)[idx]
        if r.name == "AR_GROUP":
            return Array(self.ar_group)[idx]
        if r.name == "CC_PORT":
            return Array(self.cc_port)[idx]
        if r.name == "CC_MARKED":
            return Array(self.cc_marked)[idx]
        if r.name == "HOQ_LIFE":
            return Array(Cat(self.hoq_life[k], self.vl_stall[k]) for k in range(cfg.ports))[idx]
        if r.name == "SWITCH_LID":
            return self.switch_lid
        if r.name == "SWITCH_LIFE":
            return self.switch_life
        if r.name == "LIFE_DISCARDS":
            return Array(self.life_discards)[idx]
        if r.name == "MGMT_TX_ERRORS":
            return self.mgmt_tx_errors
        if r.name in vlregs:
            return vlregs[r.name][idx]
        if r.name == "SL2VL":
            return Array(sl2vl)[idx]
        if r.name == "COUNTERS":
            flat = Array(c for row in self.counters for c in row)
            return flat[idx]
        raise AssertionError(r.name)


