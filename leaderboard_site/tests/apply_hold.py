"""A worker that stops in the middle of one apply task, for the tests that SIGKILL it there (the
worker imports this module with `--include leaderboard_site.tests.apply_hold`; nothing changes
unless APPLY_HOLD_DIR is set in its environment).

APPLY_HOLD_AT says where the task stops (scoring/outbox.py, `events_apply_by_id`):
- `before_apply`: it has taken its batch and read its events from the ledger; the Lua apply has
  not run (nothing of the batch is on a board).
- `after_apply`: the Lua apply has written the boards (and the tournament rewrites theirs); the
  batch's rows are still in the outbox (the ledger does not say applied).

Only one batch is held: the first that holds a result counted in a tournament or in a league
cohort, taken by whichever pool process of whichever worker gets one first (an O_EXCL claim file in
APPLY_HOLD_DIR, so a restarted worker holds nothing). That process writes `held.json` there (its pid, the batch's event
ids), then sleeps until it is killed.
"""

import json
import os
import time
from pathlib import Path
from typing import Any

from scoring import outbox
from scoring.models import LeagueResult, TournamentResult

HOLD_DIR = os.environ.get("APPLY_HOLD_DIR", "")
HOLD_AT = os.environ.get("APPLY_HOLD_AT", "after_apply")
HELD_FILE = "held.json"


def _hold(event_ids: list[int]) -> None:
    counted = TournamentResult.objects.filter(event_id__in=event_ids, verdict="counted").exists()
    if not counted and not LeagueResult.objects.filter(event_id__in=event_ids, number__isnull=False).exists():
        return
    folder = Path(HOLD_DIR)
    try:
        os.close(os.open(folder / "claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    partial = folder / f"{HELD_FILE}.part"
    partial.write_text(json.dumps({"pid": os.getpid(), "at": HOLD_AT, "event_ids": sorted(event_ids)}))
    partial.rename(folder / HELD_FILE)  # whole, for the test that waits for it
    while True:
        time.sleep(60)


def _before_apply(apply: Any) -> Any:
    def held(*, events: list[Any], **kwargs: Any) -> Any:
        _hold([e.id for e in events])
        return apply(events=events, **kwargs)

    return held


def _after_apply(applied: Any) -> Any:
    def held(event_ids: list[int]) -> int:
        _hold(event_ids)
        return int(applied(event_ids))

    return held


if HOLD_DIR and HOLD_AT == "before_apply":
    outbox.events_apply = _before_apply(outbox.events_apply)
elif HOLD_DIR and HOLD_AT == "after_apply":
    outbox.outbox_applied = _after_apply(outbox.outbox_applied)
