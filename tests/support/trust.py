"""A benchmark whose first metric has human labels: the trust column's test world."""

import numpy as np

DIALOGUES = 12


def labelled_world(author, *, public=True):
    """Three systems of a synthetic evaluator on 12 dialogues, and an imported study labelling
    the first system's 12 dialogues for m01 (human = the metric's value plus noise) — metric
    m02 has no labels."""
    from annotation.models import ImportedField, ImportedLabel, Study
    from evaluation.models import Benchmark, UnitScore
    from leaderboard.synthetic import synthetic_leaderboard

    benchmark = synthetic_leaderboard(slug="trusty", systems=3, metrics=2, dialogues=DIALOGUES)
    Benchmark.objects.filter(pk=benchmark.pk).update(is_public=True)
    study = Study.objects.create(slug="trusty-labels", title="Trusty <labels>",
                                 benchmark=benchmark, author=author, invite_token="t" * 20,
                                 source="imported:test", is_public=public)
    ImportedField.objects.create(study=study, name="m01", unit_type="dialogue",
                                 level="interval", scale_min=0, scale_max=1)
    rng = np.random.default_rng(3)
    pairs = []
    for unit_id, value, system in UnitScore.objects.filter(
            run__submission__benchmark=benchmark, metric="m01",
            run__submission__system__slug="trusty-s000").values_list(
            "unit_id", "value", "run__submission__system__name").order_by("pk"):
        human = round(value + rng.normal(0, 0.2), 4)
        pairs.append((value, human))
        ImportedLabel.objects.create(study=study, unit_type="dialogue", unit_id=unit_id,
                                     dialogue_id=unit_id, system=system, annotator="",
                                     field="m01", value_num=human)
    return benchmark, study, pairs
