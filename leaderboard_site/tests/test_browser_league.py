"""A league's page in real Chromium (Debian's, driven by Playwright) against a live service with
real worker and beat processes: reached from the game's page, asked for a player, rendered with
their division, cohort, zones, distance to the promotion line and the time left, and kept live when
results are accepted (a new leader, a new member). Screenshots go to var/test-artifacts/."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from competitions.testing import make_league
from scoring.testing import make_game, make_key

from .test_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, read_until, submit

pytestmark = [
    pytest.mark.serial,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"),
]


def test_the_league_page_shows_a_players_cohort_with_its_zones_and_updates_live(service):
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    game = make_game()
    key = make_key(game)
    # One period from a minute ago to the next 1 January: no period's end during the test.
    start = timezone.now().replace(microsecond=0) - timedelta(minutes=1)
    # Cohorts of 5; bronze promotes 2 of 5 (1 of a cohort of 4: zones scale with the cohort's size).
    divisions = [
        {"name": "bronze", "promote": 2, "demote": 0},
        {"name": "silver", "promote": 1, "demote": 1},
        {"name": "gold", "promote": 0, "demote": 2},
    ]
    make_league(game, title="Weekly League", starts_at=start, reset="0 0 1 1 *", cohort_size=5, divisions=divisions)
    for i, points in enumerate((100, 200, 300, 400)):
        submit(service, key, [{"player_id": f"p{i}", "points": points, "display_name": f"Player {i}"}])
    read_until(  # the player read shows p1's cohort with its four members
        service,
        "/api/v1/games/arena/leagues/weekly/players/p1",
        lambda read: len((read.get("cohort") or {}).get("entries", [])) == 4,
        "p1's cohort never had 4 members",
    )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{service}/games/arena/")
        page.click("#leagues a:has-text('Weekly League')")
        assert page.url == f"{service}/games/arena/leagues/weekly/"
        page.fill("input[name=player]", "p1")
        page.click("form.toolbar button[type=submit]")
        assert page.url == f"{service}/games/arena/leagues/weekly/?player=p1"

        expect(page.locator("#division")).to_have_text("Division bronze")
        expect(page.locator("#period-status")).to_have_text("active")
        expect(page.locator("#time-left")).to_have_text(re.compile(r"^\d+ d \d+ h left$"))
        rows = page.locator("#board tbody tr")
        expect(rows).to_have_count(4)
        expect(rows.first).to_contain_text("Player 3")
        expect(rows.first).to_have_class("promote promote-line")
        expect(rows.nth(1)).to_have_class("stay")
        expect(page.locator("#board tr.me")).to_contain_text("Player 1")
        expect(page.locator("#board tr.me td.zone")).to_have_text("stay")
        expect(page.locator("#standing")).to_have_text("201 points to the promotion line.")
        expect(page.locator("#live")).to_have_class("live on", timeout=10_000)

        # The player's new result over signed HTTP (a sum: 700): on top within 3 s, no reload.
        submit(service, key, [{"player_id": "p1", "points": 500, "display_name": "Player 1"}])
        expect(rows.first).to_contain_text("Player 1", timeout=3_000)
        expect(rows.first.locator("td.score")).to_have_text("700")
        expect(page.locator("#standing")).to_have_text("In the promotion zone.")
        expect(rows.nth(1)).to_have_class("stay")

        # A first result of the period: its player joins the cohort, on the page without a reload,
        # and a cohort of 5 promotes two.
        submit(service, key, [{"player_id": "p4", "points": 50, "display_name": "Player 4"}])
        expect(rows).to_have_count(5, timeout=3_000)
        expect(rows.last).to_contain_text("Player 4")
        expect(rows.nth(1)).to_have_class("promote promote-line")
        expect(rows.first).to_have_class("promote me")
        page.screenshot(path=str(ARTIFACTS / "league-live.png"), full_page=True)
        browser.close()
