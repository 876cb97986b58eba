"""The scatter's wait for replies (boards/scatter.py `_readable_wait`) takes any descriptor: select()
refused those of 1,024 and above, which a busy process (or a long test run) reaches."""

import os
import resource
import socket

from boards.scatter import _readable_wait


def test_a_descriptor_above_1024_is_waited_on():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 2048:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    ours, theirs = socket.socketpair()
    high = socket.socket(fileno=os.dup2(ours.fileno(), 2000))
    try:
        theirs.sendall(b"x")
        _readable_wait([high], 30.0)  # readable: returns at once (select() raised ValueError here)
        assert high.recv(1) == b"x"
    finally:
        high.close()
        ours.close()
        theirs.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
