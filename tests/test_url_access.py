"""Walk every URL pattern with every persona, so a new view without an access rule fails here.

Add each new URL name to ACCESS with the status each persona must get. Personas: anonymous,
outsider (logged in, no role), annotator, researcher, author (study author), staff.
"""

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

PERSONAS = ("anonymous", "outsider", "annotator", "researcher", "author", "staff")
ALL_200 = dict.fromkeys(PERSONAS, 200)

# name -> list of (kwargs, method, {persona: expected status})
ACCESS = {
    "home": [({}, "get", ALL_200)],
    "benchmark_list": [({}, "get", ALL_200)],
    "benchmark_detail": [({"slug": "tiny"}, "get", ALL_200),
                         ({"slug": "nope"}, "get", dict.fromkeys(PERSONAS, 404))],
    "dialogue_detail": [
        ({"slug": "tiny", "dialogue_id": "d1"}, "get", ALL_200),
        ({"slug": "tiny", "dialogue_id": "d3"}, "get", {**dict.fromkeys(PERSONAS, 404),
                                                        "staff": 200}),
    ],
    "item_detail": [({"slug": "tiny", "item_id": "r1"}, "get", ALL_200)],
    "benchmark_public_download": [({"slug": "tiny"}, "get", ALL_200),
                                  ({"slug": "nope"}, "get", dict.fromkeys(PERSONAS, 404))],
    "benchmark_sample_submission": [({"slug": "tiny"}, "get", ALL_200),
                                    ({"slug": "nope"}, "get", dict.fromkeys(PERSONAS, 404))],
    "run_detail": [({"run_id": 999999}, "get", dict.fromkeys(PERSONAS, 404))],
    "run_retry": [({"run_id": 999999}, "post", {**dict.fromkeys(PERSONAS, 404),
                                                "anonymous": 302})],
    "benchmark_hidden_release": [({"slug": "tiny"}, "post", {
        **dict.fromkeys(PERSONAS, 403), "anonymous": 302, "staff": 302})],
    "job_detail": [({"job_id": 999999}, "get", dict.fromkeys(PERSONAS, 404))],
    "simulation_cancel": [({"simulation_id": 999999}, "post",
                           {**dict.fromkeys(PERSONAS, 404), "anonymous": 302})],
    # a benchmark's automatic LLM evaluators: staff only (docs/llm.md)
    "leaderboard:auto_evaluators": [
        ({"slug": "tiny"}, "get", {**dict.fromkeys(PERSONAS, 403), "anonymous": 302,
                                   "staff": 200}),
        ({"slug": "tiny"}, "post", {**dict.fromkeys(PERSONAS, 403), "anonymous": 302,
                                    "staff": 400})],
    "leaderboard:auto_evaluator_remove": [({"slug": "tiny", "pk": 999999}, "post", {
        **dict.fromkeys(PERSONAS, 403), "anonymous": 302, "staff": 404})],
    "leaderboard:auto_evaluation_approve": [({"pk": 999999}, "post", {
        **dict.fromkeys(PERSONAS, 404), "anonymous": 302})],
    "leaderboard:auto_evaluation_reject": [({"pk": 999999}, "post", {
        **dict.fromkeys(PERSONAS, 404), "anonymous": 302})],
    "login": [({}, "get", ALL_200)],
    "logout": [({}, "get", dict.fromkeys(PERSONAS, 405))],
}

# Annotation (the `tiny_study` fixture: the author owns it; the annotator holds item 1).
_S = {"slug": "tiny-study"}
_LOGGED_IN_200 = {**ALL_200, "anonymous": 302}
_MEMBERS = {"anonymous": 302, "outsider": 404, "annotator": 200, "researcher": 404,
            "author": 200, "staff": 200}
_AUTHORS = {"anonymous": 302, "outsider": 404, "annotator": 403, "researcher": 404,
            "author": 200, "staff": 200}
