"""Shared glue of the annotation commands: the author of imported studies, a study by slug,
and writing a rendered report to stdout or a file."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation.models import Study
from evaluation.models import Benchmark


def resolve_author(username: str | None):
    """--author USERNAME, else the first staff user: imported studies need an author."""
    User = get_user_model()
    if username:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        return user
    user = User.objects.filter(is_staff=True).order_by("pk").first()
    if user is None:
        raise CommandError("no staff user to own the imported study: pass --author USERNAME")
    return user


def get_study(slug: str) -> Study:
    study = Study.objects.select_related("benchmark", "author").filter(slug=slug).first()
    if study is None:
        raise CommandError(f"no study {slug!r}")
    return study


def get_benchmark(slug: str) -> Benchmark:
    benchmark = Benchmark.objects.filter(slug=slug).first()
    if benchmark is None:
        raise CommandError(f"no benchmark {slug!r}")
    return benchmark


def write_output(command, text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
        command.stderr.write(f"Wrote {output}")
    else:
        command.stdout.write(text, ending="")
