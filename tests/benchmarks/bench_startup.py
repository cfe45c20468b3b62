"""Benchmark the start-up time of every command, before (another revision's code, default ``main``) and after (this
checkout), side by side in one run. Prints each script's medians and their ratio.

    bash tests/venv_python.sh tests/benchmarks/bench_startup.py [--before main] [--repeat 7] [--inner 3]
        [--only run_benchmark,...]

Each ``scripts/*.py`` of either tree is started with its cheapest real invocation (``--help``; a command without
options as it is called with none; the Stop hook with ``{}`` on stdin, as Claude Code calls it without a loop) and
timed to its exit: wall seconds and the process's CPU seconds (user + system, from ``wait4``). Before and after
alternate in every round (which goes first alternates too); a round's figure is the fastest of ``--inner`` starts in
a row (a shared machine only ever adds time to a start), each figure is the median of ``--repeat`` rounds, and its
noise is the spread of the rounds (the median absolute deviation, as a share of the median). A ratio above 1 by
more than its noise is marked ``SLOWER``. ``modules`` counts the modules each start loads (from one untimed start
under ``-X importtime``): the same figure on any machine, and where a slower start usually comes from. Both trees
run with their bytecode cached, as an installed plugin does (``_trees.python_env``), after one untimed start of
each script.
The machine is shared: read the ratios (after / before, measured side by side) and the CPU seconds, not the absolute
wall seconds. No data is needed; about 3 minutes on 2 cores at the defaults.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _trees import headline, median, python_env, ratio, trees as find_trees  # noqa: E402

INVOCATIONS: dict[str, tuple[list[str], str | None]] = {
    "command_names.py": ([], None),  # its only options are --step NAME; bare, it prints the names
    "loop_stop_hook.py": ([], "{}"),  # the Stop hook as Claude Code runs it when no loop is active
    "records.py": ([], None),  # a module users' targets import: loading it is the invocation
    "targets.py": ([], None),  # the same
}
"""Scripts whose cheapest real invocation is not ``--help``: (arguments, stdin)."""


def invocation(script: str) -> tuple[list[str], str | None]:
    return INVOCATIONS.get(script, (["--help"], None))


def time_once(tree: Path, script: str, env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit status) of one start of ``tree``'s ``scripts/<script>``."""
    args, stdin = invocation(script)
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(tree / "scripts" / script), *args], env=env, cwd=cwd,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    if stdin is not None:
        proc.stdin.write(stdin)
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def fastest_of(inner: int, tree: Path, script: str, env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """The fastest (by wall seconds) of ``inner`` starts in a row."""
    return min((time_once(tree, script, env, cwd) for _ in range(max(1, inner))), key=lambda t: t[0])


def modules_loaded(tree: Path, script: str, env: dict[str, str], cwd: Path) -> int:
    """How many modules one start of ``tree``'s ``scripts/<script>`` loads (``-X importtime`` lines)."""
    args, stdin = invocation(script)
    done = subprocess.run([sys.executable, "-X", "importtime", str(tree / "scripts" / script), *args], env=env,
                          cwd=cwd, input=stdin or "", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return sum(1 for line in done.stderr.splitlines() if line.startswith("import time:") and "|" in line) - 1


def noise(values: list[float]) -> float:
    """The median absolute deviation as a share of the median (0.05: the rounds spread about 5%)."""
    mid = statistics.median(values)
    return statistics.median(abs(v - mid) for v in values) / mid if mid else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="main", help="the revision to compare with (default main; '' for none)")
    parser.add_argument("--repeat", type=int, default=7, help="rounds; each figure is their median (default 7)")
    parser.add_argument("--inner", type=int, default=3, help="starts per round; a round keeps the fastest (default 3)")
    parser.add_argument("--only", default="", help="comma-separated script names (without .py) to time")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        trees = find_trees(args.before, tmp)
        names = sorted({p.name for tree in trees.values() for p in (tree / "scripts").glob("*.py")})
        if args.only:
            wanted = {f"{n}.py" for n in args.only.split(",")}
            names = [n for n in names if n in wanted]
        env = python_env(tmp / "pycache")
        cwd = tmp / "cwd"  # no project here: nothing a command finds in the current folder changes its start
        cwd.mkdir()
        print(f"# start-up of every command (--help unless noted), median of {args.repeat} rounds, each the fastest of "
              f"{args.inner} starts; "
              f"{headline(args.before, trees)}")
        present = {label: {n for n in names if (tree / "scripts" / n).is_file()} for label, tree in trees.items()}
        for label, tree in trees.items():  # compile each tree's bytecode once, as a first start after install does
            for name in sorted(present[label]):
                time_once(tree, name, env, cwd)
        wall: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        codes: dict[tuple[str, str], int] = {}
        for round_ in range(args.repeat):
            order = list(trees.items())[:: 1 if round_ % 2 == 0 else -1]  # neither tree always starts second
            for name in names:
                for label, tree in order:
                    if name not in present[label]:
                        continue
                    seconds, cpu_seconds, code = fastest_of(args.inner, tree, name, env, cwd)
                    wall.setdefault((name, label), []).append(seconds)
                    cpu.setdefault((name, label), []).append(cpu_seconds)
                    codes[(name, label)] = code
        modules = {(name, label): modules_loaded(tree, name, env, cwd)
                   for label, tree in trees.items() for name in names if name in present[label]}
        have_before = "before" in trees
        print(f"  {'script':<22} {'invocation':<10} {'wall before':>11} {'after':>7} {'ratio':>6} {'noise':>6}   "
              f"{'CPU before':>10} {'after':>7} {'ratio':>6}  {'modules':>7}  exit")
        totals = {"wall": {"before": 0.0, "after": 0.0}, "cpu": {"before": 0.0, "after": 0.0}}
        for name in names:
            shown = " ".join(invocation(name)[0]) or ("stdin {}" if invocation(name)[1] else "bare")
            row = {}
            for label in ("before", "after"):
                if (name, label) in wall:
                    row[label] = (median(wall[(name, label)]), median(cpu[(name, label)]))
            b, a = row.get("before", (float("nan"),) * 2), row.get("after", (float("nan"),) * 2)
            if "before" in row and "after" in row:
                for kind, i in (("wall", 0), ("cpu", 1)):
                    totals[kind]["before"] += b[i]
                    totals[kind]["after"] += a[i]
            spread = max(noise(wall[(name, label)]) for label in row)
            exits = "/".join(str(codes[(name, label)]) for label in ("before", "after") if label in row)
            wall_ratio, cpu_ratio = (ratio(a[0], b[0]), ratio(a[1], b[1])) if have_before else ("  n/a",) * 2
            counts = "/".join(str(modules[(name, label)]) for label in ("before", "after") if label in row)
            slower = "  SLOWER" if "before" in row and "after" in row and a[0] > b[0] * (1 + spread) else ""
            print(f"  {name:<22} {shown:<10} {b[0]:11.3f} {a[0]:7.3f} {wall_ratio:>6} "
                  f"{spread:6.1%}   {b[1]:10.3f} {a[1]:7.3f} {cpu_ratio:>6}  {counts:>7}  {exits}{slower}")
        if have_before:
            print(f"  {'all (sum of medians)':<33} {totals['wall']['before']:11.3f} {totals['wall']['after']:7.3f} "
                  f"{ratio(totals['wall']['after'], totals['wall']['before']):>6} {'':6}   "
                  f"{totals['cpu']['before']:10.3f} {totals['cpu']['after']:7.3f} "
                  f"{ratio(totals['cpu']['after'], totals['cpu']['before']):>6}")
        print("  goal: no command slower to start than before (ratio <= 1 within its noise)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
