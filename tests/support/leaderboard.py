"""A small leaderboard world for URL walks: the researcher owns a published system and a
private one on the tiny benchmark, each with a finished Trace run. Submission uuids are fixed
so that URL tables can name them."""

from pathlib import Path

from tests.support.submissions import write_lines

PUBLIC_SUBMISSION = "00000000-0000-4000-8000-000000000001"
PRIVATE_SUBMISSION = "00000000-0000-4000-8000-000000000002"


def make_world(*, benchmark, owner, folder: Path) -> dict:
    from evaluation.models import Submission
    from evaluation.services.runs import run_create, run_process
    from evaluation.services.submissions import submission_create, system_create

    world = {}
    for slug, uuid, public in (("lb-public", PUBLIC_SUBMISSION, True),
                               ("lb-private", PRIVATE_SUBMISSION, False)):
        system = system_create(name=slug, owner=owner, family="LLM")
        submission = submission_create(system=system, benchmark=benchmark, user=owner,
                                       path_or_file=write_lines(folder / f"{slug}.jsonl"))
        run = run_create(submission=submission, user=owner, enqueue=False)
        run_process(job_id=run.job_id)
        Submission.objects.filter(pk=submission.pk).update(uuid=uuid, is_public=public)
        world[slug] = (system, run)
    return world


def worse_lines() -> list[dict]:
    """The tiny submission with every ranking reversed and one quote made unverifiable."""
    from tests.support.submissions import tiny_lines

    lines = tiny_lines()
    for line in lines:
        line["ranked_item_ids"] = list(reversed(line["ranked_item_ids"]))
        line["response"] = line["response"].replace("incredible", "dreadful")
    return lines


def mixed_lines() -> list[dict]:
    """Right on the first dialogue, wrong elsewhere, and no quotes at all."""
    from tests.support.submissions import tiny_lines

    lines = tiny_lines()
    for line in lines[2:]:
        line["ranked_item_ids"] = list(reversed(line["ranked_item_ids"]))
    for line in lines:
        line["response"] = "Here is my pick."
        line["citations"] = []
    return lines


def evaluated(system, *, benchmark, lines, folder: Path, public: bool):
    """(submission, run) of SYSTEM answering with LINES, evaluated in-process."""
    from evaluation.services.runs import run_create, run_process
    from evaluation.services.submissions import submission_create

    path = write_lines(folder / f"{system.slug}-{len(list(folder.glob('*.jsonl')))}.jsonl",
                       lines)
    submission = submission_create(system=system, benchmark=benchmark, path_or_file=path,
                                   user=system.owner)
    run = run_create(submission=submission, user=system.owner, enqueue=False)
    run_process(job_id=run.job_id)
    if public and not submission.is_public:
        submission.is_public = True
        submission.save(update_fields=["is_public"])
    return submission, run
