"""Run a command and never stay silent for more than 10 s: its own output passes through as it
comes, and a line "… still <what> (N s)" is printed whenever 10 s pass without any.

`make install` runs pip through it (pip is silent for minutes while it unpacks torch or builds
wheels). Standard library only: it runs before the virtual environment has anything in it.

    python3 scripts/heartbeat.py "installing torch" -- .venv/bin/python -m pip install …

`--every SECONDS` before WHAT changes the 10 s (the tests use it).
"""

import subprocess
import sys
import threading
import time

QUIET_SECONDS = 10.0


def main(argv: list[str]) -> int:
    quiet = QUIET_SECONDS
    if argv[:1] == ["--every"] and len(argv) > 1:
        quiet, argv = float(argv[1]), argv[2:]
    if len(argv) < 3 or argv[1] != "--":
        print("usage: heartbeat.py [--every SECONDS] WHAT -- COMMAND [ARG …]", file=sys.stderr)
        return 2
    what, command = argv[0], argv[2:]
    started = time.monotonic()
    last = [started]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               bufsize=1, text=True, errors="replace")

    def beat():
        while process.poll() is None:
            time.sleep(min(1.0, quiet / 4))
            now = time.monotonic()
            if now - last[0] >= quiet:
                print(f"  … still {what} ({now - started:.0f} s)", flush=True)
                last[0] = now

    threading.Thread(target=beat, daemon=True).start()
    for line in process.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        last[0] = time.monotonic()
    return process.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
