"""Leaderboard fixtures: systems with finished Trace runs on the tiny benchmark."""

import pytest

from tests.support.leaderboard import worse_lines
from tests.support.submissions import write_lines


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def finished_submission(tiny_benchmark, tmp_path):
    """make(system, lines=None, public=False, benchmark=tiny) -> (submission, run), evaluated
    in-process."""
    from evaluation.services.runs import run_create, run_process
    from evaluation.services.submissions import submission_create

    counter = iter(range(1000))

    def make(system, lines=None, public=False, user=None, benchmark=None):
        path = write_lines(tmp_path / f"s{next(counter)}.jsonl", lines)
        submission = submission_create(system=system, benchmark=benchmark or tiny_benchmark,
                                       path_or_file=path, user=user or system.owner)
        run = run_create(submission=submission, user=user or system.owner, enqueue=False)
        run_process(job_id=run.job_id)
        if public:
            submission.is_public = True
            submission.save(update_fields=["is_public"])
        run.refresh_from_db()
        return submission, run

    return make


@pytest.fixture
def board_world(db, tiny_benchmark, researcher, finished_submission):
    """Three systems: the researcher's public 'Echo' and private 'Draft', and a baseline."""
    from evaluation.services.submissions import system_create, system_get_or_create_baseline

    echo = system_create(name="Echo", owner=researcher, family="LLM", team="Lab A")
    draft = system_create(name="Draft", owner=researcher, family="LLM")
    base = system_get_or_create_baseline(key="reverse", name="Reverse", family="retrieval",
                                         description="ranks backwards")
    runs = {
        "echo": finished_submission(echo, public=True),
        "draft": finished_submission(draft),
        "base": finished_submission(base, worse_lines()),
    }
    return {"echo": echo, "draft": draft, "base": base, "runs": runs}


@pytest.fixture
def log_benchmark(tiny_benchmark):
    """The tiny benchmark taking `log` submissions too."""
    from evaluation.models import Benchmark

    Benchmark.objects.filter(pk=tiny_benchmark.pk).update(protocols=["turn", "log"])
    tiny_benchmark.refresh_from_db()
    return tiny_benchmark
