"""The boards marker: whether Redis still holds what the ledger was rebuilt into.

Redis is an index of the ledger that can lose everything (FLUSHALL, a restart without its data).
The marker `lb:epoch` (boards/keys.py) is written once every game's live boards have been rebuilt
from the ledger (`scoring.recovery`); a Redis that lost its data has lost the marker with it, and
the next check (a beat task, every few seconds) rebuilds. The value names the recovery that wrote
it (its time and a token), for the logs.

The marker is written only while the recovery's lock is still held, in one script: a flush during
the recovery takes the lock too, so boards rebuilt before the flush never count as complete.

With the boards on a Redis Cluster (REDIS_CLUSTER_URL) the marker lives there, beside them, so a
cluster that lost its data (or a new, empty one) is rebuilt; the lock stays on REDIS_URL, and the
marker is written after a check that the lock is still held (two servers: not one script). What a
single key on the cluster does not tell: one master lost without a replica to take over (its
slots' boards gone, the marker on another node); the reconciliation finds those boards' drift.
"""

from common.redis import boards_client, client, lua_path, lua_script, on_cluster

from . import keys

CONFIRM_SCRIPT = lua_path(__file__, "epoch_confirm.lua")


def epoch_get() -> str | None:
    """The marker's value, None when Redis lost it (raises RedisError when Redis is down: an
    unreachable Redis is not an empty one)."""
    value = boards_client().get(keys.epoch_key())
    return None if value is None else str(value)


def epoch_confirm(*, lock_token: str, value: str) -> bool:
    """Write the marker if the recovery's lock still holds `lock_token`; False when it was lost."""
    if on_cluster():
        if client().get(keys.recover_lock_key()) != lock_token:
            return False
        boards_client().set(keys.epoch_key(), value)
        return True
    reply = lua_script(CONFIRM_SCRIPT)(keys=[keys.recover_lock_key(), keys.epoch_key()], args=[lock_token, value])
    return bool(int(reply))


def epoch_forget() -> None:
    """Drop the marker (tests, and an operator who wants every game rebuilt by the recovery)."""
    boards_client().delete(keys.epoch_key())
