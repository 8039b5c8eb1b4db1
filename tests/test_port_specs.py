"""Every block's ports are written once, as a spec (contracts/blocks.py), and both sides are built
from it: the RTL component's Amaranth signature (hw.common.ports.signature) and the golden
model's port lists (Spec.ports()). This test builds both sides of every block from the spec, at
the configs the switch uses them in, and names any port where they part:

  - the RTL: its signature against the spec (name, direction, width, reset value), and its
    elaboration (a port the RTL uses that the spec lacks is named);
  - the model: one step on idle inputs, every input it reads must be in the spec and its
    outputs must be the spec's outputs exactly (model-only qualifiers included);
  - the switch's connection table (contracts/ib_switch.py): every block input driven once,
    both the RTL top and the composed model built from it.

`test_a_port_removed_from_a_spec_is_named` shows the check bite: a spec without one of the
VOQ buffer's ports fails, naming the port.
"""
from __future__ import annotations

import pytest
from amaranth.hdl import Fragment, Shape
from amaranth.lib import data

from contracts.blocks import SPECS
from contracts.config import CONFIGS
from contracts.ib_switch import netlist
from hw.blocks import RTL
from models.blocks import MODELS

# blocks whose model is not a step(inputs) -> outputs machine of its own, and why
NO_MODEL = {
    "route": "RouteLookup's decisions are models/route.py's functions, used inside IngressModel",
    "link_port": "LinkPortModel steps with the wire's inputs apart; LinkPairModel composes two of them",
}

CONFIG_NAMES = ["small", "small-rxreg", "w128", "small-novcrc", "small-ext"]


def _instances():
    """(kind, params) of every block as the switch holds it at each config, plus the blocks
    that live outside the switch (receive parser, buffered LinkRx, link port and pair, CRC
    bank, route lookup, management queue, endpoint parts)."""
    seen, out = set(), []

    def add(kind, params, label):
        key = (kind, tuple(sorted((k, repr(v)) for k, v in params.items())))
        if key not in seen:
            seen.add(key)
            out.append(pytest.param(kind, params, id=f"{kind}-{label}"))
    for name in CONFIG_NAMES:
        cfg = CONFIGS[name]
        for _inst, (kind, params) in netlist(cfg).blocks.items():
            add(kind, params, name)
        for kind, params in [("rx_parser", {"cfg": cfg}), ("link_rx", {"cfg": cfg, "buffered": True}),
                             ("link_port", {"cfg": cfg}), ("link_pair", {"cfg": cfg, "max_delay": 8}),
                             ("crc_bank", {"width": cfg.data_width}), ("route", {"cfg": cfg, "in_port": 1}),
                             ("mgmt_queue", {"cfg": cfg}), ("traffic_gen", {"cfg": cfg}),
                             ("traffic_check", {"cfg": cfg}), ("endpoint", {"cfg": cfg}),
                             ("mgmt", {"cfg": cfg, "lookups": 1}),
                             ("block_ram", {"width": 32, "depth": 64, "granularity": 8, "init": (1, 2)})]:
            add(kind, params, name)
    return out


INSTANCES = _instances()


def _rtl_ports(comp) -> dict:
    out = {}
    for path, member, _v in comp.signature.flatten(comp):
        try:
            width = Shape.cast(member.shape).width
        except TypeError:
            width = data.Layout.cast(member.shape).size
        init = member.init
        init = 0 if init is None else (init.as_value().value if isinstance(init, data.Const) else int(init))
        out["__".join(str(p) for p in path)] = ("in" if member.flow.value == "In" else "out", width, init)
    return out


