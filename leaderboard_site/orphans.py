"""Web worker processes end with their master.

`uvicorn --workers N` runs a master that spawns N worker processes sharing its listening socket.
When the master is SIGKILLed, the workers go on serving on that socket as orphans: the master the
supervisor starts next cannot bind the port and fails again and again, and nobody watches the
orphans. Each worker therefore asks Linux for SIGTERM when its parent dies (PR_SET_PDEATHSIG):
uvicorn's own graceful shutdown then closes the socket at once and finishes the requests in flight.
"""

import ctypes
import logging
import multiprocessing
import os
import signal
import sys

logger = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1


def exit_with_parent() -> None:
    """In a process spawned by multiprocessing (uvicorn's workers): SIGTERM when the parent dies.
    Anywhere else (a single-process server, a test, a command) it does nothing."""
    parent = multiprocessing.parent_process()
    if parent is None or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        logger.warning("prctl(PR_SET_PDEATHSIG) failed (errno %d): this worker outlives its master", ctypes.get_errno())
        return
    if os.getppid() != parent.pid:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)
