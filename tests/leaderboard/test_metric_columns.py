"""One source of truth for metric columns (issue 29, item 3): which metrics a board, the system
page, compare, the API and exports show, their order and range, come from the metric specs
(`MetricSpec.headline`, `MetricSpec.shown`, read by `evaluation/lib/columns.py`).

The first test adds one spec to the Trace suite inside this module (and the line of `_Run`
that computes it, as a new metric's author would) and finds the metric on every page with no
other change; the last one fails on a list of metric names anywhere else in the product code.
"""

import ast
import csv
import io
import sys
from pathlib import Path

import pytest
from django.urls import reverse

from evaluation.lib import columns
from evaluation.lib.llm import registry
from evaluation.lib.metrics import suite
from evaluation.lib.metrics.types import SURFACES, TEXT, MetricSpec

NEW = "answer_brief"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def new_metric(monkeypatch):
    """A bounded Text metric with the last headline place, listed on every surface: 1 when
    the answer has at most 12 words. `metric_specs` is replaced wherever it is bound, as if
    its source had one spec more."""
    original = suite.metric_specs
    spec = MetricSpec(NEW, TEXT, "turn", "higher", (0.0, 1.0),
                      "1 if the answer has at most 12 words.",
                      headline=len(columns.headline(suite.SUITE_NAME)) + 1,
                      shown=frozenset(SURFACES))

    def metric_specs(config=None):
        return (*original(config), spec)

    for module in list(sys.modules.values()):
        if getattr(module, "metric_specs", None) is original:
            monkeypatch.setattr(module, "metric_specs", metric_specs)
    score_text = suite._Run.score_text

    def score_text_and_new(self, unit, did, submitted, ref):
        score_text(self, unit, did, submitted, ref)
        self.emit(NEW, "turn", unit, did, float(len(submitted.response.split()) <= 12))

    monkeypatch.setattr(suite._Run, "score_text", score_text_and_new)
    columns.forget()
    yield spec
    columns.forget()


@pytest.mark.django_db
def test_a_new_spec_is_on_every_page_with_no_other_change(new_metric, request, client):
    world = request.getfixturevalue("board_world")  # evaluated with the new spec
    column = f"{suite.SUITE_NAME}:{NEW}"

    # the board (default columns), its exports and the API (headline and all columns)
    board = client.get(reverse("leaderboard:board", args=["tiny", "turn"]))
    assert [c.key for c in board.context["lb"].columns][-1] == column  # Text, last place
    assert f'data-key="{column}"' in board.content.decode()
    exported = client.get(reverse("leaderboard:board_export", args=["tiny", "turn", "csv"]))
    records = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert {r["system"] for r in records if r["metric"] == NEW} == {"Echo", "Reverse"}
    for columns_param in ("headline", "all"):  # the JSON export, default and all columns
        exported = client.get(reverse("leaderboard:board_export", args=["tiny", "turn", "json"]),
                              {"columns": columns_param}).json()
        assert NEW in {r["metric"] for r in exported["rows"]}
    for columns_param in ("headline", "all"):
        api = client.get(reverse("leaderboard:api_leaderboard", args=["tiny"]),
                         {"protocol": "turn", "columns": columns_param}).json()
        assert column in [c["key"] for c in api["columns"]]
        assert all(column in system["metrics"] for system in api["systems"])

    # the system page: its headline rows, radar (a bounded metric), tiers and dialogues
    page = client.get(reverse("leaderboard:system_detail", args=["echo"]))
    rows = {r["metric"]: r for _, all_rows, _ in page.context["results"] for r in all_rows}
    assert rows[NEW]["headline"] and rows[NEW]["value"] is not None
    assert NEW in [row["metric"] for row in page.context["tiers"]["table"]]
    assert NEW in page.context["dialogue_metrics"]
    assert len(page.context["dialogues"][0]["values"]) == len(page.context["dialogue_metrics"])

    # compare (default rows and the forest of bounded headline metrics)
    compare = client.get(reverse("leaderboard:compare"),
                         {"benchmark": "tiny", "a": "echo", "b": "baseline-reverse"})
    assert NEW in [row["metric"] for row in compare.context["rows"]]
    assert NEW in [label["text"] for label in compare.context["forest"]["labels"]]

    # a submission's summary and the per-turn drill-down
    submission, _run = world["runs"]["echo"]
    status = client.get(reverse("leaderboard:submission_status", args=[submission.uuid]))
    assert NEW in [name for _, rows in status.context["results"] for name, _ in rows]
    drill = client.get(reverse("leaderboard:submission_dialogue", args=[submission.uuid, "d1"]))
    assert NEW in drill.context["metrics"]