_OWN_ITEM = {**dict.fromkeys(PERSONAS, 404), "anonymous": 302, "annotator": 200}
ACCESS.update({
    "annotation:study_list": [({}, "get", _LOGGED_IN_200)],
    "annotation:study_create": [({}, "get", {**_AUTHORS, "annotator": 403, "outsider": 403,
                                             "researcher": 403}),
                                ({}, "post", {**_AUTHORS, "annotator": 403, "outsider": 403,
                                              "researcher": 403})],
    "annotation:arena_study_create": [
        ({"arena": "nope"}, m, {**_AUTHORS, "annotator": 403, "outsider": 403, "researcher": 403,
                                "author": 404, "staff": 404}) for m in ("get", "post")],
    "annotation:study_join": [({"token": "tiny-invite"}, "get", _LOGGED_IN_200),
                              ({"token": "nope"}, "get", {**dict.fromkeys(PERSONAS, 404),
                                                          "anonymous": 302})],
    "annotation:study_detail": [(_S, "get", _MEMBERS),
                                ({"slug": "nope"}, "get", {**dict.fromkeys(PERSONAS, 404),
                                                           "anonymous": 302})],
    "annotation:study_next": [(_S, "get", {**_OWN_ITEM, "annotator": 302}),
                              (_S, "post", {**_OWN_ITEM, "annotator": 303})],
    "annotation:item_detail": [({**_S, "position": 1}, "get", _OWN_ITEM),
                               ({**_S, "position": 2}, "get", {**_OWN_ITEM, "annotator": 404})],
    "annotation:item_draft": [({**_S, "position": 1}, "post", _OWN_ITEM)],
    # an incomplete submit: 303 to the item page that explains it (post/redirect/get)
    "annotation:item_submit": [({**_S, "position": 1}, "post", {**_OWN_ITEM, "annotator": 303})],
    "annotation:study_dashboard": [(_S, "get", _AUTHORS)],
    # the hand-out settings: the author's (an empty POST is refused with the form's errors)
    "annotation:study_handout": [(_S, "get", _AUTHORS),
                                 (_S, "post", {**_AUTHORS, "author": 400, "staff": 400})],
    "annotation:study_member_add": [(_S, "post", {**_AUTHORS, "author": 302, "staff": 302})],
    "annotation:study_member_exclude": [({**_S, "member_id": 999999}, "post",
                                         {**_AUTHORS, "author": 404, "staff": 404})],
    "annotation:study_export": [(_S, "get", {**_AUTHORS, "author": 404, "staff": 404}),
                                (_S, "post", {**_AUTHORS, "author": 302, "staff": 302})],
    "annotation:study_export_download": [({**_S, "job_id": 999999}, "get",
                                          {**_AUTHORS, "author": 404, "staff": 404})],
    # Reports are private to the author and staff; a metric leaderboard is public only when
    # its study and benchmark are (tiny-study is not, and has no numeric field to rank by).
    "annotation:study_report": [(_S, "get", _AUTHORS)],
    "annotation:study_report_download": [({**_S, "kind": "agreement", "fmt": "csv"}, "get",
                                          _AUTHORS)],
    # FACE trained on a study: its author's (a refused start redirects back with the reason).
    "annotation:study_face": [(_S, "get", _AUTHORS)],
    "annotation:study_face_optimize": [(_S, "post", {**_AUTHORS, "author": 302,
                                                     "staff": 302})],
    "annotation:study_face_evaluate": [(_S, "post", {**_AUTHORS, "author": 302,
                                                     "staff": 302})],
    "annotation:study_face_resume": [({**_S, "optimization_id": 999999}, "post",
                                      {**_AUTHORS, "author": 404, "staff": 404})],
    "annotation:metric_board_index": [({}, "get", ALL_200)],
    "annotation:metric_board": [(_S, "get", {**_AUTHORS, "anonymous": 404})],
    "annotation:metric_board_anchored": [(_S, "get", {**dict.fromkeys(PERSONAS, 404),
                                                      "annotator": 403})],
    "annotation:metric_board_download": [({**_S, "fmt": "csv"}, "get",
                                          {**dict.fromkeys(PERSONAS, 404), "annotator": 403})],
})

# Leaderboard (the `leaderboard_world` fixture: the researcher owns the published system
# lb-public and the private lb-private, each with a finished run; fixed submission uuids).
from tests.support.leaderboard import PRIVATE_SUBMISSION, PUBLIC_SUBMISSION  # noqa: E402

_NONE = dict.fromkeys(PERSONAS, 404)
_OWNER_ONLY = {**_NONE, "researcher": 200, "staff": 200}
_OWNER_WRITES = {"anonymous": 302, "outsider": 403, "annotator": 403, "researcher": 200,
                 "author": 403, "staff": 200}
