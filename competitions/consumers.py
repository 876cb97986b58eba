"""A tournament's live board: `/ws/games/{game}/tournaments/{tournament_id}/[?period=K]`, the
period's top 10 at once, then on change, at most once a second (the pacing is the boards':
boards/consumers.py `PacedTopConsumer`; the pushes come from live.py).

Without `period=` a connection follows the tournament's current period (the one its reads default
to): it joins the tournament's follow group, and when the next period starts it sends that
period's top 10 itself. With `period=` it stays on that period. Either also looks again by itself
when its period's status changes by the clock (live.py `next_look`), so a client sees `active`
turn to `grace`, and `final` once the standings are frozen.
"""

import asyncio
import logging
from datetime import datetime
from urllib.parse import parse_qs

from channels.db import database_sync_to_async

from boards import events
from boards.consumers import PacedTopConsumer
from common.operations import digits_only

from .league_live import Snapshot as CohortSnapshot
from .league_live import cohort_group, cohort_snapshot, cohort_watch
from .live import Snapshot, follow_group, live_snapshot, period_group

logger = logging.getLogger(__name__)


class TournamentTopConsumer(PacedTopConsumer):
    tournament_args: tuple[str, str, int | None]  # game, tournament, period (None: follow)
    period: int | None = None

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        asked = (parse_qs(self.scope.get("query_string", b"").decode()).get("period") or [None])[0]
        if asked is not None and not (digits_only(asked) and len(asked) <= 9):
            await self.close(code=4404)
            return
        game, slug = kwargs["game"], kwargs["tournament_id"]
        self.tournament_args = (game, slug, int(asked) if asked is not None else None)
        first = await database_sync_to_async(self._snapshot)()
        if first is None:
            await self.close(code=4404)
            return
        self.following = asked is None
        self.period = first.index
        self.group = follow_group(game, slug) if self.following else period_group(game, slug, first.index)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.connected(game)
        self._offer(first.text)
        self.roller = asyncio.ensure_future(self._look_again(first.next_look))

    def _snapshot(self) -> Snapshot | None:
        game, slug, index = self.tournament_args
        return live_snapshot(game=game, slug=slug, index=index, now=events.live_now())

    async def _look_again(self, at: datetime | None) -> None:
        """At each moment the board shown changes by the clock (live.py `next_look`): its top 10
        read again and sent (unless equal to the last sent); a follower moves on to a new period."""
        while at is not None:
            await asyncio.sleep(max(0.05, (at - events.live_now()).total_seconds()))
            try:
                found = await database_sync_to_async(self._snapshot)()
            except Exception:  # Redis or the database unreachable, say: the next try in a few seconds
                logger.warning("live: %s not read again; trying again", self.tournament_args, exc_info=True)
                await asyncio.sleep(5)
                continue
            if found is None:  # the tournament went away: nothing to follow
                return
            assert self.period is not None
            if found.index >= self.period:
                self.period = found.index
                self._offer(found.text)
            at = found.next_look


class LeagueCohortConsumer(PacedTopConsumer):
    """`/ws/games/{game}/leagues/{league_id}/cohorts/{cohort_id}/`: the whole cohort at once, then on
    change, at most once a second (league_live.py pushes it; the pacing is the boards'). At its
    period's end by the clock it reads the cohort again by itself (the status turns to `grace`);
    the frozen cohort is pushed by the period's end."""

    cohort_args: tuple[str, str, str]  # game, league, cohort id
    watch: tuple[str, str, int] | None = None  # where this connection counts itself as a follower

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        game, slug, cohort = kwargs["game"], kwargs["league_id"], kwargs["cohort_id"]
        self.cohort_args = (game, slug, cohort)
        first = await database_sync_to_async(self._snapshot)()
        if first is None:
            await self.close(code=4404)
            return
        self.group = cohort_group(game, slug, cohort)
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.watch = first.watch
        await database_sync_to_async(cohort_watch)(first.watch, 1)
        await self.accept()
        self.connected(game)
        self._offer(first.text)
        self.roller = asyncio.ensure_future(self._look_again(first.next_look))

    async def disconnect(self, code: int) -> None:
        if self.watch is not None:
            watch, self.watch = self.watch, None
            try:
                await database_sync_to_async(cohort_watch)(watch, -1)
            except Exception:  # Redis unreachable: a count left behind costs reads only (league_live.py)
                logger.warning("live: cohort %s follower not counted out", self.cohort_args, exc_info=True)
        await super().disconnect(code)

    def _snapshot(self) -> CohortSnapshot | None:
        game, slug, cohort = self.cohort_args
        return cohort_snapshot(game=game, slug=slug, cohort=cohort, now=events.live_now())

    async def _look_again(self, at: datetime | None) -> None:
        while at is not None:
            await asyncio.sleep(max(0.05, (at - events.live_now()).total_seconds()))
            try:
                found = await database_sync_to_async(self._snapshot)()
            except Exception:  # Redis or the database unreachable, say: the next try in a few seconds
                logger.warning("live: cohort %s not read again; trying again", self.cohort_args, exc_info=True)
                await asyncio.sleep(5)
                continue
            if found is None:
                return
            self._offer(found.text)
            at = found.next_look
