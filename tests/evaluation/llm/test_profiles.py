"""The operator's named credentials and model profiles as parsed from their settings
(evaluation/lib/credentials.py, evaluation/lib/llm/profiles.py): every malformed entry is refused
with a message naming the setting and the entry."""

import pytest

from evaluation.lib.credentials import Credential, CredentialSettingError, parse_credentials
from evaluation.lib.llm.profiles import (
    ModelProfile,
    ProfileSettingError,
    default_profile,
    parse_profiles,
)


def test_credentials_by_name_with_an_optional_list_of_owners():
    parsed = parse_credentials(" crs-demo=CRS_DEMO_KEY , partner.x=PX_KEY@alice|bob,,")
    assert parsed == {
        "crs-demo": Credential("crs-demo", "CRS_DEMO_KEY"),
        "partner.x": Credential("partner.x", "PX_KEY", frozenset({"alice", "bob"}))}
    assert parsed["crs-demo"].allows(None) and parsed["crs-demo"].allows("carol")
    assert parsed["partner.x"].allows("bob") and not parsed["partner.x"].allows("carol")
    assert not parsed["partner.x"].allows(None)  # a baseline has no owner
    assert parse_credentials("") == {}


@pytest.mark.parametrize("text, message", [
    ("CRS_KEY", "'CRS_KEY' is not name=VARIABLE"),
    ("SECRET_KEY=SECRET_KEY", "'SECRET_KEY' is not a credential name"),
    ("demo=", "'' (credential 'demo') is not an environment variable name"),
    ("demo=MY-KEY", "'MY-KEY' (credential 'demo') is not an environment variable name"),
    ("demo=A,demo=B", "the name 'demo' is given twice"),
    ("demo=A@", "credential 'demo' ends in '@' but names no valid usernames"),
    ("demo=A@al ice", "credential 'demo' ends in '@' but names no valid usernames"),
])
def test_malformed_credentials_are_refused(text, message):
    with pytest.raises(CredentialSettingError, match=r"^CONCORD_CREDENTIALS: ") as raised:
        parse_credentials(text)
    assert message in str(raised.value)


CREDENTIALS = parse_credentials("demo=DEMO_KEY")


def test_profiles_resolve_their_credential_to_the_operators_variable():
    profiles = parse_profiles(
        '{"fast": {"model": "openai/x", "api_base": "http://127.0.0.1:8080/v1", '
        '"credential": "demo", "label": "Fast local"}, "hosted": {"model": "openai/gpt"}}',
        credentials=CREDENTIALS)
    assert profiles["fast"] == ModelProfile(
        name="fast", model="openai/x", api_base="http://127.0.0.1:8080/v1", credential="demo",
        key_variable="DEMO_KEY", label="Fast local")
    assert profiles["fast"].title == "Fast local (openai/x)"
    assert profiles["hosted"] == ModelProfile(name="hosted", model="openai/gpt")
    assert parse_profiles(" ", credentials=CREDENTIALS) == {}
    assert default_profile(model="", api_base="", key_variable="") == ModelProfile(
        name="default", model="", label="the site's configured model")


@pytest.mark.parametrize("text, message", [
    ("{nope", "is not valid JSON"),
    ('["fast"]', "must be a JSON object of profiles by name"),
    ('{"Fast": {"model": "m"}}', "profile 'Fast': a name is lower-case"),
    ('{"fast": "openai/x"}', "profile 'fast' must be a JSON object"),
    ('{"fast": {}}', "profile 'fast' has no model"),
    ('{"fast": {"model": "m", "api_key_env": "SECRET_KEY"}}',
     "profile 'fast': unknown keys api_key_env"),
    ('{"fast": {"model": "m", "api_base": "file:///etc/passwd"}}', "is not an http(s) address"),
    ('{"fast": {"model": "m", "credential": "SECRET_KEY"}}',
     "credential 'SECRET_KEY' is not in CONCORD_CREDENTIALS"),
    ('{"fast": {"model": 3}}', "profile 'fast': model must be a string"),
])
def test_malformed_profiles_are_refused(text, message):
    with pytest.raises(ProfileSettingError, match=r"^CONCORD_LLM_PROFILES") as raised:
        parse_profiles(text, credentials=CREDENTIALS)
    assert message in str(raised.value)


def test_profiles_say_their_backend_and_whether_they_are_evaluation_grade():
    profiles = parse_profiles(
        '{"laptop": {"model": "openai/smollm2-135m", "backend": "concord-local"},'
        ' "workstation": {"model": "openai/qwen3-8b", "backend": "concord-local",'
        '                 "evaluation_grade": true},'
        ' "tiny": {"model": "openai/tiny", "backend": "vllm", "parameters": 135000000},'
        ' "big": {"model": "openai/big", "backend": "llama.cpp", "parameters": 8000000000},'
        ' "vetoed": {"model": "openai/gpt", "evaluation_grade": false}}',
        credentials=CREDENTIALS, min_evaluation_params=1_000_000_000)
    grades = {name: (p.backend, p.evaluation_grade) for name, p in profiles.items()}
    assert grades == {"laptop": ("concord-local", False), "workstation": ("concord-local", True),
                      "tiny": ("vllm", False), "big": ("llama.cpp", True),
                      "vetoed": ("openai", False)}
    assert "built-in local server" in profiles["laptop"].why_not_evaluation_grade
    assert "135,000,000 parameters, under the operator's minimum of 1,000,000,000" in (
        profiles["tiny"].why_not_evaluation_grade)
    assert profiles["vetoed"].why_not_evaluation_grade == (
        "the operator marked this model as a smoke test")
    assert profiles["big"].why_not_evaluation_grade == ""
    local = default_profile(model="openai/x", api_base="", key_variable="",
                            backend="concord-local")
    assert (local.backend, local.evaluation_grade) == ("concord-local", False)


@pytest.mark.parametrize("text, message", [
    ('{"fast": {"model": "m", "backend": "ollama"}}', "backend 'ollama' is not one of"),
    ('{"fast": {"model": "m", "parameters": "135M"}}', "parameters must be a positive whole"),
    ('{"fast": {"model": "m", "parameters": true}}', "parameters must be a positive whole"),
    ('{"fast": {"model": "m", "evaluation_grade": "yes"}}', "must be true or false"),
])
def test_malformed_backends_and_grades_are_refused(text, message):
    with pytest.raises(ProfileSettingError, match=r"^CONCORD_LLM_PROFILES") as raised:
        parse_profiles(text, credentials=CREDENTIALS)
    assert message in str(raised.value)
