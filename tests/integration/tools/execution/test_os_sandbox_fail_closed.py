"""OsSandboxBackend.build() fails closed: on a kernel that cannot (or only pretends to) confine, it refuses.

This kernel supports everything the sandbox needs, so the tests make kernels that do not:
each runs `build()` in a fresh Python process under a seccomp filter that makes one system
call fail (`ENOSYS`: "not built in"), or *pretend to succeed* without doing anything
(errno 0) — the case a probe is for (`kernel_faults.run_refusing`). The filter is inherited
by the launcher and its children, as a real kernel's refusal would be.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from kernel_faults import run_refusing

from helikon.core.exceptions import UserError
from helikon.tools import EgressPolicy, OsSandboxBackend, OsSandboxUnsupported, Sandbox

pytestmark = pytest.mark.integration

LANDLOCK_CREATE_RULESET = 444
LANDLOCK_ADD_RULE = 445
LANDLOCK_RESTRICT_SELF = 446
PRCTL = 157
UNSHARE = 272
PR_SET_SECCOMP = 22

_BUILD = textwrap.dedent(
    """
    from helikon.tools import EgressPolicy, OsSandboxBackend, OsSandboxUnsupported, Sandbox

    egress, root = sys.argv[1:3]
    builder = OsSandboxBackend.builder(Sandbox.open(root))
    if egress == "egress":
        builder = builder.egress_policy(EgressPolicy.deny_all().allow_domains(["example.com"]))
    try:
        builder.build().close()
    except OsSandboxUnsupported as error:
        print("unsupported:", error)
    else:
        print("built")
    """
)


def build_under(
    tmp_path: Path, syscall: int, errno: int, *, arg: tuple[int, int] = (-1, 0), egress: bool = False
) -> str:
    """`build()`'s outcome in a process where `syscall` returns `-errno` (`kernel_faults.run_refusing`)."""
    return run_refusing(_BUILD, syscall, errno, "egress" if egress else "-", str(tmp_path), arg=arg)


def test_the_twin_an_unrelated_refusal_still_builds(tmp_path: Path) -> None:
    # The harness itself must not break the sandbox: refusing a call the sandbox never makes.
    assert build_under(tmp_path, 182, 38) == "built"  # 182: nfsservctl


def test_no_landlock_in_the_kernel(tmp_path: Path) -> None:
    outcome = build_under(tmp_path, LANDLOCK_CREATE_RULESET, 38)  # ENOSYS
    assert outcome.startswith("unsupported:") and "Landlock is not enabled" in outcome


def test_landlock_refused_by_a_container_profile(tmp_path: Path) -> None:
    # Older container seccomp profiles answer the Landlock calls with EPERM: build() once
    # raised the private LandlockError (a bare OSError), not the documented error.
    outcome = build_under(tmp_path, LANDLOCK_CREATE_RULESET, 1)  # EPERM
    assert outcome.startswith("unsupported:") and "refused Landlock" in outcome and "EPERM" in outcome


def test_a_kernel_that_reports_an_abi_it_then_refuses(tmp_path: Path) -> None:
    # The version query (flags = 1) answers; making the ruleset itself (flags = 0) fails.
    outcome = build_under(tmp_path, LANDLOCK_CREATE_RULESET, 22, arg=(2, 0))  # EINVAL
    assert outcome.startswith("unsupported:") and "refused Landlock" in outcome and "EINVAL" in outcome


def test_a_kernel_that_refuses_a_landlock_rule(tmp_path: Path) -> None:
    outcome = build_under(tmp_path, LANDLOCK_ADD_RULE, 22)  # EINVAL
    assert outcome.startswith("unsupported:") and "refused Landlock" in outcome and "EINVAL" in outcome


def test_a_kernel_that_pretends_to_apply_landlock(tmp_path: Path) -> None:
    outcome = build_under(tmp_path, LANDLOCK_RESTRICT_SELF, 0)  # "success", nothing done
    assert outcome.startswith("unsupported:") and "Landlock is not enforced" in outcome


def test_a_kernel_that_pretends_to_load_the_seccomp_filter(tmp_path: Path) -> None:
    outcome = build_under(tmp_path, PRCTL, 0, arg=(0, PR_SET_SECCOMP))
    assert outcome.startswith("unsupported:") and "seccomp filter is not enforced" in outcome


def test_a_kernel_that_refuses_seccomp(tmp_path: Path) -> None:
    outcome = build_under(tmp_path, PRCTL, 22, arg=(0, PR_SET_SECCOMP))  # EINVAL: no CONFIG_SECCOMP_FILTER
    assert outcome.startswith("unsupported:") and "refused to confine" in outcome


def test_egress_without_network_namespaces(tmp_path: Path) -> None:
    outcome = build_under(tmp_path, UNSHARE, 1, egress=True)  # EPERM
    assert outcome.startswith("unsupported:") and "network namespace" in outcome
    assert build_under(tmp_path, UNSHARE, 1) == "built"  # without egress, no namespace is needed


def test_other_platforms_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    with Sandbox.open(tmp_path) as sandbox, pytest.raises(OsSandboxUnsupported, match="needs Linux"):
        OsSandboxBackend.builder(sandbox).build()


def test_bad_builder_options_say_what_to_fix(tmp_path: Path) -> None:
    with Sandbox.open(tmp_path) as sandbox:
        builder = OsSandboxBackend.builder(sandbox)
        with pytest.raises(UserError, match=r"Sandbox\.open"):
            OsSandboxBackend.builder(str(tmp_path))  # type: ignore[arg-type]
        with pytest.raises(UserError, match="True or False"):
            builder.allow_network("yes")  # type: ignore[arg-type]
        with pytest.raises(UserError, match="EgressPolicy"):
            builder.egress_policy(["example.com"])  # type: ignore[arg-type]
        with pytest.raises(UserError, match="list of paths"):
            builder.read_only_paths("/opt")
        with pytest.raises(UserError, match="not an absolute path"):
            builder.writable_paths(["cache"])
        with pytest.raises(UserError, match="does not exist"):
            builder.read_only_paths([str(tmp_path / "missing")])
        with pytest.raises(UserError, match="positive"):
            builder.timeout(0)
        both = OsSandboxBackend.builder(sandbox).allow_network(True).egress_policy(EgressPolicy.deny_all())
        with pytest.raises(UserError, match="choose one"):
            both.build()
