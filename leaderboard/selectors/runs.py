"""Which runs a leaderboard shows: per (system, evaluator), the newest succeeded run of the
benchmark and protocol that the viewer may see — a published submission or a reference
baseline for everyone, any submission for the system's owner and staff (marked private)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evaluation.models import Job, Run


@dataclass(frozen=True)
class BoardRun:
    run_id: int
    evaluator: str
    evaluator_version: str
    config_hash: str
    submission_uuid: str
    public: bool
    system_id: int
    slug: str
    name: str
    family: str
    team: str
    is_baseline: bool
    owner_id: int | None


_RUN_FIELDS = ("pk", "evaluator", "evaluator_version", "config_hash", "submission__uuid",
               "submission__is_public", "submission__system_id", "submission__system__slug",
               "submission__system__name", "submission__system__family",
               "submission__system__team", "submission__system__is_baseline",
               "submission__system__owner_id")


def board_runs(*, benchmark, protocol: str, system=None) -> list[BoardRun]:
    """Succeeded runs of the benchmark and protocol, newest first (one query)."""
    runs = Run.objects.filter(submission__benchmark=benchmark, submission__protocol=protocol,
                              job__status=Job.Status.SUCCEEDED)
    if system is not None:
        runs = runs.filter(submission__system=system)
    out = []
    for row in runs.order_by("-created_at", "-pk").values_list(*_RUN_FIELDS):
        (pk, evaluator, version, config, uuid, is_public, system_id, slug, name, family, team,
         is_baseline, owner_id) = row
        out.append(BoardRun(pk, evaluator, version, config, str(uuid), is_public or is_baseline,
                            system_id, slug, name, family, team, is_baseline, owner_id))
    return out


@dataclass
class RunChoice:
    """Per (system, evaluator): the newest run, and the newest public one."""

    latest: dict[tuple[int, str], BoardRun] = field(default_factory=dict)
    latest_public: dict[tuple[int, str], BoardRun] = field(default_factory=dict)

    @classmethod
    def of(cls, runs: list[BoardRun]) -> RunChoice:
        choice = cls()
        for run in runs:  # newest first: keep the first seen
            key = (run.system_id, run.evaluator)
            choice.latest.setdefault(key, run)
            if run.public:
                choice.latest_public.setdefault(key, run)
        return choice

    def for_user(self, user) -> list[BoardRun]:
        shown = []
        for key, run in self.latest.items():
            mine = user.is_authenticated and (user.is_staff or run.owner_id == user.pk)
            chosen = run if mine else self.latest_public.get(key)
            if chosen is not None:
                shown.append(chosen)
        return shown

    def candidates(self, evaluator: str) -> list[int]:
        """Every run this leaderboard may show anyone, in a stable order (the snapshot's)."""
        ids = {r.run_id for k, r in self.latest.items() if k[1] == evaluator}
        ids |= {r.run_id for k, r in self.latest_public.items() if k[1] == evaluator}
        return sorted(ids)


def visible_runs(*, benchmark, protocol: str, user, system=None) -> list[BoardRun]:
    return RunChoice.of(board_runs(benchmark=benchmark, protocol=protocol,
                                    system=system)).for_user(user)
