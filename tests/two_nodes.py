"""A Ray cluster of two nodes on this machine, both on loopback only, for tests and benches:
``python tests/two_nodes.py FOLDER [CPUS_PER_NODE] [NODES]`` starts the head node (and the
other nodes) with its files in FOLDER, prints the cluster's address on a line, and stops it
when its standard input closes.

Why not ``ray start --head`` and ``ray start --address``: a node joining a cluster with
``ray start`` needs ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` true (else it stops: "Multi-node
Ray clusters are not supported"), and then Ray replaces both ``--address 127.0.0.1:PORT`` and
``--node-ip-address 127.0.0.1`` by the machine's network address (``resolve_ip_for_localhost``)
and listens there (Ray 2.60; docs/ray.md). ``ray.cluster_utils.Cluster``, Ray's own way to
run several nodes on one machine, starts each node with the address given: 127.0.0.1.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    folder = sys.argv[1]
    cpus = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    nodes = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_TMPDIR"] = folder  # where Ray notes the current cluster's address
    from ray.cluster_utils import Cluster

    node = {"node_ip_address": "127.0.0.1", "num_cpus": cpus, "object_store_memory": 200 * 1024 * 1024, "include_log_monitor": False}
    cluster = Cluster(
        initialize_head=True,
        head_node_args={**node, "temp_dir": os.path.join(folder, "ray"), "include_dashboard": False},
    )
    try:
        for _ in range(nodes - 1):
            cluster.add_node(**node)
        cluster.wait_for_nodes()
        print(cluster.address, flush=True)
        sys.stdin.read()
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main()
