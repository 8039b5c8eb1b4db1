"""The in-band subnet manager (sm/inband.py) on a fabric of our switches' firmware at the
packet level (fabric/mad_fabric.py: the firmware of fw/ on register files, cables, no RTL):
bring-up, then failures. Every check walks the forwarding tables the switches hold (their
register files) over the cables that are up, not the SM's own view:

  - after bring-up every switch delivers every CA's LID, every cabled port is Active;
  - a cable cut: both switches send Trap 128, the SM represses them and re-sweeps (reads
    those switches, drops the cable from its view, routes again with LIDs kept, sends only
    the LFT blocks that changed): every LID delivered again around the cut, PortStateChange
    cleared;
  - traps that never arrive: the light sweep finds the change by PortStateChange;
  - the cable back: a trap, a full discovery, its ports Armed then Active, every LID
    delivered.
"""
import asyncio

import pytest

from contracts.config import SwitchConfig
from contracts.defs import PortState
from fabric.mad_fabric import SW_GUID0, MadFabric
from fabric.topology import fat_tree_2, fat_tree_3, torus_2d
from sm.inband import InbandSM

CFG = SwitchConfig(name="mad8", ports=8, data_width=64, data_vls=2, mtu=256, buffer_blocks_per_vl=16,
                   lft_entries=256)


def run(coro):
    return asyncio.run(coro)


