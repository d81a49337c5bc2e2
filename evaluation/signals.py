"""What `evaluation` tells the apps above it, without importing them (docs/architecture.md).

`results_changed` is sent, once the transaction commits, when a leaderboard's results may have
changed: a run finished, or a submission was published or withdrawn. `leaderboard` listens and
refreshes its rank snapshots in the background.
"""

from django.db import transaction
from django.dispatch import Signal

results_changed = Signal()  # keyword arguments: benchmark_id, protocol


def results_changed_notify(*, benchmark_id: int, protocol: str) -> None:
    transaction.on_commit(lambda: results_changed.send(
        sender=None, benchmark_id=benchmark_id, protocol=protocol))
