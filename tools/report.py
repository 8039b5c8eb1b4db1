"""`make report`: the port-to-port latency budget in nanoseconds (docs/latency.md).

    python -m tools.report [--configs small w512] [--fpga-result PATH] [--asic-ghz 1.0]

The switch core's share is measured: rx sop -> tx sop of one packet through an idle switch,
in cycles, on the RTL in the Amaranth simulator (in lock-step with the golden model, as
tb/test_switch.py::uncontended_latency does on Icarus and Verilator), for each config. In
nanoseconds it is those cycles x the clock period: the FPGA clock is the Fmax `make fpga`
measured for config small (read from build/fpga/small/ib_switch/result.json, with the commit
it was measured at if recorded), the ASIC-class clock an assumption stated in the table.

The PHY shares of an ASIC-class port (SerDes, PCS, RS-FEC) are not ours to measure: the FEC
codeword accumulation is computed from the code (IEEE 802.3 Clause 91 RS(544,514): 544
symbols of 10 bits = 5,440 bits per codeword; 400GBASE-R, Clause 119, interleaves two
codewords over its lanes, so a codeword can only be corrected once 10,880 bits at 425 Gb/s
have arrived); every other PHY figure is an assumption, labelled as one. The sum is set
beside the published port-to-port figures (260 ns scaleFabric, 250 ns Broadcom Tomahawk
Ultra). Prints a table; writes build/report/latency.json and latency.png (stacked bars).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from contracts.config import CONFIGS, SwitchConfig

__all__ = ["measure_core_cycles", "phy_budget", "PUBLISHED_NS"]

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED_NS = {"scaleFabric": 260.0, "Broadcom Tomahawk Ultra": 250.0}


def measure_core_cycles(cfg: SwitchConfig, seed: int = 1) -> int:
    """rx sop -> tx sop, in cycles, of one 16-byte-payload packet through an idle switch
    (tables programmed over AXI4-Lite first), RTL in lock-step with the golden model."""
    from hw.top.switch import IBSwitch
    from models.switch import SwitchModel, switch_ports
    from verif.env.switch_env import SwitchEnv
    from verif.pysim import pysim_lockstep

    env = SwitchEnv(cfg, random.Random(seed), ready_p=1.0)
    src, dst, dlid = 1 % cfg.ports, 2 % cfg.ports, 5
    env.program({dlid: dst}, {0: 0})
    _, outs, qual = switch_ports(cfg)
    marks: dict[str, int] = {}
    state = {"c": 0, "sent": False}

    def stim():
        for c in range(900):
            if c >= 300 and not env.registers_busy and not state["sent"]:
                env.send(src, dlid, 0, 16)
                state["sent"] = True
            inp = env.inputs()
            if inp[f"rx__{src}__valid"] and inp[f"rx__{src}__sop"] and not inp[f"rx__{src}__link"]:
                marks.setdefault("rx", c)
            yield inp

    def observe(i, o):
        env.observe(i, o)
        if o[f"tx__{dst}__valid"] and o[f"tx__{dst}__sop"] and not o[f"tx__{dst}__link"]:
            marks.setdefault("tx", state["c"])
        state["c"] += 1

    pysim_lockstep(IBSwitch(cfg), SwitchModel(cfg), stim(), outs, qual, on_cycle=observe)
    if env.check() != 1 or "tx" not in marks or "rx" not in marks:
        raise RuntimeError(f"latency run on {cfg.name}: the packet did not come out (marks {marks})")
    return marks["tx"] - marks["rx"]


def phy_budget() -> list[dict]:
    """The PHY shares of one ASIC-class port (4 lanes of 106.25 Gb/s PAM4, RS(544,514)),
    ingress then egress: name, ns, kind (computed / assumed), source or reason."""
    cw_bits, interleave, rate_gbps = 544 * 10, 2, 425.0
    return [
        {"share": "SerDes receive (PAM4 DSP: equaliser, CDR)", "ns": 20.0, "kind": "assumed",
         "source": "not published per part; order of magnitude for a DSP-based 100G PAM4 receiver"},
        {"share": "PCS receive (block sync, lane deskew, alignment markers)", "ns": 10.0, "kind": "assumed",
         "source": "a few 64-bit words of buffering per lane"},
        {"share": "RS-FEC receive: codeword accumulation", "ns": round(interleave * cw_bits / rate_gbps, 2),
         "kind": "computed", "source": "IEEE 802.3 Cl. 91 RS(544,514), 10-bit symbols; Cl. 119 two-way "
         "interleave; 2 x 5440 bits at 425 Gb/s"},
        {"share": "RS-FEC receive: decode (syndromes, key equation, Chien/Forney)", "ns": 20.0, "kind": "assumed",
         "source": "decoder pipeline; vendor figures vary"},
        {"share": "RS-FEC transmit: encode", "ns": 5.0, "kind": "assumed", "source": "systematic encoder pipeline"},
        {"share": "PCS transmit", "ns": 5.0, "kind": "assumed", "source": "block coding, alignment markers"},
        {"share": "SerDes transmit (FFE, serialiser)", "ns": 10.0, "kind": "assumed",
         "source": "not published per part"},
    ]


def _fpga_result(path: Path) -> dict | None:
    if not path.exists():
        return None
    res = json.loads(path.read_text())
    return res if res.get("fmax") else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", nargs="*", default=["small", "w512"])
    ap.add_argument("--fpga-result", type=Path, default=ROOT / "build" / "fpga" / "small" / "ib_switch" / "result.json")
    ap.add_argument("--asic-ghz", type=float, default=1.0, help="assumed ASIC-class clock (GHz)")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "report")
    a = ap.parse_args(argv)
    for c in a.configs:
        if c not in CONFIGS:
            ap.error(f"--configs: unknown config {c!r} (known: {', '.join(CONFIGS)})")
    a.out.mkdir(parents=True, exist_ok=True)

    cycles = {}
    for c in a.configs:
        print(f"measuring rx sop -> tx sop on {c} (RTL in the Amaranth simulator, lock-step with the model)...",
              flush=True)
        cycles[c] = measure_core_cycles(CONFIGS[c])
    fpga = _fpga_result(a.fpga_result)

    print("\n## Switch core: rx sop -> tx sop, uncontended (measured)\n")
    print("| config | W (bits) | cycles | FPGA clock | ns on the FPGA | ASIC-class clock (assumed) | ns |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for c, n in cycles.items():
        cfg = CONFIGS[c]
        f_mhz = fpga["fmax"] if (fpga and c == "small") else None
        fpga_ns = n * 1e3 / f_mhz if f_mhz else None
        asic_ns = n / a.asic_ghz
        rows.append({"config": c, "width": cfg.data_width, "cycles": n, "fpga_mhz": f_mhz, "fpga_ns": fpga_ns,
                     "asic_ghz": a.asic_ghz, "asic_ns": asic_ns})
        fstr = f"{f_mhz:.1f} MHz (measured, ECP5-85 speed 6)" if f_mhz else "not measured (`make fpga`)"
        print(f"| {c} | {cfg.data_width} | {n} | {fstr} | {fpga_ns:.1f} |" if fpga_ns else
              f"| {c} | {cfg.data_width} | {n} | {fstr} | - |", end="")
        print(f" {a.asic_ghz:g} GHz | {asic_ns:.1f} |")

    core = next((r for r in rows if r["config"] == "w512"), rows[-1])
    phy = phy_budget()
    ingress = [p for p in phy if "receive" in p["share"]]
    egress = [p for p in phy if "receive" not in p["share"]]
    core_row = {"share": f"switch core ({core['config']}, W={core['width']}, {core['cycles']} cycles at "
                         f"{a.asic_ghz:g} GHz)", "ns": core["asic_ns"], "kind": "measured cycles x assumed clock",
                "source": "make report (this table)"}
    budget = ingress + [core_row] + egress
    total = sum(p["ns"] for p in budget)
    print("\n## Port to port, ASIC-class port (4 x 106.25 Gb/s PAM4 lanes, RS(544,514) FEC)\n")
    print("| share | ns | kind | source |")
    print("|---|---|---|---|")
    for p in budget:
        print(f"| {p['share']} | {p['ns']:.1f} | {p['kind']} | {p['source']} |")
    print(f"| **sum** | **{total:.1f}** | | |")
    for k, v in PUBLISHED_NS.items():
        print(f"| published: {k} | {v:.0f} | published port-to-port figure | vendor |")
    (a.out / "latency.json").write_text(json.dumps({"core": rows, "budget": budget, "total_ns": total,
                                                     "published_ns": PUBLISHED_NS,
                                                     "fpga_result": str(a.fpga_result) if fpga else None},
                                                    indent=1) + "\n")
    _plot(budget, total, a.out / "latency.png")
    print(f"\nwrote {a.out / 'latency.json'} and {a.out / 'latency.png'}")
    return 0


def _plot(budget, total, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 3.2))
    left = 0.0
    colors = {"computed": "#4c72b0", "assumed": "#bbbbbb"}
    for p in budget:
        col = colors.get(p["kind"], "#dd8452")
        ax.barh(["this switch"], [p["ns"]], left=left, color=col, edgecolor="white")
        if p["ns"] >= 8:
            ax.text(left + p["ns"] / 2, 0, f"{p['ns']:.0f}", ha="center", va="center", fontsize=8)
        left += p["ns"]
    for k, v in PUBLISHED_NS.items():
        ax.barh([k], [v], color="#55a868")
        ax.text(v + 2, list(PUBLISHED_NS).index(k) + 1, f"{v:.0f} ns", va="center", fontsize=8)
    ax.text(total + 2, 0, f"{total:.0f} ns", va="center", fontsize=8)
    ax.set_xlim(0, max([total] + list(PUBLISHED_NS.values())) * 1.15)
    ax.set_xlabel("port-to-port latency (ns)")
    ax.set_title("Latency budget: grey assumed, blue computed (FEC), orange the core (measured cycles)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
