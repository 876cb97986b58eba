"""Scoring knobs: signature window, dedup window, relay timing, single-result groups, board lifetimes,
recovery and reconciliation, anti-cheat defaults, the public read throttle."""

from pathlib import Path

from .env import env_float, env_int, env_str

# A signed request's timestamp must be within this many seconds of the server clock.
SIGNATURE_MAX_SKEW_S = env_int("SIGNATURE_MAX_SKEW_S", 300)
# `played_at` may be at most this far ahead of the server clock.
PLAYED_AT_MAX_FUTURE_S = env_int("PLAYED_AT_MAX_FUTURE_S", 60)
# How long a dedup marker lives in Redis: the window in which a redelivered or re-relayed event
# is recognised as applied there. The ledger's applied flag is the durable record.
SCORING_DEDUP_TTL_S = env_int("SCORING_DEDUP_TTL_S", 6 * 3600)
# The ledger's monthly partitions (scoring/ledger_partitions.py): the scheduled job keeps this many
# months past the current one created.
LEDGER_PARTITIONS_AHEAD = env_int("LEDGER_PARTITIONS_AHEAD", 3)
# Where `archive_ledger` writes a month's archive by default (scoring/archive.py).
LEDGER_ARCHIVE_DIR = env_str("LEDGER_ARCHIVE_DIR", str(Path(__file__).resolve().parents[2] / "var" / "archive"))
# The relay re-enqueues accepted events still unapplied after this many seconds.
SCORING_RELAY_AFTER_S = env_float("SCORING_RELAY_AFTER_S", 5.0)
SCORING_RELAY_BATCH = env_int("SCORING_RELAY_BATCH", 5000)
# Single-result POSTs (scoring/fastpath.py): a web process answers those that arrive within this
# many ms as one group (one transaction), at most SINGLES_GROUP_MAX at a time, and runs at most
# SINGLES_GROUPS_AT_ONCE groups together.
SINGLES_LINGER_MS = env_float("SINGLES_LINGER_MS", 2.0)
SINGLES_GROUP_MAX = env_int("SINGLES_GROUP_MAX", 200)
SINGLES_GROUPS_AT_ONCE = env_int("SINGLES_GROUPS_AT_ONCE", 1)
SINGLES_IN_CALLER_THREAD = False  # tests: True (settings/test.py)
# A web process gathers the events its requests accept this long before it enqueues them as one
# apply task (scoring/apply_buffer.py).
SCORING_ENQUEUE_LINGER_MS = env_float("SCORING_ENQUEUE_LINGER_MS", 100.0)
# Events per Lua apply call in the worker.
SCORING_APPLY_CHUNK = env_int("SCORING_APPLY_CHUNK", 2000)
# TTLs of day and week boards (docs/api.md: readable at least 8 and 14 days after the last write).
BOARD_DAY_TTL_S = env_int("BOARD_DAY_TTL_S", 8 * 86400 + 3600)
BOARD_WEEK_TTL_S = env_int("BOARD_WEEK_TTL_S", 14 * 86400 + 3600)
BOARD_MONTH_TTL_S = env_int("BOARD_MONTH_TTL_S", 35 * 86400 + 3600)
# A frozen season's Redis keys live this long after its standings are written to PostgreSQL.
SEASON_KEYS_TTL_AFTER_FREEZE_S = env_int("SEASON_KEYS_TTL_AFTER_FREEZE_S", 86400)
# Redis came back empty: the beat looks for the boards marker this often (scoring/recovery.py) and
# rebuilds every game's live boards when it is gone.
BOARDS_RECOVER_CHECK_S = env_float("BOARDS_RECOVER_CHECK_S", 2.0)
# Reconciliation (scoring/reconcile.py): every this many seconds, a sample of this many players per
# game compared with the ledger and repaired (`reconcile_boards --full` compares everything).
RECONCILE_INTERVAL_S = env_float("RECONCILE_INTERVAL_S", 600.0)
RECONCILE_SAMPLE = env_int("RECONCILE_SAMPLE", 1000)
# After a Redis failover (another server found answering, scoring/failover.py): every board compared
# with the ledger in full at once, and again every FAILOVER_RECHECK_S while players with results on
# their way were passed over, for up to FAILOVER_CHECK_FOR_S.
FAILOVER_RECHECK_S = env_float("FAILOVER_RECHECK_S", 10.0)
FAILOVER_CHECK_FOR_S = env_float("FAILOVER_CHECK_FOR_S", 600.0)
# Anti-cheat defaults (per game overrides in the admin: GameRules). 0 switches a limit off.
PLAYER_BUCKET_BURST = env_int("PLAYER_BUCKET_BURST", 5)
PLAYER_BUCKET_REFILL_S = env_int("PLAYER_BUCKET_REFILL_S", 60)
KEY_RATE_PER_S = env_int("KEY_RATE_PER_S", 50)
KEY_RATE_BURST = env_int("KEY_RATE_BURST", 100)
MAX_POINTS_PER_MINUTE = env_int("MAX_POINTS_PER_MINUTE", 0)
MIN_MATCH_DURATION_S = env_int("MIN_MATCH_DURATION_S", 0)
MAX_MATCHES_PER_HOUR = env_int("MAX_MATCHES_PER_HOUR", 0)
# Public reads per client IP (a token bucket in Redis); 0 switches it off.
READ_RATE_PER_S = env_int("READ_RATE_PER_S", 200)
READ_RATE_BURST = env_int("READ_RATE_BURST", 400)
# Tournaments: a period's Redis keys (board, entrants, attempts) live this long after its grace
# ends; its final standings are then read from PostgreSQL.
TOURNAMENT_KEYS_TTL_AFTER_FINAL_S = env_int("TOURNAMENT_KEYS_TTL_AFTER_FINAL_S", 86400)
# A period freezes this long after its grace ends: a result whose verdict was decided just before
# the end may still be committing (scoring/tournament_freezing.py).
TOURNAMENT_FREEZE_DELAY_S = env_int("TOURNAMENT_FREEZE_DELAY_S", 5)
TOURNAMENT_FREEZE_INTERVAL_S = env_int("TOURNAMENT_FREEZE_INTERVAL_S", 5)