_OWNER_WRITES_PRIVATE = {**_OWNER_WRITES, "outsider": 404, "annotator": 404, "author": 404}
_API_WRITES = {"anonymous": 401, "outsider": 403, "annotator": 403, "researcher": 400,
               "author": 403, "staff": 400}
_PUB, _PRIV = {"uuid": PUBLIC_SUBMISSION}, {"uuid": PRIVATE_SUBMISSION}
_BOARD = {"benchmark": "tiny", "protocol": "turn"}
ACCESS.update({
    "leaderboard:index": [({}, "get", ALL_200)],
    "leaderboard:board_default": [({"benchmark": "tiny"}, "get", ALL_200),
                                  ({"benchmark": "nope"}, "get", _NONE)],
    "leaderboard:board_baselines_progress": [({"benchmark": "tiny"}, "get", ALL_200),
                                             ({"benchmark": "nope"}, "get", _NONE)],
    "leaderboard:board": [(_BOARD, "get", ALL_200),
                          ({"benchmark": "tiny", "protocol": "log"}, "get", _NONE)],
    "leaderboard:simulators": [({"benchmark": "tiny"}, "get", ALL_200),
                               ({"benchmark": "nope"}, "get", _NONE)],
    "leaderboard:board_export": [({**_BOARD, "fmt": "csv"}, "get", ALL_200),
                                 ({**_BOARD, "fmt": "json"}, "get", ALL_200),
                                 ({**_BOARD, "fmt": "html"}, "get", _NONE)],
    "leaderboard:system_list": [({}, "get", ALL_200)],
    "leaderboard:system_create": [({}, "get", _OWNER_WRITES), ({}, "post", _OWNER_WRITES)],
    "leaderboard:system_detail": [({"slug": "lb-public"}, "get", ALL_200),
                                  ({"slug": "lb-private"}, "get", _OWNER_ONLY)],
    "leaderboard:system_edit": [({"slug": "lb-public"}, "get", _OWNER_WRITES),
                                ({"slug": "lb-public"}, "post", _OWNER_WRITES),
                                ({"slug": "lb-private"}, "get", _OWNER_WRITES_PRIVATE)],
    "leaderboard:system_simulate": [({"slug": "lb-public"}, "get", _OWNER_WRITES),
                                    ({"slug": "lb-private"}, "get", _OWNER_WRITES_PRIVATE)],
    # a researcher adds their live system to an arena (no benchmark named: 404 for the owner)
    "leaderboard:system_arena_join": [
        ({"slug": "lb-public"}, "post", {**_OWNER_WRITES, "researcher": 404, "staff": 404}),
        ({"slug": "lb-private"}, "post", {**_OWNER_WRITES_PRIVATE, "researcher": 404,
                                          "staff": 404})],
    "leaderboard:arena_requests": [({}, "get", {**dict.fromkeys(PERSONAS, 403),
                                                "anonymous": 302, "staff": 200})],
    "leaderboard:arena_request_approve": [({"pk": 999999}, "post", {**_NONE,
                                                                    "anonymous": 302})],
    "leaderboard:arena_request_reject": [({"pk": 999999}, "post", {**_NONE, "anonymous": 302})],
    "leaderboard:submission_create": [({"slug": "lb-public"}, "get", _OWNER_WRITES),
                                      ({"slug": "lb-private"}, "get", _OWNER_WRITES_PRIVATE)],
    # a staged upload: its uploader's and staff's only (tests/leaderboard/test_staged_uploads.py)
    "leaderboard:submission_staged": [({"job_id": 999999}, "get", {**_NONE, "anonymous": 302})],
    "leaderboard:submission_detail": [(_PUB, "get", ALL_200), (_PRIV, "get", _OWNER_ONLY)],
    "leaderboard:submission_status": [(_PUB, "get", ALL_200), (_PRIV, "get", _OWNER_ONLY)],
    "leaderboard:submission_publish": [
        (_PUB, "post", {**_OWNER_WRITES, "researcher": 400, "staff": 400}),
        (_PRIV, "post", {**_OWNER_WRITES_PRIVATE, "researcher": 400, "staff": 400})],
    # the researcher owns both submissions: they may run an evaluator on their own (34.2)
    "leaderboard:submission_evaluate": [
        (_PUB, "get", {"anonymous": 302, "outsider": 403, "annotator": 403, "researcher": 200,
                       "author": 200, "staff": 200}),
        (_PRIV, "get", {"anonymous": 302, "outsider": 404, "annotator": 404, "researcher": 200,
                        "author": 404, "staff": 200})],
    "leaderboard:submission_evaluate_start": [
        (_PUB, "post", {"anonymous": 302, "outsider": 403, "annotator": 403, "researcher": 400,
                        "author": 400, "staff": 400})],
    "leaderboard:submission_download": [(_PUB, "get", _OWNER_WRITES),
                                        (_PRIV, "get", _OWNER_WRITES_PRIVATE)],
    "leaderboard:submission_dialogue": [({**_PUB, "dialogue_id": "d1"}, "get", ALL_200),
                                        ({**_PUB, "dialogue_id": "d3"}, "get", _NONE),
                                        ({**_PRIV, "dialogue_id": "d1"}, "get", _OWNER_ONLY)],
    "leaderboard:compare": [({}, "get", ALL_200)],
    "leaderboard:signup": [({}, "get", {**dict.fromkeys(PERSONAS, 302), "anonymous": 200})],
    "leaderboard:api_token": [({}, "post", dict.fromkeys(PERSONAS, 302))],
    "leaderboard:api_benchmarks": [({}, "get", ALL_200)],
    "leaderboard:api_benchmark": [({"slug": "tiny"}, "get", ALL_200),
                                  ({"slug": "nope"}, "get", _NONE)],
    "leaderboard:api_benchmark_public": [({"slug": "tiny"}, "get", ALL_200),
                                         ({"slug": "nope"}, "get", _NONE)],
    "leaderboard:api_benchmark_sample": [({"slug": "tiny"}, "get", ALL_200),
                                         ({"slug": "nope"}, "get", _NONE)],
    "leaderboard:api_systems": [({}, "get", ALL_200), ({}, "post", _API_WRITES)],
    "leaderboard:api_system": [({"slug": "lb-public"}, "get", ALL_200),
                               ({"slug": "lb-private"}, "get", _OWNER_ONLY)],
    "leaderboard:api_submissions": [({}, "get", ALL_200), ({}, "post", _API_WRITES)],
    "leaderboard:api_staged_upload": [({"job_id": 999999}, "get", {**_NONE, "anonymous": 401})],
    "leaderboard:api_submission": [(_PUB, "get", ALL_200), (_PRIV, "get", _OWNER_ONLY)],
    "leaderboard:api_submission_publish": [
        (_PUB, "post", {**_API_WRITES, "anonymous": 401}),
        (_PRIV, "post", {**_API_WRITES, "outsider": 404, "annotator": 404, "author": 404})],
    # an LLM evaluator on a submission: staff, study authors, and a researcher on their own
    # (an empty body: 400 for those who may)
    "leaderboard:api_submission_llm_runs": [
        (_PUB, "post", {**_API_WRITES, "author": 400}),
        (_PRIV, "post", {**_API_WRITES, "outsider": 404, "annotator": 404, "author": 404})],
    "leaderboard:api_run": [({"run_id": 999999}, "get", _NONE)],
    "leaderboard:api_simulations": [({}, "get", ALL_200), ({}, "post", _API_WRITES)],
    "leaderboard:api_simulation": [({"simulation_id": 999999}, "get", _NONE)],
    "leaderboard:api_simulation_cancel": [({"simulation_id": 999999}, "post",
                                           {**_NONE, "anonymous": 401})],
    "leaderboard:api_leaderboard": [({"benchmark": "tiny"}, "get", ALL_200),
                                    ({"benchmark": "nope"}, "get", _NONE)],
    "leaderboard:arena_index": [({}, "get", ALL_200)],
    "leaderboard:arena_ratings": [({"slug": "nope"}, "get", _NONE)],
    "leaderboard:arena_ratings_export": [({"slug": "nope", "fmt": "csv"}, "get", _NONE)],
    "leaderboard:api_arenas": [({}, "get", ALL_200)],
    "leaderboard:api_arena_ratings": [({"slug": "nope"}, "get", _NONE)],
    "leaderboard:api_token_obtain": [({}, "get", dict.fromkeys(PERSONAS, 405))],
    "leaderboard:api_schema": [({}, "get", ALL_200)],
    "leaderboard:api_docs": [({}, "get", ALL_200)],
    "leaderboard:api_not_found": [({}, "get", dict.fromkeys(PERSONAS, 404))],
})

