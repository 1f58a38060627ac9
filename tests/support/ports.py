"""Loopback ports for the test servers (brokers, clusters, S3): free ones, and who listens."""

from __future__ import annotations

import socket


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports on 127.0.0.1 that nothing listens on right now (all bound at
    once, so two calls of one server cannot get the same port)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port() -> int:
    """One free TCP port on 127.0.0.1 (also: an address where a server is 'down')."""
    return free_ports(1)[0]


def is_listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:`port`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False
