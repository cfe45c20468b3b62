"""Run a Python script (argv[1:]) in this process, then print this process's peak RSS to stderr.

Benchmarks wrap the driver with it so each subprocess reports its own peak memory. The figure is printed by an exit
handler, so it comes also when the command ends its process itself (``errors.exit_now``). It is the process's own
high-water mark (``VmHWM``): ``ru_maxrss`` also counts the parent's memory at the fork, so a benchmark that holds
the ``_s`` file would be charged to its children.
"""

import atexit
import resource
import runpy
import sys


def _peak_kib() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # not Linux: the closest figure there is


@atexit.register
def _report() -> None:
    print(f"peak_rss_mib={_peak_kib() / 1024:.1f}", file=sys.stderr)


script, sys.argv = sys.argv[1], sys.argv[1:]
sys.path.insert(0, script.rsplit("/", 1)[0])
code = 0
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
sys.exit(code)