# The arena: anyone may battle (a session is enough); a battle is its session's (or user's) only.
_NOBODY = dict.fromkeys(PERSONAS, 404)
_BATTLE = {"uuid": "00000000-0000-4000-8000-000000000000"}
ACCESS.update({
    "leaderboard:arena_home": [({"benchmark": "tiny"}, "get", ALL_200),
                               ({"benchmark": "nope"}, "get", _NOBODY)],
    "leaderboard:arena_battle_start": [({"benchmark": "tiny"}, "post", _NOBODY),
                                       ({"benchmark": "tiny"}, "get",
                                        dict.fromkeys(PERSONAS, 405))],
    "leaderboard:arena_battle": [(_BATTLE, "get", _NOBODY)],
    "leaderboard:arena_battle_say": [(_BATTLE, "post", _NOBODY)],
    "leaderboard:arena_battle_retry": [(_BATTLE, "post", _NOBODY)],
    "leaderboard:arena_battle_reply": [({**_BATTLE, "index": 0, "side": "a"}, "get", _NOBODY)],
    "leaderboard:arena_battle_vote": [(_BATTLE, "post", _NOBODY)],
    "leaderboard:arena_battle_abandon": [(_BATTLE, "post", _NOBODY)],
})


def _names(resolver=None, namespace=""):
    resolver = resolver or get_resolver()
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            if entry.namespace == "admin":
                continue
            yield from _names(entry, f"{namespace}{entry.namespace}:" if entry.namespace else
                              namespace)
        elif isinstance(entry, URLPattern) and entry.name:
            yield namespace + entry.name


