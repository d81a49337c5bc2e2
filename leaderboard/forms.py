"""Forms of the researcher pages: sign up, register or edit a system, upload a submission."""

from django import forms
from django.contrib.auth.forms import UserCreationForm

from evaluation.lib.metrics.preference import PCIR_EQ3, PCIR_TABLES
from evaluation.lib.simulators.simulators import DEFAULT_SHOWN_K, MAX_SHOWN_K
from evaluation.models import System

FAMILIES = ("retrieval", "dense", "LLM", "planning", "hybrid", "rule-based", "other")


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=False, help_text="optional; never shown publicly")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


def endpoint_field(help_text: str) -> forms.URLField:
    """A live system's concord-live/1 endpoint: a text box for the same reason as SystemForm's
    links (the registration form and the Simulate users form)."""
    return forms.URLField(
        label="Live endpoint URL", required=False, assume_scheme="http", help_text=help_text,
        widget=forms.TextInput(attrs={"inputmode": "url",
                                      "placeholder": "localhost:8080/concord-live"}))


def credential_field() -> forms.ChoiceField:
    return forms.ChoiceField(
        label="API key", required=False,
        help_text="one of the keys the operator offers (CONCORD_CREDENTIALS), sent to your "
                  "endpoint as a Bearer token; none: no key is sent")


def offer_credentials(form: forms.Form, credentials) -> None:
    form.fields["credential"].choices = [("", "none")] + [(n, n) for n in credentials]
    form.fields["credential"].error_messages["invalid_choice"] = (
        "%(value)s is not a credential the operator offers you (CONCORD_CREDENTIALS): "
        f"choose one of {', '.join(credentials) or 'none offered'}, or none")


class SystemForm(forms.ModelForm):
    # A text box, not <input type="url">: the browser would refuse "arxiv.org/abs/…" without a
    # scheme, which the server accepts (assume_scheme) — the two must agree.
    paper_url = forms.URLField(label="Paper link", required=False, assume_scheme="https",
                               widget=forms.TextInput(attrs={"inputmode": "url",
                                                             "placeholder": "arxiv.org/abs/…"}))
    code_url = forms.URLField(label="Code link", required=False, assume_scheme="https",
                              widget=forms.TextInput(attrs={"inputmode": "url",
                                                            "placeholder": "github.com/…"}))

    class Meta:
        model = System
        fields = ("name", "team", "family", "description", "paper_url", "code_url")
        widgets = {
            "description": forms.Textarea(attrs={"rows": 4}),
            "family": forms.TextInput(attrs={"list": "families"}),
        }


class SystemRegistrationForm(SystemForm):
    """A new system's public details, and optionally the live endpoint Concord calls for user
    simulation and the arena (set later on the Simulate users form otherwise)."""

    endpoint = endpoint_field("optional: your system's concord-live/1 endpoint (docs/formats.md "
                              "§4), for user simulation and the arena; you can add it later")
    credential = credential_field()

    def __init__(self, *args, credentials=(), **kwargs):
        super().__init__(*args, **kwargs)
        offer_credentials(self, credentials)

    def clean(self):
        data = super().clean()
        if data.get("credential") and not data.get("endpoint"):
            self.add_error("credential", "An API key is sent to an endpoint: give the endpoint "
                                         "too, or choose none.")
        return data


