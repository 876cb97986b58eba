#!/usr/bin/env python3
"""Sign and submit one match result: a copy-and-adapt example for studios (stdlib only).

    python scripts/submit.py --url http://127.0.0.1:8000 --game demo --key-id KEY --secret SECRET \
        --player maya:50 --player leo:20
"""

import argparse
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
import uuid
from datetime import UTC, datetime


def sign(secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    """v1= + hex HMAC-SHA256 of "timestamp\\nMETHOD\\npath\\nbody" with the key's secret."""
    message = b"\n".join([timestamp.encode(), method.encode(), path.encode(), body])
    return "v1=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def submit(
    url: str, game: str, key_id: str, secret: str, results: list[dict], match_id: str | None = None
) -> tuple[int, dict]:
    match_id = match_id or str(uuid.uuid4())
    path = f"/api/v1/games/{game}/matches/{match_id}/results"
    body = json.dumps(
        {
            "played_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "duration_s": 540,
            "results": results,
        }
    ).encode()
    timestamp = str(int(time.time()))
    request = urllib.request.Request(
        url.rstrip("/") + path,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-Leaderboard-Key": key_id,
            "X-Leaderboard-Timestamp": timestamp,
            "X-Leaderboard-Signature": sign(secret, timestamp, "POST", path, body),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--game", default="demo")
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--secret", required=True)
    parser.add_argument("--player", action="append", required=True, help="PLAYER_ID:POINTS, repeatable")
    args = parser.parse_args()
    results = []
    for item in args.player:
        player_id, points = item.rsplit(":", 1)
        results.append({"player_id": player_id, "points": int(points)})
    status, answer = submit(args.url, args.game, args.key_id, args.secret, results)
    print(status, json.dumps(answer, indent=2))


if __name__ == "__main__":
    main()
