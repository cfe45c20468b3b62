"""The cli stage, the top: every command's parser and ``main()`` (``lme/cli/<command>.py``).

``scripts/<command>.py`` is a thin file calling ``lme.cli.<command>.main``; a command may import any stage's module, and
nothing imports a command."""
