"""Every Redis key is spelled in one module per app (CONTRIBUTING.md): outside the key modules
(and common/redis.py, which defines the prefix and the Celery broker's keys), no module of the
source tree but tests calls `key_prefix()` or builds a key from a prefix, and each key module's
docstring lists every key format it spells. Read from the source (ast), so a key spelled in a
script (bench/) counts too."""

import ast
import itertools
import re
from collections.abc import Iterator
from pathlib import Path

from common.testing import ROOT

KEY_MODULES = (
    "anticheat/keys.py",
    "boards/keys.py",
    "common/keys.py",
    "competitions/keys.py",
    "competitions/league_keys.py",
    "seasons/keys.py",
)
PREFIX_MODULE = "common/redis.py"
# Where the libraries that keep keys of their own are configured, each under REDIS_KEY_PREFIX
# (django-redis's cache, kombu's global_keyprefix, the channel layer): common/redis.py lists them.
LIBRARY_PREFIXES = "leaderboard_site/settings/"
SKIPPED_PARTS = {"tests", "migrations", "var", "node_modules"}
# What follows a prefix in a key: a colon and a part (`:b:`, `:epoch`, `:*`), not a message's
# colon (f"{prefix}: deleted", "keys under {prefix}:").
KEY_PART = re.compile(r":\S")


def sources() -> Iterator[tuple[str, ast.Module]]:
    """Every Python module of the project but tests (and what is not the project's)."""
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if any(part in SKIPPED_PARTS or part.startswith(".") for part in relative.parts):
            continue
        yield relative.as_posix(), ast.parse(Path(path).read_text(), str(relative))


def names_prefix(node: ast.AST) -> bool:
    """An expression that is, or is made of, a key prefix: `key_prefix()`, `prefix`,
    `args.key_prefix`, `REDIS_KEY_PREFIX`, `key_prefix_from_env()` and the like."""
    for inner in ast.walk(node):
        name = inner.id if isinstance(inner, ast.Name) else inner.attr if isinstance(inner, ast.Attribute) else ""
        if "prefix" in name.lower():
            return True
    return False


def calls_key_prefix(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "key_prefix") or (
        isinstance(func, ast.Attribute) and func.attr == "key_prefix"
    )


def keys_from_prefix(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, the literal after the prefix) of each key built from a prefix: an f-string with a
    prefix followed by a key's part (f"{prefix}:b:{game}"), or prefix + ":..."."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for value, after in itertools.pairwise(parts):
                if (
                    isinstance(value, ast.FormattedValue)
                    and names_prefix(value.value)
                    and isinstance(after, ast.Constant)
                    and KEY_PART.match(str(after.value))
                ):
                    yield node.lineno, str(after.value)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            right = node.right
            if names_prefix(node.left) and isinstance(right, ast.Constant) and KEY_PART.match(str(right.value)):
                yield node.lineno, str(right.value)


def test_only_the_key_modules_spell_keys():
    found = []
    for path, tree in sources():
        if path in KEY_MODULES or path == PREFIX_MODULE:
            continue
        found += [f"{path}:{node.lineno} calls key_prefix()" for node in ast.walk(tree) if calls_key_prefix(node)]
        if not path.startswith(LIBRARY_PREFIXES):
            found += [f"{path}:{line} builds a key {text!r} from a prefix" for line, text in keys_from_prefix(tree)]
    assert not found, "spell keys in the app's keys module instead:\n" + "\n".join(found)


def test_each_key_module_lists_every_key_it_spells():
    trees = dict(sources())
    for path in KEY_MODULES:
        tree = trees[path]
        docstring = ast.get_docstring(tree) or ""
        spelled = sorted({text for _, text in keys_from_prefix(tree)})
        assert spelled, f"{path} spells no key"
        missing = [text for text in spelled if f"lb{text}" not in docstring]
        assert not missing, f"{path}: keys not in its docstring: {missing}"


def test_the_check_finds_a_key_spelled_elsewhere():
    """The check itself: the spellings it must catch, and what it must let be."""
    caught = ast.parse('k = f"{key_prefix()}:x:{a}"\nj = f"{args.key_prefix}:b:{g}"\nm = prefix + ":dd:1"')
    assert [text for _, text in keys_from_prefix(caught)] == [":x:", ":b:", ":dd:1"]
    assert any(calls_key_prefix(node) for node in ast.walk(caught))
    fine = ast.parse('k = keys.names_key(game)\nq = f"{queue}:{n}"\nlog(f"keys under {prefix}: {n} deleted")')
    assert not list(keys_from_prefix(fine))
    assert not any(calls_key_prefix(node) for node in ast.walk(fine))
