"""`make lint` enforces docs/architecture.md: it runs lint-imports, and lint-imports with the
project's own contracts fails on a forbidden import (here: `evaluation` importing an app above
it) in a small generated package tree, and passes on the same tree without it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _contracts() -> str:
    """The [tool.importlinter] tables of pyproject.toml, verbatim."""
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index("[tool.importlinter]")
    end = re.search(r"^\[(?!\[?tool\.importlinter)", text[start + 1:], re.M)
    return text[start:start + 1 + end.start()] if end else text[start:]


def _tree(folder: Path, evaluation_models: str) -> None:
    files = {
        "config/__init__.py": "", "core/__init__.py": "", "evaluation/__init__.py": "",
        "evaluation/lib/__init__.py": "",
        "evaluation/models.py": evaluation_models, "annotation/__init__.py": "",
        "annotation/lib/__init__.py": "", "annotation/views.py": "import evaluation.models\n",
        "leaderboard/__init__.py": "", "leaderboard/lib/__init__.py": "",
        "leaderboard/views.py": "import annotation.views\n",
        "pyproject.toml": _contracts(),
    }
    # every module a contract names must exist: an empty one stands in for it
    for module in re.findall(r'"((?:config|core|evaluation|annotation|leaderboard)(?:\.\w+)+)"',
                             _contracts()):
        name = module.replace(".", "/")
        if not any(key.startswith(name + "/") or key == name + ".py" for key in files):
            files[name + "/__init__.py"] = ""
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def _lint(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=folder, capture_output=True,
                          text=True, env={"PYTHONPATH": str(folder), "PATH": "/usr/bin:/bin"},
                          timeout=120)


def test_make_lint_runs_lint_imports():
    lint = re.search(r"^lint:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert lint and "lint-imports" in lint.group(1)


@pytest.mark.skipif(not LINT_IMPORTS.exists(),
                    reason="lint-imports is not installed beside this Python")
def test_a_forbidden_import_is_caught(tmp_path):
    clean, broken = tmp_path / "clean", tmp_path / "broken"
    _tree(clean, "")
    _tree(broken, "import leaderboard.views  # evaluation must not import an app above it\n")
    ok = _lint(clean)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    failed = _lint(broken)
    assert failed.returncode != 0 and "BROKEN" in failed.stdout, failed.stdout + failed.stderr
    assert "evaluation.models -> leaderboard.views" in failed.stdout
