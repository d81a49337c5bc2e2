"""Chart geometry (evaluation.lib.charts, the one module every page uses): right number of
marks, whiskers around points, normalisation by range."""

import pytest

from evaluation.lib import charts


def test_nice_ticks_are_round_and_cover_the_range():
    assert charts.nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert charts.nice_ticks(0.13, 0.58) == [0.2, 0.3, 0.4, 0.5]


def test_scatter_has_one_mark_per_point_with_whiskers_around_it():
    points = [charts.ScatterPoint("A", 0.5, 0.2, (0.4, 0.6), (0.1, 0.3)),
              charts.ScatterPoint("B", 0.8, 0.7, (0.7, 0.9), (0.6, 0.8), highlight=True)]
    data = charts.scatter(points, x_label="cgs", y_label="recall@1", x_bounds=(0, 1),
                          y_bounds=(0, 1))
    assert [p["label"] for p in data["points"]] == ["A", "B"]
    for p in data["points"]:
        assert p["x1"] < p["cx"] < p["x2"]
        assert p["y2"] < p["cy"] < p["y1"]  # SVG y grows downwards
        assert data["left"] <= p["cx"] <= data["right"]
    a, b = data["points"]
    assert b["highlight"] and b["cx"] > a["cx"] and b["cy"] < a["cy"]


def test_scatter_keeps_whiskers_inside_declared_bounds():
    data = charts.scatter([charts.ScatterPoint("A", 0.99, 0.5, (0.95, 1.2), (0.4, 0.6))],
                          x_label="x", y_label="y", x_bounds=(0, 1), y_bounds=(0, 1))
    assert data["points"][0]["x2"] <= data["right"]


@pytest.mark.parametrize("value, bounds, higher, expected", [
    (0.25, (0.0, 1.0), True, 0.25),
    (0.25, (0.0, 1.0), False, 0.75),
    (3.0, (1.0, 5.0), True, 0.5),
    (7.0, (1.0, 5.0), True, 1.0),
    (4.0, (0.0, None), False, None),
])
def test_normalise_maps_to_unit_interval_outward_is_better(value, bounds, higher, expected):
    assert charts.normalise(value, bounds, higher) == expected


def test_radar_has_one_vertex_per_axis_at_its_share_of_the_radius():
    data = charts.radar([("Accuracy", 1.0), ("Grounding", 0.5), ("Text", 0.0)], size=300)
    assert len(data["vertices"]) == 3 and len(data["rings"]) == 4
    top = data["vertices"][0]
    assert top["x"] == data["centre_x"] and top["y"] < data["centre_y"]  # first spoke is up
    assert (data["vertices"][2]["x"], data["vertices"][2]["y"]) == (data["centre_x"],
                                                                   data["centre_y"])


def test_grouped_bars_draw_one_bar_per_value():
    data = charts.grouped_bars(["easy", "hard"], [("recall@1", [(0.5, 0.4, 0.6), (None,) * 3]),
                                                  ("gs", [(1.0, 1.0, 1.0), (0.2, 0.1, 0.3)])])
    assert len(data["bars"]) == 3
    assert {b["group"] for b in data["bars"]} == {"easy", "hard"}
    assert all(b["h"] >= 0 for b in data["bars"])


def test_forest_is_symmetric_around_zero():
    data = charts.forest([("a", 0.1, 0.05, 0.15, True), ("b", -0.2, -0.3, 0.1, False)])
    zero = data["zero"]
    assert data["marks"][0]["cx"] > zero > data["marks"][1]["cx"]
    assert abs((data["left"] + data["right"]) / 2 - zero) < 1


def test_one_tick_rule_for_every_axis():
    # a span of 0.01 in about five steps: 0.002 rounds up to a step of 0.0025, four decimals
    assert charts.tick_labels(charts.nice_ticks(0.99, 1.0)) == ["0.9900", "0.9925", "0.9950",
                                                                "0.9975", "1.0000"]
    assert charts.tick_labels([0.0, 0.25, 0.5]) == ["0.00", "0.25", "0.50"]
    scale = charts.linear(0.0, 1.0, 100, 0)  # a y axis: up is smaller
    assert charts.axis_ticks(0.0, 1.0, scale, count=2) == [(100, "0.0"), (50, "0.5"), (0, "1.0")]


def test_extent_pads_the_data_and_stays_inside_declared_bounds():
    assert charts.extent([0.2, 0.7]) == pytest.approx((0.17, 0.73))
    assert charts.extent([0.2, 0.99], (0, 1))[1] == 1
    assert charts.extent([0.5, 0.5]) == pytest.approx((0.45, 0.55))  # degenerate: widened
    assert charts.extent([None], (0, 5)) == (0, 5)


def test_scatter_colours_points_by_group_with_a_legend():
    data = charts.scatter([charts.ScatterPoint("", 0.1, 1, group="x"),
                           charts.ScatterPoint("", 0.5, 2, group="y"),
                           charts.ScatterPoint("", 0.9, 3, group="x")],
                          x_label="m", y_label="h", width=420, height=300)
    assert [item["label"] for item in data["legend"]] == ["x", "y"]
    assert data["points"][0]["fill"] == data["points"][2]["fill"] != data["points"][1]["fill"]
    assert charts.scatter([], x_label="m", y_label="h")["x_ticks"] == []


def test_turn_lines_place_turns_and_values_by_hand():
    from evaluation.lib.charts import PALETTE, turn_lines

    chart = turn_lines([("A", [0.1, 0.2, 0.3]), ("B", [0.05, None, 0.1, 0.4])], y_label="PC")
    # Plot box: x 52..470 for turns 1..4 (the longer series), y 236 (0) .. 12 (top value).
    assert chart["plot"] == {"left": 52, "right": 470, "top": 12, "bottom": 236}
    # Largest value 0.4: the top is the first round tick at or above it, 0.4.
    a, b = chart["lines"]
    assert [(p["x"], p["y"]) for p in a["points"]] == [
        (52.0, 236 - 0.1 / 0.4 * 224), (round(52 + 418 / 3, 1), 236 - 0.2 / 0.4 * 224),
        (round(52 + 2 * 418 / 3, 1), round(236 - 0.3 / 0.4 * 224, 1))]
    assert [p["turn"] for p in b["points"]] == [1, 3, 4]  # None leaves turn 2 out
    assert (a["colour"], b["colour"]) == PALETTE[:2] and b["final"] == 0.4
    assert [label for _, label in chart["x_ticks"]] == ["1", "2", "3", "4"]
    assert [label for _, label in chart["y_ticks"]] == ["0.0", "0.1", "0.2", "0.3", "0.4"]


def test_turn_lines_top_is_a_round_value_above_the_largest():
    from evaluation.lib.charts import turn_lines

    # 0.521: round steps of 0.2 → the top is 0.6, not 0.521 (a line must not touch the top
    # without a tick), and the largest point sits below it.
    chart = turn_lines([("A", [0.4, 0.521])], y_label="PC")
    assert chart["y_ticks"][-1][1] == "0.6"
    assert chart["lines"][0]["points"][1]["y"] > chart["plot"]["top"]
    assert turn_lines([("A", [1.0])], y_label="PC")["y_ticks"][-1][1] == "1.00"
    assert turn_lines([("A", [0.0, 0.0])], y_label="PC")["y_ticks"][-1][1] == "0.100"
