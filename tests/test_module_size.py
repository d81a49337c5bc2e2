"""No product module over 800 lines (issue 29): a module that grows past it is split by concern
(docs/architecture.md). Migrations are generated and not counted."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("config", "core", "evaluation", "annotation", "leaderboard")
MAX_LINES = 800


def _too_long(paths) -> list[tuple[Path, int]]:
    return [(path, lines) for path in paths
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES]


def test_no_product_module_is_over_800_lines():
    paths = [path for app in APPS for path in sorted((ROOT / app).rglob("*.py"))
             if "migrations" not in path.parts]
    assert len(paths) > 200  # the apps were found
    too_long = [f"{path.relative_to(ROOT)}: {lines}" for path, lines in _too_long(paths)]
    assert not too_long, f"split these by concern: {too_long}"


def test_the_check_counts_lines(tmp_path):
    short, long = tmp_path / "short.py", tmp_path / "long.py"
    short.write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    long.write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    assert _too_long([short, long]) == [(long, MAX_LINES + 1)]
