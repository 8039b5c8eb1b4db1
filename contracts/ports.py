"""Port specifications: a block's ports written once, as data, in pure Python.

The RTL component takes its Amaranth signature from the spec (hw.common.ports.signature) and
the golden model its port lists (`Spec.ports()`), so an RTL port and a model port cannot
drift apart; tests/test_port_specs.py builds both sides of every block from the spec and
names any port one side lacks or shows extra.

The notation follows amaranth.lib.wiring's, so a spec reads like the signature it becomes:

    def voq(cfg):
        n = cfg.ports
        return Spec({
            "w": In(flit_sig(cfg, dest=range(n), ...)),   # a stream into the block
            "nonempty": Out(cfg.data_vls).array(n),       # an output per output port
            "_rd_uc": Model(1),                           # an output only the model shows
        }, qual={"rd_blocks": "_rd_uc"})

  In(shape) / Out(shape)   a member flowing into / out of the block; `shape`: a width in
                           bits, `range(n)` (the bits for 0..n-1, as Amaranth's range
                           shapes), a `Layout` (a named struct: LRH, a VLArb entry), or a
                           nested `Sig` (its members' flows are seen from the producer: an
                           In(Sig) flips them)
  .array(*dims)            that member per index (Verilog names `nonempty__3`)
  Model(shape)             a model-only output (name starts with `_`): a qualifier that
                           tells when another output matters; the RTL has no such port
  qual                     output -> its qualifier: the output is compared only in cycles
                           where the qualifier is 1 (a stream's payload and its `valid`).
                           Names are dotted paths from the spec's top ("rd.vl"); the
                           qualifier's array indices are the qualified member's (`va.blocks`
                           -> `va.sent` of the same output). A Sig carries its own `qual`
                           for its members (a stream: payload -> "valid").

Flattened names are Amaranth's (and so the Verilog's and the models'): members joined by
`__`, array indices in between (`rd__2__vl`, `head_blocks__1__0`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Union

__all__ = ["In", "Out", "Model", "Sig", "Spec", "Layout", "Member", "width_of", "flatten_name", "PortSpecError"]


class PortSpecError(ValueError):
    pass


@dataclass(frozen=True)
class Layout:
    """A named struct (fields least significant first, as Amaranth's StructLayout): the RTL
    maps the name to its layout class (hw.common.ports.LAYOUTS), the model sees an int."""
    name: str
    fields: tuple[tuple[str, int], ...]

    @property
    def width(self) -> int:
        return sum(w for _, w in self.fields)


Shape = Union[int, range, Layout, "Sig"]


def width_of(shape) -> int:
    """Bits of a leaf shape: an int, range(n) (as Amaranth: the bits for n - 1), a Layout."""
    if isinstance(shape, bool):
        raise PortSpecError(f"a width must be an int, got {shape!r}")
    if isinstance(shape, int):
        if shape < 0:
            raise PortSpecError(f"negative width {shape}")
        return shape
    if isinstance(shape, range):
        if shape.step != 1 or shape.start != 0:
            raise PortSpecError(f"only range(n) shapes, got {shape!r}")
        return max(shape.stop - 1, 0).bit_length()
    if isinstance(shape, Layout):
        return shape.width
    raise PortSpecError(f"not a leaf shape: {shape!r}")


@dataclass(frozen=True)
class Member:
    flow: str                                    # "in", "out" or "model" (a model-only output)
    shape: object
    dims: tuple[int, ...] = ()
    init: int = 0                                # the value out of reset (an output register's)

    def array(self, *dims: int) -> Member:
        return replace(self, dims=self.dims + tuple(dims))

    @property
    def is_sig(self) -> bool:
        return isinstance(self.shape, Sig)


def In(shape, *, init: int = 0) -> Member:           # noqa: N802  (as amaranth.lib.wiring)
    return Member("in", shape, init=init)


def Out(shape, *, init: int = 0) -> Member:          # noqa: N802
    return Member("out", shape, init=init)


def Model(shape) -> Member:                          # noqa: N802
    return Member("model", shape)


def flatten_name(path) -> str:
    return "__".join(str(p) for p in path)


@dataclass(frozen=True)
class Leaf:
    path: tuple                                  # ("rd", 2, "vl")
    key: str                                     # the member's dotted spec path, "rd.vl"
    indices: tuple[int, ...]                     # the array indices along the path, (2,)
    flow: str                                    # "in" / "out" / "model", as the block sees it
    shape: object
    init: int = 0

    @property
    def name(self) -> str:
        return flatten_name(self.path)

    @property
    def width(self) -> int:
        return width_of(self.shape)


@dataclass
class Sig:
    """Members of a (sub-)interface, from its producer's side; `qual`: member -> qualifier."""
    members: dict
    qual: dict = field(default_factory=dict)

    def __post_init__(self):
        for k, m in self.members.items():
            if not isinstance(m, Member):
                raise PortSpecError(f"member {k!r}: use In(...), Out(...) or Model(...), got {m!r}")
            if m.is_sig and m.flow == "model":
                raise PortSpecError(f"member {k!r}: a model-only member must be a leaf")
            if k.startswith("_") != (m.flow == "model"):
                raise PortSpecError(f"member {k!r}: model-only outputs, and only they, start with '_'")
        for k, q in self.qual.items():
            for p in (k, q):
                self.member(p)                   # raises PortSpecError naming a path that is no member

    def leaves(self, prefix: tuple = (), key: str = "", indices: tuple = (), flip: bool = False):
        for name, m in self.members.items():
            flow = m.flow
            if flip and flow in ("in", "out"):
                flow = "out" if flow == "in" else "in"
            k = f"{key}.{name}" if key else name
            for idx in _indices(m.dims):
                path = prefix + (name,) + idx
                if m.is_sig:
                    yield from m.shape.leaves(path, k, indices + idx, flip=(flow == "in"))
                else:
                    yield Leaf(path, k, indices + idx, flow, m.shape, m.init)

    def member(self, key: str) -> Member:
        sig, m = self, None
        for part in key.split("."):
            if sig is None or part not in sig.members:
                raise PortSpecError(f"qualifier path {key!r}: no member {part!r}")
            m = sig.members[part]
            sig = m.shape if m.is_sig else None
        return m


def _indices(dims):
    if not dims:
        yield ()
        return
    for i in range(dims[0]):
        for rest in _indices(dims[1:]):
            yield (i,) + rest


class Spec(Sig):
    """A block's ports: a Sig from the block's own side (In = into the block)."""

    def flat(self) -> list[Leaf]:
        return list(self.leaves())

    def qualifiers(self) -> dict[str, str]:
        """Flattened output name -> flattened qualifier name, from every level's `qual`."""
        out = {}
        for leaf in self.leaves():
            if leaf.flow == "in":
                continue
            q = self._qualifier(leaf)
            if q is not None:
                out[leaf.name] = q
        return out

    def _qualifier(self, leaf: Leaf) -> str | None:
        # the spec's own qual first (a block overrides what a shared Sig says of its
        # members), then each level below it, with the dotted path from there
        parts = leaf.key.split(".")
        sigs = [self]
        for p in parts[:-1]:
            sigs.append(sigs[-1].members[p].shape)
        for depth in range(len(parts)):
            sig = sigs[depth]
            rel = ".".join(parts[depth:])
            q = sig.qual.get(rel)
            if q is None:
                continue
            base = ".".join(parts[:depth])
            target = f"{base}.{q}" if base else q
            return self._resolve(target, leaf)
        return None

    def _resolve(self, target: str, leaf: Leaf) -> str:
        """The flattened name of qualifier member `target` for `leaf`: its array indices are
        the leaf's, as many as the target's dims take, in order."""
        sig, path, idx = self, [], list(leaf.indices)
        for part in target.split("."):
            m = sig.members.get(part) if sig is not None else None
            if m is None:
                raise PortSpecError(f"{leaf.name}: qualifier {target!r} is no member")
            path.append(part)
            take, idx = idx[:len(m.dims)], idx[len(m.dims):]
            if len(take) != len(m.dims):
                raise PortSpecError(f"{leaf.name}: qualifier {target!r} has more array dimensions than it")
            path += take
            sig = m.shape if m.is_sig else None
        if sig is not None:
            raise PortSpecError(f"{leaf.name}: qualifier {target!r} is an interface, not a signal")
        return flatten_name(path)

    def ports(self, prefix: str = "") -> tuple[list[str], list[str], dict[str, str]]:
        """The model's port lists: (inputs, outputs incl. model-only ones, qualifiers), each
        name under `prefix` (a model composed by prefixing its parts' ports)."""
        ins, outs = [], []
        for leaf in self.leaves():
            (ins if leaf.flow == "in" else outs).append(prefix + leaf.name)
        return ins, outs, {prefix + k: prefix + q for k, q in self.qualifiers().items()}

    def idle(self, prefix: str = "") -> dict[str, int]:
        """Every input at 0: an idle block's inputs."""
        return {prefix + leaf.name: 0 for leaf in self.leaves() if leaf.flow == "in"}

    def widths(self) -> dict[str, int]:
        return {leaf.name: leaf.width for leaf in self.leaves()}

    def rtl_leaves(self) -> list[Leaf]:
        """What the RTL has: every member but the model-only ones."""
        return [leaf for leaf in self.leaves() if leaf.flow != "model"]
