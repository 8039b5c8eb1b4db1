"""Route lookup for one input port (IBA §18.2.4.3, §7.11): from a packet's LRH to its
output port and output VL, or a drop reason. Combinational, in the packet's sop cycle.

  DLID 0                        -> drop DLID_INVALID (reserved)
  DLID 1..0xBFFF (unicast)      -> LFT[DLID], an IBA port number: 1..N is physical port
                                   entry - 1 (`dest`, a Verilog index); 0 is the switch's
                                   management port -> TO_SWITCH; 255 or > N -> LFT_DROP;
                                   DLID beyond the LFT -> DLID_INVALID. With cfg.adaptive,
                                   bit 7 of an entry other than 255 is `ar` (the DLID may
                                   leave on any port of its port's AR group) and bits 6:0
                                   the port. A flow-pinned group (AR_GROUP bit 7): `ar_mask[o]`
                                   is the set of Active ports of o's group (0 when o's group
                                   is not flow-pinned); an adaptive DLID whose LFT port o has
                                   c = |ar_mask[o]| > 0 goes to the k-th of them (lowest port
                                   first), k = (h * c) >> 8, h = bits 15:8 of (SLID ^ DLID) *
                                   0x9E37 mod 2^16: one port per (SLID, DLID)
  DLID 0xC000..0xFFFE           -> multicast: MFT[MLID - 0xC000] (IBA §14.2.5.12; bit 0 the
                                   management port, bit p IBA port p) shifted to physical
                                   ports, minus the input port and ports not Active, is the
                                   `mask` of outputs (bit p = Verilog port p)
                                   (`mcast` = 1); MLID beyond the MFT -> DLID_INVALID; an empty
                                   mask (none, or only the input port) -> MC_EMPTY. The output VL
                                   of each copy is looked up per output at replication.
  DLID 0xFFFF (permissive)      -> TO_SWITCH
  `mgmt`: the packet (or a copy of it) is for the management port: LFT entry 0, or MFT
  bit 0 (the switch copies it into the management queue; TO_SWITCH / MC_EMPTY then only
  mean "not into the VOQ"). The permissive DLID on a data VL is TO_SWITCH without `mgmt`.
  Extended LIDs (cfg.ext_lid_bits = b > 0, docs/fabric.md): the LID is {LRH reserved bits
  [b-1:0] in front of PktLen, DLID} (`lft_dlid`, 16 + b bits: the page above the DLID); a
  page other than 0 with DLID 0, a multicast or the permissive DLID -> DLID_INVALID; a
  unicast DLID beyond lft_entries (per page) -> DLID_INVALID.
  output port not Active        -> DEST_DOWN, unless failover redirects it (cfg.failover:
                                   `redirect` bit dest, its alternate is Active; the packet is
                                   routed to dest as usual and leaves on the alternate,
                                   docs/reliability.md)
  SL2VL(in, out, SL) >= data VLs (15 means drop in IBA SL2VL) -> VL_DROP

Table reads go out on `lft_dlid`/`sl2vl_index`/`mft_index` and come back on
`lft_port`/`sl2vl_word`/`mft_mask`; the block uses them as if in the same cycle. In the
switch, LFT and MFT are block RAMs read synchronously: hw/top/switch.py addresses them a
cycle early, from the DLID of the flit entering the receive parser, so that the entries
arrive together with `hdr` (`lft_dlid`/`mft_index` are then unused); SL2VL is registers,
read in the same cycle.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from contracts.defs import RouteDrop
from hw.common.ports import signature

__all__ = ["RouteLookup", "RouteDrop", "lid_of"]


def lid_of(cfg: SwitchConfig, hdr):
    """The LID a packet is routed by (cfg.lid_bits): the DLID, with the page (the LRH's
    reserved bits [ext_lid_bits-1:0] in front of PktLen) above it in extended mode."""
    return Cat(hdr.dlid, hdr.rsvd1[:cfg.ext_lid_bits]) if cfg.ext_lid_bits else hdr.dlid


class RouteLookup(wiring.Component):
    def __init__(self, cfg: SwitchConfig, in_port: int):
        self.cfg, self.in_port = cfg, in_port
        super().__init__(signature(specs.route(cfg, in_port)))

    def elaborate(self, platform):
        m = Module()
        cfg, n = self.cfg, self.cfg.ports
        dlid = self.hdr.dlid
        page = Signal(max(1, cfg.ext_lid_bits))           # extended LIDs: the page (0 in IBA mode)
        if cfg.ext_lid_bits:
            m.d.comb += page.eq(self.hdr.rsvd1[:cfg.ext_lid_bits])
        port = self.lft_port
        if cfg.adaptive:
            # bit 7 of an LFT entry (not 255): the DLID is adaptive (docs/reliability.md)
            port = Signal(8, name="lft_port_only")
            m.d.comb += [port.eq(self.lft_port[:7]), self.ar.eq(self.lft_port[7] & (self.lft_port != 0xFF))]
        pw = max(1, (n - 1).bit_length())
        lft_dest = Signal(range(n), name="lft_dest")          # the port the LFT names (Verilog index)
        m.d.comb += lft_dest.eq((port - 1)[:pw])
        if cfg.adaptive:
            # flow-pinned AR group: one Active port of the group per (SLID, DLID)
            members = Signal(n, name="pin_members")
            count = Signal(range(n + 1), name="pin_count")
            mix = Signal(16, name="pin_mix")
            k = Signal(range(n), name="pin_k")
            pick = Signal(range(n), name="pin_port")
            m.d.comb += [members.eq(Array(self.ar_mask)[lft_dest]),
                         count.eq(sum(members[y] for y in range(n))),
                         mix.eq((self.hdr.slid ^ self.hdr.dlid) * 0x9E37),
                         k.eq((mix[8:16] * count) >> 8)]
            for y in reversed(range(n)):           # the member with k members below it
                below = sum(members[z] for z in range(y)) if y else Const(0, 1)
                with m.If(members[y] & (below == k)):
                    m.d.comb += pick.eq(y)
            m.d.comb += self.dest.eq(Mux(self.ar & (count != 0), pick, lft_dest))
        else:
            m.d.comb += self.dest.eq(lft_dest)
        m.d.comb += [
            self.lft_dlid.eq(lid_of(cfg, self.hdr)),
            # word (in * N + out) * 2 + SL / 8, nibble SL % 8 (contracts/regmap.py SL2VL): the
            # LFT's port (the ports of an AR group have the same SL2VL)
            self.sl2vl_index.eq(((self.in_port * n + lft_dest) << 1) | self.hdr.sl[3]),
            self.ovl.eq(self.sl2vl_word.word_select(self.hdr.sl[:3], 4)),
        ]
        mc = Signal(n)
        m.d.comb += [self.mft_index.eq(dlid - 0xC000),
                     mc.eq(self.mft_mask[1:] & ~(1 << self.in_port) & self.port_active),
                     self.mask.eq(mc), self.mcast.eq((dlid >= 0xC000) & (dlid != 0xFFFF))]
        top = min(cfg.lft_entries, 0xC000)
        m.d.comb += self.mgmt.eq(Mux(self.mcast, (dlid - 0xC000 < cfg.mft_entries) & self.mft_mask[0] & (page == 0),
                                     (dlid != 0) & (dlid < top) & (port == 0)))
        with m.If(dlid == 0):
            m.d.comb += self.drop.eq(RouteDrop.DLID_INVALID)
        with m.Elif(dlid == 0xFFFF):
            m.d.comb += self.drop.eq(Mux(page != 0, RouteDrop.DLID_INVALID, RouteDrop.TO_SWITCH))
        with m.Elif(dlid >= 0xC000):
            with m.If((dlid - 0xC000 >= cfg.mft_entries) | (page != 0)):
                m.d.comb += self.drop.eq(RouteDrop.DLID_INVALID)
            with m.Elif(mc == 0):
                m.d.comb += self.drop.eq(RouteDrop.MC_EMPTY)
        with m.Elif(dlid >= top):
            m.d.comb += self.drop.eq(RouteDrop.DLID_INVALID)
        with m.Elif(port == 0):
            m.d.comb += self.drop.eq(RouteDrop.TO_SWITCH)
        with m.Elif(port > n):
            m.d.comb += self.drop.eq(RouteDrop.LFT_DROP)
        usable = self.port_active | self.redirect if cfg.failover else self.port_active
        with m.Elif(~usable.bit_select(self.dest, 1)):
            m.d.comb += self.drop.eq(RouteDrop.DEST_DOWN)
        with m.Elif(self.ovl >= cfg.data_vls):
            m.d.comb += self.drop.eq(RouteDrop.VL_DROP)
        return m
