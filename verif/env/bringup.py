"""In-band bring-up of `ib_switch`, as a subnet manager does it, for cocotb tests and the
demo: the SM's node sits behind IBA port 1 (Verilog port 0); its MADs are built and read by
verif.outside.mad_ref (libibmad's field tables and the golden packet model, not fw/) and travel
through the link peers of verif.env.switch_env.SwitchEnv; the switch's firmware answers
them on the management port (verif.env.fw_harness).

    sm = InbandSM(dut, env)
    await bring_up(sm, lft={1: 1, 2: 0, ...}, mft={}, sl2vl={...}, switch_lid=2, say=print)
"""
from __future__ import annotations

from contracts.config import MTU_CODES

__all__ = ["InbandSM", "bring_up", "start_managed", "GET", "SET", "RESP", "SM_PORT"]

GET, SET, RESP = 0x01, 0x02, 0x81
SM_PORT = 1                       # the IBA port the SM's node is attached to


class InbandSM:
    """The subnet manager's node: sends MADs into rx port SM_PORT - 1 and takes the answers
    from tx port SM_PORT - 1 by transaction ID; `wire` keeps every MAD packet both ways."""

    def __init__(self, dut, env, lid: int = 1):
        from verif.outside.mad_ref import RefSM
        self.dut, self.env = dut, env
        self.ref = RefSM(lid=lid)
        self.lid = lid
        self.wire: list[bytes] = []
        self.steps: list[str] = []

    def _tid(self, b):
        try:
            return self.ref.field(self.ref.parse(b), "IB_MAD_TRID_F", wide=True)
        except Exception:                          # not a MAD (data traffic): no TID
            return None

    async def ask(self, pkt: bytes, what: str, timeout: int = 20000):
        """Send a request, wait for the packet that answers it (same TID); the answer's CRCs
        must be good."""
        from cocotb.triggers import FallingEdge
        port = SM_PORT - 1
        tid = self.ref.field(self.ref.parse(pkt), "IB_MAD_TRID_F", wide=True)
        self.env.send_raw(port, pkt)
        self.wire.append(pkt)
        for _ in range(timeout):
            await FallingEdge(self.dut.clk)
            got = self.env.take(port, lambda b: len(b) > 40 and self._tid(b) == tid)
            if got is not None:
                self.wire.append(got)
                r = self.ref.parse(got)
                assert r.vcrc_ok and r.icrc_ok, f"{what}: answer with a bad CRC"
                h = self.ref.hdr(r)
                self.steps.append(f"{what}: status {h['dr_status'] if r.mad[1] == 0x81 else h['status']:#06x}")
                return r
        raise AssertionError(f"{what}: no answer in {timeout} cycles")

    async def dr(self, method, attr, mod=0, data=b"", status=0):
        """A directed-route SMP to the switch (one hop: initial path [1], out of the SM's
        node's own port 1) and its answer, which must be a returning GetResp with `status`."""
        r = await self.ask(self.ref.dr_smp(method, attr, mod, path=[1], data=data), f"DR {attr}({mod:#x})")
        h = self.ref.hdr(r)
        assert h["method"] == RESP and h["d"] == 1, f"DR {attr}: not a returning GetResp: {h}"
        assert h["dr_status"] & 0x7FFF == status, f"DR {attr}({mod:#x}): status {h['dr_status']:#x}"
        return r

    def data(self, r, field):
        return self.ref.data_field(r, field)

    def pack(self, **fields) -> bytes:
        """64 bytes of SMP data with libibmad fields set: pack(IB_PORT_LID_F=2, ...)."""
        b = bytearray(64)
        for f, v in fields.items():
            self.ref.m.set(b, f, v)
        return bytes(b)

    async def port_counters(self, port: int, dlid: int, *, clear: bool = False, vl: int = 0):
        """PMA PortCounters of IBA port `port` by a GMP to LID `dlid` on data VL `vl` (QP1);
        clear: a Set with every CounterSelect bit first. Returns the answer (RefMAD)."""
        m = self.ref.m
        if clear:
            b = bytearray(64)
            m.set(b, "IB_PC_PORT_SELECT_F", port)
            m.set(b, "IB_PC_COUNTER_SELECT_F", 0xFFFF)
            await self.ask(self.ref.pma(SET, "PortCounters", bytes(b), dlid=dlid, vl=vl), f"PMA clear({port})")
        b = bytearray(64)
        m.set(b, "IB_PC_PORT_SELECT_F", port)
        r = await self.ask(self.ref.pma(GET, "PortCounters", bytes(b), dlid=dlid, vl=vl), f"PMA PortCounters({port})")
        assert self.ref.hdr(r)["status"] == 0 and r.lrh.vl == vl and r.lrh.dlid == self.lid
        return r

    def pc(self, r, field) -> int:
        return self.ref.field(r, field, at=64)


