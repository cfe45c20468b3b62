"""Run a Python script (argv[1:]) in this process, then print this process's peak RSS to stderr.

Benchmarks wrap the driver with it so each subprocess reports its own peak memory.
"""

import resource
import runpy
import sys

script, sys.argv = sys.argv[1], sys.argv[1:]
sys.path.insert(0, script.rsplit("/", 1)[0])
code = 0
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
finally:
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"peak_rss_mib={peak_kib / 1024:.1f}", file=sys.stderr)
sys.exit(code)
