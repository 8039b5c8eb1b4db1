"""Route lookup for one input port (IBA §18.2.4.3, §7.11): from a packet's LRH to its
output port and output VL, or a drop reason, in two stages (below).

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

Two stages (docs/switch-core.md, "Route and VOQ write"):

  head   (cycle t)      from the LRH (`hdr`), the input's SL2VL words (`sl2vl_row`), the
                        flow hash and the AR groups: the DLID's class (invalid, permissive,
                        multicast, unicast within the LFT), the output VL for every output
                        and whether it is a data VL, the flow-pinned port for every output:
                        all registered
  decide (cycle t + 1)  the LFT entry and MFT mask of the DLID (`lft_port`, `mft_mask`: the
                        block RAM's output register) select among those registers; the
                        port states (`port_active`, `redirect`) of t + 1; the decision is
                        combinational from registers and the table's output register, and the
                        ingress registers it
`flow_hash` (cfg.adaptive): bits 15:8 of (SLID ^ DLID) * 0x9E37 of the packet, computed by the
ingress a cycle before (from the flit entering the link) and registered.
"""
from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring

from contracts import switch as specs
from contracts.config import SwitchConfig
from contracts.defs import RouteDrop
from hw.common.ports import signature

__all__ = ["RouteLookup", "RouteDrop", "lid_of", "flow_hash"]


def lid_of(cfg: SwitchConfig, hdr):
    """The LID a packet is routed by (cfg.lid_bits): the DLID, with the page (the LRH's
    reserved bits [ext_lid_bits-1:0] in front of PktLen) above it in extended mode."""
    return Cat(hdr.dlid, hdr.rsvd1[:cfg.ext_lid_bits]) if cfg.ext_lid_bits else hdr.dlid


def flow_hash(hdr):
    """Bits 15:8 of (SLID ^ DLID) * 0x9E37 (docs/reliability.md, flow-pinned AR groups)."""
    return ((hdr.slid ^ hdr.dlid) * 0x9E37)[8:16]


