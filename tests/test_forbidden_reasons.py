"""A 403 is never a bare page (issue 34.2): the page and the API's JSON say which role or
person may do it, and how an account gets that role."""

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db


def _client(user):
    client = Client()
    client.force_login(user)
    return client


def _forbidden(response) -> str:
    assert response.status_code == 403
    body = response.content.decode()
    assert '<p class="error" role="alert" id="forbidden-reason">' in body
    return body


def test_a_researcher_creating_a_study_is_told_which_role_and_how(researcher):
    body = _forbidden(_client(researcher).get("/studies/new/"))
    assert ("Creating studies needs the study author role: ask an operator to give it to your "
            "account.") in body
    assert "signed in as <strong>researcher</strong> with the role researcher" in body


def test_an_account_without_a_role_is_told_sign_up_accounts_are_researchers(outsider):
    body = _forbidden(_client(outsider).post("/systems/new/", {"name": "X"}))
    assert ("Registering systems and submitting needs the researcher role: accounts made with "
            "Sign up have it") in body
    assert "with no role yet" in body


def test_a_member_opening_the_dashboard_is_told_who_may(tiny_study, annotator):
    body = _forbidden(_client(annotator).get("/studies/tiny-study/dashboard/"))
    assert "Only the study&#x27;s author (or staff) can change it" in body


def test_staff_only_pages_say_so(tiny_benchmark, researcher, author):
    body = _forbidden(_client(researcher).get("/benchmarks/tiny/auto-evaluators/"))
    assert "Only staff (the site&#x27;s operators) can configure" in body
    body = _forbidden(_client(author).post("/benchmarks/tiny/release-hidden/"))
    assert "Only the benchmark&#x27;s owner (or staff) can change it." in body


def test_the_api_says_the_same_in_json(outsider):
    token = Token.objects.create(user=outsider)
    answer = Client().post("/api/systems/", {"name": "X"}, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Token {token.key}")
    assert answer.status_code == 403
    assert answer.json() == {"detail": "Registering systems and submitting needs the researcher "
                                       "role: accounts made with Sign up have it; ask an operator "
                                       "to add it to yours."}
