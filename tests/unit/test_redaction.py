"""Secret redaction: key-name patterns (every occurrence, JSON keys) and the known-value scan."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helikon.core.exceptions import UserError
from helikon.core.governance.redaction import REDACTED, Redactor, env_secrets, is_secret_name

PLAIN = Redactor()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("OPENAI_API_KEY=sk-abc123xyz\n", "OPENAI_API_KEY=***\n"),
        ("export DB_PASSWORD=hunter2pass", "export DB_PASSWORD=***"),
        ("AUTH_TOKEN: abcdefgh12", "AUTH_TOKEN: ***"),
        ("auth_token = abcdefgh12", "auth_token = ***"),
        ("A_TOKEN=abc B_SECRET=def C_CREDENTIAL=ghi", "A_TOKEN=*** B_SECRET=*** C_CREDENTIAL=***"),
        ("x AWS_CREDENTIALS=abc; y", "x AWS_CREDENTIALS=***; y"),
        ("AWS_SECRET_ACCESS_KEY=abc/def+ghi", "AWS_SECRET_ACCESS_KEY=***"),
        ("X-API-KEY: abc123", "X-API-KEY: ***"),
        ("db.password=pw12", "db.password=***"),
        ('{"github_token": "ghp_123", "user": "me"}', '{"github_token": "***", "user": "me"}'),
        ('{"nested": {"Stripe_Api_Key":"rk_1"}}', '{"nested": {"Stripe_Api_Key":"***"}}'),
        ("{'db_password': 'x y z'}", "{'db_password': '***'}"),
        ('MY_TOKEN="quoted value with spaces" rest', 'MY_TOKEN="***" rest'),
        ('{"a_token": "with \\"escaped\\" quote"}', '{"a_token": "***"}'),
        ("line1 A_TOKEN=1\nline2 B_TOKEN=2", "line1 A_TOKEN=***\nline2 B_TOKEN=***"),
    ],
)
def test_key_name_patterns(text: str, expected: str) -> None:
    assert PLAIN.redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "TOKEN=abc",  # no prefix: not `*_TOKEN`
        "API_KEYS_DIR=/x",
        "MY_TOKENS=3",
        "my_tokenizer=bpe",
        "A_TOKEN=",
        "A_TOKEN= ",
        "the token is here",
        'abc_token": "x"',  # a key without its opening quote
        "password: hunter2",
        "",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert PLAIN.redact(text) == text


def test_known_values_are_replaced_everywhere_case_insensitively() -> None:
    redactor = Redactor(["sk-live-0123456789", "sk-live-0123"])
    text = "a sk-live-0123456789 b SK-LIVE-0123456789 c sk-live-0123x"
    assert redactor.redact(text) == "a *** b *** c ***x"  # the longer secret first


def test_short_and_common_values_are_not_scanned() -> None:
    redactor = Redactor(["dev", "true", "1234567", "password", "changeme", "localhost", " padded-secret "])
    assert redactor.secret_count == 0
    text = "mode=dev ok=true n=1234567 password changeme localhost"
    assert redactor.redact(text) == text


def test_from_environ_takes_secret_named_variables_and_extras() -> None:
    environ = {
        "GITHUB_TOKEN": "ghp_abcdefgh",
        "HOME": "/home/someone",
        "DB_PASSWORD": "s3cr3t-pw!",
        "X_TOKEN": "",
    }
    redactor = Redactor.from_environ(environ, extra=["app-secret-42"])
    assert redactor.secret_count == 3
    out = redactor.redact("ghp_abcdefgh /home/someone s3cr3t-pw! app-secret-42")
    assert out == "*** /home/someone *** ***"
    assert sorted(env_secrets(environ)) == ["ghp_abcdefgh", "s3cr3t-pw!"]


def test_default_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HELIKON_TEST_API_KEY", "value-from-env-123")
    assert "value-from-env-123" in env_secrets()
    assert Redactor.from_environ().redact("x value-from-env-123 y") == "x *** y"
    assert os.environ["HELIKON_TEST_API_KEY"]


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("GITHUB_TOKEN", True),
        ("openai_api_key", True),
        ("OPENAI_APIKEY", True),
        ("X-Api-Key", True),
        ("DB_PASSWORD", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("SERVICE_CREDENTIALS", True),
        ("TOKEN", False),
        ("HOME", False),
        ("PATH", False),
        ("TOKENIZER_PATH", False),
    ],
)
def test_is_secret_name(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_redact_json() -> None:
    redactor = Redactor(["very-secret-value"])
    value = {
        "stdout": "A_TOKEN=x\nvery-secret-value",
        "api_token": "plain",
        "n": 3,
        "list": ["very-secret-value"],
    }
    assert redactor.redact_json(value) == {
        "stdout": "A_TOKEN=***\n***",
        "api_token": REDACTED,
        "n": 3,
        "list": [REDACTED],
    }


def test_bad_input_is_a_user_error() -> None:
    with pytest.raises(UserError, match="iterable"):
        Redactor("one-secret-string")
    with pytest.raises(UserError, match="str"):
        Redactor([b"bytes-secret"])  # type: ignore[list-item]
    with pytest.raises(UserError, match="iterable"):
        Redactor.from_environ({}, extra="one-secret-string")


def test_repr_hides_the_secrets() -> None:
    assert repr(Redactor(["hidden-value-1"])) == "Redactor(<1 secrets>)"


@given(st.text(max_size=200))
def test_redaction_is_idempotent_and_never_raises(text: str) -> None:
    redactor = Redactor(["known-secret-value"])
    once = redactor.redact(text)
    assert redactor.redact(once) == once
    assert "known-secret-value" not in once.lower()


@given(secret=st.text(alphabet="abcdefXYZ0123456789-_", min_size=8, max_size=30), noise=st.text(max_size=50))
def test_a_registered_secret_never_survives(secret: str, noise: str) -> None:
    redactor = Redactor([secret])
    if redactor.secret_count:
        assert secret.lower() not in redactor.redact(noise + secret + noise).lower().replace(REDACTED, "\0")
