"""The LongMemEval toolkit's library, one sub-package per stage of the way through the data.

Import nothing here: the commands in scripts/ (some run on a bare system python) import only what they use. A stage's
``__init__`` is its docstring (the stage's job): modules are imported by their path (``from lme.run import driver``,
``from lme.run.driver import execute``). Only the public target API's two packages, ``lme.targets`` and
``lme.target_kit``, name objects (``lme.targets.api.PUBLIC``)."""
