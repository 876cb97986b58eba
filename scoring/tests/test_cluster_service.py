"""The service with its boards on a real Redis Cluster (REDIS_CLUSTER_URL): the writes (applies,
redeliveries, revocations, reinstatements, a hidden player, names), the reads and a rebuild run on
redis-py's cluster client, and every read equals what a plain Redis rebuilt from the same ledger
answers. Games at S = 1 (one slot per season) and S = 3 (a slot per shard)."""

import contextlib
import random
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
import redis as redis_lib
from django.utils import timezone
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from boards import keys, selectors
from boards.services import friendship_add
from common.redis import boards_client, deployment_keys_drop
from common.redis import client as plain_client
from scoring.models import ScoreEvent
from scoring.moderation import results_reinstate, results_revoke
from scoring.outbox import events_apply_by_id
from scoring.players import player_update
from scoring.rebuild import boards_rebuild
from scoring.reconcile import boards_reconcile
from scoring.selectors import boards_diff
from scoring.testing import drain, make_game, make_key, match_body, submit_direct, unapplied
from scoring.tests.test_sharded_boards import feed, reads
from scoring.unreflected import unreflected_check
from seasons.models import Game, Season

pytestmark = pytest.mark.django_db

SAMPLE = ["p000", "p001", "p150", "A", "Z", "a-1", "p239", "nobody", "x39", "y00", "y07", "z03", "hideme"]


@pytest.fixture
def cluster_boards(redis_cluster, settings):
    """The boards on the session's cluster, emptied first; the plain Redis keeps the rest."""
    settings.REDIS_CLUSTER_URL = redis_cluster.url
    cluster = boards_client()
    assert isinstance(cluster, RedisCluster)
    cluster.flushall(target_nodes=RedisCluster.PRIMARIES)
    _caches_clear()
    yield cluster
    _caches_clear()


def _caches_clear() -> None:
    selectors.top_cache.clear()
    selectors.distribution_cache.clear()


def _board_keys(redis, game: Game) -> set[str]:
    return {str(k) for k in redis.scan_iter(match=keys.board_pattern(game.slug), count=1000)}


