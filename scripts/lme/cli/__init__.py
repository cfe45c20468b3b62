"""The cli stage, the top: every command's parser and ``main()`` (``lme/cli/<command>.py``).

``scripts/<command>.py`` is a thin file calling ``lme.cli.<command>.main``; a command may import any stage's face or
module, and nothing imports a command, so this face offers no names."""

from lme import lazy_face

_EXPORTS: dict[str, str] = {}
"""Nothing: a command is run, never imported by a stage."""

__all__: tuple[str, ...] = ()
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
