"""Runtimes: where runs execute. `AsyncioRunner` (the default) and `RetryingModel`.

Example:
    ```python
    from helikon.runtime import AsyncioRunner, RetryingModel, RetryPolicy
    ```
"""

from ._asyncio_runner import AsyncioRunner
from ._retry import RetryingModel, RetryPolicy

__all__ = ["AsyncioRunner", "RetryPolicy", "RetryingModel"]
