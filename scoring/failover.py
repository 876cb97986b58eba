"""A Redis failover noticed, and what the replica had not received put back on the boards.

A replica promoted in place of a dead primary holds what the primary had sent it: the writes of
the last moment before the crash (up to the replication lag, usually well under a second) are
gone. The ledger is the source of truth, so what they carried comes back from it: an apply that was
in flight is still in the outbox and the relay sends it again (its dedup marker went with the rest,
so it applies); an apply that had finished, and whose board writes were lost, shows as drift
between the boards and the ledger, which the reconciliation repairs (reconcile.py).

The scheduled reconciliation (RECONCILE_INTERVAL_S, a sample) runs too rarely for that, so a
failover is noticed by itself: every few seconds (beat's `scoring.boards_recover`) the run id of
the Redis answering now is compared with the one recorded in Redis (`lb:primary`). A promoted
replica holds its old primary's record, copied with the rest; a restarted Redis (one that read its
append-only file back, maybe missing its last second) has a new run id too. Either way the record
is updated (SET ... GET: one check wins) and `scoring.failover_check` runs: a full reconciliation
of every game, again every FAILOVER_RECHECK_S while players with results on their way were
passed over (they are looked at next time), until one run passes no one over or FAILOVER_CHECK_FOR_S
have gone by. A Redis that came back empty has no record and no boards marker: the recovery
rebuilds everything instead (recovery.py).
"""

import logging
import time
from dataclasses import dataclass, field

from boards.keys import primary_key
from common.metrics import count
from common.redis import client
from seasons.selectors import games_all

from .reconcile import boards_reconcile

logger = logging.getLogger(__name__)


def failover_noticed() -> bool:
    """Whether the Redis answering is another server than the one the last check found (a promoted
    replica, or a restart); records the one answering now. Raises redis.RedisError while Redis is
    unreachable."""
    redis = client()
    run_id = str(redis.info("server")["run_id"])
    previous = redis.set(primary_key(), run_id, get=True)
    if previous is None or previous == run_id:
        return False
    logger.warning(
        "Redis failover or restart noticed (run id %s, was %s): the boards are compared with the ledger",
        run_id,
        previous,
    )
    count("redis_failovers")
    return True


@dataclass
class FailoverCheck:
    """One round of the check after a failover: every game's boards compared with the ledger."""

    games: int = 0
    drift: int = 0  # entries that differed from the ledger (repaired)
    passed_over: int = 0  # players left for the next round (results on their way, a rebuild running)
    failed: list[str] = field(default_factory=list)  # games whose comparison failed
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return self.passed_over == 0 and not self.failed


def failover_check() -> FailoverCheck:
    """A full reconciliation of every game (reconcile.py `boards_reconcile(full=True)`)."""
    clock = time.monotonic()
    check = FailoverCheck()
    for game in games_all():
        check.games += 1
        try:
            report = boards_reconcile(game=game, full=True)
        except Exception:  # one game's failure does not spare the others their check
            logger.exception("failover check of %s failed", game.slug)
            check.failed.append(game.slug)
            continue
        check.drift += report.drift
        check.passed_over += report.pending + report.moved + report.unrepaired + (1 if report.skipped else 0)
    check.seconds = round(time.monotonic() - clock, 2)
    logger.warning(
        "failover check: %d games compared with the ledger in %.2f s, %d entries repaired, "
        "%d players left for the next round",
        check.games,
        check.seconds,
        check.drift,
        check.passed_over,
    )
    return check
