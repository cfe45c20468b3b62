"""The LongMemEval toolkit's library, one sub-package per stage of the way through the data.

Import nothing here: the commands in scripts/ (some run on a bare system python) import only what they use."""
