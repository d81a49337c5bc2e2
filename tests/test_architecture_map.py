"""docs/architecture.md is the whole map: every product module is named in it (by its file name,
with or without `.py`), except migrations and management commands, which it names as folders."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("config", "core", "evaluation", "annotation", "leaderboard")
NAMED_FOLDERS = ("migrations", "commands")


def _product_modules():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            if path.name == "__init__.py" or set(path.parts) & set(NAMED_FOLDERS):
                continue
            yield path.relative_to(ROOT)


def test_every_product_module_is_on_the_map():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [str(path) for path in _product_modules()
               if not re.search(r"(?<![\w.-])" + re.escape(path.stem) + r"(?![\w-])", text)]
    assert not missing, f"modules docs/architecture.md does not name: {missing}"


def test_the_named_folders_exist_on_the_map():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "`migrations/`" in text and "`management/commands/`" in text
