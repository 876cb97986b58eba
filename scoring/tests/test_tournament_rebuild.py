"""After FLUSHALL, `rebuild_boards` gives back the active period's board and its counters (entrants,
attempts) exactly from the ledger: the board member by member (a result not applied yet and a
revoked one included), the counters field by field, before anything else fills them."""

import pytest
from django.core.management import call_command
from django.utils import timezone

from common.redis import boards_client
from competitions.models import TournamentEntrant
from competitions.services import entrant_join
from competitions.testing import period_state
from scoring.entries import attempts_counted
from scoring.models import ScoreEvent
from scoring.moderation import results_revoke
from scoring.testing import drain, make_game, make_key, match_body, outbox_restore, submit_direct
from scoring.tests.test_tournament_results import cup, verdicts

pytestmark = pytest.mark.django_db


def state(game):
    return period_state(boards_client(), game.slug, "cup", 1)


def play(game, key, results):
    body = match_body([{"player_id": p, "points": n} for p, n in results], tournaments=["cup"])
    return submit_direct(game, key, body, now=timezone.now())


@pytest.mark.parametrize("scoring", ["best", "sum", "latest"])
def test_after_flushall_rebuild_boards_gives_back_the_period_board_and_its_counters_exactly(scoring):
    game = make_game()
    key = make_key(game)
    tournament = cup(game, scoring=scoring, max_attempts=3, max_entrants=5)
    play(game, key, [("maya", 10), ("leo", 20)])
    play(game, key, [("maya", 30), ("ana", 5), ("zed", 7)])
    play(game, key, [("leo", 40), ("zed", 8)])
    drain()
    results_revoke(event_ids=[ScoreEvent.objects.filter(player_id="leo").latest("id").id], reason="test")
    entrant_join(tournament=tournament, player_id="ivy", now=timezone.now())  # an entrant, no result
    drain()
    expected = state(game)  # every result applied the ordinary way
    assert expected[1] == {"": "1", "maya": "2", "leo": "1", "ana": "1", "zed": "2"}  # leo's revoked one given back
    assert expected[2] == {"", "maya", "leo", "ana", "zed", "ivy"}
    assert set(expected[0]) == {"maya", "leo", "ana", "zed"}
    outbox_restore(ScoreEvent.objects.filter(player_id="zed").order_by("-id")[:1])  # one not applied yet

    boards_client().flushall()
    call_command("rebuild_boards", game.slug, "--quiet")
    assert state(game) == expected  # the board member by member, the counters field by field
    ledger_attempts = {p: str(n) for p, n in attempts_counted(tournament, 1).items()}
    assert expected[1] == {"": "1", **ledger_attempts}
    assert expected[2] == {
        "",
        *TournamentEntrant.objects.filter(tournament=tournament).values_list("player_id", flat=True),
    }
    drain()  # the unapplied result's apply finds its marker: nothing counts twice
    assert state(game) == expected
    assert verdicts(play(game, key, [("maya", 1), ("ana", 1)])) == {"maya": "counted", "ana": "counted"}
    assert verdicts(play(game, key, [("maya", 1), ("kai", 1)])) == {"maya": "no_attempts_left", "kai": "full"}
