"""Decoders of the infiniband-diags' text output, written here (apart from the code under
test) for the checks that compare what an outside tool saw with the net file or registers."""
from __future__ import annotations

import re

__all__ = ["ibnetdiscover_graph"]

_NODE = re.compile(r'^(Switch|Ca)\s+(\d+)\s+"([SH])-([0-9a-f]+)"\s+#\s+"([^"]*)"')
_PORT = re.compile(r'^\[(\d+)\](?:\([0-9a-f]+\))?\s+"([SH])-([0-9a-f]+)"\[(\d+)\]')


def ibnetdiscover_graph(text: str) -> set[frozenset]:
    """ibnetdiscover's topology text -> its cables, each {(NodeDescription, port), (.., ..)}."""
    desc, links, cur = {}, [], None
    for line in text.splitlines():
        m = _NODE.match(line)
        if m:
            cur = m.group(4)
            desc[cur] = m.group(5)
            continue
        m = _PORT.match(line)
        if m and cur is not None:
            links.append((cur, int(m.group(1)), m.group(3), int(m.group(4))))
    return {frozenset({(desc[a], pa), (desc[b], pb)}) for a, pa, b, pb in links}
