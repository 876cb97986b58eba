"""The receiver examples of docs/api.md ("Receiver examples"), in Python and Node.js, run as they are
written there, against real deliveries from the dispatcher: a forged request and a stale one are
refused, every event is handled once, and an event delivered twice is handled once."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.test import override_settings
from django.utils import timezone

from common.signing import signature_compute
from common.testing import ROOT, free_port
from events.models import Delivery, DeliveryAttempt, DeliveryStatus
from events.services import deliveries_redeliver, events_publish, webhook_create
from events.testing import dispatcher_running
from events.types import PLAYER_BANNED, RESULT_REVIEWED
from seasons.testing import make_game

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

NODE = shutil.which("node")


def example(name: str) -> str:
    """The code block of docs/api.md under `<!-- example: NAME -->`."""
    text = (ROOT / "docs" / "api.md").read_text()
    marker = f"<!-- example: {name} -->\n"
    start = text.index("\n", text.index(marker) + len(marker)) + 1  # after the fence's first line
    return text[start : text.index("\n```\n", start) + 1]


def listening(port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code


def forged(url: str, path: str, secret: str) -> list[int]:
    """A request signed with another secret, and one signed 301 s ago: both must be refused."""
    body = b'{"id": 99, "type": "player.banned", "game": "arena", "created_at": "", "data": {}}'
    answers = []
    for key, at in (("not-the-secret", int(time.time())), (secret, int(time.time()) - 301)):
        signature = signature_compute(secret=key, timestamp=str(at), method="POST", path=path, body=body)
        headers = {"X-Leaderboard-Timestamp": str(at), "X-Leaderboard-Signature": signature}
        answers.append(post(url, body, headers))
    return answers


@override_settings(WEBHOOK_RETRY_BASE_S=0.1, EVENTS_DISPATCH_POLL_S=0.05)
@pytest.mark.parametrize("name", ["receiver.py", "receiver.js"])
def test_a_receiver_example_checks_signatures_and_handles_each_event_once(tmp_path, name):
    if name.endswith(".js") and NODE is None:
        pytest.skip("node is not installed: the Node.js example is not run")
    script = tmp_path / name
    script.write_text(example(name))
    port = free_port()
    game = make_game("arena")
    hook = webhook_create(game=game, url=f"http://127.0.0.1:{port}/hooks/leaderboard?env=test")
    env = {**os.environ, "WEBHOOK_SECRET": hook.secret, "PORT": str(port), "SEEN_DB": str(tmp_path / "seen.db")}
    command = [NODE or "node"] if name.endswith(".js") else [sys.executable]
    receiver = subprocess.Popen([*command, str(script)], env=env, cwd=tmp_path, stdout=subprocess.PIPE)
    try:
        listening(port)
        assert forged(hook.url, "/hooks/leaderboard?env=test", hook.secret) == [401, 401]
        events_publish(game=game, type=PLAYER_BANNED, data={"player_id": "leo", "revoked": 2})
        events_publish(
            game=game, type=RESULT_REVIEWED, data={"match_id": "m", "player_id": "ana", "decision": "approved"}
        )
        with dispatcher_running():
            delivered = Delivery.objects.filter(status=DeliveryStatus.DELIVERED)
            wait(lambda: delivered.count() == 2)
            # Delivered twice: as after a lost answer (here: failed, then sent again from the admin).
            Delivery.objects.filter(event__feed_id=1).update(status=DeliveryStatus.FAILED)
            assert (
                deliveries_redeliver(
                    delivery_ids=list(Delivery.objects.values_list("id", flat=True)), now=timezone.now()
                )
                == 1
            )
            wait(lambda: DeliveryAttempt.objects.count() == 3 and delivered.count() == 2)
    finally:
        receiver.terminate()
        out, _ = receiver.communicate(timeout=10)
    handled = sorted((json.loads(line) for line in out.decode().splitlines()), key=lambda h: h["handled"])
    # Each once, in any order: two tries are in flight at once.
    assert handled == [{"handled": 1, "type": "player.banned"}, {"handled": 2, "type": "result.reviewed"}]
    assert sorted(DeliveryAttempt.objects.values_list("status_code", flat=True)) == [204, 204, 204]


def wait(check, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.05)
