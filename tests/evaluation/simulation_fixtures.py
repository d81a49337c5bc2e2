"""Shared set-up for the simulation tests: Tiny with the seen/target split on every dialogue,
and helpers to run a simulation's batches in-process and to script a live system per user."""

import pytest

from evaluation.services.benchmarks import benchmark_import
from evaluation.services.simulations import simulation_batch_process
from tests.support.bundles import tiny_data, write_tiny


def simulation_bundle():
    """Tiny with the seen/target split on every dialogue (the simulated users d1, d2, d3)."""
    data = tiny_data()
    data["items"].append({"id": "r3", "name": "Dock Diner", "type": "restaurant",
                          "city": "Philadelphia", "categories": ["seafood", "diner"],
                          "stars": 4.0})
    data["reviews"].append({"id": "v5", "item_id": "r3", "text": "Cozy seafood diner.",
                            "stars": 5})
    split = {"d1": (["r3"], ["r1", "r2"]), "d2": (["a1"], ["h1"]), "d3": (["r3"], ["r1"])}
    for record in data["dialogues"]:
        record["seen_item_ids"], record["target_item_ids"] = split[record["id"]]
    return data


@pytest.fixture
def sim_benchmark(tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    return benchmark_import(path=write_tiny(tmp_path / "sim", simulation_bundle()))


def run_all(simulation):
    for batch in range(simulation.batches):
        simulation_batch_process(simulation_id=simulation.pk, batch=batch)
    simulation.refresh_from_db()
    simulation.job.refresh_from_db()
    return simulation


def by_dialogue(script):
    """A live system that answers per simulated user (its dialogue id ends with the user)."""
    return lambda body: script(body["dialogue_id"].split("-", 1)[1], body)