def check_rtl(kind: str, params: dict) -> list[str]:
    """Where the RTL block differs from its spec, one line each (empty: none)."""
    spec = SPECS[kind](**params)
    comp = RTL[kind](**params)
    want = {leaf.name: (leaf.flow, leaf.width, leaf.init) for leaf in spec.rtl_leaves()}
    got = _rtl_ports(comp)
    bad = [f"{kind}: RTL port {k}: RTL {got.get(k, 'absent')}, spec {want.get(k, 'absent')} (flow, width, reset)"
           for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
    try:
        Fragment.get(comp, None)
    except AttributeError as e:
        bad.append(f"{kind}: the RTL uses a port its spec does not declare: {e}")
    return bad


class _Reads(dict):
    """The model's inputs, remembering every name it reads."""

    def __init__(self, values):
        super().__init__(values)
        self.read: set = set()
        self.missing: set = set()

    def __getitem__(self, k):
        self.read.add(k)
        if not super().__contains__(k):
            self.missing.add(k)
            return 0
        return super().__getitem__(k)

    def get(self, k, default=None):
        self.read.add(k)
        if not super().__contains__(k):
            self.missing.add(k)
        return super().get(k, default)


def check_model(kind: str, params: dict, random_cycles: int = 40) -> list[str]:
    """Where the block's model differs from its spec, one line each (empty: none): three
    idle cycles, then random inputs (within their widths) until the model's own contract
    checks refuse them, every input it reads recorded."""
    import random
    spec = SPECS[kind](**params)
    ins, outs, qual = spec.ports()
    widths = spec.widths()
    model = MODELS[kind](**params)
    rng = random.Random(1)
    bad = []
    for cycle in range(3 + random_cycles):
        idle = spec.idle()
        if cycle >= 3:
            idle = {k: rng.getrandbits(widths[k]) if rng.random() < 0.3 else 0 for k in idle}
        inp = _Reads(idle)
        try:
            got = model.step(inp)
        except Exception:                        # noqa: BLE001  (random inputs broke the model's preconditions)
            if cycle < 3:
                raise
            got = None
        bad += [f"{kind}: the model reads input {k}, which its spec does not declare" for k in sorted(inp.missing)]
        if got is None:
            break
        bad += [f"{kind}: the model shows output {k}, which its spec does not declare"
                for k in sorted(set(got) - set(outs))]
        bad += [f"{kind}: the model lacks output {k}, which its spec declares" for k in sorted(set(outs) - set(got))]
        if bad:
            break
    for k, q in qual.items():
        if q not in outs:
            bad.append(f"{kind}: output {k} is qualified by {q}, which is no output")
    return sorted(set(bad))


def test_every_block_has_a_spec_an_rtl_and_a_model():
    assert set(SPECS) == set(RTL), f"spec, no RTL: {set(SPECS) - set(RTL)}; RTL, no spec: {set(RTL) - set(SPECS)}"
    assert set(MODELS) | set(NO_MODEL) == set(SPECS), f"no model: {set(SPECS) - set(MODELS) - set(NO_MODEL)}"
    assert not set(MODELS) & set(NO_MODEL)


@pytest.mark.parametrize("kind, params", INSTANCES)
def test_rtl_is_its_spec(kind, params):
    bad = check_rtl(kind, params)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("kind, params", [p for p in INSTANCES if p.values[0] not in NO_MODEL])
def test_model_is_its_spec(kind, params):
    bad = check_model(kind, params)
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", CONFIG_NAMES + ["p16"])
def test_the_switch_table_drives_every_input_once(name):
    net = netlist(CONFIGS[name])          # check(): every input and top output driven once, widths fit
    assert net.blocks and net.wires


def test_switch_top_and_model_from_the_table():
    """The RTL top elaborates from the table and the composed model steps from it, showing
    exactly the top's outputs."""
    from hw.top.switch import IBSwitch
    from models.switch import SwitchModel, idle_inputs, switch_ports
    cfg = CONFIGS["small-rxreg"]
    Fragment.get(IBSwitch(cfg), None)
    ins, outs, _ = switch_ports(cfg)
    got = SwitchModel(cfg).step(idle_inputs(cfg))
    assert set(got) == set(outs)
    assert set(idle_inputs(cfg)) == set(ins)


def test_a_port_removed_from_a_spec_is_named(monkeypatch):
    """The VOQ buffer's spec without its input `first_ok` and its output `rd_blocks`: the RTL
    check names first_ok (the RTL uses it), the model check rd_blocks (it still shows it)."""
    from contracts import switch
    from contracts.ports import Spec
    full = switch.voq

    def without(cfg):
        s = full(cfg)
        return Spec({k: m for k, m in s.members.items() if k not in ("first_ok", "rd_blocks")},
                    {k: q for k, q in s.qual.items() if k != "rd_blocks"})
    monkeypatch.setattr(switch, "voq", without)
    monkeypatch.setitem(SPECS, "voq", without)
    params = {"cfg": CONFIGS["small"]}
    rtl = check_rtl("voq", params)
    assert any("first_ok" in line for line in rtl), rtl
    model = check_model("voq", params)
    assert "voq: the model shows output rd_blocks, which its spec does not declare" in model, model
