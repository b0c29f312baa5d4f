"""The run: the driver that performs what `core.loop.transition` asks for, and what it calls.

Private modules: the public names are `helikon.core`'s (`LlmAgent.run`, `RunStream`, ...).
"""