@pytest.mark.parametrize("rule", ["competition", "dense"])
def test_the_service_on_a_cluster_answers_what_one_redis_rebuilt_from_the_ledger_answers(
    cluster_boards, settings, rule
):
    start = timezone.now() - timedelta(days=5)
    games = [
        make_game("cone", tie_rule=rule, start=start),
        make_game("cthree", tie_rule=rule, start=start, board_shards=3),
    ]
    for a, b in [("p000", "p001"), ("p000", "p150"), ("A", "Z"), ("y07", "y02"), ("hideme", "p000")]:
        for g in games:
            friendship_add(game=g, player_id=a, friend_id=b)
    for g in games:
        player_update(game=g, player_id="x00", display_name="Player One")  # never revoked below
    feed(games, results=300, seed=11 + len(rule))
    now = timezone.now()
    for g in games:  # a player who goes hidden: their results leave every board, later ones never land
        submit_direct(g, make_key(g), match_body([{"player_id": "hideme", "points": 999}]), now=now)
    drain()
    ids = list(ScoreEvent.objects.values_list("id", flat=True))
    random.Random(3).shuffle(ids)
    events_apply_by_id(event_ids=ids, dedup_ttl_s=3600)  # redeliveries count nothing twice
    for g in games:
        events = list(ScoreEvent.objects.filter(game=g).order_by("id").values_list("id", flat=True))
        results_revoke(event_ids=events[10:30], reason="test")
        results_reinstate(event_ids=events[12:16], reason="test")
        player_update(game=g, player_id="hideme", hidden=True)
        submit_direct(g, make_key(g), match_body([{"player_id": "hideme", "points": 5}]), now=timezone.now())
    drain()

    cluster = cluster_boards
    cluster_url = settings.REDIS_CLUSTER_URL
    for g in games:
        season = Season.objects.get(game=g)
        on_cluster = _board_keys(cluster, g)
        assert on_cluster and not _board_keys(plain_client(), g)  # the boards live on the cluster only
        # Every key of one shard (or of the unsplit season) carries its slot's tag.
        whole = keys.BoardRef(g.slug, season.id, "all")
        slots = {part.slot for part in whole.shards(season.board_shards)}
        assert all(any(key.endswith(slot) or f"{slot}:" in key for slot in slots) for key in on_cluster)
        assert boards_diff(game=g, now=timezone.now()) == {}
    nodes = {
        cluster.get_node_from_key(part.key).name
        for part in keys.BoardRef("cthree", Season.objects.get(game=games[1]).id, "all").shards(3)
    }
    assert len(nodes) >= 2, nodes  # the shards spread over the masters

    on_cluster_reads = {g.slug: reads(g, SAMPLE) for g in games}
    assert on_cluster_reads["cone"] == on_cluster_reads["cthree"]
    top = on_cluster_reads["cone"]["all/None/None top 1000"]
    assert "hideme" not in {e["player_id"] for e in top}
    assert any(e["display_name"] == "Player One" for e in top)
    assert on_cluster_reads["cone"]["all/None/None player hideme"] is None

    # A rebuild on the cluster (staged copies, the pause in every slot, one MULTI per slot).
    boards_rebuild(game=games[1])
    assert boards_diff(game=games[1], now=timezone.now()) == {}
    _caches_clear()
    assert reads(games[1], SAMPLE) == on_cluster_reads["cthree"]

    # Drift on the cluster (a member gone from one shard, a ghost on another) is found and repaired
    # by the reconciliation.
    cluster.set(keys.epoch_key(), f"{timezone.now().isoformat()} test")
    season = Season.objects.get(game=games[1])
    one, two = keys.BoardRef("cthree", season.id, "all").shards(3)[1:]
    victim = str(cluster.zrange(one.key, 0, 0)[0])
    cluster.zrem(one.key, victim)
    cluster.zadd(two.key, {"ghost": 1})
    assert set(boards_diff(game=games[1], now=timezone.now())) == {one.key, two.key}
    report = boards_reconcile(game=games[1], full=True)
    assert report.drift == 2 and report.repaired == 2, report
    assert boards_diff(game=games[1], now=timezone.now()) == {}

    # The same ledger rebuilt into the plain Redis answers the same.
    settings.REDIS_CLUSTER_URL = ""
    _caches_clear()
    for g in games:
        boards_rebuild(game=g)
        assert reads(g, SAMPLE) == on_cluster_reads[g.slug], g.slug

    # A realignment with a restored ledger drops the deployment's keys on the cluster too.
    settings.REDIS_CLUSTER_URL = cluster_url
    assert deployment_keys_drop() > 0
    assert not any(_board_keys(cluster, g) for g in games)


def test_board_reads_over_http_on_a_cluster(cluster_boards, client):
    game = make_game("chttp", start=timezone.now() - timedelta(days=1), board_shards=3)
    key = make_key(game)
    now = timezone.now()
    for i in range(30):
        submit_direct(game, key, match_body([{"player_id": f"h{i:02d}", "points": 10 * i}]), now=now)
    drain()
    top = client.get("/api/v1/games/chttp/boards/all/top?n=5")
    assert top.status_code == 200, top.content
    assert [e["player_id"] for e in top.json()["entries"]] == ["h29", "h28", "h27", "h26", "h25"]
    me = client.get("/api/v1/games/chttp/boards/all/players/h20")
    assert me.status_code == 200 and me.json()["rank"] == 10
    around = client.get("/api/v1/games/chttp/boards/all/players/h20/around?r=1")
    assert [e["player_id"] for e in around.json()["entries"]] == ["h21", "h20", "h19"]
    assert not _board_keys(plain_client(), game)
    metrics = client.get("/metrics").content.decode()
    for shard in ("0", "1", "2"):  # each shard's scripts timed, reads and applies apart
        for op in ("read", "apply"):
            assert f'leaderboard_board_shard_seconds_count{{game="chttp",op="{op}",shard="{shard}"}}' in metrics
    ready = client.get("/health/ready")
    assert ready.status_code == 200 and ready.json()["redis_cluster"]["state"] == "ok"
    assert sorted(ready.json()["redis_cluster"]["nodes"].values()) == ["master"] * 3 + ["replica"] * 3


