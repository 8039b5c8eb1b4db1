"""The books of a fault-injection soak (hw/top/soak.py; docs/reliability.md): what was
injected, what every counter saw, and whether every packet is accounted for.

`raw` is what tb/test_soak.py read at the end, as plain numbers:

    ports                 N
    ep[p]                 {sent_pkts, chk: {...}, crx: {...}, ctx: {...}}   (endpoint p)
    up[p], dn[p]          the injectors' counters (endpoint -> switch, switch -> endpoint)
    sw[p]                 the switch's PortCounters of port p (register COUNTERS, by name;
                          with lifetimes also SwLifetimeDiscards, SwHOQLifetimeDiscards:
                          register LIFE_DISCARDS, part of PortXmitDiscards)
    cycles, max_stall, sm_downs, ...

Every data packet that entered a wire ends in exactly one of these: delivered good (a
checker's rcv_good), discarded and counted where it was discarded, or lost on a cut cable
with nobody but the wire knowing (the injector's `cut_lost`: its start went into the cut
and its sender finished it). A sender that gives up a packet it had begun to send counts it
(PortXmitDiscards, or the endpoint's xmit_discards); so does the receiver that saw its
start and then the cut or the next start (a truncation). Those packets are counted twice,
and the injectors count them (`cut_both`, `abandoned`; a flow-control packet that ends a
packet at its receiver is taken as usual, so every FRAMING count is a data packet's); a
packet the switch had begun to forward before its receiver found it bad
leaves marked EBP and is counted again by the next receiver, as EBP or, if the cable was
cut under it, as a truncation (`ebp_in`, seen on the switch -> endpoint wire). A packet
that ended bad is counted by its receiver and by nobody after it: the switch's discards
(HOQLife, SwitchLifetime, a copy with nowhere to go, a link that went down) skip it. So

    sent + rogue = delivered + Σ counted discards + lost on the wire - counted twice

must hold exactly; `check` says what does not (no tolerance: a packet off is a finding).
"""
from __future__ import annotations

# the receiver's per-packet discard counts (contracts.defs.RX_ERROR_COUNTERS + EBP)
RX_DROPS = ["truncated", "framing", "link_format", "lpcrc", "vcrc", "lver", "short", "long", "pktlen",
            "state_drop", "vl_invalid", "overrun", "fc_vl_invalid", "ebp"]
INJECTED = ["corrupt", "pktlen", "ebp", "fc_dropped", "rogue", "flaps", "cut_rcv", "cut_both", "cut_lost",
            "abandoned", "ebp_in"]


def _sum(rows, key):
    return sum(r[key] for r in rows)


def books(raw: dict) -> dict:
    """The balance and its terms (numbers), from `raw`."""
    n = raw["ports"]
    eps, ups, dns, sws = raw["ep"], raw["up"], raw["dn"], raw["sw"]
    t = {
        "sent": _sum(eps, "sent_pkts"),
        "rogue": _sum(ups, "rogue"),
        "delivered": sum(e["chk"]["rcv_good"] for e in eps),
        "ep_xmit_discards": sum(e["ctx"]["xmit_discards"] for e in eps),
        "sw_rcv_errors": _sum(sws, "PortRcvErrors"),
        "sw_rcv_remote_phys": _sum(sws, "PortRcvRemotePhysicalErrors"),
        "sw_relay_errors": _sum(sws, "PortRcvSwitchRelayErrors"),
        "sw_xmit_discards": _sum(sws, "PortXmitDiscards"),
        "ep_rcv_drops": sum(e["crx"][k] for e in eps for k in RX_DROPS),
        "counted_twice": sum(x["cut_both"] + x["abandoned"] + x["ebp_in"] for x in ups + dns),
        "lost_on_wire": sum(x["cut_lost"] for x in ups + dns),
        "corrupted_delivered": sum(e["chk"]["rcv_errors"] for e in eps),
        "duplicates": sum(e["chk"]["seq_dup"] for e in eps),
    }
    t["counted"] = (t["ep_xmit_discards"] + t["sw_rcv_errors"] + t["sw_rcv_remote_phys"] + t["sw_relay_errors"]
                    + t["sw_xmit_discards"] + t["ep_rcv_drops"])
    t["in"] = t["sent"] + t["rogue"]
    t["out"] = t["delivered"] + t["counted"] + t["lost_on_wire"] - t["counted_twice"]
    t["ports"] = n
    return t


