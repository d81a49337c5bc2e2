"""docs/metrics.md documents every metric the suite can produce (a new metric without a user
doc fails here)."""

import re
from pathlib import Path

from evaluation.lib.metrics.suite import metric_specs

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"


def test_every_metric_of_the_suite_is_documented():
    text = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"`([a-z0-9_@.]+)`", text))
    families = {"recall@k": "recall@", "hit@k": "hit@", "mr_recall@k": "mr_recall@"}
    missing = []
    for spec in metric_specs():
        name = spec.name
        if name in documented or any(name.startswith(prefix) and doc in documented
                                     for doc, prefix in families.items()):
            continue
        stem = re.sub(r"(_t[0-9.]+|_exact|_[0-9]km)$", "", name)
        if stem in documented:
            continue
        missing.append(name)
    assert not missing, f"metrics missing from docs/metrics.md: {missing}"


def test_the_documented_suite_version_is_the_code_s():
    from evaluation.lib.metrics.suite import SUITE_VERSION

    text = DOC.read_text(encoding="utf-8")
    versions = set(re.findall(r"(?:`trace` \(version|Suite version) (\d+\.\d+\.\d+)", text))
    assert versions == {SUITE_VERSION}, versions
