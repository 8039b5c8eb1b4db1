"""Fabrics of switches and channel adapters: topologies in ibsim's net-file format and their
generators (fabric.topology), used by the subnet manager (sm/), the RTL fabric (hw/fabric)
and OpenSM + ibsim (tools/opensm_interop)."""
