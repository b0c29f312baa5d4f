"""Runtimes: where runs execute. `AsyncioRunner` (the default), `RetryingModel`, `FallbackModel`.

Example:
    ```python
    from helikon.runtime import AsyncioRunner, FallbackModel, RetryingModel, RetryPolicy
    ```
"""

from ._asyncio_runner import AsyncioRunner
from ._fallback import FallbackModel
from ._retry import RetryingModel, RetryPolicy

__all__ = ["AsyncioRunner", "FallbackModel", "RetryPolicy", "RetryingModel"]
