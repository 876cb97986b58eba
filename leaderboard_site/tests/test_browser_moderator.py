"""A moderator clears the review queue in real Chromium (Debian's, driven by Playwright) against a
live service with real worker and beat processes: signs in as a member of `moderators`, works
through five pending items from each item's page (the evidence on it), approves two, revokes three
with a reason, landing on the next pending item each time, and sees the board and the audit log
change. Screenshots go to var/test-artifacts/."""

import json
import shutil
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import Group, Permission, User
from django.utils import timezone

from anticheat.models import AuditEntry
from anticheat.services import game_rules_set
from common.formats import iso
from common.signing import signed_headers
from scoring.models import ScoreEvent
from scoring.testing import make_game, make_key

CHROMIUM = shutil.which("chromium")
ARTIFACTS = Path(settings.BASE_DIR) / "var" / "test-artifacts"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
pytestmark = [
    pytest.mark.serial,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
    pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"),
]
HELD = ["h1", "h2", "h3", "h4", "h5"]  # oldest first: the queue's order
APPROVED, REVOKED = HELD[:2], HELD[2:]


def submit(url: str, key, results: list[dict], duration_s: int = 600) -> None:
    path = f"/api/v1/games/{key.game.slug}/matches/{uuid.uuid4()}/results"
    body = json.dumps({"played_at": iso(timezone.now()), "duration_s": duration_s, "results": results}).encode()
    headers = signed_headers(key_id=key.key_id, secret=key.secret, method="POST", path=path, body=body)
    request = urllib.request.Request(
        url + path, data=body, method="POST", headers={"Content-Type": "application/json", **headers}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 202


def score(url: str, game: str, player: str) -> int | None:
    try:
        with urllib.request.urlopen(f"{url}/api/v1/games/{game}/boards/all/players/{player}", timeout=5) as response:
            return int(json.load(response)["score"])
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise


def wait_for_score(url: str, game: str, player: str, expected: int | None, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while (found := score(url, game, player)) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    assert found == expected, (player, found, expected)


def test_a_moderator_works_through_five_pending_items(service):
    from playwright.sync_api import expect, sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    game = make_game()
    game_rules_set(game=game, max_points_per_minute=100)  # 10 minutes of play: more than 1,000 is held
    key = make_key(game)
    submit(service, key, [{"player_id": "steady", "points": 900, "display_name": "Steady"}])
    for i, player in enumerate(HELD):
        submit(
            service,
            key,
            [
                {"player_id": player, "points": 5000 + i, "display_name": player.upper()},
                {"player_id": "foe", "points": 3},
            ],
        )
    wait_for_score(service, game.slug, "steady", 900)
    assert ScoreEvent.objects.filter(status="pending_review").count() == 5
    for player in HELD:
        assert score(service, game.slug, player) is None  # held: not on the board

    moderators, _ = Group.objects.get_or_create(name="moderators")
    moderators.permissions.add(Permission.objects.get(codename="view_auditentry"))
    # Hashed as the web process verifies it (the tests' own settings hash with MD5, for speed).
    password = PBKDF2PasswordHasher().encode("queue-clearing-horse", "browsersalt")
    User.objects.create(username="mia", password=password, is_staff=True).groups.add(moderators)

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(f"{service}/admin/login/?next=/admin/scoring/reviewitem/")
        page.fill("#id_username", "mia")
        page.fill("#id_password", "queue-clearing-horse")
        page.click("input[type=submit]")

        # The queue opens on the pending items, oldest first; the game filter lists only this game.
        rows = page.locator("#result_list tbody tr")
        expect(rows).to_have_count(5)
        expect(rows.first).to_contain_text("h1")
        expect(page.locator("#changelist-filter")).to_contain_text("arena (5)")
        page.screenshot(path=str(ARTIFACTS / "moderator-queue.png"), full_page=True)
        rows.first.locator("th a").click()

        for n, player in enumerate(HELD):
            # The item's page: why it was held, with the numbers, the match and the player's history.
            expect(page.locator("#decide h2")).to_contain_text(f"· {player} ·")
            expect(page.locator("#why")).to_contain_text("more points per minute of play than the game allows")
            expect(page.locator(".figures")).to_contain_text("points per minute of play")
            expect(page.locator("#same-match")).to_contain_text("foe")
            expect(page.locator("#recent tbody tr")).to_have_count(1)
            if n == 0:
                page.screenshot(path=str(ARTIFACTS / "moderator-item.png"), full_page=True)
            if player in APPROVED:
                page.click("#approve")
            else:
                page.fill("#reason", f"impossible score for {player}")
                page.click("#revoke")
            expect(page.locator(".messagelist")).to_contain_text(f"({player}, ")

        # The last decision lands back on the queue, now empty.
        expect(page.locator(".messagelist")).to_contain_text("The queue is empty.")
        expect(page.locator("#result_list tbody tr")).to_have_count(0)

        # The resolved list says who decided, when and why.
        page.goto(f"{service}/admin/scoring/reviewitem/?queue=resolved")
        resolved = page.locator("#result_list tbody tr")
        expect(resolved).to_have_count(5)
        expect(resolved.first).to_contain_text("revoke by mia")
        expect(resolved.first).to_contain_text("impossible score for h5")

        # The audit log has the five decisions.
        page.goto(f"{service}/admin/anticheat/auditentry/?q=mia")
        log = page.locator("#result_list tbody")
        expect(log).to_contain_text("impossible score for h3")
        expect(log).to_contain_text("approved on review")
        page.screenshot(path=str(ARTIFACTS / "moderator-audit-log.png"), full_page=True)

        # The board: the two approved players are on it (the worker applied them), the three
        # revoked never are.
        for i, player in enumerate(HELD):
            wait_for_score(service, game.slug, player, 5000 + i if player in APPROVED else None)
        page.goto(f"{service}/games/arena/")
        board = page.locator("#board tbody")
        expect(board).to_contain_text("H1", timeout=10_000)
        expect(board).to_contain_text("H2")
        expect(board).not_to_contain_text("H3")
        page.screenshot(path=str(ARTIFACTS / "moderator-board.png"), full_page=True)
        browser.close()

    decisions = sorted(AuditEntry.objects.filter(actor_label="mia").values_list("action", flat=True))
    assert decisions == ["approve", "approve", "revoke", "revoke", "revoke"]
    assert ScoreEvent.objects.filter(status="pending_review").count() == 0
