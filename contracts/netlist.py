"""A connection table: which blocks a top holds and how their ports are wired, written once as
data and read by both the RTL top (an Amaranth component that instantiates the blocks and
assigns each wire) and the composed golden model (models.compose.Composite over the blocks'
models). contracts/ib_switch.py is the switch's.

    net = Netlist(top_spec)
    net.block("voq0", "voq", cfg=cfg)                # instance name, block kind (contracts.blocks.SPECS), params
    net.connect("ing0.w", "voq0.w")                  # every leaf of two matching interfaces, by flow
    net.wire("rq.active", Cat("ps0.active", "ps1.active"))
    net.wire("eg0.fecn", 0)                          # a constant
    net.wire("top.tx__0__valid", "ltx0.tx__valid")   # the top's own ports are block "top"
    net.check()                                      # every input driven once, every output it reads exists

Endpoints are "block.port" with the port's flattened name (`q__2__nonempty__1`). A wire's
destination is an input of its block (or an output of the top); its source an output (or an
input of the top), a constant, or a `Cat` of sources (least significant first). Mistakes are
errors at construction, naming the wire: a port a block does not have, two drivers, a width
that does not fit.
"""
from __future__ import annotations

from dataclasses import dataclass

from contracts.ports import PortSpecError, Spec

__all__ = ["Netlist", "Cat", "Slice", "NetlistError"]


class NetlistError(PortSpecError):
    pass


@dataclass(frozen=True)
class Slice:
    """The `width` least significant bits of a source (a wider port into a narrower one, said
    out loud: a plain wire that does not fit is an error)."""
    src: str
    width: int


@dataclass(frozen=True)
class Cat:
    """Sources concatenated, the first one least significant."""
    parts: tuple

    def __init__(self, *parts):
        object.__setattr__(self, "parts", tuple(parts))


class Netlist:
    def __init__(self, top: Spec):
        self.top = top
        self.blocks: dict[str, tuple[str, dict]] = {}      # name -> (kind, params)
        self.specs: dict[str, Spec] = {"top": top}
        self.wires: dict[str, object] = {}                  # "blk.port" -> source
        self._leaves: dict[str, dict] = {"top": {leaf.name: leaf for leaf in top.rtl_leaves()}}

    def block(self, name: str, kind: str, **params):
        from contracts.blocks import SPECS
        if name in self.specs:
            raise NetlistError(f"block {name!r} twice")
        if kind not in SPECS:
            raise NetlistError(f"block {name!r}: no block kind {kind!r} (contracts.blocks.SPECS)")
        spec = SPECS[kind](**params)
        self.blocks[name] = (kind, params)
        self.specs[name] = spec
        self._leaves[name] = {leaf.name: leaf for leaf in spec.rtl_leaves()}
        return self

    # ------------------------------------------------------------------ endpoints
    def _leaf(self, ref: str):
        blk, _, port = ref.partition(".")
        if blk not in self._leaves:
            raise NetlistError(f"{ref}: no block {blk!r}")
        leaf = self._leaves[blk].get(port)
        if leaf is None:
            raise NetlistError(f"{ref}: block {blk} ({self.blocks.get(blk, ('top',))[0]}) has no port {port!r}")
        return blk, leaf

    def _is_driver(self, ref: str) -> bool:
        blk, leaf = self._leaf(ref)
        return (leaf.flow == "out") != (blk == "top")

    def width(self, src) -> int:
        if isinstance(src, int):
            return max(src.bit_length(), 1)
        if isinstance(src, Cat):
            return sum(self.width(p) for p in src.parts)
        if isinstance(src, Slice):
            return src.width
        return self._leaf(src)[1].width

    def _check_source(self, dst: str, src):
        if isinstance(src, bool) or (isinstance(src, int) and src < 0):
            raise NetlistError(f"{dst} <- {src!r}: a constant must be a non-negative int")
        if isinstance(src, int):
            return
        if isinstance(src, Cat):
            for p in src.parts:
                self._check_source(dst, p)
            return
        if isinstance(src, Slice):
            self._check_source(dst, src.src)
            if not 0 < src.width < self._leaf(src.src)[1].width:
                raise NetlistError(f"{dst} <- {src!r}: a slice takes fewer bits than its source has")
            return
        if not isinstance(src, str):
            raise NetlistError(f"{dst} <- {src!r}: a source is 'block.port', an int or a Cat")
        if not self._is_driver(src):
            raise NetlistError(f"{dst} <- {src}: {src} is an input, it drives nothing")

    # ------------------------------------------------------------------ wiring
    def wire(self, dst: str, src):
        if self._is_driver(dst):
            raise NetlistError(f"{dst} <- {src}: {dst} is an output, nothing drives it from outside")
        self._check_source(dst, src)
        if dst in self.wires:
            raise NetlistError(f"{dst}: driven twice ({self.wires[dst]!r} and {src!r})")
        w_dst, w_src = self._leaf(dst)[1].width, self.width(src)
        if w_src > w_dst:
            raise NetlistError(f"{dst} <- {src!r}: {w_src} bits into {w_dst}")
        self.wires[dst] = src
        return self

    def connect(self, a: str, b: str, *, only=None):
        """Connect the interface member `a` ("blk.member" or "blk.member__2") of one block with
        the member `b` of another, leaf by leaf (the same relative names, as
        amaranth.lib.wiring.connect): each leaf flows from the side where it is an output.
        `only`: just these leaves (relative names)."""
        la, lb = self._under(a), self._under(b)
        if only is not None:
            la = {k: v for k, v in la.items() if k in only}
        if not la:
            raise NetlistError(f"connect {a} - {b}: {a} has no ports")
        for rel in la:
            if rel not in lb:
                raise NetlistError(f"connect {a} - {b}: {b} has no {rel!r}")
        for rel, ra in la.items():
            rb = lb[rel]
            if self._is_driver(ra) == self._is_driver(rb):
                raise NetlistError(f"connect {a} - {b}: {rel!r} flows the same way on both sides")
            if self._is_driver(ra):
                self.wire(rb, ra)
            else:
                self.wire(ra, rb)
        return self

    def _under(self, ref: str) -> dict[str, str]:
        blk, _, prefix = ref.partition(".")
        if blk not in self._leaves:
            raise NetlistError(f"{ref}: no block {blk!r}")
        out = {}
        for name in self._leaves[blk]:
            if not prefix:                       # the whole block
                out[name] = f"{blk}.{name}"
            elif name == prefix:
                out[""] = f"{blk}.{name}"
            elif name.startswith(prefix + "__"):
                out[name[len(prefix) + 2:]] = f"{blk}.{name}"
        return out

    def check(self):
        """Every block input and every top output driven."""
        for blk, leaves in self._leaves.items():
            for name in leaves:
                ref = f"{blk}.{name}"
                if not self._is_driver(ref) and ref not in self.wires:
                    raise NetlistError(f"{ref} is driven by nothing")
        return self

    # ------------------------------------------------------------------ readers
    def sources(self, src) -> list[str]:
        """The 'block.port' references a source reads."""
        if isinstance(src, int):
            return []
        if isinstance(src, Cat):
            return [r for p in src.parts for r in self.sources(p)]
        if isinstance(src, Slice):
            return [src.src]
        return [src]
