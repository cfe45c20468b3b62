"""What every entry script that needs the toolkit's packages does first, before it imports any of our modules.

``start(__name__)`` does two things, only when the script runs as ``__main__`` (a test importing it is left alone):

- the right interpreter: run by a python that lacks the packages of ``requirements.txt`` (the system python, a
  shell where the venv is not active), it prints one line naming the venv's python to use, and exits 2, instead
  of a ``ModuleNotFoundError`` traceback from deep in an import;
- a clean early Ctrl-C: from this module's first lines until ``errors.run_main`` takes over, SIGINT ends the
  process with ``interrupted`` and exit 130 instead of a ``KeyboardInterrupt`` traceback from the middle of the
  imports (installed on import, so as early as possible; ``start`` gives SIGINT back when not ``__main__``).

Standard library only: this is the one module such a python can always import. Scripts that must work with a bare
python (setup_project.py, which makes the venv, and the loop's hooks) do not call it.
"""

from __future__ import annotations

import os
import signal
import sys


def _interrupted(signum: int, frame: object) -> None:
    print("interrupted", file=sys.stderr, flush=True)
    raise SystemExit(130)  # EXIT_INTERRUPTED (defined below the early imports)


_interrupted.early_interrupt = True  # type: ignore[attr-defined]  # errors.run_main replaces this handler
_main_file = getattr(sys.modules.get("__main__"), "__file__", None) or ""  # layout-aware
_here = os.path.dirname(os.path.abspath(__file__))  # layout-aware: scripts/, or scripts/lme/<stage>/
_SCRIPTS_DIR = (os.path.dirname(os.path.dirname(_here)) if os.path.basename(os.path.dirname(_here)) == "lme"
                else _here)
_MAIN_IS_OURS = os.path.dirname(os.path.abspath(_main_file)) == _SCRIPTS_DIR
"""The process runs one of our scripts in scripts/ (not pytest or a tool importing us)."""


def _install() -> None:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        try:
            signal.signal(signal.SIGINT, _interrupted)
        except ValueError:  # not the main thread: leave SIGINT alone
            pass


if _MAIN_IS_OURS:  # at once, before the imports below
    _install()

import importlib.util  # noqa: E402
from pathlib import Path  # noqa: E402

REQUIRED = ("jsonschema", "ijson", "backoff", "openai", "anthropic", "tqdm", "matplotlib", "numpy")
"""Import names of requirements.txt's packages (numpy arrives with matplotlib); checked without importing them."""
VENV_DIR = ".longmemeval-venv"
EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130
_main_started = False
"""An entry script called ``start("__main__")``: the modules it imports (other entry scripts) leave SIGINT alone."""


def missing(required: tuple[str, ...] = REQUIRED) -> list[str]:
    return [name for name in required if importlib.util.find_spec(name) is None]


def _project_from_argv(argv: list[str]) -> Path:
    for i, arg in enumerate(argv):
        if arg == "--project" and i + 1 < len(argv):
            return Path(argv[i + 1])
        if arg.startswith("--project="):
            return Path(arg.split("=", 1)[1])
    return Path.cwd()


def venv_python(argv: list[str] | None = None) -> Path | None:
    """The project's venv python (``--project`` or the cwd, then their parents; else ``$VIRTUAL_ENV``), or None."""
    start = _project_from_argv(list(sys.argv[1:] if argv is None else argv)).resolve()
    for folder in (start, *start.parents):
        candidate = folder / VENV_DIR / "bin" / "python"
        if candidate.exists():
            return candidate
    env = os.environ.get("VIRTUAL_ENV")
    if env and (Path(env) / "bin" / "python").exists():
        return Path(env) / "bin" / "python"
    return None


def refusal(script: str, absent: list[str], python: Path | None) -> str:
    """The one line for a script run with an interpreter that lacks ``absent``."""
    what = (f"error: {script} needs the toolkit's packages ({', '.join(absent[:3])}"
            f"{' ...' if len(absent) > 3 else ''} not importable by {sys.executable})")
    if python is not None:
        return f"{what}: run it with the project's venv: {python} {script}"
    from lme.core import command_names  # standard library only, like this module

    return (f"{what}: create the venv with `python3 scripts/setup_project.py --project .` (or "
            f"{command_names.SETUP}), then run it with {VENV_DIR}/bin/python")


def start(module_name: str, required: tuple[str, ...] = REQUIRED) -> None:
    """Call first thing in an entry script, as ``entry_guard.start(__name__)``; a no-op unless it is ``__main__``."""
    global _main_started
    if module_name != "__main__":
        if not _main_started and signal.getsignal(signal.SIGINT) is _interrupted:  # a test's import: SIGINT is theirs
            try:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            except ValueError:
                pass
        return
    _main_started = True
    _install()
    absent = missing(required)
    if absent:
        script = os.path.relpath(sys.argv[0]) if sys.argv and sys.argv[0] else "this script"
        if script.startswith(".." + os.sep + ".."):
            script = sys.argv[0]
        print(refusal(script, absent, venv_python()), file=sys.stderr)
        raise SystemExit(EXIT_USER_ERROR)