@pytest.mark.serial
@pytest.mark.timeout(120)
def test_a_master_killed_under_load_fails_over_and_nothing_accepted_is_lost(redis_cluster_factory, settings, client):
    """Results keep coming and boards keep being read while a master is SIGKILLed: its replica takes
    over, reads answer 200 again (503 meanwhile at worst), every accepted result ends on the boards.
    Then the writes the old master acknowledged and never passed on (here: taken off the promoted
    node by hand, boards and markers together, as a loss leaves them) are found by the dedup check
    and put back."""
    cluster = redis_cluster_factory()
    settings.REDIS_CLUSTER_URL = cluster.url
    redis = boards_client()
    now = timezone.now()
    redis.set(keys.epoch_key(), f"{(now - timedelta(hours=1)).isoformat()} test")
    game = make_game("cfail", start=now - timedelta(days=1), board_shards=3)
    key = make_key(game)
    statuses: list[int] = []
    apply_errors = 0

    def load(round_: int) -> None:
        nonlocal apply_errors
        body = match_body([{"player_id": f"f{round_:03d}-{i}", "points": 1 + (round_ * 7 + i) % 90} for i in range(6)])
        assert submit_direct(game, key, body, now=timezone.now()).http_status == 202
        try:
            drain()
        except (RedisError, RedisClusterException):
            apply_errors += 1  # left unapplied in the ledger; the next drain applies it
        statuses.append(client.get("/api/v1/games/cfail/boards/all/top?n=10").status_code)

    for round_ in range(10):
        load(round_)
    season = Season.objects.get(game=game)
    ref = keys.BoardRef(game.slug, season.id, "all")
    killed = cluster.kill_master(redis.get_node_from_key(ref.shards(3)[0].key).port)  # shard 0's master
    killed_at = time.monotonic()
    round_ = 10
    while time.monotonic() - killed_at < 5:  # the failover takes 2-3 s (node timeout 1 s)
        load(round_)
        round_ += 1
        time.sleep(0.05)
    cluster.wait_failover(killed, timeout=15)
    after = len(statuses)
    for _ in range(10):
        load(round_)
        round_ += 1
    drain()
    assert set(statuses[:10]) == {200}
    assert apply_errors and Counter(statuses)[503], (apply_errors, Counter(statuses))  # the kill was felt
    assert set(statuses[after:]) == {200}, statuses
    assert set(statuses) <= {200, 503}, statuses
    assert not unapplied().exists()
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert ScoreEvent.objects.count() == 6 * round_
    ready = client.get("/health/ready")  # ready again, the dead node named
    assert ready.status_code == 200, ready.content
    nodes = ready.json()["redis_cluster"]["nodes"]
    assert len(nodes) == 6 and nodes[f"127.0.0.1:{killed}"].endswith(",fail"), nodes
    assert sum(1 for role in nodes.values() if role == "master") == 3

    # The loss of unreplicated writes: some results gone from a promoted master's shard, with their
    # markers. The dedup check (beat, every minute) finds the missing markers and corrects them.
    shard = ref.shards(3)[0]  # its slots now on the promoted replica
    assert redis.get_node_from_key(shard.key).port != killed
    lost = list(ScoreEvent.objects.filter(game=game).order_by("-id"))[:30]
    lost = [e for e in lost if keys.shard_of(e.player_id, 3) == shard.shard]
    assert lost
    for e in lost:
        redis.hdel(*keys.dedup_location(e.id, shard.slot))
        for board in _board_keys(redis, game):
            if keys.is_board_key(board) and board.endswith(shard.slot):
                redis.zrem(board, e.player_id)
    assert boards_diff(game=game, now=timezone.now())
    report = unreflected_check(now=timezone.now() + timedelta(minutes=2))
    assert report.missing == len(lost) and report.repaired > 0, report
    assert boards_diff(game=game, now=timezone.now()) == {}


