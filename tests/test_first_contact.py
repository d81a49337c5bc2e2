"""What a first visitor sees before logging in: an icon, and the way to an account."""

import pytest
from django.contrib.staticfiles import finders
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_favicon_is_served(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("favicon.svg")
    assert finders.find("favicon.svg")
    page = client.get(reverse("home")).content.decode()
    assert 'rel="icon"' in page


def test_navigation_and_login_offer_systems_and_sign_up(client):
    page = client.get(reverse("home")).content.decode()
    assert f'href="{reverse("leaderboard:system_list")}"' in page
    assert f'href="{reverse("leaderboard:signup")}"' in page
    login = client.get(reverse("login")).content.decode()
    assert login.count(f'href="{reverse("leaderboard:signup")}"') == 2  # nav and the form
