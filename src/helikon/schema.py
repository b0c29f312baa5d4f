"""JSON-Schema helpers. `strict` normalizes a schema for OpenAI-style strict mode.

Example:
    ```python
    from helikon.schema import strict

    schema = {"type": "object", "properties": {"note": {"type": "string"}}}
    assert strict(schema)["required"] == ["note"]
    ```
"""

from helikon.core.schema import strict

__all__ = ["strict"]
