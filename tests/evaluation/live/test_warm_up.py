"""In-process baselines are warmed as a process starts (issue 28.3, 34.1): the first battle
or simulation of the Dense baseline must not wait minutes for its embedding model to load."""

import time

import pytest

from evaluation.lib.live.contract import LiveRequest
from evaluation.lib.rankers.embeddings import shared_encoder
from evaluation.models import System
from evaluation.services.live import live_baselines_ensure, live_client, live_warm_up

pytestmark = pytest.mark.django_db


def test_nothing_is_loaded_when_no_live_system_needs_the_model(settings):
    assert live_warm_up() == "not needed"
    settings.LIVE_WARM_UP = False
    live_baselines_ensure()
    assert live_warm_up() == "off"


def test_the_embedding_model_is_loaded_at_start_and_the_first_call_is_quick(tiny_benchmark):
    live_baselines_ensure()
    assert System.objects.filter(live_adapter="dense").exists()
    assert live_warm_up() == "loaded"
    assert shared_encoder()._model is not None
    dense = System.objects.get(live_adapter="dense")
    started = time.monotonic()
    answer = live_client(system=dense, benchmark=tiny_benchmark).turn(
        LiveRequest("tiny", "d", 1, (), "a quiet place for seafood"))
    assert answer.ranked_item_ids
    assert time.monotonic() - started < 10.0  # encoding the tiny catalogue, no model loading
