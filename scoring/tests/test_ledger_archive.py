"""Retention end to end (scoring/archive.py; docs/operations.md, "Retention"): a frozen season's
months archived to a checked file and dropped, its boards still answering from their standings, a
replay of one of its matches refused without counting, and the month restored row for row; a month
still open, or an archive damaged, refused with nothing changed."""

import uuid
from datetime import date, timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from scoring.archive import ArchiveError, archive_check, archive_path, archive_restore
from scoring.freezing import season_freeze
from scoring.ledger_partitions import CLAIMS, EVENTS, month_of, partition_name, partitions_list
from scoring.models import MatchSubmission, ScoreEvent
from scoring.testing import drain, make_game, make_key, match_body, submit_direct

pytestmark = pytest.mark.django_db(transaction=True)

NOW = timezone.now()
START = NOW - timedelta(days=150)  # a 30-day season that ended 120 days ago


def rows_of(table: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} ORDER BY id")
        return cursor.fetchall()


def played_season(client):
    game = make_game(start=START, days=30)
    key = make_key(game)
    season = game.seasons.get()
    match_ids = []
    for n, (player, points) in enumerate([("maya", 50), ("leo", 30), ("kim", 40), ("maya", 20)]):
        played = START + timedelta(days=5 + n)
        match_id = uuid.uuid4()
        body = match_body([{"player_id": player, "points": points}], played_at=played)
        assert submit_direct(game, key, body, now=played + timedelta(seconds=5), match_id=match_id).http_status == 202
        match_ids.append((match_id, body))
    drain()
    assert season_freeze(season_id=season.id, now=NOW) > 0
    top = client.get(f"/api/v1/games/arena/boards/all/top?n=10&season={season.id}")
    assert top.status_code == 200
    return game, key, season, match_ids, top.json()


def test_a_frozen_seasons_months_are_archived_dropped_and_restored(client, tmp_path):
    game, key, season, match_ids, top_before = played_season(client)
    month = month_of(START + timedelta(days=5))
    events_before = rows_of(partition_name(EVENTS, month))
    claims_before = rows_of(partition_name(CLAIMS, month))
    assert len(events_before) == 4 and len(claims_before) == 4

    # A month that another game's open season overlaps is refused by name, and nothing moves.
    current = make_game("current", start=START - timedelta(days=10), days=300)
    with pytest.raises(CommandError, match="is not frozen"):
        call_command("archive_ledger", "--before", month_of(NOW).isoformat(), "--to", str(tmp_path))
    assert partition_name(EVENTS, month) in {p.name for p in partitions_list()}
    assert not list(tmp_path.iterdir())
    current.seasons.update(frozen_at=NOW)  # ended early, say: nothing of it stands in the way now

    before = month_of(NOW)  # every whole month before this one
    call_command("archive_ledger", "--before", before.isoformat(), "--to", str(tmp_path))
    path = archive_path(tmp_path, month)
    assert path.exists() and archive_check(path) == {"events": 4, "claims": 4}
    left = {p.name for p in partitions_list()}
    assert partition_name(EVENTS, month) not in left and partition_name(CLAIMS, month) not in left
    assert ScoreEvent.objects.filter(season=season).count() == 0

    # The frozen season answers from its standings as before.
    top = client.get(f"/api/v1/games/arena/boards/all/top?n=10&season={season.id}")
    assert (top.status_code, top.json()["entries"]) == (200, top_before["entries"])
    # A replay of one of its matches: refused as any result of a closed season, nothing stored.
    match_id, body = match_ids[0]
    replay = submit_direct(game, key, body, now=NOW, match_id=match_id)
    assert (replay.http_status, replay.body["code"]) == (409, "season_closed")
    assert not MatchSubmission.objects.filter(match_id=match_id).exists()

    # Restored: the same rows, and the replay now answered from the claim again.
    call_command("restore_archive", str(path))
    assert rows_of(partition_name(EVENTS, month)) == events_before
    assert rows_of(partition_name(CLAIMS, month)) == claims_before
    assert ScoreEvent.objects.filter(season=season).count() == 4
    with pytest.raises(ArchiveError, match="holds rows already"):
        archive_restore(path)  # twice: refused, nothing doubled
    assert ScoreEvent.objects.filter(season=season).count() == 4


def test_a_damaged_archive_is_refused_and_loads_nothing(client, tmp_path):
    played_season(client)
    month = month_of(START + timedelta(days=5))
    call_command("archive_ledger", "--before", month_of(NOW).isoformat(), "--to", str(tmp_path))
    path = archive_path(tmp_path, month)
    data = bytearray(path.read_bytes())
    data[2048] ^= 0xFF  # a byte of the first member's compressed data
    damaged = tmp_path / "damaged.tar"
    damaged.write_bytes(bytes(data))
    with pytest.raises(CommandError):
        call_command("restore_archive", str(damaged))
    assert not ScoreEvent.objects.exists()
    call_command("restore_archive", "--check-only", str(path))  # the original is sound
    assert date.fromisoformat(month.isoformat()) == month
