"""A worker that stops inside a league period's end, for the test that SIGKILLs it there (the
worker imports this module with `--include leaderboard_site.tests.close_hold`; nothing changes
unless CLOSE_HOLD_DIR is set in its environment).

With it set, the end freezes 2 cohorts a transaction, and in the transaction of the fourth chunk,
once its standings, divisions, final marks and events are written but not committed, the process
writes `held.json` in CLOSE_HOLD_DIR (its pid) and sleeps until it is killed.
"""

import json
import os
import time
from pathlib import Path
from typing import Any

from scoring import league_closing

HOLD_DIR = os.environ.get("CLOSE_HOLD_DIR", "")
HELD_FILE = "held.json"
CHUNKS_BEFORE = 3

if HOLD_DIR:
    _close = league_closing.league_period_close
    _publish = league_closing.events_publish_select
    _chunks = [0]

    def _small_chunks(**kwargs: Any) -> bool:
        return _close(**{**kwargs, "chunk": 2})

    def _publish_then_hold(**kwargs: Any) -> Any:
        result = _publish(**kwargs)
        _chunks[0] += 1
        if _chunks[0] > CHUNKS_BEFORE:
            partial = Path(HOLD_DIR) / f"{HELD_FILE}.part"
            partial.write_text(json.dumps({"pid": os.getpid()}))
            partial.rename(Path(HOLD_DIR) / HELD_FILE)
            while True:
                time.sleep(1)
        return result

    league_closing.league_period_close = _small_chunks  # type: ignore[assignment]
    league_closing.events_publish_select = _publish_then_hold  # type: ignore[assignment]
