"""The navigation bar's links, reversed once per URL prefix.

Every page shows them, and each `{% url %}` costs about 80 µs of Python on the reference
machine: reversing them on every request was a tenth of the annotation item page's CPU
(docs/performance.md). Templates read `nav.<key>`.
"""

import functools

from django.urls import get_script_prefix, reverse

LINKS = {
    "home": "home",
    "benchmarks": "benchmark_list",
    "leaderboards": "leaderboard:index",
    "arenas": "leaderboard:arena_index",
    "studies": "annotation:study_list",
    "metric_boards": "annotation:metric_board_index",
    "systems": "leaderboard:system_list",
    "signup": "leaderboard:signup",
    "login": "login",
    "logout": "logout",
    "admin": "admin:index",
}


@functools.lru_cache(maxsize=16)
def _links(prefix: str) -> dict[str, str]:
    return {key: reverse(name) for key, name in LINKS.items()}  # reverse() applies PREFIX


def nav_context(request):
    return {"nav": _links(get_script_prefix())}
