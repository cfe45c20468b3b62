"""The command-line twin of echo_memory.py, for the ``command`` target.

    per-item: echo_memory_cmd.py               (one item JSON on stdin -> one JSON object on stdout)
    jsonl:    echo_memory_cmd.py --jsonl       (one item per stdin line -> one reply line each, until EOF)

``--tee FILE`` appends every input it receives to FILE (the gold-never-leaks test reads it).
Messages for people go to stderr; stdout carries only replies.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from echo_memory import generate  # this file's folder is sys.path[0] when it runs


def context() -> dict:
    import os

    return {"provider": os.environ.get("LONGMEMEVAL_TARGET_PROVIDER"), "model": os.environ.get("LONGMEMEVAL_TARGET_MODEL"),
            "options": {}, "cache_dir": os.environ.get("LONGMEMEVAL_CACHE_DIR") or None}


def main() -> int:
    parser = argparse.ArgumentParser(description="echo_memory as a subprocess target")
    parser.add_argument("--jsonl", action="store_true", help="serve one JSON line per item until stdin closes")
    parser.add_argument("--tee", type=Path, help="append every received input to this file")
    args = parser.parse_args()

    def tee(text: str) -> None:
        if args.tee:
            with args.tee.open("a", encoding="utf-8") as fh:
                fh.write(text.rstrip("\n") + "\n")

    if not args.jsonl:
        raw = sys.stdin.read()
        tee(raw)
        print(json.dumps(generate(json.loads(raw), context())))
        return 0
    for line in sys.stdin:
        if not line.strip():
            continue
        tee(line)
        print(json.dumps(generate(json.loads(line), context())), flush=True)
    print("echo_memory_cmd: stdin closed, exiting", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
