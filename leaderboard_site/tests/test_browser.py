"""The board page in real Chromium (Debian's, driven by Playwright) against a live service with
real worker and beat processes: live top-10 updates, find me, tabs and periods, a phone screen.
Screenshots go to var/test-artifacts/."""

import json
import re
import shutil
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from common.formats import iso
from common.signing import signed_headers
from scoring.testing import make_game, make_key

CHROMIUM = shutil.which("chromium")
ARTIFACTS = Path(settings.BASE_DIR) / "var" / "test-artifacts"
pytestmark = [
    pytest.mark.serial,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"),
]


def submit(url: str, key, results: list[dict], **extra) -> None:
    """A match over signed HTTP (`extra`: more of the match's fields, e.g. its tournaments)."""
    path = f"/api/v1/games/{key.game.slug}/matches/{uuid.uuid4()}/results"
    body = json.dumps({"played_at": iso(timezone.now()), "duration_s": 600, "results": results, **extra}).encode()
    headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
    request = urllib.request.Request(
        url + path, data=body, method="POST", headers={"Content-Type": "application/json", **headers}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202


CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def read_until(url: str, path: str, done: Callable[[Any], bool], failure: str, timeout: float = 15) -> None:
    """GET `path` (JSON) every 0.1 s until `done(answer)` holds; an error answer counts as not yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + path, timeout=5) as response:
                if done(json.load(response)):
                    return
        except OSError:  # a 404 (urllib's HTTPError) or a refused connection
            pass
        time.sleep(0.1)
    raise AssertionError(failure)


def wait_on_board(url: str, game: str, player: str) -> None:
    read_until(url, f"/api/v1/games/{game}/boards/all/players/{player}", bool, f"{player} never reached the board")


def test_the_board_page_updates_live_and_finds_me(service):
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    game = make_game()
    key = make_key(game)
    for i in range(12):
        submit(
            service,
            key,
            [{"player_id": f"p{i:02d}", "points": 100 + i * 10, "display_name": f"Player {i}", "region": "eu"}],
        )
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{service}/games/arena/")
        rows = page.locator("#board tbody tr")
        expect(rows.first).to_contain_text("Player 11", timeout=10_000)
        expect(page.locator("#live")).to_have_class("live on", timeout=10_000)

        # A new leader, submitted over signed HTTP: the page shows it within 2 s, no reload.
        submit(service, key, [{"player_id": "rocket", "points": 5000, "display_name": "Rocket"}])
        expect(rows.first).to_contain_text("Rocket", timeout=2_000)
        page.screenshot(path=str(ARTIFACTS / "board-live.png"), full_page=True)

        # Find me: rank, score, top %, and my row highlighted among the players around me.
        page.fill("#player", "p05")
        page.click("#find button")
        expect(page.locator("#me")).to_contain_text("rank 8 of 13", timeout=5_000)
        expect(page.locator("#around tr.me")).to_contain_text("Player 5")
        assert "player=p05" in page.url
        page.screenshot(path=str(ARTIFACTS / "board-find-me.png"), full_page=True)

        # Tabs and periods (links the server renders): today's board, then yesterday's (empty).
        page.click("#tabs [data-board='daily']")
        expect(page.locator("#tabs [data-board='daily']")).to_have_attribute("aria-selected", "true")
        expect(rows.first).to_contain_text("Rocket", timeout=5_000)
        today = page.locator("#period-label").inner_text()
        page.click("#prev")
        expect(page.locator("#period-label")).not_to_have_text(today, timeout=5_000)
        expect(page.locator("#empty")).to_be_visible()
        assert "board=daily" in page.url and "period=" in page.url

        # A phone.
        phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2)
        phone.goto(f"{service}/games/arena/?region=eu")
        expect(phone.locator("#board tbody tr").first).to_contain_text("Player 11", timeout=10_000)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        phone.screenshot(path=str(ARTIFACTS / "board-phone.png"), full_page=True)
        browser.close()


def test_the_page_arrives_rendered_and_reads_without_javascript(service):
    from playwright.sync_api import expect, sync_playwright

    game = make_game()
    key = make_key(game)
    submit(
        service, key, [{"player_id": f"p{i:02d}", "points": 100 + i, "display_name": f"Player {i}"} for i in range(30)]
    )
    wait_on_board(service, game.slug, "p00")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(f"{service}/games/arena/?player=p05")
        rows = page.locator("#board tbody tr")
        expect(rows).to_have_count(30)
        expect(rows.first).to_contain_text("Player 29")
        expect(rows.nth(29)).to_contain_text("Player 0")
        expect(page.locator("#me")).to_contain_text("rank 25 of 30")
        expect(page.locator("#around tr.me")).to_contain_text("Player 5")
        expect(page.locator("#around tbody tr")).to_have_count(11)
        page.click("#tabs [data-board='weekly']")  # navigation is links: no script needed
        expect(page.locator("#tabs [data-board='weekly']")).to_have_attribute("aria-selected", "true")
        expect(page.locator("#period-label")).to_have_text(re.compile(r"^\d{4}-W\d{2}$"))
        expect(rows.first).to_contain_text("Player 29")
        page.screenshot(path=str(ARTIFACTS / "board-no-javascript.png"), full_page=True)
        browser.close()


def test_a_busy_boards_row_50_stays_current_while_pushes_arrive(service):
    """The top 10 changes several times a second (a push a second); row 50 changes too, and shows
    within 3 s: the resync after pushes is never postponed by the next push."""
    from playwright.sync_api import expect, sync_playwright

    game = make_game()
    key = make_key(game)
    # 100 players 100 points apart: a +1 moves nobody's rank.
    submit(service, key, [{"player_id": f"p{i:03d}", "points": 10_000 - 100 * i} for i in range(100)])
    wait_on_board(service, game.slug, "p099")
    stop = threading.Event()

    def leaders_keep_scoring() -> None:
        while not stop.is_set():
            submit(service, key, [{"player_id": f"p{i:03d}", "points": 1} for i in range(10)])
            time.sleep(0.3)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"{service}/games/arena/")
        row50 = page.locator("#board tbody tr").nth(49)
        expect(row50).to_contain_text("p049")
        expect(page.locator("#live")).to_have_class("live on", timeout=10_000)
        feeder = threading.Thread(target=leaders_keep_scoring)
        feeder.start()
        try:
            time.sleep(3)  # pushes are arriving now
            for bump in range(1, 4):
                submit(service, key, [{"player_id": "p049", "points": 7}])
                expect(row50.locator("td.score")).to_have_text(str(5100 + 7 * bump), timeout=3_000)
        finally:
            stop.set()
            feeder.join()
        browser.close()
