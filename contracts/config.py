"""SwitchConfig: the one configuration that feeds RTL, golden models and testbenches.

Pure Python (no amaranth, no cocotb): models/ and tb/ import it as freely as hw/ does.
A config is frozen and validated on construction; every bad value raises
`ConfigError` naming the field. It round-trips through JSON (`to_json` / `from_json`),
which is how testbenches receive it (one JSON string, never loose environment variables).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, fields
from pathlib import Path

__all__ = ["ConfigError", "SwitchConfig", "CONFIGS", "get_config",
           "MTU_CODES", "LRH_BYTES", "GRH_BYTES", "BTH_BYTES", "ICRC_BYTES", "VCRC_BYTES",
           "BLOCK_BYTES", "LINK_PACKET_BYTES", "MAX_HEADER_BYTES"]

# Wire-format constants (IBA ch. 7; see docs/packet-format.md).
LRH_BYTES = 8            # IBA §7.7
GRH_BYTES = 40           # IBA §8.3
BTH_BYTES = 12           # IBA §9.2
ICRC_BYTES = 4           # IBA §7.8.1
VCRC_BYTES = 2           # IBA §7.8.2
BLOCK_BYTES = 64         # IBA §7.9.2: one flow-control credit
LINK_PACKET_BYTES = 6    # IBA §7.9.4: Op/FCTBS, VL/FCCL, LPCRC
# Largest header stack in front of the payload: the IBA allows at most 124 bytes of headers
# and ICRC around an MTU payload (LRH:PktLen at most (MTU + 124) / 4: 1055 words at 4 KB,
# 287 at 1 KB; IBA 1.3 §7.7.8, as Shanley's "InfiniBand Network Architecture" ch. 21 puts it:
# "the 124-byte maximum packet header/CRC byte count does not include the VCRC").
MAX_HEADER_BYTES = 124 - ICRC_BYTES

# IBA §14.2.5.6 (PortInfo:NeighborMTU/MTUCap) MTU codes
MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}

# Port to port through the core: rx sop -> tx sop of a packet through an idle switch
# (docs/latency.md). The budget is in nanoseconds at the clock the switch is built for (the
# ECP5 target of docs/fpga.md); the pipeline's stages are listed once, here, for the test
# that asserts the cycle count (tb/test_switch.py), `make report` and the docs.
LATENCY_BUDGET_NS = 60.0
TARGET_CLOCK_MHZ = 150.0
CORE_STAGES = (
    "receive parser, output registered; beside it the LRH registered, the LFT/MFT addressed from the link",
    "route head stage: DLID class, output VL of every output, flow-pinned ports (the tables' block RAM read)",
    "route decision from the tables' output register into the route register",
    "VOQ write",
    "VL arbitration, a cycle ahead of the allocation (registered choice)",
    "allocation, match registered",
    "VOQ read into the block RAM's output register",
    "crossbar and egress rewrite into the egress's output register",
    "LinkTx output register",
)


def core_latency_cycles(cfg: "SwitchConfig") -> int:
    """The uncontended rx sop -> tx sop latency the pipeline is built for, in cycles: one per
    stage of CORE_STAGES. cfg.rx_register's boundary register costs nothing here: the route
    stages address the tables from the link input, before that register, and the flits
    wait for the route register one cycle less (hw/switch/ingress.py)."""
    return len(CORE_STAGES)


def latency_budget_cycles(clock_mhz: float = TARGET_CLOCK_MHZ) -> int:
    """The most cycles LATENCY_BUDGET_NS allows at `clock_mhz` (9 at 150 MHz)."""
    return int(LATENCY_BUDGET_NS * clock_mhz / 1000.0 + 1e-9)


_WIDTHS = (64, 128, 256, 512)
_VLS = (1, 2, 4, 8)


class ConfigError(ValueError):
    """A SwitchConfig field is missing, unknown, of the wrong type or out of range."""

    def __init__(self, field_name: str, message: str):
        self.field = field_name
        super().__init__(f"SwitchConfig.{field_name}: {message}")


_BOOLS = ("crc_msb_first", "credit_vcrc", "rx_register", "failover", "lifetimes", "adaptive", "cc")


@dataclass(frozen=True)
class SwitchConfig:
    """Parameters of one switch instance.

    name               a label used for build directories and reports
    ports              number of switch ports (2..64)
    data_width         datapath width W in bits (64, 128, 256, 512)
    data_vls           data virtual lanes (1, 2, 4, 8); VL15 always exists in addition
    mtu                largest payload in bytes (256, 512, 1024, 2048, 4096)
    buffer_blocks_per_vl  receive buffer per data VL in 64-byte credit blocks; must hold
                       one largest packet (IBA §7.9: else credit can never cover it)
    vl15_buffer_blocks receive buffer for VL15 (management) packets, in 64-byte blocks
    fc_period          cycles between periodic flow-control packets per VL
    islip_iterations   iterations of the iSLIP switch allocator per cycle (1..4)
    islip_fair_every   depth priority of the allocator: an output grants inputs whose queue
                       for it holds more than one packet first, except on every K-th match,
                       a plain round-robin grant (no starvation); 1 = plain iSLIP (1..16)
    lft_entries        unicast LIDs 0..lft_entries-1 routed by the LFT (power of two, 64..32768;
                       with ext_lid_bits > 0: the entries per 64 Ki page of LIDs, up to 65536)
    ext_lid_bits       extended LIDs (our extension, docs/fabric.md "Extended LIDs"): 0 (IBA,
                       default) or 1..5 more DLID bits taken from the LRH's 5 reserved bits in
                       front of PktLen; the LFT then has lft_entries << ext_lid_bits entries
    mft_entries        multicast LIDs 0xC000.. routed by the MFT (power of two, 1..16384)
    vlarb_entries      entries of each VLArb high/low table (1..64)
    crc_msb_first      byte order of the 16-bit VCRC and LPCRC on the wire: False (default)
                       least-significant byte first, as the ICRC goes (docs/packet-format.md);
                       True most-significant byte first. No public source settles it
                       (docs/link-layer.md, "Open questions"): both are built and tested
    credit_vcrc        whether a data packet's credit blocks count its VCRC: True (default)
                       ceil((4 * PktLen + 2) / 64); False ceil(4 * PktLen / 64). They differ
                       exactly when PktLen % 16 == 0 (docs/link-layer.md, "Open questions")
    rx_register        register the link inputs (rx.*) at the switch's boundary: False (default)
                       or True, one cycle more from rx to tx (6 instead of 5). In hardware it is
                       a pipeline stage between the PHY and the parser; in a Verilated fabric it
                       keeps most of the switch out of the region Verilator re-runs at every
                       input change (docs/fabric.md, "The RTL fabric's simulation speed": 1.7x)
    failover           link-fault failover in the switch (docs/reliability.md): False (default)
                       or True, an alternate output port per output port (register ALT_PORT,
                       SMA attribute PortFailover) that takes the packets queued and routed
                       for a port that is not Active, without the SM
    adaptive           adaptive routing in the switch (docs/reliability.md): False (default) or
                       True (needs failover, whose read path it shares), an AR group per output
                       port (register AR_GROUP): a packet routed to a port of a group may leave
                       on any Active port of that group, whichever can take it first
    lifetimes          packet lifetimes in the switch (docs/reliability.md): False (default) or
                       True, HOQLife per output port (register HOQ_LIFE, PortInfo:HOQLife): a
                       packet that waits at the head of its queue too long is discarded and
                       counted (PortXmitDiscards of its output)
    lifetime_unit_log2 log2 of the clock cycles in IBA's lifetime unit of 4.096 us: 10 (default,
                       a 250 MHz clock); tests use small values so that lifetimes pass quickly
    """

    name: str = "default"
    ports: int = 8
    data_width: int = 128
    data_vls: int = 4
    mtu: int = 2048
    buffer_blocks_per_vl: int = 64
    vl15_buffer_blocks: int = 10
    fc_period: int = 1024
    islip_iterations: int = 1
    islip_fair_every: int = 8
    lft_entries: int = 1024
    ext_lid_bits: int = 0
    mft_entries: int = 64
    vlarb_entries: int = 8
    crc_msb_first: bool = False
    credit_vcrc: bool = True
    rx_register: bool = False
    failover: bool = False
    lifetimes: bool = False
    lifetime_unit_log2: int = 10
    adaptive: bool = False
    cc: bool = False
    _extra: dict = field(default_factory=dict, repr=False, compare=False)

    # ---------------------------------------------------------------- validation
    def __post_init__(self):
        if self._extra:
            bad = sorted(self._extra)[0]
            raise ConfigError(bad, "unknown field (a typo would otherwise silently fall back "
                                   "to the default)")
        for f in fields(self):
            if f.name == "_extra":
                continue
            v = getattr(self, f.name)
            want = str if f.name == "name" else bool if f.name in _BOOLS else int
            if type(v) is not want:
                raise ConfigError(f.name, f"must be {want.__name__}, got {type(v).__name__} {v!r}")
        if not self.name or not all(c.isalnum() or c in "-_" for c in self.name):
            raise ConfigError("name", f"must be a non-empty [A-Za-z0-9_-] label, got {self.name!r}")
        if not 2 <= self.ports <= 64:
            raise ConfigError("ports", f"must be in 2..64, got {self.ports}")
        if self.data_width not in _WIDTHS:
            raise ConfigError("data_width", f"must be one of {_WIDTHS}, got {self.data_width}")
        if self.data_vls not in _VLS:
            raise ConfigError("data_vls", f"must be one of {_VLS}, got {self.data_vls}")
        if self.mtu not in MTU_CODES:
            raise ConfigError("mtu", f"must be one of {tuple(MTU_CODES)}, got {self.mtu}")
        if self.buffer_blocks_per_vl < self.max_packet_blocks:
            raise ConfigError(
                "buffer_blocks_per_vl",
                f"{self.buffer_blocks_per_vl} blocks cannot hold one largest packet "
                f"({self.max_packet_blocks} blocks for MTU {self.mtu}); the link would stall "
                f"forever (IBA §7.9)")
        if self.buffer_blocks_per_vl > 2048:
            raise ConfigError("buffer_blocks_per_vl",
                              f"must be <= 2048 (largest credit limit advertisable, IBA §7.9.4), "
                              f"got {self.buffer_blocks_per_vl}")
        if self.vl15_buffer_blocks < self.vl15_max_packet_blocks:
            raise ConfigError("vl15_buffer_blocks",
                              f"must hold one VL15 packet ({self.vl15_max_packet_blocks} blocks), "
                              f"got {self.vl15_buffer_blocks}")
        if not 16 <= self.fc_period <= 65536:
            raise ConfigError("fc_period", f"must be in 16..65536 cycles, got {self.fc_period}")
        if not 1 <= self.islip_iterations <= 4:
            raise ConfigError("islip_iterations", f"must be in 1..4, got {self.islip_iterations}")
        if not 1 <= self.islip_fair_every <= 16:
            raise ConfigError("islip_fair_every", f"must be in 1..16, got {self.islip_fair_every}")
        if not 0 <= self.lifetime_unit_log2 <= 16:
            raise ConfigError("lifetime_unit_log2", f"must be in 0..16 (cycles per 4.096 us: 1..65536), "
                                                    f"got {self.lifetime_unit_log2}")
        if self.adaptive and not self.failover:
            raise ConfigError("adaptive", "needs failover=True (adaptive routing reads a queue for "
                                          "another output the way failover does)")
        if not 0 <= self.ext_lid_bits <= 5:
            raise ConfigError("ext_lid_bits", f"must be in 0..5 (the LRH has 5 reserved bits in front of "
                                              f"PktLen), got {self.ext_lid_bits}")
        top = 0x10000 if self.ext_lid_bits else 0x8000
        if not (64 <= self.lft_entries <= top and self.lft_entries & (self.lft_entries - 1) == 0):
            raise ConfigError("lft_entries", f"must be a power of two in 64..{top}"
                                             f"{' (with ext_lid_bits)' if self.ext_lid_bits else ''}, "
                                             f"got {self.lft_entries}")
        if not (1 <= self.mft_entries <= 0x4000 and self.mft_entries & (self.mft_entries - 1) == 0):
            raise ConfigError("mft_entries", f"must be a power of two in 1..16384, got {self.mft_entries}")
        if not 1 <= self.vlarb_entries <= 64:
            raise ConfigError("vlarb_entries", f"must be in 1..64 (IBA §7.6.9), got {self.vlarb_entries}")

    # ---------------------------------------------------------------- derived
    @property
    def lid_bits(self) -> int:
        """Bits of a LID as the switch routes it: 16, plus ext_lid_bits in extended mode."""
        return 16 + self.ext_lid_bits

    @property
    def lft_size(self) -> int:
        """LFT entries in all: lft_entries per page, 2 ** ext_lid_bits pages."""
        return self.lft_entries << self.ext_lid_bits

    def lft_index(self, lid: int) -> int | None:
        """The LFT entry (register-map index) that routes unicast `lid` (16 + ext_lid_bits bits:
        page = the bits above 16), or None where the LFT has none: low 16 bits 0 (reserved),
        multicast or permissive (0xC000..0xFFFF, in every page), beyond lft_entries, or a
        page beyond 2 ** ext_lid_bits."""
        low, page = lid & 0xFFFF, lid >> 16
        if page >> self.ext_lid_bits or low == 0 or low >= min(self.lft_entries, 0xC000):
            return None
        return page * self.lft_entries + low

    @property
    def cc_unit(self) -> int:
        """Blocks per step of a CC_PORT threshold (congestion marking, docs/reliability.md): an
        output VL is congested from (16 - threshold) * cc_unit blocks queued for it."""
        return max(1, self.buffer_blocks_per_vl // 16)

    @property
    def min_switch_life(self) -> int:
        """The smallest SwitchLifetime (SwitchInfo:LifeTimeValue) the switch applies; smaller
        values act as this one (docs/reliability.md). A packet's age in the switch is kept in
        quarter periods, modulo 256, and read when the packet reaches the head of its queue;
        the period must be long enough (at least 4 cycles, and 32 of them at least the time
        an input takes to read its whole buffer into the void, a few cycles more per packet)
        that no packet waits 256 quarter periods to get there."""
        drain = self.data_vls * self.buffer_blocks_per_vl * (BLOCK_BYTES // self.bytes_per_flit + 4)
        v = max(0, 2 - self.lifetime_unit_log2)
        while (32 << (v + self.lifetime_unit_log2)) < drain:
            v += 1
        return v

    @property
    def bytes_per_flit(self) -> int:
        return self.data_width // 8

    @property
    def bytes_width(self) -> int:
        """Width of the `bytes` field (holds 1..W/8)."""
        return self.bytes_per_flit.bit_length()

    @property
    def max_packet_bytes(self) -> int:
        """Largest data packet on the wire (headers + MTU payload + ICRC + VCRC)."""
        return MAX_HEADER_BYTES + self.mtu + ICRC_BYTES + VCRC_BYTES

    @property
    def max_pktlen(self) -> int:
        """Largest LRH.PktLen accepted (4-byte words, LRH..ICRC; IBA §7.7.8)."""
        return (self.max_packet_bytes - VCRC_BYTES) // 4

    @property
    def max_packet_blocks(self) -> int:
        return -(-self.max_packet_bytes // BLOCK_BYTES)

    @property
    def vl15_max_packet_bytes(self) -> int:
        """VL15 (subnet management) packets carry at most 256 payload bytes (IBA §7.6.5)."""
        return MAX_HEADER_BYTES + 256 + ICRC_BYTES + VCRC_BYTES

    @property
    def mgmt_queue_flits(self) -> int:
        """The management receive queue's flit slots: three of the largest VL15 packets."""
        return 3 * -(-self.vl15_max_packet_bytes // self.bytes_per_flit)

    @property
    def mgmt_send_flits(self) -> int:
        """The management send buffer's flit slots: two of the largest management packets."""
        return 2 * -(-self.vl15_max_packet_bytes // self.bytes_per_flit)

    @property
    def vl15_max_packet_blocks(self) -> int:
        return -(-self.vl15_max_packet_bytes // BLOCK_BYTES)

    @property
    def fc_update_blocks(self) -> int:
        """A receiver's FCCL must move this far before an FC packet is sent for it outside the
        fc_period refresh: a quarter of the VL's buffer (at least one block)."""
        return max(1, self.buffer_blocks_per_vl // 4)

    @property
    def max_packet_flits(self) -> int:
        return -(-self.max_packet_bytes // self.bytes_per_flit)

    # ---------------------------------------------------------------- (de)serialise
    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_extra"}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> SwitchConfig:
        if not isinstance(d, dict):
            raise ConfigError("<root>", f"expected a JSON object, got {type(d).__name__}")
        known = {f.name for f in fields(cls)} - {"_extra"}
        extra = {k: v for k, v in d.items() if k not in known}
        return cls(**{k: v for k, v in d.items() if k in known}, _extra=extra)

    @classmethod
    def from_json(cls, text: str) -> SwitchConfig:
        return cls.from_dict(json.loads(text))

    def replace(self, **changes) -> SwitchConfig:
        return dataclasses.replace(self, **changes)


# Named configurations. Small ones keep the regression fast; larger ones are for
# benchmarks and Verilog generation.
CONFIGS: dict[str, SwitchConfig] = {c.name: c for c in [
    SwitchConfig(),
    SwitchConfig(name="small", ports=4, data_width=64, data_vls=2, mtu=256,
                 buffer_blocks_per_vl=16, fc_period=256),
    SwitchConfig(name="w128", ports=8, data_width=128, data_vls=4, mtu=512,
                 buffer_blocks_per_vl=16, fc_period=256, islip_iterations=2),
    SwitchConfig(name="b8", ports=8, data_width=128, data_vls=2, mtu=4096,    # benchmarks: 64 B - 4 KB
                 buffer_blocks_per_vl=2048, fc_period=256, islip_iterations=2),  # 128 KB per VL (credit max)
    SwitchConfig(name="w256", ports=4, data_width=256, data_vls=2, mtu=1024,
                 buffer_blocks_per_vl=24),
    SwitchConfig(name="w512", ports=4, data_width=512, data_vls=8, mtu=4096,
                 buffer_blocks_per_vl=128),
    SwitchConfig(name="p16", ports=16, data_width=256, data_vls=4, mtu=2048,
                 buffer_blocks_per_vl=64),
    SwitchConfig(name="p64", ports=64, data_width=64, data_vls=2, mtu=2048,
                 buffer_blocks_per_vl=40),
    # the two readings of IBA that no public source settles (docs/link-layer.md), on `small`
    SwitchConfig(name="small-msb", ports=4, data_width=64, data_vls=2, mtu=256,
                 buffer_blocks_per_vl=16, fc_period=256, crc_msb_first=True),
    # extended LIDs (docs/fabric.md): one more DLID bit, 64 LFT entries per page
    SwitchConfig(name="small-ext", ports=4, data_width=64, data_vls=2, mtu=256,
                 buffer_blocks_per_vl=16, fc_period=256, lft_entries=64, ext_lid_bits=1),
    SwitchConfig(name="small-novcrc", ports=4, data_width=64, data_vls=2, mtu=256,
                 buffer_blocks_per_vl=16, fc_period=256, credit_vcrc=False),
    # link inputs registered at the boundary, failover, lifetimes, adaptive routing and congestion
    # marking in the switch (the fabric's switches: docs/fabric.md, docs/reliability.md; a lifetime
    # unit of 16 cycles)
    SwitchConfig(name="small-rxreg", ports=4, data_width=64, data_vls=2, mtu=256,
                 buffer_blocks_per_vl=16, fc_period=256, rx_register=True, failover=True, lifetimes=True,
                 lifetime_unit_log2=4, adaptive=True, cc=True),
]}


def get_config(name_or_path: str) -> SwitchConfig:
    """A named config from CONFIGS, or a JSON file path."""
    if name_or_path in CONFIGS:
        return CONFIGS[name_or_path]
    p = Path(name_or_path)
    if p.suffix == ".json" and p.exists():
        return SwitchConfig.from_json(p.read_text())
    raise ConfigError("name", f"no config named {name_or_path!r} (known: {', '.join(CONFIGS)}) "
                              f"and no such .json file")
