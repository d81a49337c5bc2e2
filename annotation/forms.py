"""Django forms of the author's pages (the annotators' task forms are in `taskforms`)."""

import json

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q

from annotation.lib import sampling, taskforms
from evaluation.access import benchmarks_for_user
from evaluation.lib.formats.jsonl import unstorable
from evaluation.models import Benchmark, Split, Submission

from .models import HandoutPolicy, Study
from .services.handout_policy import HandoutChoice


def submissions_for_author(user):
    """Turn-protocol submissions a study author may judge: published ones and their own."""
    turn = Submission.objects.filter(protocol=Submission.Protocol.TURN)
    if user.is_staff:
        return turn
    return turn.filter(Q(is_public=True) | Q(created_by=user) | Q(system__owner=user))


class HandoutForm(forms.Form):
    """How a study hands items out (statistics.md, "Label these next: active handout"); the
    service (`handout_policy.handout_policy_set`) checks the choice against the study's items."""

    handout_policy = forms.ChoiceField(
        choices=HandoutPolicy.choices, initial=HandoutPolicy.UNIFORM, widget=forms.RadioSelect,
        label="Hand items out", required=False, help_text="not given: uniform")
    handout_evaluator = forms.CharField(
        max_length=100, required=False, label="Evaluator (active)",
        help_text="its finished runs' scores on the study's items drive the active handout")
    handout_metric = forms.CharField(max_length=100, required=False, label="Its metric (active)",
                                     help_text="turn level: response items; dialogue level: "
                                               "conversation items")
    handout_aspect = forms.CharField(
        max_length=100, required=False, label="Human field (active)",
        help_text="the numeric field the metric's error is measured on, e.g. likert.naturalness; "
                  "empty: the only one there is")
    handout_budget = forms.IntegerField(
        min_value=1, max_value=1_000_000, required=False, label="Label budget (active)",
        help_text="how many items the humans label, in expectation (each to its overlap k)")

    REQUIRED_WHEN_ACTIVE = {
        "handout_evaluator": "Name the evaluator whose scores drive the active handout.",
        "handout_metric": "Name the metric of that evaluator that drives it.",
        "handout_budget": "Give the label budget: how many items the humans should label.",
    }

    def clean(self):
        data = super().clean()
        if data.get("handout_policy") == HandoutPolicy.ACTIVE:
            for name, message in self.REQUIRED_WHEN_ACTIVE.items():
                if not data.get(name) and name not in self.errors:
                    self.add_error(name, message)
        return data

    def handout_choice(self) -> HandoutChoice:
        data = self.cleaned_data
        if data.get("handout_policy") != HandoutPolicy.ACTIVE:
            return HandoutChoice()
        return HandoutChoice(policy=HandoutPolicy.ACTIVE,
                             evaluator=data.get("handout_evaluator", "").strip(),
                             metric=data.get("handout_metric", "").strip(),
                             aspect=data.get("handout_aspect", "").strip(),
                             budget=data.get("handout_budget"))

    def add_service_errors(self, error) -> None:
        """A ValidationError of the handout service (keyed policy, evaluator, …) on its fields;
        any other on the form."""
        if not hasattr(error, "error_dict"):
            for message in error.messages:
                self.add_error(None, message)
            return
        for key, messages in error.message_dict.items():
            name = f"handout_{key}"
            for message in messages:
                self.add_error(name if name in self.fields else None, message)


