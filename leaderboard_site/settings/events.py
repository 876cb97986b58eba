"""Events out (events/): how long events stay in the feed, and how webhooks are delivered."""

from .env import env_float, env_int

# Events stay in the feed this many days; the beat's prune deletes older ones (with their deliveries).
EVENTS_KEEP_DAYS = env_int("EVENTS_KEEP_DAYS", 30)
EVENTS_PRUNE_INTERVAL_S = env_float("EVENTS_PRUNE_INTERVAL_S", 3600.0)
# A webhook's answer counts when a 2xx status arrives within this many seconds of the POST.
WEBHOOK_TIMEOUT_S = env_float("WEBHOOK_TIMEOUT_S", 10.0)
# Retries: the first after WEBHOOK_RETRY_BASE_S, each pause twice the one before, at most
# WEBHOOK_RETRY_MAX_S, for WEBHOOK_RETRY_FOR_S after the event; then the delivery has failed.
WEBHOOK_RETRY_BASE_S = env_float("WEBHOOK_RETRY_BASE_S", 1.0)
WEBHOOK_RETRY_MAX_S = env_float("WEBHOOK_RETRY_MAX_S", 600.0)
WEBHOOK_RETRY_FOR_S = env_float("WEBHOOK_RETRY_FOR_S", 86400.0)
# Tries of one webhook in flight at once (per dispatcher process): a slow receiver holds at most
# this many of the dispatcher's connections, never another webhook's turn.
WEBHOOK_CONCURRENCY = env_int("WEBHOOK_CONCURRENCY", 4)
# A claimed try is due again after this long if its dispatcher never records it (killed meanwhile).
WEBHOOK_LEASE_S = env_float("WEBHOOK_LEASE_S", 20.0)
# The dispatcher (manage.py dispatch_events) looks for due deliveries this often when idle, and
# claims at most this many at a time.
EVENTS_DISPATCH_POLL_S = env_float("EVENTS_DISPATCH_POLL_S", 0.5)
EVENTS_DISPATCH_BATCH = env_int("EVENTS_DISPATCH_BATCH", 200)
