"""An outside researcher gets the public part of a benchmark from the benchmark page, the REST
API and `export_benchmark --public`, plus a sample submission and a local validator that gives
the upload's own report; hidden gold is in no download (formats.md §1, "Public download")."""

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from evaluation.lib.formats.bundle import Bundle, bundle_files, read_bundle
from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.public_bundle import HIDDEN_TEXT, bundle_zip
from tests.support.bundles import tiny_data, write_tiny
from tests.support.submissions import tiny_lines

pytestmark = pytest.mark.django_db

SECRET = "x-secret"


@pytest.fixture
def secret_benchmark(tmp_path):
    """Tiny, with hidden dialogue d3 answered twice: its gold items (x-secret, then r2) and
    its target item are hidden gold; x-secret occurs nowhere outside d3."""
    from evaluation.services.benchmarks import benchmark_import

    data = tiny_data()
    data["benchmark"]["slug"] = "secret"
    data["items"].append({"id": SECRET, "name": "Secret Garden Cafe", "type": "restaurant",
                          "city": "Philadelphia"})
    data["reviews"].append({"id": "v-secret", "item_id": SECRET,
                            "text": "A hidden courtyard nobody knows."})
    d3 = next(d for d in data["dialogues"] if d["id"] == "d3")
    d3["scenario"] = {"difficulty": "easy", "wants": SECRET}
    d3["candidate_item_ids"] = [SECRET, "r1", "r2", "h1"]
    d3["target_item_ids"] = [SECRET]
    d3["turns"][1].update({"text": 'Secret Garden Cafe: "A hidden courtyard" [R1].',
                           "referenced_item_ids": [SECRET], "gold_item_ids": [SECRET],
                           "alternative_item_ids": ["r1"],
                           "citations": [{"label": "R1", "review_id": "v-secret",
                                          "quote": "A hidden courtyard"}]})
    d3["turns"] += [
        {"index": 2, "role": "user", "text": "Too quiet. Something cheaper?",
         "action": "reject_and_refine"},
        {"index": 3, "role": "system", "text": "Noodle Nook then.", "action": "recommend",
         "referenced_item_ids": ["r2"], "gold_item_ids": ["r2"]},
        {"index": 4, "role": "user", "text": "Noodle Nook is perfect, thanks!",
         "action": "accept"},
    ]
    return benchmark_import(path=write_tiny(tmp_path / "secret", data))


def _zip_files(body: bytes) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        return {Path(name).name: archive.read(name).decode() for name in archive.namelist()}


def _records(files: dict[str, str]) -> dict[str, list[dict]]:
    out = {}
    for name, text in files.items():
        out[name] = ([json.loads(text)] if name.endswith(".json")
                     else [json.loads(line) for line in text.splitlines() if line.strip()])
    return out


