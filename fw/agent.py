"""The switch's firmware: takes each packet the management port received, runs the
subnet management interface (SMI) rules for directed-route SMPs, hands MADs to the SMA,
the PMA and (SwitchConfig.cc) the congestion control agent, and returns the packets to
send.

    fw = SwitchFirmware(regs)
    for pkt, port in await fw.receive(wire_bytes, in_port):   # in_port: IBA port 1..N
        ...   # port: IBA port 1..N to send out of, or None: route by the LFT

Directed route (IBA §14.2.2; the C14-x rules are the compliance statements of that
section, cross-checked against the Linux kernel's SMI): an outgoing SMP (D = 0) that
arrives at hop pointer h with hop count n:
  h = 0 with n > 0: discarded (the sender must have advanced it)             C14-9:1
  0 < h < n: ReturnPath[h] = arrival port, h + 1, sent out InitialPath[h + 1]  C14-9:2
  h = n: ReturnPath[n] = arrival port, h + 1; for us if DrDLID is permissive,
         else sent on by the LFT to DrDLID (LID-routed last part)            C14-9:3
  h = n + 1: for us (it came over the LID-routed part)                       C14-9:4
  otherwise discarded                                                        C14-9:5
Our response turns it round (D = 1, h stays n + 1) and is sent as a returning SMP:
  h = n + 1 with n > 0: h - 1, sent out ReturnPath[n]                        C14-13:1
A returning SMP that arrives (we are on the way back):
  2 <= h <= n: h - 1, sent out ReturnPath[h - 1]                             C14-13:2
  h = 1: h - 1; sent by the LFT to DrSLID unless DrSLID is permissive (then it
         was for an SM behind this node: there is none, discarded)           C14-13:3
  otherwise discarded                                                        C14-13:4,5
A port number outside 1..N on a path discards the SMP. Every discard and every malformed
packet is counted in `stats` (names in docs/management.md); nothing here raises on input.

Traps (IBA §13.4.9, §14.2.5.1): the firmware calls `poll()` periodically (a real switch's
firmware would on a port interrupt). When a physical port's state changed since the last
look, SwitchInfo:PortStateChange is set and, once an SM has told us its LID
(PortInfo:MasterSMLID of port 0) and given us ours, Trap 128 (a LID-routed SubnTrap(Notice)
on VL15, routed by the LFT) goes to it. It is sent again every `TRAP_RESEND` polls until the
SM answers with SubnTrapRepress carrying its TID, at most `TRAP_TRIES` times; a change while
one is outstanding is covered by it (the SM reads every port when it handles it).
"""
from __future__ import annotations

from fw.attrs import NOTICE, TRAP_LINK_STATE
from fw.cca import CCA
from fw.hw import SwitchRegs
from fw.mad import CCMAD, PERMISSIVE_LID, SMP, MADError, MADHeader, Method, MgmtClass, PerfMAD, SMAttr
from fw.pma import PMA
from fw.sma import SMA, NodeIdentity
from fw.ud import QP1_QKEY, UDPacket, build_ud, parse_ud

__all__ = ["SwitchFirmware"]

VL15 = 15
TRAP_RESEND = 4            # polls between sends of an unrepressed trap
TRAP_TRIES = 4             # sends of one trap before giving up on it
PRODUCER_SWITCH = 2


