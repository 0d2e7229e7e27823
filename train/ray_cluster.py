"""The connection to a Ray cluster, one rule for every command that uses Ray (``cassino train --ray``, ``cassino eval
--ray``): :func:`connect_ray` starts or joins a cluster, refusing at once an address where nothing answers.

Ray is imported only when a run asks for it (the ``ray`` extra).
"""

from __future__ import annotations

import os

from train.config import ConfigError

#: Seconds :func:`check_reachable` waits for a cluster's head to accept a connection.
CONNECT_TIMEOUT_S = 5.0


def check_reachable(address: str) -> None:
    """Refuse a ``HOST:PORT`` address (given, or ``auto``'s ``RAY_ADDRESS``) where nothing accepts a TCP connection:
    ``ray.init`` would retry it for many minutes (20 tries of about 40 s), printing warnings. ``local``, ``auto``
    without ``RAY_ADDRESS`` and ``ray://`` (Ray Client gives up by itself after 30 s) are left to ``ray.init``, and so
    is an address that is not ``HOST:PORT`` (it refuses those at once).

    Raises:
        ConfigError: naming ``ray_address``.
    """
    import socket

    source = ""
    if address == "auto":
        address, source = os.environ.get("RAY_ADDRESS", "").strip(), " (RAY_ADDRESS)"
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not sep or not host or not port.isdigit() or "://" in address or address in ("local", "auto"):
        return
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except (OSError, OverflowError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
        raise ConfigError(f"ray_address: no Ray cluster answers at {address!r}{source} ({reason}); start one there "
                          "(ray start --head) or give the head node's address", field="ray_address") from None


def connect_ray(address: str) -> bool:
    """``ray.init(address=address)`` unless Ray is already initialised in this process; True when it was started here
    (the caller shuts it down).

    Raises:
        ConfigError: naming ``ray_address``: Ray is not installed, or no cluster can be started or reached there
            (a ``HOST:PORT`` where nothing answers within :data:`CONNECT_TIMEOUT_S` seconds, at once).
    """
    try:
        import ray
    except ImportError:
        raise ConfigError("ray_address: Ray is not installed (pip install -e \".[ray]\")",
                          field="ray_address") from None
    if ray.is_initialized():
        return False
    check_reachable(address)
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:  # no cluster there, a bad address
        if ray.is_initialized():
            ray.shutdown()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"ray_address: cannot start or reach a Ray cluster at {address!r}: {first[:200]}",
                          field="ray_address") from None
    return True