def test_every_surface_lists_what_the_specs_say_in_headline_order():
    trace = suite.SUITE_NAME
    assert columns.shown_on(trace, "tiers") == ("recall@1", "mrr", "gs", "cgs", "tsr")
    assert columns.shown_on(trace, "dialogues") == ("recall@1", "gs", "cgs")
    assert columns.shown_on(trace, "turns") == ("recall@1", "mrr", "gs", "cd", "pc", "cgs",
                                                "bleu4")
    assert columns.headline(trace)[:4] == ("recall@1", "recall@5", "mrr", "mr_recall@1")
    assert columns.headline("simulation.pepper") == tuple(
        f"{m}@{k}" for m in ("pc", "pcir_avg", "recall") for k in (5, 10, 50))
    assert columns.headline("trace_judge") is None  # none declared: every metric is shown
    assert columns.is_headline("trace_judge", "judge.relevance")
    assert not columns.is_headline(trace, "gs_t70")
    assert columns.bounds(trace, "t2r") == (0.0, None)
    assert columns.bounds("simulation.pepper", "pc@1") == (0.0, 1.0)
    assert columns.bounds("imported", "anything") == (None, None)
    with pytest.raises(ValueError, match="unknown surface"):
        columns.shown_on(trace, "sidebar")


def _metric_names() -> set[str]:
    names = set()
    for evaluator in (suite.SUITE_NAME, f"{columns.SIMULATION_PREFIX}any", *registry.names()):
        names |= {spec.name for spec in columns.evaluator_specs(evaluator)}
    return names


def _lists(source: str, names: set[str]) -> list[tuple[int, list[str]]]:
    """(line, names) of each tuple, list, set or dict literal in SOURCE holding two or more
    metric names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        elements = node.keys if isinstance(node, ast.Dict) else \
            node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else []
        listed = {e.value for e in elements if isinstance(e, ast.Constant) and e.value in names}
        if len(listed) >= 2:
            found.append((node.lineno, sorted(listed)))
    return found


# Where metrics are declared: the suite's and the simulations' specs, the LLM evaluators'.
DECLARED = ("evaluation/lib/metrics/", "evaluation/lib/llm/")


def test_nothing_but_the_specs_lists_metrics():
    """No tuple, list, set or dict of two or more metric names in product code outside the
    modules that declare the specs: a page that picks metrics asks `evaluation.lib.columns`."""
    names, found = _metric_names(), []
    for app in ("annotation", "evaluation", "leaderboard", "config"):
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if "/migrations/" in relative or relative.startswith(DECLARED):
                continue
            found += [f"{relative}:{line} {listed}"
                      for line, listed in _lists(path.read_text(encoding="utf-8"), names)]
    for path in sorted((ROOT / "templates").rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        listed = {name for name in names if f'"{name}"' in text or f"'{name}'" in text}
        if len(listed) >= 2:
            found.append(f"{path.relative_to(ROOT).as_posix()} {sorted(listed)}")
    assert not found, "metric names listed outside their specs:\n" + "\n".join(found)


def test_the_check_finds_a_list_of_metrics():
    """The check above is not blind: the lists this issue removed would fail it."""
    names = _metric_names()
    assert _lists('TIER_METRICS = ("recall@1", "mrr", "gs", "cgs", "tsr")', names) == [
        (1, ["cgs", "gs", "mrr", "recall@1", "tsr"])]
    assert _lists('HEADLINE = {"trace": ["gs", "pc@5"]}', names) == [(1, ["gs", "pc@5"])]
    assert _lists('ROW = ("non_answer", 1, "t2r_no_hit")', names) == [
        (1, ["non_answer", "t2r_no_hit"])]
    assert _lists('ONE = ("gs", "overall")', names) == []


def test_the_metrics_docs_give_the_headline_in_the_specs_order():
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    bullet = text.split("**Headline metrics and sensitivity variants.**")[1].split("Every other")[0]
    listed = bullet.split("`")[1::2]
    assert tuple(listed) == columns.headline(suite.SUITE_NAME)
