"""scripts/check_function_length.py (`make check`): functions over 60 lines, outside tests,
migrations and bench/, are named with their length, and make it exit 1."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_function_length.py"


def _function(name: str, lines: int, indent: str = "") -> str:
    """A function of exactly `lines` lines, its `def` line and docstring included."""
    body = [f"{indent}def {name}():", f'{indent}    """Doc."""']
    body += [f"{indent}    x = {i}" for i in range(lines - 2)]
    return "\n".join(body) + "\n"


def _check(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, paths)], capture_output=True, text=True, check=False)


def test_long_functions_are_named_and_fail_the_check(tmp_path: Path) -> None:
    app = tmp_path / "app"
    (app / "tests").mkdir(parents=True)
    (app / "migrations").mkdir()
    (app / "services.py").write_text(
        _function("fits", 60) + "\n\n" + _function("too_long", 61) + "\n\nclass A:\n" + _function("method", 70, "    ")
    )
    (app / "async_views.py").write_text(_function("view", 62).replace("def view", "async def view"))
    (app / "tests" / "test_services.py").write_text(_function("test_long", 100))
    (app / "migrations" / "0001_initial.py").write_text(_function("forwards", 100))
    (app / "test_here.py").write_text(_function("test_also_long", 100))
    done = _check(app)
    assert done.returncode == 1
    services, views = app / "services.py", app / "async_views.py"
    assert done.stdout.splitlines() == [
        f"{services}:127 method (70 lines)",
        f"{views}:1 view (62 lines)",
        f"{services}:63 too_long (61 lines)",
    ]


def test_a_tree_without_long_functions_passes(tmp_path: Path) -> None:
    (tmp_path / "short.py").write_text(_function("fits", 60))
    done = _check(tmp_path)
    assert (done.returncode, done.stdout) == (0, "")