def _replicas_caught_up(cluster) -> bool:
    for node in cluster.nodes:
        if node.role != "master":
            continue
        role = redis_lib.Redis(port=node.port).execute_command("ROLE")
        if any(int(replica[2]) != int(role[1]) for replica in role[2]):
            return False
    return True


def _script_reads(cluster, role: str) -> int:
    """Read-only script calls the nodes of `role` have served."""
    total = 0
    for node in cluster.nodes:
        if node.role == role:
            stats = redis_lib.Redis(port=node.port).info("commandstats")
            total += sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha_ro", "eval_ro"))
    return total


def test_reads_from_replicas_answer_what_the_masters_answer(cluster_boards, redis_cluster, settings):
    game = make_game("crepl", tie_rule="dense", start=timezone.now() - timedelta(days=5), board_shards=3)
    feed([game], results=200, seed=5)
    drain()
    deadline = time.monotonic() + 10
    while not _replicas_caught_up(redis_cluster) and time.monotonic() < deadline:
        time.sleep(0.05)
    from_masters = reads(game, SAMPLE)
    settings.REDIS_CLUSTER_REPLICA_READS = True
    _caches_clear()
    on_replicas, on_masters = _script_reads(redis_cluster, "replica"), _script_reads(redis_cluster, "master")
    assert reads(game, SAMPLE) == from_masters
    assert _script_reads(redis_cluster, "replica") > on_replicas + 100  # the scripts ran on the replicas
    assert _script_reads(redis_cluster, "master") == on_masters  # and none on the masters


@pytest.mark.timeout(240)
def test_slots_moved_under_load_lose_no_score(redis_cluster_factory, settings, client):
    """An operator empties a master (`redis-cli --cluster reshard`: every slot of it to another
    master, keys migrated slot by slot) while results are applied and boards read: redirects
    (MOVED, ASK, TRYAGAIN) are followed or retried, and every accepted result ends on the boards."""
    cluster = redis_cluster_factory()
    settings.REDIS_CLUSTER_URL = cluster.url
    redis = boards_client()
    game = make_game("cmove", start=timezone.now() - timedelta(days=1), board_shards=3)
    key = make_key(game)
    season = Season.objects.get(game=game)
    ref = keys.BoardRef(game.slug, season.id, "all")
    statuses: list[int] = []

    def load(round_: int) -> None:
        body = match_body([{"player_id": f"m{round_:03d}-{i}", "points": 1 + (round_ * 5 + i) % 70} for i in range(6)])
        assert submit_direct(game, key, body, now=timezone.now()).http_status == 202
        with contextlib.suppress(RedisError, RedisClusterException):
            drain()  # a failed apply stays unapplied in the ledger: the next drain takes it
        statuses.append(client.get("/api/v1/games/cmove/boards/all/top?n=10").status_code)

    for round_ in range(5):
        load(round_)
    source = redis.get_node_from_key(ref.shards(3)[0].key).port
    target = next(n.port for n in cluster.nodes if n.role == "master" and n.port != source)
    moved: list[int] = []
    mover = threading.Thread(target=lambda: moved.append(cluster.reshard(source, target)))
    mover.start()
    round_ = 5
    while mover.is_alive():
        load(round_)
        round_ += 1
    mover.join()
    assert moved and moved[0] > 5000  # every slot of the source master
    for _ in range(5):
        load(round_)
        round_ += 1
    drain()
    assert round_ > 10  # the load ran while the slots moved
    assert redis.get_node_from_key(ref.shards(3)[0].key).port == target
    assert not unapplied().exists()
    assert ScoreEvent.objects.count() == 6 * round_
    assert boards_diff(game=game, now=timezone.now()) == {}
    assert set(statuses[-5:]) == {200}
    assert set(statuses) <= {200, 503}, statuses
