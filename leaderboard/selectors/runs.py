"""Which runs a leaderboard shows: per (system, evaluator), the newest succeeded run of the
benchmark and protocol that the viewer may see — a published submission or a reference
baseline for everyone, any submission for the system's owner and staff (marked private).

Only runs evaluated on the same splits are comparable: a run's *coverage* is the set of splits
it was scored on (`Run.config["splits"]`), and a leaderboard shows and ranks one coverage at a
time (`test` by default; docs/statistics.md, "Comparing systems").

A `simulated-<simulator>` leaderboard shows the preference-coverage runs of the simulations
made with that simulator (docs/simulation.md); the `log` leaderboard leaves out the log
submissions that simulations made (they are scored on their own board, and would otherwise
replace the system's real logs as its newest run). Only runs of one *design* are comparable
there (the same simulator configuration, users, turns, pool and seed: `simulation_design`), so
on a simulated board a run's coverage is its design (`design-<hash>`), chosen like a split set
(the `splits` parameter names it), the default being the design with the most systems (ties:
the newest)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from evaluation.lib.simulators.simulators import (
    DESIGN_PREFIX,
    design_variant,
    simulation_design,
    simulator_of_protocol,
)
from evaluation.models import Job, Run, Simulation


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
    t2r_no_hit: str | None = None  # the suite's T2R rule for dialogues without a hit
    splits: tuple[str, ...] = ()
    design: tuple[str, str] | None = None  # a simulation run's (key, label)

    @property
    def coverage(self) -> str:
        """What the run is ranked among: its split set, or a simulation run's design."""
        return self.design[0] if self.design else coverage_key(self.splits)

    @property
    def coverage_label(self) -> str:
        return self.design[1] if self.design else coverage_label(self.coverage)


DEFAULT_COVERAGE = "test"


def coverage_key(splits) -> str:
    """The key of a set of splits: sorted names joined by '+' ('dev+test'); '' for a run that
    names none (a whole public data set)."""
    return "+".join(sorted(set(splits or ())))


def coverage_from_param(value: str) -> str:
    """The coverage key a `splits` parameter names: 'dev,test', 'test+dev' or 'test dev' (a
    '+' in a query string) -> 'dev+test'; 'all' -> '' (runs that name no split)."""
    if value.strip().lower() == "all":
        return ""
    return coverage_key(value.replace(",", " ").replace("+", " ").split())


def coverage_label(key: str) -> str:
    return key.replace("+", " + ") if key else "all dialogues"


def is_design(key: str) -> bool:
    """Whether a coverage key is a simulation design's (a simulated board's)."""
    return key.startswith(DESIGN_PREFIX)


@dataclass(frozen=True)
class Coverage:
    key: str
    label: str
    systems: int  # systems with a run of this coverage the viewer sees

    @property
    def param(self) -> str:
        """The value of the leaderboard's `splits` parameter that selects it."""
        return self.key.replace("+", ",") or "all"


def coverages(runs: list[BoardRun]) -> list[Coverage]:
    """The split sets (designs) the runs were evaluated on, with how many systems each has;
    `test` first, then by number of systems; designs by number of systems, then newest first
    (RUNS come newest first)."""
    systems: dict[str, set[int]] = {}
    labels: dict[str, str] = {}
    newest: dict[str, int] = {}
    for run in runs:
        systems.setdefault(run.coverage, set()).add(run.system_id)
        labels.setdefault(run.coverage, run.coverage_label)
        newest[run.coverage] = max(newest.get(run.coverage, 0), run.run_id)
    keys = sorted(systems, key=lambda k: (-len(systems[k]), -newest[k]) if is_design(k)
                  else (k != DEFAULT_COVERAGE, -len(systems[k]), k))
    return [Coverage(k, labels[k], len(systems[k])) for k in keys]


def default_coverage(available: list[Coverage]) -> str:
    """`test` when some run was evaluated on exactly the test split, else the coverage with the
    most systems."""
    return available[0].key if available else DEFAULT_COVERAGE


_RUN_FIELDS = ("pk", "evaluator", "evaluator_version", "config_hash", "submission__uuid",
               "submission__is_public", "submission__system_id", "submission__system__slug",
               "submission__system__name", "submission__system__family",
               "submission__system__team", "submission__system__is_baseline",
               "submission__system__owner_id", "config__suite__t2r_no_hit", "config__splits")


