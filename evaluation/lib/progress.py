"""How long work reports progress: a callback (stage, done, total), shared by every layer."""

from collections.abc import Callable

Progress = Callable[[str, int, int], None]


def no_progress(stage: str, done: int, total: int) -> None:
    """The Progress of a caller that does not watch."""
    return None
