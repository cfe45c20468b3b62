"""The data stage, the start of the way through: dataset -> ``Question``.

Streams and validates LongMemEval files (sha256 and item fingerprints in one pass), recognises a release, names a
dataset in reports, reads a hypotheses file and upstream's file formats. The target stage receives what it yields."""
