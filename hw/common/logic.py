"""Small combinational helpers shared by the blocks."""

__all__ = ["or_all"]


def or_all(values):
    """OR of a non-empty sequence of values: an AND-OR multiplexer when the caller gates each
    value by an exclusive select (at most one is non-zero), which maps to fewer LUT levels
    than a chain of `Mux` or an index into an `Array`."""
    acc = None
    for x in values:
        acc = x if acc is None else acc | x
    if acc is None:
        raise ValueError("or_all: no values")
    return acc