def test_every_url_pattern_has_an_access_rule():
    missing = sorted(set(_names()) - set(ACCESS))
    assert not missing, f"URL names without an access rule in tests/test_url_access.py: {missing}"


@pytest.mark.django_db
def test_every_persona_gets_the_expected_status(client, personas, tiny_benchmark, tiny_study,
                                                leaderboard_world):
    failures = []
    for name, cases in ACCESS.items():
        for kwargs, method, expected in cases:
            url = reverse(name, kwargs=kwargs)
            for persona, status in expected.items():
                client.logout()
                if personas[persona] is not None:
                    client.force_login(personas[persona])
                got = getattr(client, method)(url).status_code
                if got != status:
                    failures.append(f"{persona} {method.upper()} {url}: {got}, expected {status}")
    assert not failures, "\n".join(failures)


# A NUL byte or bytes that are not UTF-8 anywhere in a URL answer 400, never 500 (issue 28,
# point 9; config.middleware.MalformedUrlMiddleware): in the query string's values and names and
# in the path, on every route, each with its first case's method, anonymous and logged in.
_MALFORMED = ("%00", "%ff", "%c3%28")


def _malformed(url: str):
    for bad in _MALFORMED:
        yield f"{url}?q={bad}"
        yield f"{url}?page=1&x{bad}y=1"
        yield f"{url[:-1]}{bad}/" if url.endswith("/") else f"{url}{bad}"


@pytest.mark.django_db
def test_a_nul_byte_or_invalid_utf8_in_any_url_answers_400(client, staff, tiny_benchmark,
                                                           tiny_study, leaderboard_world):
    failures = []
    for user in (None, staff):
        client.logout()
        if user is not None:
            client.force_login(user)
        for name, cases in ACCESS.items():
            kwargs, method, _expected = cases[0]
            for url in _malformed(reverse(name, kwargs=kwargs)):
                response = getattr(client, method)(url)
                wanted = b"NUL byte or bytes that are not UTF-8"
                if response.status_code != 400 or wanted not in response.content:
                    failures.append(f"{method.upper()} {url}: {response.status_code}")
    assert not failures, "\n".join(failures)
    api = client.get("/api/benchmarks/?q=%00")
    assert api.json() == {"detail": "Bad request: the URL holds a NUL byte or bytes that are "
                                    "not UTF-8."}
    page = client.get("/benchmarks/?q=%00")
    assert page["Content-Type"] == "text/plain; charset=utf-8"
    # a path that spells NUL with an escaped percent sign is refused too; a lone % is not
    assert client.get("/benchmarks/tiny%2500/").status_code == 400
    assert client.get("/benchmarks/?q=50%25").status_code == 200
    # well-formed text outside ASCII is not refused
    assert client.get("/benchmarks/?q=%C3%A9t%C3%A9").status_code == 200
