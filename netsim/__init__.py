"""A packet-level fabric simulator for fabrics far larger than the RTL simulates (issue 38;
docs/netsim.md): the same net files and LFTs as the subnet manager, IB credit flow control
first, RoCE PFC and lossy retransmission to follow on the same topology and workload."""
