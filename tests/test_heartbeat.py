"""`make install`, `migrate` and `load_demo` never stay silent for 10 s: scripts/heartbeat.py
passes a command's output through and says it is still working when the command is quiet."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "heartbeat.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60)


def test_a_quiet_command_gets_heartbeats_and_its_own_output_and_status():
    result = _run("--every", "0.5", "testing", "--", sys.executable, "-c",
                  "import sys, time; print('first', flush=True); time.sleep(1.8); "
                  "print('last'); sys.exit(3)")
    lines = result.stdout.splitlines()
    assert lines[0] == "first" and lines[-1] == "last" and result.returncode == 3
    beats = [line for line in lines[1:-1] if line.startswith("  … still testing (")]
    assert 2 <= len(beats) == len(lines) - 2


def test_a_talkative_command_gets_none():
    result = _run("--every", "0.5", "testing", "--", sys.executable, "-c",
                  "import time\nfor k in range(6):\n    print(k, flush=True); time.sleep(0.2)")
    assert result.stdout.split() == [str(k) for k in range(6)]


def test_the_makefile_runs_pip_migrate_and_load_demo_through_it():
    text = (SCRIPT.parent.parent / "Makefile").read_text()
    for step in ("pip install --progress-bar off torch", 'pip install --progress-bar off ".[test]"',
                 "manage.py migrate", "manage.py load_demo"):
        line = next(line for line in text.splitlines() if step in line)
        assert "$(HEARTBEAT)" in line, line
