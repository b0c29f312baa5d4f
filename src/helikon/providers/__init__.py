"""Model provider adapters, one module per provider, each behind its own extra.

* `helikon.providers.openai` — `OpenAIModel`: OpenAI Chat Completions and Responses APIs,
  and OpenAI-compatible servers (`pip install 'paigasus-helikon[openai]'`).
* `helikon.providers.anthropic` — `AnthropicModel`: the Anthropic Messages API
  (`pip install 'paigasus-helikon[anthropic]'`).
* `helikon.providers.gemini` — `GeminiModel`: Gemini on the Developer API or Vertex AI
  (`pip install 'paigasus-helikon[gemini]'`).
* `helikon.providers.bedrock` — `BedrockModel`: AWS Bedrock's Converse streaming API
  (`pip install 'paigasus-helikon[bedrock]'`).

Nothing here is imported by `import helikon`: import the provider module you use.
"""
