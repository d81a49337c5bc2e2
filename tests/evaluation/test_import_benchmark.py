import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.models import Benchmark, Citation, Dialogue, DialogueItem, Item, Review, Turn
from tests.support.bundles import tiny_data, write_tiny

MODELS = (Benchmark, Item, Review, Dialogue, DialogueItem, Turn, Citation)


def import_error(path) -> str:
    """Run the command, expect exit code 1 and nothing stored; return the message."""
    with pytest.raises(CommandError) as caught:
        call_command("import_benchmark", str(path), "--no-progress")
    assert caught.value.returncode == 1
    assert all(model.objects.count() == 0 for model in MODELS), "a failed import stored rows"
    return str(caught.value)


def rewrite_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.django_db
def test_import_stores_every_record_with_links(tiny_bundle_dir):
    out = io.StringIO()
    call_command("import_benchmark", str(tiny_bundle_dir), "--no-progress", stdout=out)
    assert "Imported tiny: 4 items, 4 reviews, 3 dialogues" in out.getvalue()
    d1 = Dialogue.objects.get(external_id="d1")
    pool = [link.item.external_id for link in d1.item_links.filter(role="candidate")]
    assert pool == ["r1", "r2"]
    turn = d1.turns.get(index=1)
    citation = turn.citations.get()
    assert citation.review.text[citation.start:citation.end] == citation.quote
    assert [link.item.external_id for link in turn.item_links.filter(role="gold")] == ["r1"]
    assert d1.difficulty == "easy"


