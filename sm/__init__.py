"""The subnet manager: LID assignment, routing engines (min-hop, up*/down*, fat-tree, a
VL-layered engine for arbitrary topologies), the channel-dependency-graph proof of
deadlock freedom, OpenSM-format dumps, and (sm.inband) discovery and programming of a
fabric of our switches by directed-route SMPs. It runs offline on a net file too
(`python -m sm.offline`), which is how it is measured at 100k-endpoint scale."""