def board_runs(*, benchmark, protocol: str, system=None, coverage: str | None = None,
               sanitised: bool | None = False) -> list[BoardRun]:
    """Succeeded runs of the benchmark and protocol, newest first (one query); only those
    evaluated on exactly the splits COVERAGE when it is given. On a simulated board, the
    simulations' runs on all their dialogues, or (SANITISED) their runs without the leaked
    dialogues (`Simulation.sanitised_run`), or (None) both."""
    runs = Run.objects.publishable().filter(submission__benchmark=benchmark,
                                            job__status=Job.Status.SUCCEEDED)
    simulator = simulator_of_protocol(protocol)
    fields = _RUN_FIELDS
    if simulator is not None:
        mine = {"all": Q(simulation__simulator=simulator),
                "sanitised": Q(sanitised_simulation__simulator=simulator)}
        runs = runs.filter(Q(evaluator=f"simulation.{simulator}"),
                           mine["sanitised"] if sanitised else
                           mine["all"] if sanitised is not None else
                           mine["all"] | mine["sanitised"])
        fields = (*_RUN_FIELDS, "config")  # a simulation run's design
    else:
        runs = runs.filter(submission__protocol=protocol).exclude(
            submission_id__in=Simulation.objects.filter(benchmark=benchmark)
            .exclude(submission=None).values("submission_id"))
    if system is not None:
        runs = runs.filter(submission__system=system)
    out = []
    for row in runs.order_by("-created_at", "-pk").values_list(*fields):
        (pk, evaluator, version, config, uuid, is_public, system_id, slug, name, family, team,
         is_baseline, owner_id, no_hit_rule, splits) = row[:len(_RUN_FIELDS)]
        design = simulation_design(row[-1]) if simulator is not None else None
        run = BoardRun(pk, evaluator, version, config, str(uuid), is_public or is_baseline,
                       system_id, slug, name, family, team, is_baseline, owner_id,
                       no_hit_rule if isinstance(no_hit_rule, str) else None,
                       tuple(sorted(set(splits or ()))),
                       (design.key, design.label) if design else None)
        if coverage is None or run.coverage == coverage:
            out.append(run)
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


class UnknownCoverage(ValueError):
    """The requested split set has no runs on this leaderboard."""


def coverage_choice(*, benchmark, protocol: str, user, splits: str = "",
                    system=None, sanitised: bool = False) -> tuple[str, list[Coverage], RunChoice]:
    """The split set SPLITS names ('' = the default: `test`, else the one with most systems),
    every split set the viewer has runs of, and the runs evaluated on exactly the chosen one
    (of SYSTEM only when given). The leaderboard, the system page and the compare page choose
    this way, so none of them puts numbers of different coverages side by side.

    On a simulated board SANITISED chooses the designs' runs without their leaked dialogues
    (SPLITS names the design either way).

    Raises UnknownCoverage when SPLITS names a split set no run of the viewer's was evaluated
    on."""
    by_coverage = _runs_by_coverage(benchmark=benchmark, protocol=protocol, system=system,
                                    sanitised=sanitised)
    if is_design(splits.strip()):
        splits = design_variant(splits.strip(), sanitised)
    # a system may have runs of several coverages: it counts in each one's ranking
    available = coverages([run for group in by_coverage.values()
                           for run in RunChoice.of(group).for_user(user)])
    coverage = chosen_coverage(available, splits)
    return coverage, available, RunChoice.of(by_coverage.get(coverage, []))


def chosen_coverage(available: list[Coverage], splits: str) -> str:
    """The key of the split set SPLITS names among AVAILABLE ('' = the default); raises
    UnknownCoverage for one with no run."""
    coverage = coverage_from_param(splits)
    if not splits.strip():
        return default_coverage(available)
    if coverage not in {c.key for c in available}:
        what = (f"the design {coverage}" if is_design(coverage)
                else f"the splits {coverage_label(coverage)}")
        raise UnknownCoverage(
            f"no run on this leaderboard was evaluated on {what}"
            f"; choose one of: {', '.join(c.param for c in available) or 'none yet'}")
    return coverage


def _runs_by_coverage(*, benchmark, protocol: str, system=None,
                      sanitised: bool = False) -> dict[str, list[BoardRun]]:
    by_coverage: dict[str, list[BoardRun]] = {}
    for run in board_runs(benchmark=benchmark, protocol=protocol, system=system,
                          sanitised=sanitised):
        by_coverage.setdefault(run.coverage, []).append(run)
    return by_coverage


def visible_runs_by_coverage(*, benchmark, protocol: str, user) -> dict[str, list[BoardRun]]:
    """Per split set, the runs the viewer sees (the newest per system and evaluator), in one
    query."""
    return {key: RunChoice.of(group).for_user(user) for key, group
            in _runs_by_coverage(benchmark=benchmark, protocol=protocol).items()}