@pytest.mark.django_db
def test_export_reproduces_the_bundle_byte_for_byte(tiny_bundle_dir, tmp_path):
    call_command("import_benchmark", str(tiny_bundle_dir), "--no-progress")
    call_command("export_benchmark", "tiny", str(tmp_path / "out"), stdout=io.StringIO())
    for name in ("benchmark.json", "items.jsonl", "reviews.jsonl", "dialogues.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tiny_bundle_dir / name).read_bytes(), name


@pytest.mark.django_db
def test_missing_offsets_are_found_and_exported(tmp_path):
    data = tiny_data()
    citation = data["dialogues"][1]["turns"][1]["citations"][0]
    del citation["start"], citation["end"]
    call_command("import_benchmark", str(write_tiny(tmp_path / "b", data)), "--no-progress")
    stored = Citation.objects.get(turn__dialogue__external_id="d2")
    assert (stored.start, stored.end) == (19, 31)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_archives_import_with_or_without_a_top_folder(tiny_bundle_dir, tmp_path, kind):
    archive = tmp_path / f"bundle.{kind}"
    names = sorted(p.name for p in tiny_bundle_dir.iterdir())
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as zf:
            for name in names:
                zf.write(tiny_bundle_dir / name, f"tiny/{name}")
    else:
        with tarfile.open(archive, "w:gz") as tf:
            for name in names:
                tf.add(tiny_bundle_dir / name, name)
    call_command("import_benchmark", str(archive), "--no-progress", stdout=io.StringIO())
    assert Benchmark.objects.get().dialogues.count() == 3


@pytest.mark.django_db
def test_background_import_queues_a_job_that_a_worker_runs(tiny_bundle_dir,
                                                           django_capture_on_commit_callbacks):
    from evaluation.models import Job

    out = io.StringIO()
    with django_capture_on_commit_callbacks(execute=True):  # the task runs eagerly in tests
        call_command("import_benchmark", str(tiny_bundle_dir), "--background", stdout=out)
    job = Job.objects.get(kind=Job.Kind.IMPORT_BENCHMARK)
    assert f"Queued import job {job.pk}" in out.getvalue()
    assert job.status == Job.Status.SUCCEEDED and job.result == {"benchmark": "tiny"}
    assert job.params["path"] == str(Path(tiny_bundle_dir).resolve())
    assert Benchmark.objects.get(slug="tiny").dialogues.count() == 3
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_benchmark", str(tiny_bundle_dir / "nope"), "--background")


@pytest.mark.django_db
def test_second_import_of_same_slug_is_refused_unless_replace(tiny_bundle_dir):
    call_command("import_benchmark", str(tiny_bundle_dir), "--no-progress")
    with pytest.raises(CommandError, match="already exists"):
        call_command("import_benchmark", str(tiny_bundle_dir), "--no-progress")
    call_command("import_benchmark", str(tiny_bundle_dir), "--no-progress", "--replace")
    assert Benchmark.objects.count() == 1 and Item.objects.count() == 4


@pytest.mark.django_db
def test_malformed_json_names_the_line(tiny_bundle_dir):
    rewrite_line(tiny_bundle_dir / "items.jsonl", 3, '{"id": "h1", "name": ')
    message = import_error(tiny_bundle_dir)
    assert "items.jsonl:3: $: malformed JSON" in message


@pytest.mark.django_db
def test_missing_required_field_names_line_and_path(tiny_bundle_dir):
    data = tiny_data()
    del data["dialogues"][1]["turns"][1]["action"]
    write_tiny(tiny_bundle_dir, data)
    message = import_error(tiny_bundle_dir)
    assert "dialogues.jsonl:2: $.turns[1].action: required field is missing" in message


@pytest.mark.django_db
def test_unknown_item_in_a_turn_is_reported(tiny_bundle_dir):
    data = tiny_data()
    data["dialogues"][0]["turns"][1]["referenced_item_ids"] = ["r1", "nope"]
    write_tiny(tiny_bundle_dir, data)
    message = import_error(tiny_bundle_dir)
    assert "dialogues.jsonl:1: $.turns[1].referenced_item_ids[1]: unknown item id 'nope'" in message


@pytest.mark.django_db
def test_quote_absent_from_its_review_is_reported(tiny_bundle_dir):
    data = tiny_data()
    citation = data["dialogues"][0]["turns"][1]["citations"][0]
    citation["quote"] = "The lobster was bland"
    del citation["start"], citation["end"]
    write_tiny(tiny_bundle_dir, data)
    message = import_error(tiny_bundle_dir)
    assert ("dialogues.jsonl:1: $.turns[1].citations[0].quote: quote does not occur in review "
            "'v1'") in message


@pytest.mark.django_db
def test_offsets_that_miss_the_quote_are_reported(tiny_bundle_dir):
    data = tiny_data()
    data["dialogues"][0]["turns"][1]["citations"][0]["start"] = 1
    write_tiny(tiny_bundle_dir, data)
    assert "$.turns[1].citations[0].start: offsets 1..30 do not hold the quote" in import_error(
        tiny_bundle_dir)


@pytest.mark.django_db
def test_duplicate_dialogue_id_is_reported(tiny_bundle_dir):
    data = tiny_data()
    data["dialogues"][2]["id"] = "d1"
    write_tiny(tiny_bundle_dir, data)
    assert "dialogues.jsonl:3: $.id: duplicate id 'd1' (first on line 1)" in import_error(
        tiny_bundle_dir)


@pytest.mark.django_db
def test_gold_outside_the_candidate_pool_is_reported(tiny_bundle_dir):
    data = tiny_data()
    data["dialogues"][1]["turns"][1]["gold_item_ids"] = ["r1"]
    write_tiny(tiny_bundle_dir, data)
    assert ("dialogues.jsonl:2: $.turns[1].gold_item_ids[0]: item 'r1' is not in the dialogue's "
            "candidate pool") in import_error(tiny_bundle_dir)


@pytest.mark.django_db
def test_value_out_of_range_is_reported(tiny_bundle_dir):
    data = tiny_data()
    data["items"][0]["price_level"] = 7
    write_tiny(tiny_bundle_dir, data)
    assert "items.jsonl:1: $.price_level: expected a value <= 4, got 7" in import_error(
        tiny_bundle_dir)


@pytest.mark.django_db
def test_all_problems_are_listed_not_just_the_first(tiny_bundle_dir):
    data = tiny_data()
    data["items"][0]["price_level"] = 0
    data["reviews"][0]["item_id"] = "ghost"
    write_tiny(tiny_bundle_dir, data)
    message = import_error(tiny_bundle_dir)
    assert "items.jsonl:1: $.price_level" in message
    assert "reviews.jsonl:1: $.item_id: unknown item id 'ghost'" not in message  # schema stage 1st
    data["items"][0]["price_level"] = 1
    write_tiny(tiny_bundle_dir, data)
    assert "reviews.jsonl:1: $.item_id: unknown item id 'ghost'" in import_error(tiny_bundle_dir)


@pytest.mark.django_db
def test_archive_member_escaping_the_root_is_refused(tiny_bundle_dir, tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in tiny_bundle_dir.iterdir():
            zf.write(path, path.name)
        zf.writestr("../outside.txt", "gotcha")
    assert "evil.zip: ../outside.txt: archive member points outside the bundle root" in (
        import_error(archive))


@pytest.mark.django_db
def test_archive_with_a_symlink_is_refused(tiny_bundle_dir, tmp_path):
    archive = tmp_path / "links.tar.gz"
    with tarfile.open(archive, "w:gz") as tf:
        for path in tiny_bundle_dir.iterdir():
            tf.add(path, path.name)
        link = tarfile.TarInfo("reviews-link.jsonl")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
    assert "links.tar.gz: reviews-link.jsonl: links and special files are refused" in (
        import_error(archive))


@pytest.mark.django_db
def test_two_gigabyte_file_is_rejected_by_size_before_reading(tiny_bundle_dir):
    huge = tiny_bundle_dir / "reviews.jsonl"
    with open(huge, "r+b") as handle:  # sparse: takes no disk, and is never read
        handle.truncate(2 * 1024**3)
    assert "reviews.jsonl: $: file is 2.0 GB, over the 200.0 MB limit" in import_error(
        tiny_bundle_dir)


@pytest.mark.django_db
def test_non_utf8_bytes_are_reported_with_their_line(tiny_bundle_dir):
    path = tiny_bundle_dir / "reviews.jsonl"
    path.write_bytes(path.read_bytes().replace(b"Friendly", b"Fri\xffndly"))
    assert "reviews.jsonl:4: $: not UTF-8 text (byte 0xff)" in import_error(tiny_bundle_dir)


def test_command_line_exits_1_with_the_error_on_stderr(tmp_path):
    bundle = write_tiny(tmp_path / "b")
    rewrite_line(bundle / "dialogues.jsonl", 2, "{not json")
    env = {**os.environ, "DJANGO_ENV": "development", "CONCORD_VAR_DIR": str(tmp_path / "var")}
    env.pop("DATABASE_URL", None)
    result = subprocess.run([sys.executable, "manage.py", "import_benchmark", str(bundle),
                             "--no-progress"], capture_output=True, text=True, env=env,
                            cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert result.returncode == 1
    assert "dialogues.jsonl:2: $: malformed JSON" in result.stderr


@pytest.mark.django_db
def test_demo_benchmark_round_trips_exactly(tmp_path):
    call_command("make_demo_benchmark", str(tmp_path / "demo"), "--seed", "7",
                 stdout=io.StringIO())
    call_command("import_benchmark", str(tmp_path / "demo"), "--no-progress", stdout=io.StringIO())
    call_command("export_benchmark", "demo-tourism", str(tmp_path / "out"), stdout=io.StringIO())
    for name in ("benchmark.json", "items.jsonl", "reviews.jsonl", "dialogues.jsonl"):
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "demo" / name).read_bytes()


@pytest.mark.django_db
def test_deleting_a_benchmark_removes_its_turns_links_and_citations(tiny_bundle_dir):
    from evaluation.models import TurnItem
    from evaluation.services.benchmarks import benchmark_delete

    call_command("import_benchmark", str(tiny_bundle_dir), "--no-progress")
    other = tiny_data()
    other["benchmark"]["slug"] = "tiny-kept"
    write_tiny(tiny_bundle_dir.parent / "kept", other)
    call_command("import_benchmark", str(tiny_bundle_dir.parent / "kept"), "--no-progress")
    kept = {model: model.objects.count() // 2 for model in
            (Item, Review, Dialogue, DialogueItem, Turn, TurnItem, Citation)}
    benchmark_delete(benchmark=Benchmark.objects.get(slug="tiny"))
    assert list(Benchmark.objects.values_list("slug", flat=True)) == ["tiny-kept"]
    for model, count in kept.items():  # the other benchmark keeps all of its rows
        assert model.objects.count() == count > 0, model.__name__