async def bring_up(sm: InbandSM, cfg, *, lft: dict[int, int], mft: dict[int, int], sl2vl: dict[int, int],
                   switch_lid: int, vlarb: list[tuple[int, int]] | None = None, say=None):
    """Discover the switch by directed route, give it `switch_lid`, write LFT (LID -> IBA
    port), MFT (MLID index -> IBA port mask, bit 0 the management port), SL2VL (SL -> VL on
    every (in, out)) and VLArb low (`vlarb`: [(VL, weight)], default every data VL weight
    8), then bring every port Init -> Armed -> Active (the SM's own port last). `say`
    gets a few lines per step."""
    say = say or (lambda s: None)
    n, nvl = cfg.ports, cfg.data_vls
    mtu = MTU_CODES[cfg.mtu]
    r = await sm.dr(GET, "NodeInfo")
    kind, nports, local = (sm.data(r, f) for f in ("IB_NODE_TYPE_F", "IB_NODE_NPORTS_F", "IB_NODE_LOCAL_PORT_F"))
    assert (kind, nports, local) == (2, n, SM_PORT), (kind, nports, local)
    guid = sm.ref.field(r, "IB_NODE_GUID_F", at=64, wide=True)
    r = await sm.dr(GET, "SwitchInfo")
    cap = sm.data(r, "IB_SW_LINEAR_FDB_CAP_F")
    optimized_sl2vl = sm.data(r, "IB_SW_OPT_SLTOVL_MAPPING_F") & 1
    assert cap == cfg.lft_entries
    states = []
    for p in range(n + 1):
        r = await sm.dr(GET, "PortInfo", p)
        states.append(sm.data(r, "IB_PORT_STATE_F"))
        assert sm.data(r, "IB_PORT_LOCAL_PORT_F") == SM_PORT
    assert states == [4] + [2] * n, f"out of reset: port states {states} (port 0 Active, the rest Init)"
    say(f"discover (directed route, path [{SM_PORT}]): NodeInfo: a switch, {n} ports, GUID {guid:#018x}, "
        f"reached through its port {local}; SwitchInfo: LinearFDBCap {cap}; PortInfo 0..{n}: "
        f"states {states} (4 Active, 2 Init)")

    await sm.dr(SET, "PortInfo", 0, sm.pack(IB_PORT_LID_F=switch_lid, IB_PORT_SMLID_F=sm.lid,
                                             IB_PORT_NEIGHBOR_MTU_F=mtu))
    say(f"assign LID: SubnSet PortInfo(0): LID {switch_lid}, MasterSMLID {sm.lid}")
    top = max(lft) if lft else 0
    for block in range(top // 64 + 1):
        entries = bytes(lft.get(64 * block + k, 0xFF) for k in range(64))
        r = await sm.dr(SET, "LFT", block, entries)
        assert r.data == entries, f"LFT block {block} read back differently"
    nmft = 0
    if mft:
        for pos in range(-(-(n + 1) // 16)):
            for block in range(max(mft) // 32 + 1):
                masks = b"".join(((mft.get(32 * block + k, 0) >> (16 * pos)) & 0xFFFF).to_bytes(2, "big")
                                 for k in range(32))
                await sm.dr(SET, "MFT", (pos << 28) | block, masks)
                nmft += 1
    table = bytes((sl2vl.get(2 * k, 0) << 4) | sl2vl.get(2 * k + 1, 0) for k in range(8))
    if optimized_sl2vl:                  # one Set for every (in, out) pair, as OpenSM does then
        await sm.dr(SET, "SL2VL", 0x30000, table)
        for i, o in ((1, n), (n, 1)):    # read back at the corners
            assert (await sm.dr(GET, "SL2VL", (i << 8) | o)).data[:8] == table
    else:
        for i in range(1, n + 1):
            for o in range(1, n + 1):
                await sm.dr(SET, "SL2VL", (i << 8) | o, table)
    vlarb = vlarb or [(v, 8) for v in range(nvl)]
    elems = bytes(x for k in range(32) for x in (vlarb[k] if k < len(vlarb) and k < cfg.vlarb_entries else (0, 0)))
    for o in range(1, n + 1):
        await sm.dr(SET, "VLArb", (1 << 16) | o, elems)
    how = "one optimized Set, modifier 0x30000" if optimized_sl2vl else "one Set each"
    say(f"program: LFT {top // 64 + 1} block(s) ({len(lft)} LIDs), MFT {nmft} block(s) ({len(mft)} groups), "
        f"SL2VL for {n * n} port pairs ({how}), VLArb low on {n} ports")

    oper_vls = nvl.bit_length()              # IBA §14.2.5.6 OperationalVLs: 1 VL0, 2 VL0-1, 3 VL0-3, 4 VL0-7
    for want in (3, 4):
        for p in [q for q in range(1, n + 1) if q != SM_PORT] + [SM_PORT]:
            r = await sm.dr(SET, "PortInfo", p, sm.pack(IB_PORT_STATE_F=want, IB_PORT_NEIGHBOR_MTU_F=mtu,
                                                        IB_PORT_OPER_VLS_F=oper_vls))
            assert sm.data(r, "IB_PORT_STATE_F") == want, f"port {p}: state {sm.data(r, 'IB_PORT_STATE_F')}"
    say(f"activate: SubnSet PortInfo:PortState Armed, then Active, on ports 1..{n} (the SM's own last)")

    r = await sm.ask(sm.ref.lid_smp(GET, "NodeInfo", dlid=switch_lid), "LID-routed NodeInfo")
    assert r.lrh.dlid == sm.lid and r.lrh.slid == switch_lid and sm.data(r, "IB_NODE_TYPE_F") == 2
    say(f"LID-routed SubnGet NodeInfo to LID {switch_lid}: answered from LID {r.lrh.slid}, routed back by the LFT")


async def start_managed(dut, cfg, seed, *, model=True, tb=None, ready_p=0.9, rx_p=0.9):
    """A switch with its firmware (fw/) on the management port, out of reset: a
    verif.env.switch_tb.SwitchTB with firmware=True (`tb`: a TB to reuse; model=False: no
    lock-step), its link peers' tx ready and rx flits each with probability ready_p / rx_p."""
    from verif.env.switch_tb import SwitchTB
    stb = SwitchTB(dut, seed=seed, model=model, firmware=True, tb=tb)
    stb.env.ready_p, stb.env.rx_p = ready_p, rx_p
    return await stb.start()
