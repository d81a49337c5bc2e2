"""The leaderboard page, its scatter and export, and the benchmarks' leaderboard counts.

A leaderboard renders in a constant number of queries whatever the number of systems: the
benchmark's boards (`board_protocols`, one), the runs (one query), their metric summaries
(one), the rank snapshots (one). Ranks come from the
stored snapshot (`RankSnapshot`, see `ranks`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.urls import reverse

from evaluation.lib import charts
from evaluation.lib.metrics.suite import NON_ANSWER, SUITE_NAME
from evaluation.lib.simulators.simulators import (
    SANITISED_SUFFIX,
    simulated_protocol,
    simulator_of_protocol,
)
from evaluation.lib.stats.methods import OLDER_METHOD
from evaluation.models import Job, Run, Simulation
from leaderboard.lib import rank_tables
from leaderboard.lib.trust import RULE as TRUST_RULE

from .columns import (
    RULE_METRICS,
    Column,
    board_columns,
    board_summaries,
    ci_text,
    fmt,
    metric_bounds,
    metric_rule,
)
from .ranks import rank_snapshots
from .runs import BoardRun, Coverage, coverage_choice, coverage_label, is_design
from .simulated import SimulatedAudit, board_audit, board_validity
from .trust import column_trust, trust_record

DEFAULT_SORT = f"{SUITE_NAME}:recall@1"
SCATTER_X, SCATTER_Y = f"{SUITE_NAME}:cgs", f"{SUITE_NAME}:recall@1"


@dataclass
class Cell:
    value: float | None
    text: str
    ci: str = ""
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    href: str = ""
    rank: int | None = None
    title: str = ""
    rule: dict | None = None  # a rule the value rests on (T2R without a hit), shown beside it


@dataclass
class Row:
    run: BoardRun  # the system's Trace run (or its first evaluator's): who, and how
    runs: dict[str, BoardRun]  # evaluator -> the run behind that evaluator's cells
    cells: list[Cell]
    private: bool
    rank: int | None = None
    non_answers: int = 0  # evaluated turns the system did not answer (metric `non_answer`)
    answer_turns: int = 0  # evaluated turns behind that count
    unranked: str = ""  # why the row has no rank (too many non-answers), or ""
    system_url: str = ""  # the system's page
    leak: object = None  # a simulated board's leakage cell (simulated.LeakCell)


@dataclass
class Leaderboard:
    benchmark: object
    protocol: str
    columns: list[Column]
    axes: list[tuple[str, int]]
    rows: list[Row]
    all_rows: int
    sort: str
    order: str
    rank_column: Column | None
    families: list[str]
    bootstrap: dict
    evaluators: list[str]
    has_more_columns: bool
    max_non_answer_share: float = 0.0  # in percent, for the page's note
    coverage: str = ""  # the split set every row was evaluated on ("test", "dev+test", …)
    coverages: list[Coverage] = field(default_factory=list)  # every split set with runs
    trust: dict = field(default_factory=dict)  # column key -> Trust (the trust column)
    trust_rule: str = TRUST_RULE
    sanitised: bool = False  # a simulated board's runs without their leaked dialogues
    leakage: SimulatedAudit | None = None  # a simulated board's leakage audit of its rows
    validity: dict = field(default_factory=dict)  # column key -> ValidityTrust (simulated)

    @property
    def coverage_label(self) -> str:
        shown = next((c for c in self.coverages if c.key == self.coverage), None)
        return shown.label if shown else coverage_label(self.coverage)

    @property
    def design(self) -> dict | None:
        """A simulated board's design, every row's (docs/simulation.md, "Designs")."""
        if not is_design(self.coverage):
            return None
        return {"key": self.coverage, "label": self.coverage_label}

    @property
    def other_coverages(self) -> list[Coverage]:
        return [c for c in self.coverages if c.key != self.coverage]

    def column(self, key: str) -> Column | None:
        return next((c for c in self.columns if c.key == key), None)

    def values(self, key: str) -> list[tuple[Row, Cell]]:
        index = next((i for i, c in enumerate(self.columns) if c.key == key), None)
        return [] if index is None else [(row, row.cells[index]) for row in self.rows]


def leaderboard(*, benchmark, protocol: str, user, sort: str = "", order: str = "",
                family: str = "", baselines: bool = True,
                all_columns: bool = False, splits: str = "", dialogues: str = "") -> Leaderboard:
    """The leaderboard as the viewer may see it, for one coverage: only the runs evaluated on
    exactly the split set SPLITS ("test" by default; "dev+test", …) are shown and ranked, so
    every row's numbers rest on the same dialogues. Columns grouped by axis, one row per
    system, cells with value, 95% CI, link to their run and tie-aware rank.

    A simulated board ranks one design's runs on all their dialogues, or with DIALOGUES
    "both" (or SPLITS naming a sanitised design) its runs without the leaked dialogues (Zhu et
    al.'s "-Both"), and carries the leakage audit of every row (`simulated.board_audit`).

    Raises UnknownCoverage when SPLITS names a split set no run of the viewer's was evaluated
    on (and is not the default)."""
    sanitised = dialogues == "both" or (dialogues != "all"
                                        and splits.strip().endswith(SANITISED_SUFFIX))
    coverage, available, choice = coverage_choice(benchmark=benchmark, protocol=protocol,
                                                  user=user, splits=splits,
                                                  sanitised=sanitised)
    shown = choice.for_user(user)
    summaries, more = board_summaries(shown, all_columns)
    columns, has_more = board_columns(shown, summaries, all_columns)
    has_more = has_more if more is None else more
    evaluators = sorted({r.evaluator for r in shown})
    snapshots = rank_snapshots(benchmark=benchmark, protocol=protocol, coverage=coverage,
                               choice=choice, evaluators=evaluators) if shown else {}
    rows = _rows(shown, columns, summaries)
    _attach_ranks(rows, columns, snapshots)
    keys = {c.key for c in columns}
    default = next((key for key in (DEFAULT_SORT, *(f"{e}:ievalm_recall@10" for e in evaluators),
                                    *(f"{e}:pc@10" for e in evaluators))
                    if key in keys), columns[0].key if columns else "system")
    sort = sort if sort in keys or sort in ("system", "family") else default
    rank_column = next((c for c in columns if c.key == sort), None) or next(
        (c for c in columns if c.key == default), columns[0] if columns else None)
    rank_index = columns.index(rank_column) if rank_column else None
    for row in rows:
        row.rank = row.cells[rank_index].rank if rank_index is not None else None
    families = sorted({row.run.family for row in rows if row.run.family})
    total = len(rows)
    rows = [row for row in rows if (baselines or not row.run.is_baseline)
            and (not family or row.run.family == family)]
    order = order if order in ("asc", "desc") else ""
    rows = _sorted(rows, columns, sort, order)
    first = next(iter(snapshots.values()), None)
    board = Leaderboard(benchmark, protocol, columns, _axes(columns), rows, total, sort,
                        order or _default_order(columns, sort), rank_column, families,
                        dict(first.bootstrap) if first else {}, evaluators, has_more,
                        100 * settings.MAX_NON_ANSWER_SHARE, coverage, available,
                        column_trust(benchmark=benchmark, columns=columns, user=user))
    if simulator_of_protocol(protocol) is not None:
        board.sanitised = sanitised
        board.leakage = board_audit(rows=rows, sanitised=sanitised)
        board.validity = (board_validity(
            benchmark=benchmark, rows=rows, columns=columns, user=user,
            simulators_url=reverse("leaderboard:simulators", args=[benchmark.slug])))
    return board


def _rows(shown: list[BoardRun], columns: list[Column], summaries) -> list[Row]:
    by_system: dict[int, dict[str, BoardRun]] = defaultdict(dict)
    for run in shown:
        by_system[run.system_id][run.evaluator] = run
    anchors = [column.anchor for column in columns]
    run_url = reverse("run_detail", args=[0]).replace("/0/", "/{}/")  # one reverse() per page
    system_url = reverse("leaderboard:system_detail", args=["-"]).replace("/-/", "/{}/")
    rows = []
    for runs in by_system.values():
        links = {ev: run_url.format(r.run_id) for ev, r in runs.items()}
        of_run = {ev: summaries.get(r.run_id, {}) for ev, r in runs.items()}
        cells = []
        for column, anchor in zip(columns, anchors, strict=True):
            summary = of_run.get(column.evaluator, {}).get(column.metric)
            if summary is None:
                cells.append(Cell(None, "", title="not evaluated"))
                continue
            _axis, _direction, value, low, high, n, reason, current = summary
            text = fmt(value)
            ci = ci_text(low, high, current)
            rule = (metric_rule(runs[column.evaluator], column.metric, summaries)
                    if column.metric in RULE_METRICS else None)
            cells.append(Cell(value, text, ci, low, high, n, links[column.evaluator] + anchor,
                              title=reason or f"{column.metric} {text}, 95% CI {ci}, n = {n}"
                              + ("" if current else f" ({OLDER_METHOD})"),
                              rule=rule))
        first = runs[sorted(runs)[0]]
        row = Row(runs.get(SUITE_NAME, first), runs, cells,
                  private=any(not r.public for r in runs.values()))
        row.system_url = system_url.format(row.run.slug)
        _mark_non_answers(row, summaries)
        rows.append(row)
    return rows


def _mark_non_answers(row: Row, summaries) -> None:
    """Count the row's unanswered turns; above settings.MAX_NON_ANSWER_SHARE the row is shown
    but not ranked (its means rest only on the turns it answered)."""
    for run in row.runs.values():
        summary = summaries.get(run.run_id, {}).get(NON_ANSWER)
        if summary is None or summary[2] is None or not summary[5]:
            continue
        share, turns = summary[2], summary[5]
        row.non_answers, row.answer_turns = round(share * turns), turns
        if share > settings.MAX_NON_ANSWER_SHARE:
            row.unranked = (f"not ranked: {row.non_answers} of {turns} evaluated turns "
                            f"unanswered (more than {settings.MAX_NON_ANSWER_SHARE:.0%})")
        return


def _attach_ranks(rows: list[Row], columns: list[Column], snapshots) -> None:
    """Tie-aware ranks among the rows the viewer sees (filters do not change them)."""
    for evaluator, snapshot in snapshots.items():
        position = {run_id: i for i, run_id in enumerate(snapshot.run_ids)}
        better = rank_tables.unpack(snapshot.better, len(snapshot.metrics), len(snapshot.run_ids))
        metric_index = {m: i for i, m in enumerate(snapshot.metrics)}
        ranked_rows = [row for row in rows if evaluator in row.runs
                       and row.runs[evaluator].run_id in position and not row.unranked]
        for c, column in enumerate(columns):
            if column.evaluator != evaluator or column.metric not in metric_index:
                continue
            present = [row for row in ranked_rows if row.cells[c].value is not None]
            values = rank_tables.ranks(better[metric_index[column.metric]],
                                       [position[row.runs[evaluator].run_id] for row in present])
            for row, rank in zip(present, values, strict=True):
                row.cells[c].rank = rank


def _default_order(columns: list[Column], sort: str) -> str:
    column = next((c for c in columns if c.key == sort), None)
    if column is None:
        return "asc"
    return "desc" if column.higher else "asc"


def _sorted(rows: list[Row], columns: list[Column], sort: str, order: str) -> list[Row]:
    if sort in ("system", "family"):
        key = (lambda r: r.run.name.lower()) if sort == "system" else (
            lambda r: (r.run.family or "~", r.run.name.lower()))
        return sorted(rows, key=key, reverse=order == "desc")
    index = next(i for i, c in enumerate(columns) if c.key == sort)
    descending = (order or _default_order(columns, sort)) == "desc"
    with_value = [r for r in rows if r.cells[index].value is not None]
    without = [r for r in rows if r.cells[index].value is None]
    with_value.sort(key=lambda r: (-r.cells[index].value if descending else r.cells[index].value,
                                   r.run.name.lower()))
    return with_value + sorted(without, key=lambda r: r.run.name.lower())


def _axes(columns: list[Column]) -> list[tuple[str, int]]:
    axes: list[tuple[str, int]] = []
    for column in columns:
        if axes and axes[-1][0] == column.axis:
            axes[-1] = (column.axis, axes[-1][1] + 1)
        else:
            axes.append((column.axis, 1))
    return axes


def leaderboard_scatter(board: Leaderboard, x_key: str = SCATTER_X,
                        y_key: str = SCATTER_Y) -> dict | None:
    """The accuracy-vs-grounding scatter of the rows shown (each point with both CIs)."""
    x_col, y_col = board.column(x_key), board.column(y_key)
    if x_col is None or y_col is None:
        return None
    points = []
    for (row, x), (_, y) in zip(board.values(x_key), board.values(y_key), strict=True):
        if x.value is None or y.value is None:
            continue
        points.append(charts.ScatterPoint(
            row.run.name, x.value, y.value, (x.ci_low, x.ci_high), (y.ci_low, y.ci_high),
            highlight=row.run.is_baseline,
            href=row.system_url))
    if not points:
        return None
    data = charts.scatter(points, x_label=x_col.metric, y_label=y_col.metric,
                          x_bounds=metric_bounds(x_col.evaluator, x_col.metric),
                          y_bounds=metric_bounds(y_col.evaluator, y_col.metric))
    data.update(x_key=x_key, y_key=y_key)
    return data


CHART_K = 10  # the PC_t chart's default cut-off (PEPPER's Fig. 3 plots PC over turns)


def leaderboard_pc_chart(board: Leaderboard) -> dict | None:
    """A `simulated-…` board's chart of PC_t@K over turns, one line per system shown (PEPPER
    Fig. 3 style). K is the sorted column's when it is a preference metric (pc@K, pcir_avg@K,
    recall@K), else CHART_K. None on other boards or when no row has a curve (one query)."""
    evaluator = next((e for e in board.evaluators if e.startswith("simulation.")), None)
    if evaluator is None or not board.rows:
        return None
    metric = board.sort.partition(":")[2] if board.sort.startswith(evaluator + ":") else ""
    k = int(metric.split("@")[1]) if metric.split("@")[0] in ("pc", "pcir_avg", "recall") \
        else CHART_K
    runs = [row.runs[evaluator] for row in board.rows if evaluator in row.runs]
    reports = dict(Simulation.objects.filter(run_id__in=[r.run_id for r in runs])
                   .values_list("run_id", "report"))
    series, turns = [], set()
    for run in runs:
        values = (reports.get(run.run_id) or {}).get(f"pc@{k}")
        if values:
            series.append((run.name, values))
            turns.add(len(values))
    if not series:
        return None
    chart = charts.turn_lines(series, y_label=f"PC_t@{k}")
    chart.update(k=k, mixed_turns=len(turns) > 1)
    return chart


def leaderboard_export_rows(board: Leaderboard, request_base: str = "") -> list[dict]:
    """One flat record per (system, metric) shown, every number with its CI, n, rank and the
    run (evaluator, version, configuration hash) that produced it."""
    records = []
    run_url = request_base + reverse("run_detail", args=[0]).replace("/0/", "/{}/")
    for row in board.rows:
        for column, cell in zip(board.columns, row.cells, strict=True):
            run = row.runs.get(column.evaluator)
            if run is None or not cell.href:
                continue
            records.append({
                "benchmark": board.benchmark.slug, "protocol": board.protocol,
                "system": run.name, "system_slug": run.slug, "family": run.family,
                "team": run.team, "baseline": run.is_baseline, "public": run.public,
                "evaluator": run.evaluator, "evaluator_version": run.evaluator_version,
                "config_hash": run.config_hash, "run": run.run_id,
                "splits": board.coverage,
                **({"design": board.coverage_label} if board.design else {}),
                **(board.leakage.export(row) if board.leakage else {}),
                "run_url": run_url.format(run.run_id),
                "axis": column.axis, "metric": column.metric, "direction": column.direction,
                "value": cell.value, "ci_low": cell.ci_low, "ci_high": cell.ci_high,
                "n": cell.n, "rank": cell.rank,
                "rule": cell.rule["text"] if cell.rule else "",
                "rule_dialogues": cell.rule["dialogues"] if cell.rule else None,
                **trust_record(board.trust.get(column.key), request_base),
                **(board.validity[column.key].export() if column.key in board.validity
                   else {}),
            })
    return records


def benchmark_leaderboard_counts(benchmarks) -> dict[tuple[int, str], int]:
    """(benchmark id, protocol) -> number of systems with a public succeeded run (a
    simulation's run counts on its simulator's `simulated-…` board, not on `log`)."""
    rows = Run.objects.publishable().filter(submission__benchmark__in=benchmarks,
                                            job__status=Job.Status.SUCCEEDED)
    simulated = set(Simulation.objects.filter(benchmark__in=benchmarks)
                    .exclude(submission=None).values_list("submission_id", flat=True))
    counts: dict[tuple[int, str], set] = defaultdict(set)
    for benchmark_id, protocol, submission_id, simulator, system_id, public, baseline in (
            rows.values_list("submission__benchmark_id", "submission__protocol",
                             "submission_id", "simulation__simulator",
                             "submission__system_id", "submission__is_public",
                             "submission__system__is_baseline")):
        if simulator:
            protocol = simulated_protocol(simulator)
        elif submission_id in simulated:
            continue  # another evaluator's run of a simulation's log submission
        if public or baseline:
            counts[(benchmark_id, protocol)].add(system_id)
    return {key: len(value) for key, value in counts.items()}


def board_protocols(benchmarks) -> dict[int, list[str]]:
    """Benchmark id -> its leaderboards' protocols: the submission protocols it declares, then
    `simulated-<simulator>` for each simulator that finished a simulation on it (one query)."""
    protocols = {b.pk: list(b.protocols or ["turn"]) for b in benchmarks}
    finished = (Simulation.objects.filter(benchmark__in=benchmarks, run__isnull=False)
                .values_list("benchmark_id", "simulator").distinct().order_by("simulator"))
    for benchmark_id, simulator in finished:
        protocols[benchmark_id].append(simulated_protocol(simulator))
    return protocols