class Net:
    def __init__(self, topo, engine="ftree", poll=None, cfg=CFG):
        self.topo, self.cfg = topo, cfg
        sm_ca = topo.hcas()[0].name
        self.f = MadFabric(topo, cfg, sm_ca, poll_cycles=poll)
        self.sm = InbandSM(self.f, timeout=10000, say=print)
        self.ca_lid = {}

        def on_ca(sw_guid, p, lid):
            name = self.f.names[sw_guid - SW_GUID0 - 1]
            self.ca_lid[self.f.cable[(name, p)][0]] = lid
        run(self.sm.bring_up(engine, on_ca=on_ca))
        self.ca_lid[sm_ca] = self.sm.sm_lid

    def lft(self, k: int, lid: int) -> int:
        """Switch k's LFT entry for `lid` as its registers hold it (docs/registers.md: entry
        page * lft_entries + DLID, the page above bit 16 of an extended LID)."""
        e = (lid >> 16) * self.cfg.lft_entries + (lid & 0xFFFF)
        return run(self.f.regs[k].read("LFT", e // 4)) >> (8 * (e % 4)) & 0xFF

    def walk(self, k: int, lid: int, failover: bool = False) -> str | None:
        """Follow the switches' own LFTs from switch k over live cables: the CA reached.
        failover: as the data path of a switch with failover forwards (docs/reliability.md):
        a port not Active whose alternate (ALT_PORT) is Active sends to the alternate."""
        node = self.f.names[k]
        for _ in range(16):
            kk = self.f.index[node]
            p = self.lft(kk, lid)
            if self.cfg.adaptive and p != 255:
                p &= 0x7F                        # bit 7: the LID is adaptive (docs/reliability.md)
            if p in (0, 255):
                return None
            regs = self.f.regs[kk]
            if failover and regs.state[p - 1] != PortState.ACTIVE:
                alt = run(regs.read("ALT_PORT", p - 1))
                if 1 <= alt <= self.cfg.ports and regs.state[alt - 1] == PortState.ACTIVE:
                    p = alt
            far = self.f._peer(node, p)
            if far is None:
                return None
            node = far[0]
            if node not in self.f.index:
                return node
        return None

    def check_delivers_everything(self):
        """From every switch with a CA on it (where traffic enters), every CA's LID leads
        to that CA; transit entries are checked on the way (up*/down* may leave a spine
        without a legal path to a leaf it lost: nothing enters there)."""
        for k, name in enumerate(self.f.names):
            if not any(not self.topo.nodes[b].is_switch for b, _q in self.topo.nodes[name].ports.values()):
                continue
            for ca, lid in self.ca_lid.items():
                got = self.walk(k, lid)
                assert got == ca, f"switch {name}: LID {lid} ({ca}) goes to {got}"

    def states(self, name: str) -> dict[int, int]:
        k = self.f.index[name]
        return {p: int(self.f.regs[k].state[p - 1]) for p in range(1, self.cfg.ports + 1) if (name, p) in self.f.cable}


def _spine_cable(topo, leaf: str) -> tuple[str, int]:
    for p, (b, _q) in sorted(topo.nodes[leaf].ports.items()):
        if topo.nodes[b].is_switch:
            return leaf, p
    raise AssertionError(leaf)


@pytest.mark.parametrize("name,topo,engine", [
    ("ft2-8", lambda: fat_tree_2(8), "ftree"),
    ("ft3-4", lambda: fat_tree_3(4), "ftree"),
    ("torus-4x3", lambda: torus_2d(4, 3, hosts=2), "updn")])
def test_bring_up_delivers_every_lid(name, topo, engine):
    n = Net(topo(), engine)
    n.check_delivers_everything()
    for s in n.f.names:
        assert set(n.states(s).values()) == {PortState.ACTIVE}, f"{s}: {n.states(s)}"
    assert not any(fw.stats["malformed"] for fw in n.f.fws)
    # SwitchInfo:LifeTimeValue as OpenSM sets it (packet_life_time 0x12), held by the firmware
    assert {fw.sma.sw.life_time_value for fw in n.f.fws} == {InbandSM.PACKET_LIFE}


def test_bring_up_sets_the_switch_lifetime_register():
    """On switches built with lifetimes the SM's SwitchInfo:LifeTimeValue reaches register
    SWITCH_LIFE (docs/reliability.md), as PortInfo:HOQLife reaches HOQ_LIFE."""
    n = Net(fat_tree_2(4), cfg=CFG.replace(name="mad8-life", lifetimes=True))
    n.check_delivers_everything()
    assert {run(r.read("SWITCH_LIFE", 0)) for r in n.f.regs} == {InbandSM.PACKET_LIFE}
    hoq = {run(r.read("HOQ_LIFE", p)) & 0x1F for r in n.f.regs for p in range(CFG.ports)}
    assert InbandSM.HOQ_LIFE in hoq


def test_bring_up_with_extended_lids():
    """The extended-LID mode (docs/fabric.md) in-band: switches with one page bit; the CAs'
    LIDs in page 1 (the switches', and the SM's own, in page 0: PortInfo:LID has 16 bits).
    The SM sends the LFT blocks of both pages (blocks 1024.. for page 1) and skips page 0's
    multicast range; the switches' own registers then deliver every LID of both pages."""
    from sm.routing import route
    cfg = SwitchConfig(name="mad8-ext", ports=8, data_width=64, data_vls=2, mtu=256, buffer_blocks_per_vl=16,
                       lft_entries=256, ext_lid_bits=1)
    said = []

    def engine(fab):
        sw = [1 + s for s in range(fab.S)]
        ca = [0x10000 | (0x40 + c) for c in range(fab.C - 1)] + [0x80]     # the SM's CA last
        fab.set_lids(sw, ca)
        return route(fab, "ftree")
    n = Net.__new__(Net)
    n.topo, n.cfg = fat_tree_2(8), cfg
    sm_ca = n.topo.hcas()[0].name
    n.f = MadFabric(n.topo, cfg, sm_ca)
    n.sm = InbandSM(n.f, timeout=10000, say=said.append)
    n.ca_lid = {}

    def on_ca(sw_guid, p, lid):
        n.ca_lid[n.f.cable[(n.f.names[sw_guid - SW_GUID0 - 1], p)][0]] = lid
    run(n.sm.bring_up(engine, on_ca=on_ca))
    n.ca_lid[sm_ca] = n.sm.sm_lid
    assert sum(lid > 0xFFFF for lid in n.ca_lid.values()) == len(n.ca_lid) - 1
    n.check_delivers_everything()
    # both pages up to the largest low 16 bits of a LID (0x80): blocks 0-2 and 1024-1026
    assert any("6 LFT block(s) each" in line for line in said), said
    assert not any(fw.stats["malformed"] for fw in n.f.fws)


def test_cut_cable_traps_and_resweep_routes_around_it():
    topo = fat_tree_2(8)
    n = Net(topo, "ftree", poll=500)
    a, pa = _spine_cable(topo, "L1")
    b, pb = n.f.cable[(a, pa)]
    before = n.sm.mads
    n.f.cut(a, pa)
    traps = []
    while len(traps) < 2:
        t = run(n.sm.next_trap(20000))
        assert t is not None, f"traps so far {traps}; firmware {[fw.stats['traps_sent'] for fw in n.f.fws]}"
        traps.append(t)
    assert {t["trap_number"] for t in traps} == {128}
    lids = {n.sm.state["lids"][SW_GUID0 + n.f.index[x] + 1] for x in (a, b)}
    assert {t["lid_addr"] for t in traps} == lids == {t["issuer_lid"] for t in traps}
    out = run(n.sm.resweep([t["lid_addr"] for t in traps]))
    assert {(x[0], x[1]) for x in out["lost"]} <= {(a, pa), (b, pb)} and out["lost"]
    assert not out["found"] and not out["silent"]
    assert 0 < out["lft_blocks"] <= len(n.f.names)          # only what changed; one block per switch here
    n.check_delivers_everything()
    for x in (a, b):                                        # PortStateChange cleared, traps repressed
        assert n.f.fws[n.f.index[x]].sma.sw.port_state_change == 0
    run(n.f.run(4000))
    assert sum(fw.stats["traps_repressed"] for fw in n.f.fws) == 2
    assert sum(fw.stats["traps_given_up"] for fw in n.f.fws) == 0
    assert n.sm.mads - before < 60, f"a re-sweep of one cable took {n.sm.mads - before} SMPs"
    # the light sweep finds nothing more
    assert run(n.sm.light_sweep()) is None


def test_lost_traps_found_by_the_light_sweep_then_the_cable_comes_back():
    topo = fat_tree_2(8)
    n = Net(topo, "ftree")                                  # no firmware polling: no trap is sent
    a, pa = _spine_cable(topo, "L2")
    n.f.cut(a, pa)
    out = run(n.sm.light_sweep())
    assert out is not None and len(out["lost"]) == 1
    n.check_delivers_everything()
    # back: both ends Init; a trap (polling on now), a full discovery, Armed -> Active
    n.f.poll_cycles, n.f._next_poll = 500, n.f.now + 500
    n.f.restore(a, pa)
    t = run(n.sm.next_trap(20000))
    assert t is not None and t["trap_number"] == 128
    out = run(n.sm.resweep([t["lid_addr"]]))
    assert out["found"] and out["activated"] == 2
    assert set(n.states(a).values()) == {PortState.ACTIVE}
    n.check_delivers_everything()
    # the route over the restored cable is in use again (ftree balances over every spine)
    b = n.f.cable[(a, pa)][0]
    k = n.f.index[b]
    assert any(n.lft(k, lid) == n.f.cable[(a, pa)][1] for lid in n.ca_lid.values())


def test_get_set_and_a_bad_status_during_discovery():
    """Single SMPs through `get`/`set`; a switch whose agent answers NodeDescription with
    an error status stops discovery with an SMError naming the switch and the status."""
    from fw.mad import SMAttr, Status
    from fw.sma import SMAError
    from sm.inband import SMError
    topo = fat_tree_2(4)
    f = MadFabric(topo, CFG, topo.hcas()[0].name)
    sm = InbandSM(f, timeout=10000)
    r = run(sm.get(SMAttr.NODE_INFO, 0, [1]))
    assert r is not None and r.data[2] == 2                       # NodeType: switch
    with pytest.raises(SMError, match="status 0x001c"):
        run(sm.set(SMAttr.PORT_INFO, 99, [1], bytes(64)))          # port 99: INVALID_FIELD

    async def refuse(*_a):
        raise SMAError(Status.INVALID_FIELD, "refused")
    f.fws[f.index["S0"]].sma._node_desc = refuse
    with pytest.raises(SMError, match=r"stopped answering: \[28"):
        run(sm.discover())


def test_failover_alternates_programmed_and_cover_a_cut_before_the_resweep():
    """Failover (docs/reliability.md) on switches built with it: the SM gives every leaf
    up-port of a 2-level fat tree an alternate (PortFailover, register ALT_PORT) and the spines'
    down-ports none (no equal-cost detour exists there). A leaf's up cable is cut and the SM
    does nothing yet: walking the switches' own tables as the data path forwards (a port not
    Active whose alternate is Active sends to the alternate), everything that enters at that
    leaf still reaches every CA, which it does not without the alternates; what comes down
    to the leaf through the cut cable waits for the re-sweep, after which all is delivered."""
    cfg = CFG.replace(name="mad8-fo", failover=True)
    topo = fat_tree_2(8)
    n = Net(topo, "ftree", cfg=cfg)
    a = n.sm.alternates
    assert a is not None and not n.sm.no_failover
    for k, name in enumerate(n.f.names):
        for p in range(1, cfg.ports + 1):
            held = run(n.f.regs[k].read("ALT_PORT", p - 1))
            assert held == int(a.alt[k, p]), (name, p, held)
            far = n.f.cable.get((name, p))
            up = name.startswith("L") and far is not None and far[0].startswith("S")
            assert (held != 255) == up, (name, p, held)

    leaf, pa = _spine_cable(topo, "L1")
    n.f.cut(leaf, pa)
    k = n.f.index[leaf]
    lost_without = 0
    for ca, lid in n.ca_lid.items():
        assert n.walk(k, lid, failover=True) == ca, f"{leaf}: LID {lid} ({ca}) not delivered with failover"
        lost_without += n.walk(k, lid) != ca
    assert lost_without > 0, "the cut took no route of the leaf: the test shows nothing"
    # the re-sweep: everything again, by the LFTs alone; the alternates resent where they changed
    run(n.sm.resweep([n.sm.state["lids"][SW_GUID0 + k + 1]]))
    n.check_delivers_everything()


def test_adaptive_groups_and_lids_programmed_and_kept_after_a_resweep():
    """Adaptive routing (docs/reliability.md) on switches built with it, a 2-level fat tree
    routed by ftree: the SM makes each leaf's up-ports one AR group (register AR_GROUP) and
    the spines none, and marks adaptive (bit 7 of the LFT entry) exactly the CA LIDs a leaf
    sends up; every choice a switch may then make still delivers every CA (walked over the
    switches' own registers, apart from the SM's plan); after a cut cable and the re-sweep
    (LFT blocks rewritten, so static again), the flags are back as the new plan says."""
    cfg = CFG.replace(name="mad8-ar", failover=True, adaptive=True)
    topo = fat_tree_2(8)
    n = Net(topo, "ftree", cfg=cfg)
    plan = n.sm.ar_plan
    assert plan is not None and plan.groups and plan.acyclic and not n.sm.no_ar
    ports = range(1, cfg.ports + 1)

    def regs_view():
        group = {(k, p): run(n.f.regs[k].read("AR_GROUP", p - 1)) for k in range(len(n.f.names)) for p in ports}
        return group, {(k, lid): n.lft(k, lid) for k in range(len(n.f.names)) for lid in n.ca_lid.values()}

    group, entry = regs_view()
    for k, name in enumerate(n.f.names):
        ups = {p for p in ports if (far := n.f.cable.get((name, p))) is not None and far[0].startswith("S")}
        grouped = {p for p in ports if group[k, p]}
        if name.startswith("L"):
            assert grouped == ups and len({group[k, p] for p in ups}) == 1, (name, grouped, ups)
        else:
            assert not grouped, (name, grouped)
        for ca, lid in n.ca_lid.items():
            e = entry[k, lid]
            up = name.startswith("L") and (e & 0x7F) in ups
            assert bool(e & 0x80) == up, (name, ca, hex(e))

    def every_choice_delivers(k, lid, want, depth=0):
        e = entry[k, lid]
        p = e & 0x7F
        assert depth < 8 and e != 255, (n.f.names[k], lid)
        choices = [q for q in ports if group[k, q] and group[k, q] == group[k, p]] if e & 0x80 else [p]
        for q in choices:
            far = n.f._peer(n.f.names[k], q)
            assert far is not None
            if far[0] in n.f.index:
                every_choice_delivers(n.f.index[far[0]], lid, want, depth + 1)
            else:
                assert far[0] == want, (n.f.names[k], q, far[0], want)
    for k in range(len(n.f.names)):
        for ca, lid in n.ca_lid.items():
            if lid != n.sm.sm_lid:
                every_choice_delivers(k, lid, ca)

    leaf, pa = _spine_cable(topo, "L1")
    n.f.cut(leaf, pa)
    run(n.sm.resweep([n.sm.state["lids"][SW_GUID0 + n.f.index[leaf] + 1]]))
    n.check_delivers_everything()
    group, entry = regs_view()
    new = n.sm.ar_plan
    for k in range(len(n.f.names)):
        for lid in n.ca_lid.values():
            e = entry[k, lid]
            assert (e != 255 and bool(e & 0x80)) == bool(new.adaptive[k, lid]), (n.f.names[k], lid)
        for p in ports:
            assert group[k, p] == int(new.group[k, p]), (n.f.names[k], p)
