"""Old import paths of the tools' modules, from before `tools/` was one folder a family.

Until 0.2 `tools/` was flat (`helikon.tools.bash`, `helikon.tools.os_sandbox`,
`helikon.tools.web_fetch`, ...). Each old public module name imports as the module that now
holds its code (`helikon.core._internal.moved` does it), for one release.
"""

from types import MappingProxyType

MOVED = MappingProxyType(
    {
        "helikon.tools.bash": "helikon.tools.execution.bash",
        "helikon.tools.edit": "helikon.tools.files.edit",
        "helikon.tools.egress_policy": "helikon.tools.egress.policy",
        "helikon.tools.egress_proxy": "helikon.tools.egress.proxy",
        "helikon.tools.forkd": "helikon.tools.execution.forkd.backend",
        "helikon.tools.guarantees": "helikon.tools.execution.guarantees",
        "helikon.tools.host": "helikon.tools.execution.host",
        "helikon.tools.os_sandbox": "helikon.tools.execution.os_sandbox.backend",
        "helikon.tools.read": "helikon.tools.files.read",
        "helikon.tools.sandbox": "helikon.tools.files.sandbox",
        "helikon.tools.search": "helikon.tools.files.search",
        "helikon.tools.web_fetch": "helikon.tools.web.fetch",
        "helikon.tools.web_search": "helikon.tools.web.search",
        "helikon.tools.write": "helikon.tools.files.write",
    }
)
"""Old module name -> the module it is now. (`helikon.tools.execution` kept its name: it is the
family's package now, which exports every name the module did.)"""
