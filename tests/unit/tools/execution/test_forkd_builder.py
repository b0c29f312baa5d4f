"""ForkdBackend's builder: bad input is a UserError that says what to give; the guarantees per option."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from helikon.core.exceptions import UserError
from helikon.tools import EgressPolicy, ExecutionBackend, ForkdBackend, Isolation

URL = "https://controller.internal:8889"


def ready() -> Any:
    return ForkdBackend.builder(URL).bearer_token("t0ken").snapshot("helikon")


@pytest.mark.parametrize(
    "url",
    ["ftp://controller", "controller:8889", "https://", "https://c/?x=1", "https://c/#top", 8889, None],
)
def test_a_bad_controller_url_is_refused(url: Any) -> None:
    with pytest.raises(UserError, match="give the controller's base URL"):
        ForkdBackend.builder(url)


def test_a_token_in_the_url_is_refused() -> None:
    with pytest.raises(UserError, match=r"put the token in \.bearer_token"):
        ForkdBackend.builder("https://user:secret@controller")


@pytest.mark.parametrize("token", ["", "  ", "two words", "line\nbreak", 42])
def test_a_bad_token_is_refused(token: Any) -> None:
    with pytest.raises(UserError, match="bearer_token"):
        ForkdBackend.builder(URL).bearer_token(token)


@pytest.mark.parametrize("tag", ["", "a/b", "../x", "x" * 129, "white space", None])
def test_a_bad_snapshot_tag_is_refused(tag: Any) -> None:
    with pytest.raises(UserError, match="give the snapshot's tag"):
        ForkdBackend.builder(URL).snapshot(tag)


def test_build_names_what_is_missing() -> None:
    with pytest.raises(UserError, match=r"call \.bearer_token\(token\)"):
        ForkdBackend.builder(URL).snapshot("helikon").build()
    with pytest.raises(UserError, match=r"call \.snapshot\(tag\)"):
        ForkdBackend.builder(URL).bearer_token("t").build()


@pytest.mark.parametrize("option", ["timeout", "reap_age", "control_timeout"])
@pytest.mark.parametrize("value", [0, -1, "5", True, timedelta(0)])
def test_durations_must_be_positive(option: str, value: Any) -> None:
    with pytest.raises(UserError, match=f"{option}"):
        getattr(ready(), option)(value)


def test_other_bad_options_are_refused() -> None:
    with pytest.raises(UserError, match="max_output_bytes"):
        ready().max_output_bytes(0)
    with pytest.raises(UserError, match="env_set"):
        ready().env_set({"A=B": "x"})
    with pytest.raises(UserError, match="give an EgressPolicy"):
        ready().egress_policy(["example.com"])


@pytest.mark.parametrize(
    "endpoint",
    ["http://proxy:8443", "proxy", "proxy:", ":8443", "proxy:0", "proxy:70000", "proxy:https", 8443],
)
def test_a_bad_proxy_endpoint_is_refused(endpoint: Any) -> None:
    with pytest.raises(UserError, match="give the proxy as 'host:port'"):
        ready().enforce_egress(endpoint)


def test_a_policy_without_enforcement_is_refused() -> None:
    with pytest.raises(UserError, match=r"needs \.enforce_egress\(proxy_endpoint\)"):
        ready().egress_policy(EgressPolicy.deny_all().allow_domains(["example.com"])).build()


def test_the_default_guarantees_are_the_books() -> None:
    backend = ready().timeout(timedelta(seconds=90)).build()
    assert isinstance(backend, ExecutionBackend)
    g = backend.guarantees()
    assert (g.filesystem, g.network, g.syscalls) == (
        Isolation.VIRTUALIZED,
        Isolation.NONE,
        Isolation.VIRTUALIZED,
    )
    assert g.label == "forkd (firecracker microvm — experimental)"
    assert repr(backend) == "ForkdBackend('https://controller.internal:8889', snapshot='helikon', timeout=90)"
    assert "t0ken" not in repr(backend)
