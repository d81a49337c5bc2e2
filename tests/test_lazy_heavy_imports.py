"""Heavy libraries are imported by the code that calls them, not at start-up (issue 18, point 6):
litellm alone cost every process that loads the task registry ~140 MB and seconds, so
`import_benchmark` sat at ~330 MB before reading a byte (now ~190 MB)."""

import os
import subprocess
import sys

from tests.support.worker import ROOT

HEAVY = ("litellm", "openai", "torch", "sentence_transformers", "transformers", "sklearn",
         "numba")


def test_loading_every_app_and_command_imports_no_heavy_library():
    probe = ("import sys, django\n"
             "django.setup()\n"
             "import config.urls, evaluation.tasks, annotation.tasks, leaderboard.tasks\n"
             "from django.core.management import load_command_class\n"
             "load_command_class('evaluation', 'import_benchmark')\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                            text=True, timeout=120,
                            env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]", result.stdout
