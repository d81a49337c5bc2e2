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
    "run_detail": [({"run_id": 999999}, "get", dict.fromkeys(PERSONAS, 404))],
    "job_detail": [({"job_id": 999999}, "get", dict.fromkeys(PERSONAS, 404))],
    "login": [({}, "get", ALL_200)],
    "logout": [({}, "get", dict.fromkeys(PERSONAS, 405))],
}


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


@pytest.fixture
def personas(db, outsider, annotator, researcher, author, staff):
    return {"anonymous": None, "outsider": outsider, "annotator": annotator,
            "researcher": researcher, "author": author, "staff": staff}


@pytest.mark.django_db
def test_every_persona_gets_the_expected_status(client, personas, tiny_benchmark):
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
