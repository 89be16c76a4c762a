"""Serve one emulated cluster until SIGTERM or SIGINT: `python -m tests.kubeapi --port 8080`."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from .cluster import KubeAPI


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(prog="python -m tests.kubeapi", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (0: any free)")
    parser.add_argument("--nodes", type=int, default=0, help="how many Nodes to seed")
    parser.add_argument("--node-cpu", default="8", help="allocatable CPU of each Node")
    parser.add_argument("--node-memory", default="32Gi", help="allocatable memory of each Node")
    parser.add_argument(
        "--crd-establish-delay", type=float, default=0.0, help="seconds before CRDs are Established"
    )
    parser.add_argument(
        "--rollouts",
        action="store_true",
        help="complete Deployment and StatefulSet rollouts as they are written (Healthy at once)",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Start the server, print its URL, serve until a termination signal, then stop."""
    arguments = parse_arguments(argv)
    api = KubeAPI(
        nodes=arguments.nodes,
        node_cpu=arguments.node_cpu,
        node_memory=arguments.node_memory,
        port=arguments.port,
        crd_establish_delay=arguments.crd_establish_delay,
        verbose=arguments.verbose,
        rollouts=arguments.rollouts,
    )
    stop_requested = threading.Event()

    def request_stop(signum: int, frame: FrameType | None) -> None:
        stop_requested.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    api.start()
    print(api.url, flush=True)
    while not stop_requested.wait(0.5):
        pass
    api.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
