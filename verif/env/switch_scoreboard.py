"""The whole switch's scoreboard, independent of its micro-architecture: what the tables
promise for each packet sent, what the link peers saw leave, and what the counters must
read.

Tables as the subnet manager sees them (IBA port numbers: 0 the management port, Verilog
port p is IBA port p + 1): `lft` LID -> entry (a LID: the DLID; in the extended-LID mode,
docs/fabric.md, the page from the LRH's reserved bits above it), `mft` MLID index -> IBA port mask, `sl2vl`
SL -> VL (the same on every (in, out)), `active` the Verilog ports expected Active,
`switch_lid`.

`check(got, got_bad, pending)`: each good packet arrived once on every port the tables give
it, with the SL2VL VL, its VCRC valid, the ICRC and every other byte intact; order kept per
(in, out, VL) among unicast packets and among multicast packets (IBA orders the packets of
one path; a unicast and a multicast DLID are two paths); a bad packet (EBP, bad VCRC) was
dropped or left marked bad, at most once per port it was routed to, never unmarked.
`check_counters(counter)`: packets and words in and out per port, receive errors, EBP,
overruns, relay errors, SMPs for the switch.
"""
from __future__ import annotations

from contracts.config import SwitchConfig
from contracts.defs import LFT_NONE, MGMT_PORT, verilog_port
from models.packet import LRH, parse_data_packet

__all__ = ["SwitchScoreboard", "is_multicast"]


def is_multicast(body: bytes) -> bool:
    return 0xC000 <= LRH.unpack(body).dlid < 0xFFFF