class RouteLookup(wiring.Component):
    def __init__(self, cfg: SwitchConfig, in_port: int):
        self.cfg, self.in_port = cfg, in_port
        super().__init__(signature(specs.route(cfg, in_port)))

    def elaborate(self, platform):
        m = Module()
        cfg, n = self.cfg, self.cfg.ports
        hdr = self.hdr
        pw = max(1, (n - 1).bit_length())
        top = min(cfg.lft_entries, 0xC000)

        # ---------------------------------------------------------------- stage head (t)
        dlid = hdr.dlid
        page0 = Signal()
        m.d.comb += page0.eq(hdr.rsvd1[:cfg.ext_lid_bits] == 0 if cfg.ext_lid_bits else 1)
        mc_range = (dlid >= 0xC000) & (dlid != 0xFFFF)
        mc_in = mc_range & (dlid - 0xC000 < cfg.mft_entries) & page0
        uc_in = (dlid != 0) & (dlid < top)
        h_invalid = Signal(name="h_invalid")       # DLID_INVALID whatever the tables say
        h_perm = Signal(name="h_perm")             # the permissive DLID (page 0): to the switch
        h_mc = Signal(name="h_mc")                 # a multicast DLID (valid or not)
        h_mc_in = Signal(name="h_mc_in")           # ... with an MFT entry
        h_uc = Signal(name="h_uc")                 # a unicast DLID with an LFT entry
        m.d.sync += [h_invalid.eq(~mc_in & ~uc_in & ~((dlid == 0xFFFF) & page0)),
                     h_perm.eq((dlid == 0xFFFF) & page0), h_mc.eq(mc_range), h_mc_in.eq(mc_in), h_uc.eq(uc_in)]
        # the output VL for every output (SL2VL words out * 2 + SL / 8, nibble SL % 8), and
        # whether it is a data VL (15 means drop in IBA SL2VL)
        h_ovl = [Signal(4, name=f"h_ovl{o}") for o in range(n)]
        h_vlbad = Signal(n, name="h_vlbad")
        for o in range(n):
            word = Mux(hdr.sl[3], self.sl2vl_row[2 * o + 1], self.sl2vl_row[2 * o])
            vl = word.word_select(hdr.sl[:3], 4)
            m.d.sync += [h_ovl[o].eq(vl), h_vlbad[o].eq(vl >= cfg.data_vls)]
        if cfg.adaptive:
            # flow-pinned AR groups: for every output o, the k-th Active member of its group
            # (lowest port first), k = (h * c) >> 8, c = |ar_mask[o]|; `h_pinned[o]`: c > 0
            h_pick = [Signal(pw, name=f"h_pick{o}") for o in range(n)]
            h_pinned = Signal(n, name="h_pinned")
            ks = [Signal(pw, name=f"k_of_{c}") for c in range(n + 1)]     # k for each count c
            for c in range(1, n + 1):
                m.d.comb += ks[c].eq((self.flow_hash * c) >> 8)
            for o in range(n):
                members = self.ar_mask[o]
                count = Signal(range(n + 1), name=f"pin_count{o}")
                k = Signal(pw, name=f"pin_k{o}")
                pick = Signal(pw, name=f"pin_port{o}")
                m.d.comb += [count.eq(sum(members[y] for y in range(n))), k.eq(Array(ks)[count])]
                for y in reversed(range(n)):           # the member with k members below it
                    below = sum(members[z] for z in range(y)) if y else Const(0, 1)
                    with m.If(members[y] & (below == k)):
                        m.d.comb += pick.eq(y)
                m.d.sync += [h_pick[o].eq(pick), h_pinned[o].eq(members != 0)]

        # ---------------------------------------------------------------- stage decide (t + 1)
        port = self.lft_port
        if cfg.adaptive:
            # bit 7 of an LFT entry (not 255): the DLID is adaptive (docs/reliability.md)
            port = Signal(8, name="lft_port_only")
            m.d.comb += [port.eq(self.lft_port[:7]), self.ar.eq(self.lft_port[7] & (self.lft_port != 0xFF))]
        lft_dest = Signal(range(n), name="lft_dest")          # the port the LFT names (Verilog index)
        m.d.comb += lft_dest.eq((port - 1)[:pw])
        if cfg.adaptive:
            m.d.comb += self.dest.eq(Mux(self.ar & h_pinned.bit_select(lft_dest, 1), Array(h_pick)[lft_dest],
                                         lft_dest))
        else:
            m.d.comb += self.dest.eq(lft_dest)
        # the LFT's port's SL2VL (the ports of an AR group have the same)
        m.d.comb += self.ovl.eq(Array(h_ovl)[lft_dest])
        mc = Signal(n)
        m.d.comb += [mc.eq(self.mft_mask[1:] & ~(1 << self.in_port) & self.port_active),
                     self.mask.eq(mc), self.mcast.eq(h_mc)]
        m.d.comb += self.mgmt.eq(Mux(h_mc, h_mc_in & self.mft_mask[0], h_uc & (port == 0)))
        usable = self.port_active | self.redirect if cfg.failover else self.port_active
        with m.If(h_invalid):
            m.d.comb += self.drop.eq(RouteDrop.DLID_INVALID)
        with m.Elif(h_perm):
            m.d.comb += self.drop.eq(RouteDrop.TO_SWITCH)
        with m.Elif(h_mc):
            with m.If(mc == 0):
                m.d.comb += self.drop.eq(RouteDrop.MC_EMPTY)
        with m.Elif(port == 0):
            m.d.comb += self.drop.eq(RouteDrop.TO_SWITCH)
        with m.Elif(port > n):
            m.d.comb += self.drop.eq(RouteDrop.LFT_DROP)
        with m.Elif(~usable.bit_select(self.dest, 1)):
            m.d.comb += self.drop.eq(RouteDrop.DEST_DOWN)
        with m.Elif(h_vlbad.bit_select(lft_dest, 1)):
            m.d.comb += self.drop.eq(RouteDrop.VL_DROP)
        return m
