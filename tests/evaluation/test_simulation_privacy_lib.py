"""The pure parts of simulation privacy and designs (evaluation/lib/simulators): opaque user ids,
hidden dialogues left out of the users before the release, and a run's design."""

import re

import pytest

from evaluation.lib.simulators.simulators import simulation_design
from evaluation.lib.simulators.users import (
    NoSimulatedUsers,
    opaque_user_id,
    paired_user_id,
    pick_users,
    simulated_users,
)
from tests.evaluation.simulation_fixtures import simulation_bundle


def test_opaque_ids_are_stable_per_secret_and_unlinkable_across_secrets():
    first = [opaque_user_id("a" * 32, i) for i in range(50)]
    assert first == [opaque_user_id("a" * 32, i) for i in range(50)]  # stable
    assert len(set(first)) == 50 and all(re.fullmatch(r"u-[0-9a-f]{16}", i) for i in first)
    other = [opaque_user_id("b" * 32, i) for i in range(50)]
    assert not set(first) & set(other)  # another simulation names its users otherwise
    with pytest.raises(ValueError, match="needs a secret"):
        opaque_user_id("", 0)
    assert paired_user_id(0) == "user-0001" and paired_user_id(41) == "user-0042"


def test_hidden_dialogues_make_users_only_when_included():
    data = simulation_bundle()
    kept = simulated_users(items=data["items"], reviews=data["reviews"],
                           dialogues=data["dialogues"], include_hidden=False)
    assert [u.user_id for u in kept] == ["d1", "d2"]  # d3 is the hidden one
    everyone = simulated_users(items=data["items"], reviews=data["reviews"],
                               dialogues=data["dialogues"], include_hidden=True)
    assert [u.user_id for u in everyone] == ["d1", "d2", "d3"]
    with pytest.raises(ValueError, match="has 2 simulated users, 3 were asked for"):
        pick_users(kept, 3, 0)
    only_hidden = [d for d in data["dialogues"] if d["split"] == "hidden"]
    with pytest.raises(NoSimulatedUsers, match="outside the hidden split"):
        pick_users(simulated_users(items=data["items"], reviews=data["reviews"],
                                   dialogues=only_hidden, include_hidden=False), 1, 0)


def test_a_design_is_the_configuration_without_the_system_and_benchmark():
    config = {"simulator": "template", "version": "1.0", "shown_k": 5, "seed": 0,
              "target_based": False, "users": 8, "turns": 5, "pool": "catalogue",
              "ks": [1, 5, 10, 20, 50], "hidden_users": False, "system": "a",
              "benchmark": "demo"}
    design = simulation_design(config)
    assert re.fullmatch(r"design-[0-9a-f]{12}", design.key)
    assert design.label == "template 1.0 · 8 users × 5 turns · seed 0 · pool catalogue · " \
                           "top 5 shown"
    assert simulation_design({**config, "system": "b", "benchmark": "x"}) == design
    for change in ({"users": 20}, {"turns": 10}, {"seed": 1}, {"pool": "dialogue"},
                   {"shown_k": 10}, {"version": "1.1"}, {"hidden_users": True},
                   {"model": "openai/m"}):
        assert simulation_design({**config, **change}).key != design.key, change
    assert simulation_design({**config, "hidden_users": True}).label.endswith(
        "hidden split included")
