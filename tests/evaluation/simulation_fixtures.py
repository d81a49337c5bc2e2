"""Shared set-up for the simulation tests: Tiny with the seen/target split on every dialogue,
and helpers to run a simulation's batches in-process and to script a live system per user."""

import pytest
from django.utils import timezone

from evaluation.lib.simulators.users import opaque_user_id, pick_users, simulated_users
from evaluation.models import Benchmark
from evaluation.selectors.benchmarks import benchmark_bundle
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


def release_hidden(benchmark):
    """The benchmark with its hidden gold released (its hidden dialogues may then be users)."""
    Benchmark.objects.filter(pk=benchmark.pk).update(hidden_released_at=timezone.now())
    benchmark.refresh_from_db()
    return benchmark


@pytest.fixture
def sim_benchmark(tmp_path, settings):
    """Tiny with the seen/target split, its hidden gold released: d1, d2 and d3 (hidden) are
    its simulated users. (Before the release only d1 and d2 are:
    tests/leaderboard/test_hidden_simulation.py.)"""
    settings.MEDIA_ROOT = tmp_path / "media"
    return release_hidden(benchmark_import(path=write_tiny(tmp_path / "sim",
                                                           simulation_bundle())))


def user_sources(simulation) -> dict[str, str]:
    """{opaque user id: the benchmark dialogue it simulates} of SIMULATION, as the server
    derives them (what only the server knows: the simulation's secret)."""
    bundle = benchmark_bundle(benchmark=simulation.benchmark)
    users = pick_users(simulated_users(
        items=bundle.items, reviews=bundle.reviews, dialogues=bundle.dialogues,
        include_hidden=bool(simulation.config.get("hidden_users"))),
        simulation.users, simulation.seed)
    return {opaque_user_id(simulation.secret, i): u.user_id for i, u in enumerate(users)}


def run_all(simulation):
    for batch in range(simulation.batches):
        simulation_batch_process(simulation_id=simulation.pk, batch=batch)
    simulation.refresh_from_db()
    simulation.job.refresh_from_db()
    return simulation


class by_dialogue:  # noqa: N801 (used like the function it was)
    """A live system that answers per simulated user, named by the benchmark dialogue it
    simulates. The system itself only sees opaque ids: the test tells it the simulation
    (`follow`) before its batches run, and it looks the source up as only the server could."""

    def __init__(self, script):
        self.script, self.sources = script, {}

    def follow(self, simulation):
        self.sources.update(user_sources(simulation))
        return simulation

    def __call__(self, body):
        return self.script(self.sources[body["dialogue_id"]], body)


def stored_dialogue(simulation, source: str):
    """The stored dialogue of the user simulating benchmark dialogue SOURCE."""
    return simulation.dialogues.get(source_dialogue_id=source)
