"""Reads for a study's FACE page: the instruction optimizations trained on the study's labels,
each with its iterations (beam, tokens, cost) and every instruction version (parent, textual
gradient, UCB estimate, training and dev correlation), and the aspects the study can train."""

from evaluation.lib.llm.face.aspects import ASPECTS
from evaluation.models import FaceOptimization, Job

from .report_selectors import study_field_specs


def trainable_aspects(*, study) -> list[dict]:
    """The FACE aspects the study labels, with the field that holds them."""
    fields = study_field_specs(study=study)
    found = []
    for aspect in ASPECTS.values():
        name = next((f for f in aspect.label_fields if f in fields), None)
        if name is not None and fields[name].unit_type == aspect.level:
            found.append({"key": aspect.key, "field": name, "level": aspect.level})
    return found


def study_face_optimizations(*, study) -> list[dict]:
    optimizations = (FaceOptimization.objects.filter(study_slug=study.slug,
                                                     benchmark=study.benchmark)
                     .select_related("job").order_by("-created_at", "-pk"))
    result = []
    for optimization in optimizations:
        instructions = list(optimization.instructions.order_by("iteration", "pk"))
        job = optimization.job
        result.append({
            "optimization": optimization, "name": optimization.name, "job": job,
            "finished": job is not None and job.status == Job.Status.SUCCEEDED,
            "stopped": job is not None and job.status == Job.Status.FAILED,
            "selected": [i for i in instructions if i.selected],
            "iterations": [{
                "report": next((u for u in optimization.usage if u["iteration"] == k), None),
                "beam": (optimization.beams or {}).get(str(k), []),
                "instructions": [i for i in instructions if i.iteration == k],
            } for k in range(0, int(optimization.params.get("iterations", 0)) + 1)],
        })
    return result