class SwitchFirmware:
    def __init__(self, regs: SwitchRegs, ident: NodeIdentity | None = None):
        self.regs = regs
        self.cfg = regs.cfg
        self.port0 = {"rx_pkts": 0, "rx_words": 0, "tx_pkts": 0, "tx_words": 0}
        self.sma = SMA(regs, ident)
        self.pma = PMA(regs, self.port0)
        self.cca = CCA(regs) if regs.cfg.cc else None      # congestion control (IBA Annex A10)
        self.stats = {k: 0 for k in ("malformed", "bad_port", "not_management", "dr_discarded", "smp_on_data_vl",
                                     "gmp_on_vl15", "unknown_class", "responses_sent", "forwarded",
                                     "traps_sent", "traps_repressed", "traps_given_up", "repress_unmatched")}
        self._trap: dict | None = None                 # the outstanding trap: tid, sends, polls since
        self._trap_tids = iter(range(0x7A000000, 0x7B000000))
        self._notice_count = 0

    # ---- helpers
    def _valid_port(self, p: int) -> bool:
        return 1 <= p <= self.cfg.ports

    def _out(self, ud: UDPacket, mad: bytes, port: int | None, **lrh) -> tuple[bytes, int | None]:
        pkt = build_ud(UDPacket(**{**vars(ud), "mad": mad, **lrh}), self.cfg.crc_msb_first)
        self.port0["tx_pkts"] += 1
        self.port0["tx_words"] += len(pkt) // 4
        return pkt, port

    async def _switch_lid(self) -> int:
        return await self.regs.read("SWITCH_LID", 0)

    # ---- entry point
    async def receive(self, pkt: bytes, in_port: int) -> list[tuple[bytes, int | None]]:
        self.port0["rx_pkts"] += 1
        self.port0["rx_words"] += len(pkt) // 4
        if not self._valid_port(in_port):
            # the management queue gives every packet the physical port (1..N) it came in on;
            # an answer to anything else could not be sent back (tdest 0 routes by the LFT)
            self.stats["bad_port"] += 1
            return []
        try:
            ud = parse_ud(pkt, self.cfg.crc_msb_first)
        except MADError:
            self.stats["malformed"] += 1
            return []
        cls = ud.mad[1]
        try:
            if ud.dest_qp == 0 and cls in (MgmtClass.SUBN_LID, MgmtClass.SUBN_DR):
                if ud.vl != VL15:
                    self.stats["smp_on_data_vl"] += 1          # IBA §13.5.1: SMPs only on VL15
                    return []
                return await self._smp(ud, SMP.unpack(ud.mad), in_port)
            if ud.dest_qp == 1 and (cls == MgmtClass.PERF or cls == MgmtClass.CC and self.cca is not None):
                if ud.vl == VL15:
                    self.stats["gmp_on_vl15"] += 1
                    return []
                if cls == MgmtClass.CC:
                    rsp = await self.cca.process(CCMAD.unpack(ud.mad))
                else:
                    rsp = await self.pma.process(PerfMAD.unpack(ud.mad))
                if rsp is None:
                    return []
                self.stats["responses_sent"] += 1
                return [self._out(ud, rsp.pack(), None, dlid=ud.slid, slid=await self._switch_lid(),
                                  dest_qp=ud.src_qp, src_qp=1, qkey=QP1_QKEY)]
        except MADError:
            self.stats["malformed"] += 1
            return []
        self.stats["unknown_class" if ud.dest_qp in (0, 1) else "not_management"] += 1
        return []

    async def _smp(self, ud: UDPacket, smp: SMP, in_port: int):
        if smp.hdr.method == Method.TRAP_REPRESS and smp.hdr.attr_id == SMAttr.NOTICE:
            if self._trap is not None and smp.hdr.tid == self._trap["tid"]:
                self._trap = None
                self.stats["traps_repressed"] += 1
            else:
                self.stats["repress_unmatched"] += 1
            return []
        if not smp.dr:
            rsp = await self.sma.process(smp, in_port)
            if rsp is None:
                return []
            self.stats["responses_sent"] += 1
            return [self._out(ud, rsp.pack(), None, dlid=ud.slid, slid=await self._switch_lid(),
                              dest_qp=ud.src_qp, src_qp=0)]
        h, n = smp.hop_ptr, smp.hop_count
        if smp.direction == 0:
            if n and h == 0 or h > n + 1:
                return self._discard()
            if 0 < h < n:                                            # on the way out: pass it on
                nxt = smp.initial_path[h + 1]
                if not self._valid_port(nxt):
                    return self._discard()
                smp.return_path[h] = in_port
                smp.hop_ptr = h + 1
                self.stats["forwarded"] += 1
                return [self._out(ud, smp.pack(), nxt)]
            if h == n:
                if n:
                    smp.return_path[h] = in_port
                smp.hop_ptr = h + 1
                if smp.dr_dlid != PERMISSIVE_LID and smp.dr_dlid != await self._switch_lid():
                    self.stats["forwarded"] += 1
                    return [self._out(ud, smp.pack(), None, dlid=smp.dr_dlid, slid=await self._switch_lid())]
            # for us (h = n + 1 now)
            rsp = await self.sma.process(smp, in_port)
            if rsp is None:
                return []
            rsp.direction = 1
            self.stats["responses_sent"] += 1
            if n == 0:
                return [self._out(ud, rsp.pack(), in_port, dlid=ud.slid, slid=ud.dlid)]
            rsp.hop_ptr = n
            back = rsp.return_path[n]
            if not self._valid_port(back):
                return self._discard()
            return [self._out(ud, rsp.pack(), back, dlid=ud.slid, slid=ud.dlid)]
        # returning SMP passing through
        if 2 <= h <= n:
            back = smp.return_path[h - 1]
            if not self._valid_port(back):
                return self._discard()
            smp.hop_ptr = h - 1
            self.stats["forwarded"] += 1
            return [self._out(ud, smp.pack(), back)]
        if h == 1 and smp.dr_slid != PERMISSIVE_LID:
            smp.hop_ptr = 0
            self.stats["forwarded"] += 1
            return [self._out(ud, smp.pack(), None, dlid=smp.dr_slid, slid=await self._switch_lid())]
        return self._discard()

    # ---- traps
    async def poll(self) -> list[tuple[bytes, int | None]]:
        """Look at the ports; the trap to send (if any) as receive() returns packets."""
        await self.sma.poll_states()
        if self.sma.state_changed:
            self.sma.state_changed = False
            if self._trap is None:
                self._trap = {"tid": next(self._trap_tids), "sends": 0, "since": TRAP_RESEND}
        t = self._trap
        if t is None:
            return []
        t["since"] += 1
        if t["since"] < TRAP_RESEND:
            return []
        if t["sends"] >= TRAP_TRIES:
            self._trap = None
            self.stats["traps_given_up"] += 1
            return []
        sm_lid, sm_sl = self.sma.sw.master_sm_lid, self.sma.sw.master_sm_sl
        lid = await self._switch_lid()
        if not sm_lid or not lid:
            return []                        # no SM has configured us yet: PortStateChange only
        t["sends"] += 1
        t["since"] = 0
        self._notice_count = (self._notice_count + 1) & 0x7FFF
        notice = NOTICE.pack({"is_generic": 1, "type": 1, "producer_type": PRODUCER_SWITCH,
                              "trap_number": TRAP_LINK_STATE, "issuer_lid": lid,
                              "notice_toggle": self._notice_count & 1, "notice_count": self._notice_count,
                              "lid_addr": lid})
        smp = SMP(hdr=MADHeader(mgmt_class=MgmtClass.SUBN_LID, method=Method.TRAP, tid=t["tid"],
                                attr_id=SMAttr.NOTICE), data=notice)
        self.stats["traps_sent"] += 1
        ud = UDPacket(vl=VL15, sl=sm_sl, dlid=sm_lid, slid=lid, dest_qp=0, src_qp=0, qkey=0, pkey=0xFFFF, mad=b"")
        return [self._out(ud, smp.pack(), None)]

    def _discard(self):
        self.stats["dr_discarded"] += 1
        return []
