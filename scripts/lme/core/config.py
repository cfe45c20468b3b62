"""The project's ``.longmemeval-benchmarks/config.json``: defaults, validated load, atomic write.

The command (its parser, ``main()`` and help text) is ``lme/cli/config.py``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from lme.core import bounded_json
from lme.core import command_names
from lme.core import config_file
from lme.core import fileio, migrations
from lme.core.fileio import write_atomic_json
from lme.core.config_defaults import default_config
from lme.core.errors import UserError
from lme.core.facts import schema_version
from lme.core.schemas import check_version, validate, validate_versioned

KNOWN_PROVIDERS = ("anthropic", "openai", "azure", "offline")


config_path = config_file.config_path


CONFIG_LIMITS = bounded_json.Limits(document_bytes=4 << 20, string_chars=1 << 16)
"""A config is a few hundred bytes; no value in it needs more than a path's or a URL's length."""


def load_config(project: Path) -> dict[str, Any]:
    """The validated config with defaults filled in for fields the file leaves out.

    Declares ``project`` to ``fileio.own``: from here no file of its state is opened through a symbolic link."""
    fileio.own(project)
    path = config_path(project)
    raw = config_file.read_object(path, limits=CONFIG_LIMITS,
                                  fix=f"fix that line or re-run {command_names.SETUP} --force-config",
                                  not_object="{path}: expected a JSON object, got {kind}",
                                  not_object_fix=f"re-run {command_names.SETUP}")
    if raw is None:
        raise UserError(f"no config at {path}", fix=f"set this project up first: {command_names.step(command_names.SETUP)}")
    check_version(raw, where=str(path), kind="config")
    cfg = migrations.upgrade("config", {**default_config(), **raw})
    validate_versioned("config", cfg, where=str(path))
    return cfg


def write_config(project: Path, cfg: Mapping[str, Any], *, force: bool = False) -> Path:
    """Validate and write atomically; an existing config is kept unless ``force``."""
    path = config_path(project)
    if path.exists() and not force:
        raise UserError(f"{path} already exists", fix="pass --force to overwrite it, or edit it by hand")
    data = dict(cfg)
    data.setdefault("schemaVersion", schema_version("config"))
    validate("config", data, where=str(path))
    try:
        fileio.make_dirs(path.parent)
    except OSError as e:
        raise UserError(f"cannot create {path.parent} ({e.strerror})", fix="check the project directory's permissions") from None
    write_atomic_json(path, data)
    return path


def rate_limits(cfg: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """``providers.<name>.rpm`` / ``tpm`` from the config: the pacer's budgets for routes that send no headers."""
    return {name: {k: float(p[k]) for k in ("rpm", "tpm") if p.get(k) is not None}
            for name, p in (cfg.get("providers") or {}).items()
            if isinstance(p, Mapping) and (p.get("rpm") is not None or p.get("tpm") is not None)}


def moved_path(recorded: str, old_project: str | None, project: Path) -> str:
    """A path a run recorded, where it is now: one under the project's recorded root, gone from there, is taken at
    the same place under the project's current root (the project was moved); any other path is as recorded.
    Content checks (the dataset's sha256, the judge file's hash) still decide whether it is the same file."""
    path = Path(recorded)
    if not old_project or path.exists() or not path.is_absolute():
        return recorded
    try:
        inside = path.relative_to(old_project)
    except ValueError:
        return recorded
    return str(Path(project) / inside)


def resolve_path(project: Path, value: str | Path) -> Path:
    """A config path as an absolute path: relative values are taken from the project root; ``~`` expands. A loop of
    symbolic links is a UserError naming it."""
    p = Path(value).expanduser()
    if p.is_absolute():
        return p
    try:
        return (Path(project) / p).resolve()
    except (RuntimeError, OSError):  # RuntimeError: pathlib's "Symlink loop from ..."
        raise UserError(f"{Path(project) / p} is a loop of symbolic links", fix="point the path at a real file "
                        "or folder") from None


_SYSTEM_FOLDERS = frozenset(("/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib64", "/opt", "/proc", "/root",
                             "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var", "/home", "/Users", "/System",
                             "/Library", "/private", "/Applications"))


def owned_folder(project: Path, value: str, key: str) -> Path:
    """The absolute folder that config ``key`` (``runs_dir``, ``cache_dir``) names for the benchmark to write in:
    a folder the project owns, i.e. strictly inside the project, reached without a symbolic link, and never a
    system folder or the home folder. Anything else is one UserError line: a config is other people's data too,
    and ``runs_dir: "/"`` would have runs written into the root."""
    project = Path(os.path.abspath(project))
    given = Path(str(value)).expanduser()
    lexical = Path(os.path.normpath(given if given.is_absolute() else project / given))
    where = f"{config_path(project)}: {key} {str(value)!r}"
    fix = f"set {key} to a folder inside the project, e.g. {'.longmemeval-benchmarks/' + key.split('_')[0]}"
    if str(lexical) in _SYSTEM_FOLDERS or lexical == Path.home():
        raise UserError(f"{where} is a system folder ({lexical})", fix=fix)
    if lexical == project or project not in lexical.parents:
        raise UserError(f"{where} is {'the project itself' if lexical == project else 'outside the project'} "
                        f"({lexical})", fix=fix)
    try:
        fileio.check_no_symlinks(lexical, include_self=True)
    except fileio.SymlinkRefused as err:
        raise UserError(f"{where}: {err.path} is a symbolic link (or a loop of them); the benchmark writes only in "
                        "folders the project owns", fix=fix) from None
    return lexical


def parse_model_arg(arg: str, default_provider: str, extra_providers: Sequence[str] = ()) -> tuple[str, str]:
    """``"openai:gpt-4o"`` -> ``("openai", "gpt-4o")``; ``"gpt-4o"`` -> ``(default_provider, "gpt-4o")``.

    Only a known provider name (or one of ``extra_providers``, e.g. an OpenAI-compatible server named in the
    config's ``providers``) before the first ``:`` splits, so model ids holding ``:`` stay whole.
    """
    text = str(arg).strip()
    if not text:
        raise UserError("empty model name", fix="pass provider:model, e.g. openai:gpt-4o-2024-08-06")
    if any(ch.isspace() for ch in text):
        raise UserError(f"model argument {arg!r} contains a space (no provider or model id has one)",
                        fix="pass provider:model with a colon and no spaces, e.g. openai:gpt-4o")
    head, sep, tail = text.partition(":")
    if sep and not head.strip():
        raise UserError(f"model argument {arg!r} names no provider", fix="pass provider:model, e.g. openai:gpt-4o")
    if sep and head.isalpha() and head.islower() and head != "ft" and head not in KNOWN_PROVIDERS + tuple(extra_providers):
        raise UserError(
            f"unknown provider {head!r} in {arg!r}",
            fix=f"use one of {', '.join(KNOWN_PROVIDERS)}, or name it in config.json providers with a base_url",
        )
    if sep and (head.lower() in KNOWN_PROVIDERS or head in extra_providers):
        if not tail.strip():
            raise UserError(f"model argument {arg!r} names no model", fix="pass provider:model, e.g. anthropic:claude-sonnet-4-6")
        return (head.lower() if head.lower() in KNOWN_PROVIDERS else head), tail.strip()
    return default_provider, text
