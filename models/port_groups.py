"""Golden model of the port groups (hw/switch/port_groups.py), from docs/reliability.md:
which outputs are redirected to their failover alternate, which may be routed to though
not Active, and the Active members of a flow-pinned adaptive-routing group. No state."""
from __future__ import annotations

from contracts.config import SwitchConfig

__all__ = ["PortGroupsModel",]


class PortGroupsModel:
    def __init__(self, cfg: SwitchConfig):
        if not cfg.failover:
            raise ValueError(f"PortGroupsModel: config {cfg.name!r} has no failover")
        self.cfg = cfg

    def step(self, inp: dict) -> dict:
        cfg = self.cfg
        n = cfg.ports
        up = {o for o in range(n) if inp["active"] >> o & 1}
        alt = [inp[f"alt_port__{o}"] for o in range(n)]          # IBA numbers: 1..N name a port
        redirect = {o for o in range(n) if o not in up and 1 <= alt[o] <= n and alt[o] - 1 in up}
        out = {f"alt__{o}": (alt[o] - 1) % (1 << max(1, (n - 1).bit_length())) for o in range(n)}
        usable = set(redirect)
        if cfg.adaptive:
            group = [inp[f"ar_group__{o}"] for o in range(n)]
            live = {group[x] for x in up if group[x]}          # groups with an Active member
            usable |= {o for o in range(n) if o not in up and group[o] in live}
            for o in range(n):
                pinned = group[o] & 0x80
                out[f"ar_mask__{o}"] = sum(1 << x for x in up if group[x] == group[o]) if pinned else 0
        out["redirect"] = sum(1 << o for o in redirect)
        out["usable"] = sum(1 << o for o in usable)
        return out
