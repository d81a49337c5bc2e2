"""CRSArena-Dial importer: real data (when present) and hand-written malformed inputs."""

import json
from collections import Counter

import pytest

from evaluation.lib.formats.errors import FormatError
from evaluation.lib.formats.public.crs_arena_dial import import_crs_arena_dial
from evaluation.lib.formats.public.crs_arena_eval import import_crs_arena_eval

from .public_data import dataset, messages, roundtrip


@pytest.fixture(scope="module")
def result():
    return import_crs_arena_dial(dataset("crs_arena_dial"))


def test_conversations_systems_and_settings(result):
    dialogues = result.bundle.dialogues
    assert len(dialogues) == 474
    assert len(result.systems()) == 9
    assert sum(len(logs) for logs in result.logs.values()) == 474
    assert Counter(d["scenario"]["setting"] for d in dialogues) == {"open": 254, "closed": 220}
    assert Counter(d["scenario"]["source_dataset"] for d in dialogues) == {
        "redial": 274, "opendialkg": 200}
    for system, logs in result.logs.items():
        assert all(log["dialogue_id"].startswith(f"{system}_") for log in logs)
        assert all(set(turn) == {"role", "text"} for log in logs for turn in log["turns"])


def test_satisfaction_labels(result):
    assert result.fields["satisfaction"]["level"] == "nominal"
    assert result.fields["satisfaction"]["unit_type"] == "dialogue"
    assert Counter(label["value"] for label in result.labels) == {
        "frustrated": 387, "satisfied": 87}
    dialogues = {d["id"] for d in result.bundle.dialogues}
    assert {label["unit_id"] for label in result.labels} == dialogues
    # The annotator is the conversation's own user (conversation id = <system>_<user id>).
    assert all(label["unit_id"].endswith(f"_{label['annotator_id']}") for label in result.labels)
    assert all(label["scale"] is None for label in result.labels)


def test_same_conversation_ids_as_crs_arena_eval(result):
    evaluated = import_crs_arena_eval(dataset("crs_arena_eval"))
    eval_ids = {d["id"] for d in evaluated.bundle.dialogues}
    dial_ids = {d["id"] for d in result.bundle.dialogues}
    assert len(eval_ids & dial_ids) == 467


def test_bundle_round_trips(result, tmp_path):
    assert roundtrip(result.bundle, tmp_path) == result.bundle


def _conversation(conv_id="kbrd_redial_u1", sentiment="satisfied", participant="AGENT"):
    system, _, user = conv_id.rpartition("_")
    return {"conversation ID": conv_id, "agent": {"id": system, "type": "AGENT"},
            "user": {"id": user, "type": "USER"},
            "conversation": [
                {"participant": "USER", "utterance": "hi", "utterance ID": f"{conv_id}_0"},
                {"participant": participant, "utterance": "I would recommend the following "
                 "items:  \n1: Heat (1995)  \n", "utterance ID": f"{conv_id}_1"}],
            "metadata": {"sentiment": sentiment}}


def test_one_file_imports_alone(tmp_path):
    path = tmp_path / "crs_arena_dial_closed.json"
    path.write_text(json.dumps([_conversation(), _conversation("barcor_opendialkg_u1")]))
    result = import_crs_arena_dial(path)
    assert result.systems() == ["barcor_opendialkg", "kbrd_redial"]
    assert {d["scenario"]["setting"] for d in result.bundle.dialogues} == {"closed"}


def test_malformed_conversations(tmp_path):
    (tmp_path / "crs_arena_dial_open.json").write_text(json.dumps(
        [_conversation(), _conversation("unicrs_redial_u2", sentiment="meh"),
         _conversation("unicrs_redial_u3", participant="BOT")]))
    (tmp_path / "crs_arena_dial_closed.json").write_text(json.dumps([_conversation()]))
    with pytest.raises(FormatError) as caught:
        import_crs_arena_dial(tmp_path)
    assert messages(caught.value) == [
        'crs_arena_dial_open.json: $[1].metadata.sentiment: expected one of satisfied, '
        'frustrated, got "meh"',
        "crs_arena_dial_open.json: $[2].conversation[1].participant: expected one of USER, "
        "AGENT, got 'BOT'",
        "crs_arena_dial_closed.json: $[0].conversation ID: duplicate conversation id "
        "'kbrd_redial_u1'",
    ]
