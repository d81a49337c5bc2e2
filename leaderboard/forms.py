"""Forms of the researcher pages: sign up, register or edit a system, upload a submission."""

from django import forms
from django.contrib.auth.forms import UserCreationForm

from evaluation.models import System

FAMILIES = ("retrieval", "dense", "LLM", "planning", "hybrid", "rule-based", "other")


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=False, help_text="optional; never shown publicly")

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


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


class SubmissionForm(forms.Form):
    benchmark = forms.ChoiceField(help_text="the benchmark whose reference turns you answered")
    file = forms.FileField(label="Submission file (submission.jsonl)",
                           help_text="one JSON line per answered system turn (docs/formats.md §2)")
    note = forms.CharField(max_length=300, required=False,
                           help_text="optional, e.g. the model checkpoint")

    def __init__(self, *args, benchmarks=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.benchmarks = {b.slug: b for b in benchmarks}
        self.fields["benchmark"].choices = [(b.slug, f"{b.name} (v{b.version})")
                                            for b in benchmarks]

    def clean_benchmark(self):
        return self.benchmarks[self.cleaned_data["benchmark"]]


class SimulationForm(forms.Form):
    """Run a user simulator against the researcher's own live system (docs/simulation.md)."""

    endpoint = forms.URLField(
        label="Live endpoint URL", required=False, assume_scheme="http",
        help_text="your system's concord-live/1 endpoint (docs/formats.md §4); leave empty to "
                  "keep the registered one")
    api_key_env = forms.RegexField(
        label="API key variable", required=False, regex=r"^[A-Z_][A-Z0-9_]*$",
        help_text="the NAME of the environment variable holding the key on Concord's workers "
                  "(the key itself is never stored)")
    timeout_seconds = forms.FloatField(label="Timeout (s)", initial=30, min_value=0.1,
                                       max_value=600)
    benchmark = forms.ChoiceField()
    simulator = forms.ChoiceField(choices=[
        ("template", "template — deterministic, no LLM (not PEPPER)"),
        ("pepper", "PEPPER — target-free, LLM"), ("ievalm", "iEvaLM-style — target-based, LLM")])
    users = forms.IntegerField(min_value=1, max_value=5000, initial=20)
    turns = forms.IntegerField(min_value=1, max_value=50, initial=10)
    seed = forms.IntegerField(initial=0)

    def __init__(self, *args, benchmarks=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.benchmarks = {b.slug: b for b in benchmarks}
        self.fields["benchmark"].choices = [(b.slug, b.name) for b in benchmarks]

    def clean_benchmark(self):
        return self.benchmarks[self.cleaned_data["benchmark"]]
