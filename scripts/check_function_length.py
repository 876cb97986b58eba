#!/usr/bin/env python3
"""Functions longer than MAX_LINES lines, outside tests, migrations, bench/ and the venv (`make check`).

A function (def or async def, methods and nested functions too) is measured from its `def` line to
its last line, docstring and comments included (decorators not). Long functions are split into
named steps: functions whose names say what each step is. Prints each offender as
`path:line name (N lines)`, longest first, and exits 1 when there is any.

    python scripts/check_function_length.py [paths...]   (default: the repository)

Standard library only.
"""

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

MAX_LINES = 60
ROOT = Path(__file__).resolve().parent.parent
# Folders never looked into, wherever they are; `bench` only at the top (the benchmarks).
SKIPPED_DIRS = frozenset({"tests", "migrations", "__pycache__", "node_modules"})
SKIPPED_TOP = frozenset({"bench", "var"})


def _is_test_file(path: Path) -> bool:
    return path.name.startswith("test_") or path.name == "conftest.py"


def python_files(root: Path) -> Iterator[Path]:
    """The project's modules under `root`, in a stable order, without the folders left out."""
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        folders = parts[:-1]
        if any(part.startswith(".") for part in folders):  # .venv, .git, caches
            continue
        if root == ROOT and folders and folders[0] in SKIPPED_TOP:
            continue
        if SKIPPED_DIRS.intersection(folders) or _is_test_file(path):
            continue
        yield path


def long_functions(path: Path, max_lines: int = MAX_LINES) -> list[tuple[int, str, int]]:
    """(line, name, length) of each function of `path` longer than `max_lines`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno if node.end_lineno is not None else node.lineno
            length = end - node.lineno + 1
            if length > max_lines:
                found.append((node.lineno, node.name, length))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="files or folders (default: the repository)")
    parser.add_argument("--max-lines", type=int, default=MAX_LINES)
    args = parser.parse_args(argv)
    files: list[Path] = []
    for given in args.paths or [ROOT]:
        given = given.resolve()
        files.extend([given] if given.is_file() else python_files(given))
    offenders = []
    for path in files:
        for line, name, length in long_functions(path, args.max_lines):
            try:
                shown = path.relative_to(ROOT)
            except ValueError:
                shown = path
            offenders.append((length, f"{shown}:{line} {name} ({length} lines)"))
    for _, text in sorted(offenders, key=lambda o: (-o[0], o[1])):
        print(text)
    if offenders:
        print(f"{len(offenders)} functions over {args.max_lines} lines: split them into named steps", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
