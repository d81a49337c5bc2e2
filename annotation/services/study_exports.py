"""Study exports in the background: the long-format annotations CSV and the paper bundle."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings
from django.utils.text import slugify

from annotation.lib import exports
from evaluation.models import (
    Job,
)
from evaluation.services.jobs import job_create

from ..models import (
    ImportedLabel,
    Study,
)
from ..selectors import study_export_rows

EXPORT_DIR = "exports"
BUNDLE = "bundle"


def study_export_start(*, study: Study, user, bundle: bool = False) -> Job:
    """Queue the long-format annotations CSV, or (BUNDLE) the paper bundle zip."""

    params = {"study": study.pk, **({"format": BUNDLE} if bundle else {})}
    return job_create(kind=Job.Kind.STUDY_EXPORT, params=params, user=user,
                      task="annotation.tasks.study_export_job")


def export_is_bundle(job: Job) -> bool:
    return job.params.get("format") == BUNDLE


def export_path(job: Job) -> Path:
    suffix = "zip" if export_is_bundle(job) else "csv"
    return Path(settings.MEDIA_ROOT) / EXPORT_DIR / f"study-{job.params['study']}-{job.pk}.{suffix}"


def _write_csv(rows: Iterable[dict], handle, empty_header: tuple[str, ...]) -> int:
    writer, count = None, 0
    for row in rows:
        if writer is None:
            writer = csv.DictWriter(handle, fieldnames=list(row))
            writer.writeheader()
        writer.writerow(row)
        count += 1
    if writer is None:
        csv.writer(handle).writerow(empty_header)
    return count


def study_export_write(*, study: Study, path: Path, progress=None) -> int:
    """Write the long-format CSV (formats.md §6) to PATH; returns the number of data rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    with tmp.open("w", newline="", encoding="utf-8") as handle:
        count = _write_csv(_annotation_rows(study, progress), handle, EXPORT_EMPTY_HEADER)
    tmp.replace(path)
    return count


def _annotation_rows(study: Study, progress) -> Iterator[dict]:
    """Native studies: the long-format annotations; imported ones: their labels, one a row."""
    if not study.is_imported:
        yield from study_export_rows(study=study, progress=progress)
        return
    for row in (ImportedLabel.objects.filter(study=study).order_by("pk").values(
            "unit_type", "unit_id", "dialogue_id", "system", "annotator", "field", "value_num",
            "value_text").iterator(chunk_size=5000)):
        value = row.pop("value_num")
        text = row.pop("value_text")
        yield {"study": study.slug, **row, "value": text if value is None else value}


def study_bundle_write(*, study: Study, path: Path, progress=None) -> dict:
    """The paper bundle (formats.md §6): annotations CSV, agreement JSON/CSV/LaTeX, correlation
    tables of every evaluator with runs on the benchmark, factor coupling, the study
    configuration and a README saying how each number was computed."""
    from .. import report_selectors

    progress = progress or (lambda stage, done, total: None)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    evaluators = report_selectors.evaluator_names(benchmark=study.benchmark)
    keys = report_selectors.grouping_keys(benchmark=study.benchmark)
    splits = [""] + [key for key in keys if key.startswith("source_")]
    files: dict[str, str] = {}
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open("annotations.csv", "w") as raw, io.TextIOWrapper(
                raw, encoding="utf-8", newline="") as handle:
            rows = _write_csv(_annotation_rows(study, progress), handle, EXPORT_EMPTY_HEADER)
        files["annotations.csv"] = (f"{rows} rows, one per imported label" if study.is_imported
                                    else f"{rows} rows, one per item × annotator × field, "
                                         "with timestamps, time spent and exclusions")
        progress("agreement", 0, 1)
        agreement = report_selectors.study_agreement(study=study)
        tables = exports.agreement_tables(agreement)
        for fmt, suffix in (("json", "json"), ("csv", "csv"), ("latex", "tex")):
            archive.writestr(f"agreement.{suffix}", exports.render(agreement, tables, fmt))
            files[f"agreement.{suffix}"] = f"inter-annotator agreement ({fmt})"
        progress("agreement", 1, 1)
        reports = [agreement]
        for done, evaluator in enumerate(evaluators, 1):
            for by in splits:
                report = report_selectors.study_correlation(study=study, evaluator=evaluator,
                                                            by=by)
                reports.append(report)
                stem = f"correlation/{slugify(evaluator.replace(':', '-')) or 'evaluator'}" + (
                    f"-by-{by}" if by else "")
                tables = exports.correlation_tables(report)
                for fmt, suffix in (("json", "json"), ("csv", "csv"), ("latex", "tex")):
                    archive.writestr(f"{stem}.{suffix}", exports.render(report, tables, fmt))
                files[f"{stem}.json|csv|tex"] = (f"metric–human correlation of {evaluator}"
                                                 + (f", split by {by}" if by else ""))
            progress("correlation", done, len(evaluators))
        reports += _write_anchored(archive, files, study, evaluators)
        coupling = report_selectors.study_coupling(study=study)
        archive.writestr("coupling.json", json.dumps(coupling, indent=2, ensure_ascii=False))
        files["coupling.json"] = "inter-factor Kendall tau-b per rater type (humans, judges)"
        reports.append(coupling)
        archive.writestr("study.json", json.dumps(_study_configuration(study), indent=2,
                                                  ensure_ascii=False, default=str))
        files["study.json"] = "the study configuration (forms, scales, overlap, gold, fields)"
        files["README.md"] = "this file"
        archive.writestr("README.md", exports.bundle_readme(
            agreement["study"], files, exports.methods_used(*reports)))
    tmp.replace(path)
    return {"files": len(files), "annotation_rows": rows, "evaluators": len(evaluators)}


def _write_anchored(archive, files: dict, study: Study, evaluators) -> list[dict]:
    """anchored/<evaluator>-<metric>-<aspect>.json|csv|tex: the human-anchored (PPI++) scores
    of every evaluator metric named like a numeric human field."""
    from .. import report_selectors

    written = []
    for evaluator in evaluators:
        for metric, aspect in report_selectors.study_anchored_pairs(study=study,
                                                                    evaluator=evaluator):
            report = report_selectors.study_anchored(study=study, evaluator=evaluator,
                                                     aspect=aspect, metric=metric)
            stem = "anchored/" + "-".join(slugify(part.replace(":", "-")) or "x"
                                          for part in (evaluator, metric, aspect))
            tables = exports.anchored_tables(report)
            for fmt, suffix in (("json", "json"), ("csv", "csv"), ("latex", "tex")):
                archive.writestr(f"{stem}.{suffix}", exports.render(report, tables, fmt))
            files[f"{stem}.json|csv|tex"] = (f"human-anchored (PPI++) system scores: "
                                             f"{evaluator} {metric} on the human {aspect}")
            written.append(report)
    return written


def _study_configuration(study: Study) -> dict:
    from ..report_selectors import study_field_specs

    return {
        "slug": study.slug, "title": study.title, "source": study.source,
        "benchmark": study.benchmark.slug, "author": study.author.get_username(),
        "created_at": study.created_at.isoformat(), "forms": study.forms,
        "likert_scales": study.likert_scales, "overlap_k": study.overlap_k,
        "gold_rate": study.gold_rate, "gold_pass_threshold": study.gold_pass_threshold,
        "tie_break_extra": study.tie_break_extra, "seconds_per_item": study.seconds_per_item,
        "instructions": study.instructions, "config": study.config,
        "fields": [spec.to_dict() for spec in study_field_specs(study=study).values()],
    }


EXPORT_EMPTY_HEADER = ("study", "item", "field", "value")
