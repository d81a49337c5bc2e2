"""A scenario as people read it (evaluation/lib/scenarios.py): the arena player's brief never
names the reference dialogue's rejected items; the viewer's rows put records into words."""

from evaluation.lib import scenarios

DEMO = {"budget": "upscale", "budget_max_price_level": 4, "city": "New Orleans",
        "constraints": [{"kind": "budget", "stated_at_turn": 2, "value": "upscale"},
                        {"kind": "neighborhood", "stated_at_turn": 2, "value": "Marigny"},
                        {"kind": "aspect", "stated_at_turn": 4, "value": "wifi"}],
        "difficulty": "medium", "item_type": "hotel", "persona": "solo_traveler",
        "persona_description": "I'm traveling on my own.",
        "preferences": {"aspects": ["wifi"], "category": "Boutique Hotel",
                        "neighborhood": "Marigny", "noise": None},
        "rejections": [{"item_id": "nol-h-029", "reason": {"kind": "category",
                                                           "value": "Boutique Hotel"},
                        "turn_index": 6}],
        "user_profile": {"name": "Maya", "persona": "solo_traveler"}}


def test_the_player_reads_a_persona_and_a_request_and_no_rejected_item():
    rows = scenarios.player_rows(DEMO)
    assert rows == [("Persona", "Maya, solo traveler — I'm traveling on my own."),
                    ("Request", "Boutique Hotel (hotel) in Marigny, New Orleans; wifi, "
                                "upscale budget"), ("difficulty", "medium")]
    shown = str(rows)
    assert "nol-h-029" not in shown and "turn" not in shown and "rejected" not in shown


def test_the_viewer_puts_constraints_and_rejections_into_words():
    rows = dict(scenarios.rows(DEMO))
    assert rows["Stated wishes"].splitlines() == [
        "turn 2: budget: upscale", "turn 2: neighborhood: Marigny", "turn 4: aspect: wifi"]
    assert rows["Rejections"] == "turn 6: nol-h-029 rejected (not Boutique Hotel)"
    assert rows["difficulty"] == "medium" and "preferences" not in rows
    assert not any("kind:" in value or "item id" in value for value in rows.values())


def test_a_scenario_without_a_brief_keeps_its_keys_in_words():
    movie = {"seeker_id": 7, "liked_movies": ["Heat (1995)", "Alien (1979)"], "spoiler": False}
    assert scenarios.brief(movie) == []
    assert scenarios.rows(movie) == [("seeker id", "7"), ("liked movies",
                                                         "Heat (1995), Alien (1979)"),
                                     ("spoiler", "no")]
    assert scenarios.player_rows({"target_item_ids": ["m1"], "mood": "light"}) == [
        ("mood", "light")]
