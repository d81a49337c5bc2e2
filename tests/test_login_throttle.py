"""Login throttling on the web form, the admin's form and the token endpoint, the
Content-Security-Policy header (issue 18, point 7), and the study form's door (point 4)."""

import pytest
from django.urls import reverse

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _three_failures(settings):
    settings.LOGIN_FAILURE_LIMIT = 3


def test_the_login_form_refuses_an_account_after_repeated_failures(client, researcher):
    url = reverse("login")
    for _ in range(3):
        response = client.post(url, {"username": "researcher", "password": "wrong"})
        assert response.status_code == 200 and "didn't match" in \
            response.content.decode()
    # the right password is not even checked now, and the answer says how long to wait
    refused = client.post(url, {"username": "researcher", "password": PASSWORD})
    assert refused.status_code == 429
    assert "Too many failed logins for this account from your address. Try again in 15 " \
           "minutes." in refused.content.decode()
    assert "_auth_user_id" not in client.session
    # the same account from another address, and another account from this one, log in
    other = client.post(url, {"username": "researcher", "password": PASSWORD},
                        REMOTE_ADDR="10.0.0.7")
    assert other.status_code == 302


def test_a_success_clears_the_count(client, researcher):
    url = reverse("login")
    for _ in range(2):
        client.post(url, {"username": "researcher", "password": "wrong"})
    assert client.post(url, {"username": "researcher", "password": PASSWORD}).status_code == 302
    client.logout()
    for _ in range(2):
        client.post(url, {"username": "researcher", "password": "wrong"})
    assert client.post(url, {"username": "researcher", "password": PASSWORD}).status_code == 302


def test_the_admin_login_is_throttled_too(client, staff):
    url = reverse("admin:login")
    for _ in range(3):
        client.post(url, {"username": staff.username, "password": "wrong"})
    refused = client.post(url, {"username": staff.username, "password": PASSWORD})
    assert "Too many failed logins" in refused.content.decode()


def test_the_token_endpoint_refuses_after_repeated_failures(client, researcher):
    url = reverse("leaderboard:api_token_obtain")
    for _ in range(3):
        assert client.post(url, {"username": "researcher", "password": "no"}).status_code == 400
    refused = client.post(url, {"username": "researcher", "password": PASSWORD})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 800
    assert refused.json()["detail"].startswith("Too many failed logins for this account")
    assert client.post(url, {"username": "researcher", "password": PASSWORD},
                       REMOTE_ADDR="10.0.0.8").json()["token"]


def test_every_page_carries_a_content_security_policy(client):
    policy = client.get(reverse("home"))["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "object-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy and "unsafe-eval" not in policy
    assert "script-src 'self' 'unsafe-inline'" not in policy


def test_study_form_refuses_json_text_that_postgres_cannot_store(researcher):
    """Issue 18, point 4: NUL and lone surrogates are refused at the door of the study form."""
    from annotation.forms import StudyCreateForm

    for scales, expected in (('[{"key": "a\\u0000"}]', "$[0].key: contains a NUL character"),
                             ('[{"key": "\\ud800"}]', "$[0].key: contains a lone surrogate")):
        form = StudyCreateForm(data={"likert_scales": scales}, user=researcher)
        form.is_valid()
        assert any(expected in error for error in form.errors["likert_scales"]), form.errors
