"""The sentence encoder of the Dense baseline (`evaluation.lib.rankers.embeddings`)."""

import threading

import sentence_transformers

from evaluation.lib.rankers.embeddings import SentenceEncoder


def test_two_threads_asking_at_once_load_the_model_once(monkeypatch):
    """A worker's warm-up thread and its first task both asked for the model and both loaded
    it (two "Loading SentenceTransformer model" lines in one process in `make run`'s log)."""
    loads = []

    class Counted(sentence_transformers.SentenceTransformer):
        def __init__(self, *args, **kwargs):
            loads.append(threading.current_thread().name)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Counted)
    encoder, start, models = SentenceEncoder(), threading.Barrier(2), []

    def ask():
        start.wait()
        models.append(encoder.model)

    threads = [threading.Thread(target=ask, name=f"asker-{n}") for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert len(loads) == 1 and len(models) == 2
    assert models[0] is models[1]
    assert encoder.encode(["a quiet hotel"]).shape == (1, 384)