class SubmissionForm(forms.Form):
    benchmark = forms.ChoiceField(help_text="the benchmark whose reference turns or dialogues "
                                            "your file answers")
    protocol = forms.ChoiceField(
        choices=[("turn", "turn: one line per answered system turn"),
                 ("log", "log: one line per whole conversation")],
        initial="turn", widget=forms.RadioSelect, required=False,
        help_text="turn files are scored by the Trace metrics, log files by the LLM evaluators "
                  "(docs/formats.md §2)")
    file = forms.FileField(label="Submission file (JSON Lines)",
                           help_text="submission.jsonl or logs.jsonl (docs/formats.md §2)")
    note = forms.CharField(max_length=300, required=False,
                           help_text="optional, e.g. the model checkpoint")

    def __init__(self, *args, benchmarks=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.benchmarks = {b.slug: b for b in benchmarks}
        self.fields["benchmark"].choices = [
            (b.slug, f"{b.name} (v{b.version}; {', '.join(b.protocols or ['turn'])})")
            for b in benchmarks]

    def clean_benchmark(self):
        return self.benchmarks[self.cleaned_data["benchmark"]]

    def clean(self):
        data = super().clean()
        data["protocol"] = data.get("protocol") or "turn"  # older clients send none
        benchmark, protocol = data.get("benchmark"), data["protocol"]
        if benchmark and protocol and protocol not in (benchmark.protocols or ["turn"]):
            self.add_error("protocol", f"{benchmark.name} takes "
                           f"{' and '.join(benchmark.protocols or ['turn'])} submissions only")
        return data


class SimulationForm(forms.Form):
    """Run a user simulator against the researcher's own live system (docs/simulation.md)."""

    endpoint = endpoint_field("your system's concord-live/1 endpoint (docs/formats.md §4); "
                              "leave empty to keep the registered one")
    credential = credential_field()
    timeout_seconds = forms.FloatField(label="Timeout (s)", initial=30, min_value=0.1,
                                       max_value=600)
    benchmark = forms.ChoiceField()
    simulator = forms.ChoiceField(choices=[
        ("template", "template — deterministic, no LLM (not PEPPER)"),
        ("pepper", "PEPPER — target-free, LLM"),
        ("ievalm", "iEvaLM — target-based, LLM (accepts a target in the top 50)")])
    users = forms.IntegerField(min_value=1, max_value=5000, initial=20)
    turns = forms.IntegerField(min_value=1, max_value=50, initial=10)
    seed = forms.IntegerField(initial=0)
    shown_k = forms.IntegerField(
        label="Items shown to the user", min_value=1, max_value=MAX_SHOWN_K, required=False,
        initial=DEFAULT_SHOWN_K, help_text=f"the item interface's size: PEPPER shows "
                                           f"{DEFAULT_SHOWN_K} (§4.1.3); part of the design")
    pcir = forms.ChoiceField(label="PCIR_avg", initial=PCIR_EQ3, required=False, choices=[
        (PCIR_EQ3, "Eq. 3 as written: PC_T / T (default)"),
        (PCIR_TABLES, "(PC_T − PC_1) / (T − 1): fits the paper's Tables 3 and 5")],
        help_text="which reading of PEPPER's PCIR_avg the run reports (docs/simulation.md)")

    def __init__(self, *args, benchmarks=(), credentials=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.benchmarks = {b.slug: b for b in benchmarks}
        self.fields["benchmark"].choices = [(b.slug, b.name) for b in benchmarks]
        offer_credentials(self, credentials)

    def clean_benchmark(self):
        return self.benchmarks[self.cleaned_data["benchmark"]]

    def clean_shown_k(self):  # left empty: PEPPER's item interface
        value = self.cleaned_data.get("shown_k")
        return DEFAULT_SHOWN_K if value is None else value

    def clean_pcir(self):
        return self.cleaned_data.get("pcir") or PCIR_EQ3


class _FaceInstructionsOnly(forms.Form):
    """An evaluator choice with FACE's instruction version, which no other evaluator takes."""

    def clean(self):
        data = super().clean()
        takes = {spec.name for spec in self.evaluators if "face" in spec.options}
        if data.get("instructions") and data.get("evaluator") not in takes:
            self.add_error("instructions", "Instruction versions are for FACE only.")
        return data


class LLMEvaluationForm(_FaceInstructionsOnly):
    """Start an LLM evaluator on one submission (docs/llm.md, "From the web")."""

    evaluator = forms.ChoiceField()
    profile = forms.ChoiceField(
        label="Model", help_text="one of the models the operator offers (CONCORD_LLM_PROFILES)",
        error_messages={"invalid_choice": "%(value)s is not a model profile the operator "
                                          "offers (CONCORD_LLM_PROFILES)."})
    instructions = forms.RegexField(
        label="FACE instruction version", required=False, regex=r"^[a-z_]+-v[0-9]+$",
        max_length=100, help_text="FACE only: an optimized instruction set, e.g. relevance-v1 "
                                  "(empty: FACE's initial instructions)",
        error_messages={"invalid": "An instruction version looks like relevance-v1."})
    limit = forms.IntegerField(label="Only the first N units", required=False, min_value=1,
                               help_text="a cheap trial; empty: every unit")

    def __init__(self, *args, evaluators=(), profiles=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.evaluators = list(evaluators)
        self.fields["evaluator"].choices = [(spec.name, f"{spec.title} ({spec.name})")
                                            for spec in evaluators]
        self.fields["profile"].choices = [(p.name, p.title) for p in profiles]


class AutoEvaluatorForm(_FaceInstructionsOnly):
    """An LLM evaluator run on every new upload to a benchmark (docs/llm.md, "Automatic runs
    on new submissions")."""

    evaluator = forms.ChoiceField()
    # Staff only: a litellm model reached through the operator's `default` profile.
    model = forms.RegexField(
        regex=r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}$", max_length=200,
        help_text="a litellm model name, e.g. openai/gpt-4o-mini; it is reached through the "
                  "operator's `default` model profile (CONCORD_LLM_API_BASE and its key)",
        error_messages={"invalid": "A model name is letters, digits and . _ : / @ + - only."})
    instructions = LLMEvaluationForm.base_fields["instructions"]
    max_cost_per_submission = forms.FloatField(
        label="Budget per submission (USD)", required=False, min_value=0,
        help_text="a run whose estimate is higher waits for approval; empty: no limit")
    max_cost_per_day = forms.FloatField(
        label="Budget per day (USD)", required=False, min_value=0,
        help_text="today's (UTC) automatic runs of this evaluator, estimated; empty: no limit")
    enabled = forms.BooleanField(required=False, initial=True)
    field_order = ["evaluator", "model", "instructions", "max_cost_per_submission",
                   "max_cost_per_day", "enabled"]

    def __init__(self, *args, evaluators=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.evaluators = list(evaluators)
        self.fields["evaluator"].choices = [
            (spec.name, f"{spec.title} ({spec.name}, {spec.protocol} submissions)")
            for spec in evaluators]
