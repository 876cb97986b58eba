"""A tournament's page in real Chromium (Debian's, driven by Playwright) against a live service
with real worker and beat processes: reached from the game's page, rendered with the time left,
and updated live when a result naming the tournament is accepted. Screenshots go to
var/test-artifacts/."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from competitions.models import Tournament
from scoring.testing import make_game, make_key

from .test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, read_until
from .test_browser import submit as submit_match

pytestmark = [
    pytest.mark.serial,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"),
]


def submit(url: str, key, results: list[dict]) -> None:
    """A match naming the tournament `cup`, over signed HTTP."""
    submit_match(url, key, results, tournaments=["cup"])


def test_the_tournament_page_is_linked_from_the_game_and_updates_live(service):
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    game = make_game()
    key = make_key(game)
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=1)
    Tournament.objects.create(
        game=game,
        slug="cup",
        title="Spring Cup",
        starts_at=start,
        ends_at=start + timedelta(hours=2),
        duration_s=7200,
        max_attempts=3,
        rewards=[{"rank_from": 1, "rank_to": 1, "reward": {"gems": 500}}],
        created_at=start,
    )
    for i in range(12):
        submit(service, key, [{"player_id": f"p{i:02d}", "points": 100 + i * 10, "display_name": f"Player {i}"}])
    read_until(
        service,
        "/api/v1/games/arena/tournaments/cup/top?n=100",
        lambda top: "p00" in [e["player_id"] for e in top["entries"]],
        "p00 never reached the tournament's board",
    )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{service}/games/arena/")
        page.click("#tournaments a:has-text('Spring Cup')")
        assert page.url == f"{service}/games/arena/tournaments/cup/"
        rows = page.locator("#board tbody tr")
        expect(rows).to_have_count(12)
        expect(rows.first).to_contain_text("Player 11")
        expect(rows.first.locator("td.reward")).to_have_text("gems 500")
        expect(page.locator("#time-left")).to_have_text(re.compile(r"^1 h 5\d min left$"))
        expect(page.locator("#period-status")).to_have_text("active")
        expect(page.locator("#live")).to_have_class("live on", timeout=10_000)

        # A new leader over signed HTTP: on the page within 3 s, no reload; the reward moves to it.
        submit(service, key, [{"player_id": "rocket", "points": 5000, "display_name": "Rocket"}])
        expect(rows.first).to_contain_text("Rocket", timeout=3_000)
        expect(rows.first.locator("td.reward")).to_have_text("gems 500")
        expect(rows.nth(1)).to_contain_text("Player 11")
        expect(rows).to_have_count(13, timeout=5_000)  # the resync from REST brings the rows below the top 10
        page.screenshot(path=str(ARTIFACTS / "tournament-live.png"), full_page=True)
        browser.close()
