"""The arbiter's core: players, matches, games, clocks, ladders, the journal and cluster
leases, on trio. It imports nothing of gRPC: the edge (server.edge) owns the transport and
speaks to the core over the link (server.link)."""
