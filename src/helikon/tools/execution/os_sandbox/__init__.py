"""The OS sandbox: commands confined by the Linux kernel (Landlock, seccomp-bpf, namespaces).

`OsSandboxBackend` (`backend.py`) is the `ExecutionBackend`; the rest is private, and is the
security boundary. What a command may do is decided as data in the parent: `_policy.py`
(the paths and ports, as a Landlock ruleset, and the network mode), `_landlock.py` (the
ruleset's system calls) and `_seccomp.py` (the system-call filter, rule by rule, written
with `_bpf.py`'s labels). The launcher applies them to each command: `_launcher.py` is that
process, run as a script by path (`python -I -S _launcher.py`, standard library only, it
never imports helikon), and `_launcher_client.py` the parent's side of it.
`_proxy_thread.py` runs the `EgressProxy` a proxied sandbox's commands reach the network
through.
"""

from .backend import OsSandboxBackend, OsSandboxBackendBuilder, OsSandboxError, OsSandboxUnsupported

__all__ = ["OsSandboxBackend", "OsSandboxBackendBuilder", "OsSandboxError", "OsSandboxUnsupported"]
