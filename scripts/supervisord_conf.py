"""Render deploy/supervisord.conf.in with values from the environment; print it, or write --out.

    RUN_DIR=var LOG_DIR=var/log python scripts/supervisord_conf.py --out var/supervisord.conf

Environment (defaults): PORT (8000), HOST (127.0.0.1), WEB_CONCURRENCY (2), WEB_NICE (10),
WORKER_CONCURRENCY (2), WORKER_NAME (worker), DEMO (0: the demo stream is configured, not started),
RUN_DIR (var/: the socket, pid file, beat schedule, supervisord's own log), LOG_DIR (unset: every
process writes to supervisord's standard output; set: one rotated file per process in it),
BIN (the directory of this Python: the venv's uvicorn and celery). Standard library only.
"""

import argparse
import os
import string
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "supervisord.conf.in"
PROGRAMS = ("web", "worker", "beat", "events", "demo")


def _flag(name: str, default: str) -> str:
    raw = os.environ.get(name, default).strip().lower()
    if raw in {"1", "true", "yes", "on"}:
        return "true"
    if raw in {"0", "false", "no", "off", ""}:
        return "false"
    raise SystemExit(f"{name} must be 1 or 0, got {raw!r}")


def _int(name: str, default: int) -> str:
    raw = os.environ.get(name) or str(default)
    try:
        return str(int(raw))
    except ValueError:
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from None


def values() -> dict[str, str]:
    run_dir = Path(os.environ.get("RUN_DIR") or ROOT / "var").resolve()
    log_dir = os.environ.get("LOG_DIR", "")
    found = {
        "ROOT": str(ROOT),
        "BIN": os.environ.get("BIN") or str(Path(sys.executable).parent),
        "RUN_DIR": str(run_dir),
        "HOST": os.environ.get("HOST") or "127.0.0.1",
        "PORT": _int("PORT", 8000),
        "WEB_CONCURRENCY": _int("WEB_CONCURRENCY", 2),
        "WEB_NICE": _int("WEB_NICE", 10),
        "WORKER_CONCURRENCY": _int("WORKER_CONCURRENCY", 2),
        "WORKER_NAME": os.environ.get("WORKER_NAME") or "worker",
        "DEMO": _flag("DEMO", "0"),
    }
    if log_dir:
        path = Path(log_dir).resolve()
        path.mkdir(parents=True, exist_ok=True)
        found.update({f"LOG_{p.upper()}": str(path / f"{p}.log") for p in PROGRAMS})
        found.update(LOG_MAXBYTES="50MB", LOG_BACKUPS="5")
    else:  # the terminal of `make run`, or the journal of a supervisord run by systemd
        found.update({f"LOG_{p.upper()}": "/dev/stdout" for p in PROGRAMS})
        found.update(LOG_MAXBYTES="0", LOG_BACKUPS="0")
    # Supervisor expands %(name)s in its values: a literal % must be doubled.
    escaped = {name: value.replace("%", "%%") for name, value in found.items()}
    if log_dir:  # one file for each web process (numprocs): supervisor fills in its number
        escaped["LOG_WEB"] = str(Path(log_dir).resolve()).replace("%", "%%") + "/web-%(process_num)d.log"
    return escaped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write here instead of standard output")
    args = parser.parse_args()
    text = string.Template(TEMPLATE.read_text()).substitute(values())
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
