"""Chart geometry: right number of marks, whiskers around points, normalisation by range."""

import pytest

from leaderboard.lib import charts


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
