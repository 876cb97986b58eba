"""One web process: uvicorn serving the ASGI application on a listening socket of its own, bound with
SO_REUSEPORT, so that several such processes share one port and the kernel spreads new connections
across them.

    python -m leaderboard_site.serve --host 127.0.0.1 --port 8000 [--app module:attribute]

(`--app`: another ASGI application on the same server, e.g. bench/floor.py's, for a comparison.)

The supervisor (supervisord's `numprocs`, a systemd template unit) runs WEB_CONCURRENCY of them and
restarts each on its own. Why not `uvicorn --workers N`: its master binds one socket that every
worker inherits, and a worker's event loop accepts every connection waiting in that one queue at
each wake-up, so a burst of new keep-alive connections lands on one process (measured: a match
server's 8 connections 9:1 on 2 processes, one process's GIL the bottleneck while the other idled;
uvicorn #2467). With a socket each, Linux picks the process by a hash of each connection's
addresses.
"""

import argparse
import os
import socket

import uvicorn


def listening_socket(host: str, port: int, backlog: int = 2048) -> socket.socket:
    """A TCP socket bound to (host, port) with SO_REUSEPORT, listening."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--app", default="leaderboard_site.asgi:application")
    args = parser.parse_args()
    sock = listening_socket(args.host, args.port)
    config = uvicorn.Config(
        args.app,
        host=args.host,
        port=args.port,
        lifespan="off",
        access_log=False,
        # On SIGTERM, open WebSockets (live boards) are closed after 5 s instead of held until
        # every client leaves: a restart took 30-60 s with clients connected.
        timeout_graceful_shutdown=int(os.environ.get("WEB_GRACEFUL_SHUTDOWN_S", "5")),
        # The TLS proxy's addresses (FORWARDED_ALLOW_IPS, as uvicorn's own command line reads it).
        forwarded_allow_ips=os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
