"""The session event format's version number.

It is the codec's (`helikon.core.session.codec.FORMAT_VERSION`), kept in this leaf module so
that `exceptions`, which the codec imports, can name it in `UnreadableSessionEvent`'s message.
"""

FORMAT_VERSION = 2
"""The newest stored event format: what this version writes, and the newest it reads."""