def faults(raw: dict) -> int:
    """Faults injected: every kind, both directions, and the ports set Down."""
    kinds = ("corrupt", "pktlen", "ebp", "fc_dropped", "rogue", "flaps")
    return sum(x[k] for x in raw["up"] + raw["dn"] for k in kinds) + raw["sm_downs"]


def check(raw: dict, *, max_stall: int) -> list[str]:
    """What is wrong with the books (empty: they balance exactly)."""
    t = books(raw)
    bad = []
    if t["in"] != t["out"]:
        bad.append(f"the books do not balance: sent {t['sent']} + rogue {t['rogue']} = {t['in']}, but delivered "
                   f"{t['delivered']} + counted discards {t['counted']} - counted twice {t['counted_twice']} "
                   f"+ lost on the wire {t['lost_on_wire']} = {t['out']} (off by {t['out'] - t['in']:+})")
    if t["corrupted_delivered"]:
        bad.append(f"{t['corrupted_delivered']} packets were delivered corrupted (checkers' rcv_errors)")
    if t["duplicates"]:
        bad.append(f"{t['duplicates']} packets were delivered twice or out of order (checkers' seq_dup)")
    if raw["max_stall"] > max_stall:
        bad.append(f"an endpoint went {raw['max_stall']} cycles without a good packet while traffic ran "
                   f"(bound {max_stall}): the switch wedged")
    if raw.get("sm_errors"):
        bad.append(f"the management master's accesses failed {raw['sm_errors']} times")
    return bad


def table(raw: dict) -> str:
    """The books as text: injected, seen, balance."""
    t = books(raw)
    ups, dns = raw["up"], raw["dn"]
    lines = [f"soak: {raw['ports']} ports, {raw['cycles']:,} cycles, {t['sent']:,} packets sent"
             + (f", {raw['seconds']:.0f} s ({raw['cycles'] / max(raw['seconds'], 1e-9):,.0f} cycles/s)"
                if raw.get("seconds") else ""),
             "", "injected                      endpoint->switch  switch->endpoint"]
    for k in INJECTED:
        lines.append(f"  {k:<28}{_sum(ups, k):>16,}{_sum(dns, k):>18,}")
    lines.append(f"  {'ports set Down by management':<28}{raw['sm_downs']:>16,}")
    lines += ["", "counted where packets ended"]
    for k, what in (("delivered", "delivered good (checkers)"),
                    ("ep_xmit_discards", "endpoint xmit_discards (their link went down)"),
                    ("sw_rcv_errors", "switch PortRcvErrors"),
                    ("sw_rcv_remote_phys", "switch PortRcvRemotePhysicalErrors (EBP)"),
                    ("sw_relay_errors", "switch PortRcvSwitchRelayErrors (no route / port down)"),
                    ("sw_xmit_discards", "switch PortXmitDiscards (link down, lifetimes)"),
                    ("ep_rcv_drops", "endpoint receive discards (all reasons)")):
        lines.append(f"  {what:<52}{t[k]:>14,}")
    if all("SwLifetimeDiscards" in s for s in raw["sw"]):
        lines.append(f"    of which for their lifetime: switch lifetime {_sum(raw['sw'], 'SwLifetimeDiscards'):,}, "
                     f"HOQLife {_sum(raw['sw'], 'SwHOQLifetimeDiscards'):,}")
    rx = {k: sum(e["crx"][k] for e in raw["ep"]) for k in RX_DROPS}
    lines.append("    endpoint receive discards by reason: "
                 + ", ".join(f"{k} {v:,}" for k, v in rx.items() if v) if any(rx.values()) else
                 "    endpoint receive discards by reason: none")
    lines += ["", "balance",
              f"  sent {t['sent']:,} + rogue {t['rogue']:,} = {t['in']:,}",
              f"  delivered {t['delivered']:,} + counted {t['counted']:,} + lost on the wire {t['lost_on_wire']:,}"
              f" - counted twice {t['counted_twice']:,} = {t['out']:,}",
              f"  {'BALANCED' if t['in'] == t['out'] else 'OFF BY %+d' % (t['out'] - t['in'])} "
              f"({faults(raw):,} faults); delivered corrupted "
              f"{t['corrupted_delivered']}, delivered twice / out of order {t['duplicates']}; longest time an "
              f"endpoint waited for a good packet: {raw['max_stall']:,} cycles"]
    return "\n".join(lines)
