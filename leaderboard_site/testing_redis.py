"""A private redis-server for one test process, so tests never touch a running instance."""

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_private_redis() -> str:
    """Start redis-server on a free port (data in a temp dir, removed at exit); return its URL.

    `TEST_REDIS_URL` overrides this (a Redis the caller owns and lets the tests flush).
    """
    if os.environ.get("TEST_REDIS_URL"):
        return os.environ["TEST_REDIS_URL"]
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed; run `make services` (or apt-get install redis-server)")
    workdir = tempfile.mkdtemp(prefix="lb-test-redis-")
    port = _free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            workdir,
            "--maxmemory-policy",
            "noeviction",
            "--logfile",
            os.path.join(workdir, "redis.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)

    atexit.register(stop)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"private redis-server did not start on port {port}")
