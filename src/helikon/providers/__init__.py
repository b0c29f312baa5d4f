"""Model provider adapters, one module per provider, each behind its own extra.

* `helikon.providers.openai` — `OpenAIModel`: OpenAI Chat Completions and Responses APIs,
  and OpenAI-compatible servers (`pip install 'paigasus-helikon[openai]'`).
* `helikon.providers.anthropic` — `AnthropicModel`: the Anthropic Messages API
  (`pip install 'paigasus-helikon[anthropic]'`).

Nothing here is imported by `import helikon`: import the provider module you use.
"""