def _paths_holding(value, target, path="$"):
    """Every JSON path whose value is (or contains as a substring) TARGET."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths_holding(child, target, f"{path}.{key}")
    elif isinstance(value, list):
        for position, child in enumerate(value):
            yield from _paths_holding(child, target, f"{path}[{position}]")
    elif isinstance(value, str) and target in value:
        yield path


def _downloads(benchmark, tmp_path) -> dict[str, dict[str, str]]:
    """Every download of the benchmark, for every kind of visitor, as {file: text}."""
    from tests.conftest import _user

    staff = _user("boss", staff=True)
    out = {}
    for who, user in (("anonymous", None), ("staff", staff)):
        client = Client()
        if user:
            client.force_login(user)
        for name, url in (
            ("page", reverse("benchmark_public_download", args=[benchmark.slug])),
            ("api", reverse("leaderboard:api_benchmark_public", args=[benchmark.slug])),
        ):
            response = client.get(url)
            assert response.status_code == 200, url
            assert response["Content-Disposition"].startswith("attachment;")
            out[f"{who} {name}"] = _zip_files(response.content)
        for name, url in (
            ("sample", reverse("benchmark_sample_submission", args=[benchmark.slug])),
            ("api sample", reverse("leaderboard:api_benchmark_sample", args=[benchmark.slug])),
        ):
            response = client.get(url)
            assert response.status_code == 200, url
            out[f"{who} {name}"] = {"submission.jsonl": response.content.decode()}
    folder = tmp_path / "exported"
    call_command("export_benchmark", benchmark.slug, str(folder), "--public",
                 stdout=io.StringIO())
    out["export --public"] = {p.name: p.read_text() for p in folder.iterdir()}
    return out


def test_no_download_holds_any_hidden_gold(secret_benchmark, tmp_path):
    from evaluation.selectors.benchmarks import benchmark_bundle

    full = benchmark_bundle(benchmark=secret_benchmark)
    hidden = [d for d in full.dialogues if d["split"] == "hidden"]
    gold = {item for d in hidden for key in ("target_item_ids", "seen_item_ids")
            for item in d.get(key, [])}
    gold |= {item for d in hidden for t in d["turns"]
             for key in ("gold_item_ids", "alternative_item_ids", "referenced_item_ids")
             for item in t.get(key, [])}
    gold |= {c["review_id"] for d in hidden for t in d["turns"] for c in t.get("citations", [])}
    assert {SECRET, "r2", "r1", "v-secret"} <= gold
    answered_texts = [t["text"] for d in hidden for t in d["turns"] if t["role"] == "system"]
    downloads = _downloads(secret_benchmark, tmp_path)
    assert len(downloads) == 9
    for where, files in downloads.items():
        for name, records in _records(files).items():
            for record in records:
                hidden_dialogue = name == "dialogues.jsonl" and record["split"] == "hidden"
                for gold_id in gold:
                    found = list(_paths_holding(record, gold_id))
                    if hidden_dialogue:
                        # a candidate must be offered to be answered; the pool is in id order
                        assert all(p.startswith("$.candidate_item_ids[") for p in found), \
                            (where, name, gold_id, found)
                    elif (gold_id == SECRET or gold_id == "v-secret") and found:
                        # the catalogue lists every item and review, gold or not
                        assert name in ("items.jsonl", "reviews.jsonl") and found in (
                            ["$.id"], ["$.item_id"]), (where, name, found)
                if hidden_dialogue:
                    assert record["candidate_item_ids"] == sorted(record["candidate_item_ids"])
                    assert record["scenario"] == {}
                    for text in answered_texts:
                        assert text not in json.dumps(record, ensure_ascii=False), where
        raw = "".join(files.values())
        assert "Secret Garden Cafe:" not in raw and "is perfect" not in raw, where


def test_public_bundle_is_a_valid_bundle_with_hidden_contexts(secret_benchmark, tmp_path):
    response = Client().get(reverse("benchmark_public_download", args=["secret"]))
    archive = tmp_path / "secret-public.zip"
    archive.write_bytes(response.content)
    bundle = read_bundle(archive, max_bytes=10**8)
    by_id = {d["id"]: d for d in bundle.dialogues}
    assert {d["split"] for d in bundle.dialogues} == {"train", "test", "hidden"}
    # public splits are given in full, gold included
    assert by_id["d1"]["turns"][1]["gold_item_ids"] == ["r1"]
    # the hidden dialogue: the user's words before the last answered turn, nothing else
    d3 = by_id["d3"]
    assert [t["text"] for t in d3["turns"]] == [
        "Something with a view.", HIDDEN_TEXT, "Too quiet. Something cheaper?", HIDDEN_TEXT,
        HIDDEN_TEXT]
    assert [t["action"] for t in d3["turns"]][1::2] == ["recommend", "recommend"]


def test_the_same_bundle_gives_the_same_zip_at_any_time(monkeypatch, tmp_path):
    """The stored download and a rebuild match byte for byte, even across a clock tick (a
    .zip stamps its members in 2 s steps: CI once built the two in different steps)."""
    import time

    bundle = Bundle(**tiny_data())
    built = []
    for now in (1_700_000_000.0, 1_700_003_601.0):  # an hour and a second apart
        monkeypatch.setattr(time, "time", lambda now=now: now)
        built.append(bundle_zip(bundle, "tiny-public"))
    monkeypatch.undo()
    assert built[0] == built[1]
    archive = tmp_path / "tiny-public.zip"
    archive.write_bytes(built[0])
    with zipfile.ZipFile(archive) as opened:
        assert {member.date_time for member in opened.infolist()} == {(1980, 1, 1, 0, 0, 0)}
        assert {member.external_attr >> 16 for member in opened.infolist()} == {0o644}
        assert {name: opened.read(f"tiny-public/{name}").decode()
                for name in bundle_files(bundle)} == bundle_files(bundle)


def test_benchmark_page_and_api_link_the_downloads(client, secret_benchmark):
    page = client.get(reverse("benchmark_detail", args=["secret"])).content.decode()
    assert reverse("benchmark_public_download", args=["secret"]) in page
    assert reverse("benchmark_sample_submission", args=["secret"]) in page
    assert "validate_submission" in page
    api = client.get(reverse("leaderboard:api_benchmark", args=["secret"])).json()
    assert api["public_bundle"].endswith("/public.zip")
    assert api["sample_submission"].endswith("/sample-submission.jsonl")


def test_sample_submission_is_valid_and_covers_the_public_splits(secret_benchmark, tmp_path):
    from evaluation.lib.formats.submission import validate_submission
    from evaluation.selectors.benchmarks import benchmark_submission_reference

    body = Client().get(reverse("benchmark_sample_submission", args=["secret"])).content
    path = tmp_path / "sample.jsonl"
    path.write_bytes(body)
    summary = validate_submission(
        path, protocol="turn",
        reference=benchmark_submission_reference(benchmark=secret_benchmark))
    assert summary.splits == ("test", "train") and summary.line_count == 3


def _run_validator(*args) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("validate_submission", *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, out.getvalue()


def test_validate_submission_gives_the_uploads_report(secret_benchmark, researcher, tmp_path):
    from evaluation.services.submissions import submission_submit, system_create

    archive = tmp_path / "secret-public.zip"
    archive.write_bytes(Client().get(reverse("benchmark_public_download",
                                             args=["secret"])).content)
    lines = tiny_lines()
    lines[0]["ranked_item_ids"] = ["r2", "nope"]
    lines[2]["response"] = " "
    lines.append({"dialogue_id": "d3", "turn_index": 2, "response": "x",
                  "ranked_item_ids": ["a1"]})
    del lines[1]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines) + "{oops\n")
    system = system_create(name="Echo", owner=researcher)
    with pytest.raises(FormatError) as upload, bad.open("rb") as handle:
        submission_submit(system=system, benchmark=secret_benchmark, file=handle,
                          user=researcher)
    expected = [str(issue) for issue in upload.value.issues]
    assert any(":4: $.turn_index" in line for line in expected)
    assert any("d1" in line and "no answer for turn 3" in line for line in expected)
    for source in (["--bundle", str(archive)], ["--benchmark", "secret"]):
        code, out = _run_validator(str(bad), *source)
        assert code == 1
        header, *report = out.splitlines()  # one stream: the header first, then the report
        assert header == f"bad.jsonl: {len(expected)} problems; the upload would be refused:"
        assert report == expected, source
    good = tmp_path / "good.jsonl"
    good.write_bytes(Client().get(reverse("benchmark_sample_submission",
                                          args=["secret"])).content)
    code, out = _run_validator(str(good), "--bundle", str(archive))
    assert code == 0 and "valid turn submission, 3 lines" in out
