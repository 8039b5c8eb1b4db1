"""`make opensm-demo`: unmodified OpenSM brings up a fabric of our switches, and the
infiniband-diags everybody runs read it.

fat_tree_2(8) (12 switches of 8 ports, 32 hosts; our switch firmware, fw/, on the MAD-level
fabric, fabric/mad_fabric.py) behind the ibsim-protocol server (fabric/ibsim_server.py);
Debian's OpenSM runs `--once` from host H0 through libumad2sim.so (ibsim-run), then from
other hosts: ibnetdiscover, iblinkinfo, and perfquery on a leaf's host port after host H1
sent 100 packets to H31. Every MAD the server carried lands in a capture that Wireshark
and tshark open (ERF type 21, as ibdump writes); the demo prints tshark's count of SMPs.

    python -m demos.opensm [--k 8] [--engine ftree] [--out build/opensm-demo]
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from fabric.ibsim_host import ServedFabric, have_ib_tools
from fabric.topology import fat_tree_2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m demos.opensm", description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, default=8, help="switch radix of the 2-level fat tree (default 8)")
    ap.add_argument("--engine", default="ftree", help="OpenSM routing engine (default ftree)")
    ap.add_argument("--out", default="build/opensm-demo")
    a = ap.parse_args(argv)
    missing = have_ib_tools()
    if missing:
        print(missing, file=sys.stderr)
        return 2
    topo = fat_tree_2(a.k)
    out = Path(a.out)
    hosts = [n.name for n in topo.hcas()]
    first, last = hosts[1], hosts[-1]
    with ServedFabric(topo, out, pcap=out / "mads.pcap") as sf:
        (out / "fabric.net").write_text(topo.to_netfile())
        print(f"== {topo.name}: {len(topo.switches())} switches of {a.k} ports ({sf.cfg.name}), {len(hosts)} hosts; "
              f"server on @{sf.sock}:ctl@")
        r = sf.opensm(a.engine)
        if not r.subnet_up:
            print(f"OpenSM did not reach SUBNET UP (exit {r.rc}); its log: {sf.dir}/opensm-{a.engine}.log",
                  file=sys.stderr)
            return 1
        print(f"== opensm --once -R {a.engine}: SUBNET UP in {r.seconds:.2f} s, routing engine used: {r.engine_used}")
        disc = sf.tool("ibnetdiscover", host=hosts[3])
        (out / "ibnetdiscover.txt").write_text(disc)
        lines = disc.splitlines()
        print(f"\n== ibnetdiscover (from {hosts[3]}): {sum(x.startswith('Switch') for x in lines)} switches, "
              f"{sum(x.startswith('Ca') for x in lines)} channel adapters, "
              f"{sum(x.startswith('[') for x in lines) // 2} cables; in full: {out / 'ibnetdiscover.txt'}")
        first = next(i for i, x in enumerate(lines) if x.startswith("Switch"))
        print("\n".join("   " + x for x in lines[first:first + 5]) + "\n   ...")
        info = sf.tool("iblinkinfo", host=hosts[5])
        (out / "iblinkinfo.txt").write_text(info)
        ports = [x for x in info.splitlines() if "==>" in x]
        print(f"\n== iblinkinfo (from {hosts[5]}): {len(ports)} switch ports, "
              f"{sum('Active' in x and 'LinkUp' in x for x in ports)} Active/LinkUp; in full: {out / 'iblinkinfo.txt'}")
        print("\n".join("   " + x.strip() for x in ports[:3]) + "\n   ...")
        sf.send_data(first, last, 100)
        sf.sync()
        leaf, lport = topo.nodes[first].ports[1]
        lst = (r.dump_dir / "opensm-subnet.lst").read_text()
        lids = {m.group(1): int(m.group(2), 16) for m in re.finditer(r"\{(\w+)\} LID:(\w+)", lst)}
        print(f"\n== perfquery {lids[leaf]} {lport} ({leaf} port {lport}, {first}'s cable; {first} sent 100 "
              f"packets to {last})")
        print(sf.tool("perfquery", str(lids[leaf]), str(lport), host=hosts[2]).rstrip())
        sf.stop()
        n = sf.pcap.count
    print(f"\n== {out / 'mads.pcap'}: {n} packets (every MAD the server carried)")
    if shutil.which("tshark"):
        res = subprocess.run(["tshark", "-r", str(out / "mads.pcap"), "-Y", "infiniband.mad.mgmtclass == 0x81",
                              "-T", "fields", "-e", "frame.number"], capture_output=True, text=True, timeout=300)
        print(f"   tshark reads it: {len(res.stdout.split())} directed-route SMPs "
              f"(tshark -r {out / 'mads.pcap'} -V shows them decoded)")
    print(f"   logs: {out}/server.log, {out}/opensm-{a.engine}.log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