class StudyCreateForm(HandoutForm):
    title = forms.CharField(max_length=200)
    benchmark = forms.ModelChoiceField(queryset=Benchmark.objects.none(), to_field_name="slug")
    task_forms = forms.MultipleChoiceField(
        choices=lambda: list(taskforms.form_labels().items()),
        widget=forms.CheckboxSelectMultiple, label="Task forms",
        initial=[taskforms.CITATION, taskforms.CHECKLIST, taskforms.LIKERT])
    include_reference = forms.BooleanField(
        required=False, initial=True, label="Reference responses of the benchmark",
        help_text="the benchmark's own system turns count as one system")
    submissions = forms.ModelMultipleChoiceField(
        queryset=Submission.objects.none(), required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="turn-protocol submissions on the chosen benchmark")
    splits = forms.MultipleChoiceField(
        choices=[(s.value, s.value) for s in Split if s != Split.HIDDEN], required=False,
        widget=forms.CheckboxSelectMultiple, help_text="none ticked: every public split")
    sample_size = forms.IntegerField(min_value=1, max_value=5000, initial=30,
                                     help_text="dialogues (per system when stratified by system)")
    seed = forms.IntegerField(initial=0, min_value=0, max_value=2**31)
    stratify = forms.ChoiceField(choices=Study.Stratify.choices, required=False)
    overlap_k = forms.IntegerField(min_value=1, max_value=50, initial=3,
                                   label="Annotators per item (overlap k)")
    calibration_count = forms.IntegerField(min_value=0, max_value=50, initial=2,
                                           label="Calibration items (shown first)")
    gold_count = forms.IntegerField(min_value=0, max_value=200, initial=4,
                                    label="Hidden gold items")
    gold_rate = forms.FloatField(min_value=0, max_value=0.5, initial=0.1,
                                 help_text="share of an annotator's items that are gold")
    gold_pass_threshold = forms.FloatField(min_value=0, max_value=1, initial=0.7,
                                           help_text="gold accuracy below this is flagged")
    seconds_per_item = forms.IntegerField(min_value=5, max_value=3600, initial=90,
                                          label="Time estimate per item (seconds)")
    assignment_timeout_minutes = forms.IntegerField(
        min_value=1, max_value=24 * 60, initial=30,
        help_text="an item left this long goes back to the pool")
    tie_break_extra = forms.BooleanField(
        required=False, initial=True,
        label="One extra annotator when a categorical answer has no majority")
    likert_scales = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false"}), required=False,
        help_text="JSON list of {key, label, min, max, question, anchors}; empty: the defaults")
    instructions = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}), required=False,
                                   help_text="Markdown; empty: instructions for the chosen forms")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["benchmark"].queryset = benchmarks_for_user(user)
        self.fields["submissions"].queryset = (
            submissions_for_author(user).select_related("system", "benchmark")
            .order_by("benchmark__name", "system__name"))
        self.fields["submissions"].label_from_instance = (
            lambda s: f"{s.system.name} on {s.benchmark.name} ({s.created_at:%Y-%m-%d})")
        self.fields["likert_scales"].initial = json.dumps(
            list(taskforms.DEFAULT_LIKERT_SCALES), indent=1)

    def clean_likert_scales(self):
        raw = self.cleaned_data["likert_scales"].strip()
        if not raw:
            return list(taskforms.DEFAULT_LIKERT_SCALES)
        try:
            scales = json.loads(raw)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}") from exc
        except RecursionError as exc:
            raise forms.ValidationError("Not valid JSON: nested too deeply") from exc
        bad = unstorable(scales)  # "\u0000" and lone surrogates are JSON, not storable text
        if bad is not None:
            raise forms.ValidationError(f"{bad[0]}: {bad[1]}")
        errors = taskforms.validate_likert_scales(scales)
        if errors:
            raise forms.ValidationError(errors)
        return scales

    def clean(self):
        data = super().clean()
        benchmark, submissions = data.get("benchmark"), data.get("submissions") or []
        if benchmark and any(s.benchmark_id != benchmark.pk for s in submissions):
            self.add_error("submissions", "Choose submissions on the chosen benchmark.")
        if not data.get("include_reference") and not submissions:
            self.add_error("include_reference", "Choose the reference responses, submissions, "
                                                "or both.")
        pairwise = set(data.get("task_forms", [])) & set(taskforms.keys_for_mode("pairwise"))
        if data.get("stratify") == sampling.SYSTEM and pairwise:
            self.add_error("stratify", "Pairwise preference needs the paired design "
                                       "(no stratification by system).")
        return data


class ArenaStudyForm(forms.Form):
    """A study from an arena's voted battles (annotation/arena_studies.py)."""

    title = forms.CharField(max_length=200)
    task_forms = forms.MultipleChoiceField(
        choices=lambda: [(f.key, f.label) for f in taskforms.registered()
                         if f.mode == "conversation"],
        widget=forms.CheckboxSelectMultiple, label="Task forms", initial=[taskforms.FACE],
        help_text="whole conversations: FACE's dialogue aspects (overall impression, task "
                  "completion, …) and/or CoRE's factors and overall score")
    sample_size = forms.IntegerField(
        min_value=1, max_value=100000, required=False, label="Battles",
        help_text="empty: every voted battle; otherwise a seeded random sample of this many")
    overlap_k = forms.IntegerField(min_value=1, max_value=50, initial=3,
                                   label="Annotators per conversation (overlap k)")
    # the same settings, checked the same way, as a study of responses
    seed = StudyCreateForm.base_fields["seed"]
    seconds_per_item = StudyCreateForm.base_fields["seconds_per_item"]
    assignment_timeout_minutes = StudyCreateForm.base_fields["assignment_timeout_minutes"]
    instructions = StudyCreateForm.base_fields["instructions"]


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150)

    def clean_username(self):
        user = get_user_model().objects.filter(username=self.cleaned_data["username"]).first()
        if user is None:
            raise forms.ValidationError("No such user.")
        return user


class ExclusionForm(forms.Form):
    excluded = forms.BooleanField(required=False)
    reason = forms.CharField(max_length=300, required=False)

    def clean(self):
        data = super().clean()
        if data.get("excluded") and not data.get("reason", "").strip():
            self.add_error("reason", "Say why (the reason goes into the export).")
        return data