class SwitchScoreboard:
    def __init__(self, cfg: SwitchConfig):
        self.cfg = cfg
        self.n, self.nvl = cfg.ports, cfg.data_vls
        n = self.n
        self.lft: dict[int, int] = {}
        self.sl2vl: dict[int, int] = {}
        self.mft: dict[int, int] = {}
        self.active: set[int] = set()
        self.switch_lid = 0
        self.sent = []                           # (in_port, bytes, {expected out port: VL})
        self.sent_bad = []
        self.rx_pkts = [0] * n                   # data packets sent into each port, and their words
        self.rx_words = [0] * n
        self.rx_errors = [0] * n                 # packets with a local error (bad VCRC)
        self.rx_ebp = [0] * n                    # packets that came marked EBP (a remote error)
        self.vl15_for_switch = [0] * n           # SMPs each port received for the switch itself
        self.taken = [0] * n                     # packets removed from a port's output by a test
        self.taken_words = [0] * n
        self.ebp_copies = 0

    # ---------------------------------------------------------------- the tables
    def lid(self, lrh: LRH) -> int:
        """The LID a packet goes to: its DLID, and in the extended-LID mode the page (the low
        ext_lid_bits of the 5 reserved bits in front of PktLen; the others are ignored) above
        it. Multicast LIDs and the permissive LID exist in page 0 only."""
        return lrh.dlid | (lrh.rsvd1 & ((1 << self.cfg.ext_lid_bits) - 1)) << 16

    @staticmethod
    def _unicast(lid) -> bool:
        return 0 < lid & 0xFFFF < 0xC000

    def for_switch(self, dlid) -> bool:
        """A VL15 packet with this LID is for the switch itself: the permissive LID, the
        switch's LID, or a unicast LID whose LFT entry is the management port (0)."""
        return (dlid == 0xFFFF or (self.switch_lid != 0 and dlid == self.switch_lid)
                or (self._unicast(dlid) and self.lft.get(dlid, LFT_NONE) == MGMT_PORT))

    def _phys(self, dlid) -> int | None:
        """The Verilog port the LFT sends a unicast DLID to, None if none (drop, management)."""
        e = self.lft.get(dlid, LFT_NONE)
        return verilog_port(e) if 1 <= e <= self.n else None

    def expected_outputs(self, in_port, dlid, sl, vl15: bool = False) -> dict:
        """{output port: output VL} the tables give a packet (empty: dropped). VL15 (SMPs):
        taken by the switch when for the permissive LID or the switch's LID, else LID-routed
        by the LFT and left on VL15 (port at least Init; the tests keep ports Active)."""
        if vl15:
            if self.for_switch(dlid):
                return {}
            port = self._phys(dlid)
            return {port: 15} if self._unicast(dlid) and port is not None and port in self.active else {}
        vl = self.sl2vl.get(sl, 0)
        if 0xC000 <= dlid < 0xFFFF:
            mask = (self.mft.get(dlid - 0xC000, 0) >> 1) & ~(1 << in_port)       # bit 0: management
            outs = [o for o in range(self.n) if mask >> o & 1]
        else:
            outs = [self._phys(dlid)] if self._unicast(dlid) and self._phys(dlid) is not None else []
        return {o: vl for o in outs if o in self.active and vl < self.nvl}

    # ---------------------------------------------------------------- what was sent
    def received(self, in_port: int, body: bytes):
        """A packet the peer of `in_port` sends (counted as received there)."""
        lrh = LRH.unpack(body)
        if lrh.vl == 15 and self.for_switch(self.lid(lrh)):
            self.vl15_for_switch[in_port] += 1
        self.rx_pkts[in_port] += 1               # PortRcvPkts/Data may include packets with errors (IBA
        self.rx_words[in_port] += lrh.pktlen     # PortCounters): cut-through counts them at the header

    def expect(self, in_port: int, body: bytes, bad: str | None = None):
        """A packet sent into `in_port`: where the tables send it (bad: 'ebp' or 'vcrc')."""
        lrh = LRH.unpack(body)
        outs = self.expected_outputs(in_port, self.lid(lrh), lrh.sl, lrh.vl == 15)
        if bad == "ebp":
            self.rx_ebp[in_port] += 1
        elif bad:
            self.rx_errors[in_port] += 1
        (self.sent_bad if bad else self.sent).append((in_port, body, outs))

    def outstanding(self, got) -> int:
        """Good copies the tables promise that have not left the switch yet."""
        return sum(len(o) for _, _, o in self.sent) - sum(len(g) for g in got)

    # ---------------------------------------------------------------- checks
    def check(self, got, got_bad, pending=None) -> int:
        """Returns the number of good copies delivered (see the module docstring)."""
        for p in range(self.n):
            if pending is not None:
                assert not pending[p], f"rx port {p}: {len(pending[p])} packets never sent (no credit from the switch?)"
        want = {}
        for in_p, body, outs in self.sent:
            for out, vl in outs.items():
                want.setdefault((out, in_p, vl, is_multicast(body)), []).append(body)
        have = {}
        for out in range(self.n):
            for b in got[out]:
                d = parse_data_packet(b, self.cfg.crc_msb_first)
                assert d.vcrc_ok, f"port {out}: bad VCRC"
                assert d.icrc_ok, f"port {out}: ICRC changed"
                src = [s for s in self.sent if out in s[2] and s[1][1:-2] == b[1:-2]]
                assert src, f"port {out}: a packet nobody sent there (or corrupted)"
                in_p, body, outs = src[0]
                vl = outs[out]
                assert d.lrh.vl == vl, f"port {out}: VL {d.lrh.vl}, SL2VL says {vl}"
                have.setdefault((out, in_p, vl, is_multicast(body)), []).append(body)
        for k, pk in want.items():
            assert have.get(k, []) == pk, \
                f"(out, in, VL, multicast) {k}: {len(have.get(k, []))} of {len(pk)} packets, or order"
        for in_p, body, outs in self.sent_bad:
            for out in range(self.n):
                hit = [b for b in got_bad[out] if b[1:-2] == body[1:-2]]
                assert len(hit) <= (1 if out in outs else 0), \
                    f"bad packet from port {in_p}: {len(hit)} EBP copies on port {out}"
                assert not any(b[1:-2] == body[1:-2] for b in got[out]), \
                    f"bad packet from port {in_p} left port {out} unmarked"
        self.ebp_copies = sum(len(g) for g in got_bad)
        assert self.ebp_copies <= sum(len(outs) for _, _, outs in self.sent_bad), \
            "a packet left marked bad that was not sent bad"
        return sum(len(v) for v in have.values())

    def check_counters(self, counter, got, got_bad, relay: dict | None = None, have=lambda p, name: True):
        """counter(p, name): the value read; have(p, name): it was read. Packets and words in
        and out per port, no overruns, receive errors and EBP as sent, SMPs for the switch,
        relay errors (drops by the tables) as given."""
        for p in range(self.n):
            out = got[p] + got_bad[p]            # packets sent marked bad (EBP) count too
            xp = len(out) + self.taken[p]
            xw = sum(LRH.unpack(b).pktlen for b in out) + self.taken_words[p]
            for name, want in (("PortXmitPkts", xp), ("PortXmitData", xw), ("PortRcvPkts", self.rx_pkts[p]),
                               ("PortRcvData", self.rx_words[p]), ("ExcessiveBufferOverrunErrors", 0),
                               ("PortRcvErrors", self.rx_errors[p])):
                assert counter(p, name) == want, f"port {p}: {name} {counter(p, name)}, expected {want}"
            for name, want in (("PortRcvRemotePhysicalErrors", self.rx_ebp[p]),
                               ("VL15ForSwitch", self.vl15_for_switch[p])):
                if have(p, name):
                    assert counter(p, name) == want, f"port {p}: {name} {counter(p, name)}, expected {want}"
            if relay is not None:
                assert counter(p, "PortRcvSwitchRelayErrors") == relay.get(p, 0), \
                    f"port {p}: PortRcvSwitchRelayErrors {counter(p, 'PortRcvSwitchRelayErrors')}, " \
                    f"expected {relay.get(p, 0)}"
