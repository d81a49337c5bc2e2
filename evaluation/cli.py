"""Shared glue for management commands: progress bars and format errors on stderr."""

from contextlib import contextmanager

from django.core.management.base import CommandError
from tqdm import tqdm

from .formats.errors import FormatError


class ProgressBars:
    """A `progress(stage, done, total)` callback drawing one tqdm bar per stage."""

    def __init__(self, stream, enabled: bool = True):
        self.stream = stream
        self.enabled = enabled
        self.bars: dict[str, tqdm] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        bar = self.bars.get(stage)
        if bar is None:
            bar = self.bars[stage] = tqdm(total=total, desc=stage, unit="", file=self.stream,
                                          leave=True, dynamic_ncols=True)
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


@contextmanager
def format_errors_as_command_error():
    """Print every format issue, one per line, and exit 1."""
    try:
        yield
    except FormatError as exc:
        raise CommandError("invalid input, nothing was stored:\n" + str(exc)) from exc
