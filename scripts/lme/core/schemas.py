"""Validate the run-state records against ``references/schemas/<name>.schema.json`` (JSON Schema 2020-12).

The command (its parser, ``main()`` and help text) is ``lme/cli/schemas.py``."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from lme.core.command_names import PLUGIN
from lme.core.errors import UserError
from lme.core.facts import SCHEMA_VERSION, SCHEMA_VERSIONS

if TYPE_CHECKING:  # imported where a validator is first built: jsonschema costs ~0.1 s, before a run's first call
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "references" / "schemas"
SUPPORTED_MAJOR = 1
"""The major of a kind that has had only one (a kind's own major is that of ``facts.SCHEMA_VERSIONS``)."""


class SchemaError(UserError):
    """A record that does not match its schema (or carries a schemaVersion this plugin cannot read)."""


def schema_names() -> list[str]:
    """Names of every schema shipped in ``references/schemas`` (``config``, ``item-result``, ...)."""
    return sorted(p.name[: -len(".schema.json")] for p in SCHEMA_DIR.glob("*.schema.json"))


@functools.lru_cache(maxsize=None)
def _schema(name: str) -> dict[str, Any]:
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.is_file():
        raise UserError(
            f"unknown schema {name!r}: {path} does not exist",
            fix=f"known schemas: {', '.join(schema_names())}",
        )
    return json.loads(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _validator(name: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(_schema(name))  # the schema files themselves are checked by tests/core/test_schemas.py


_NO_FAST = object()


@functools.lru_cache(maxsize=None)
def _fast_check(name: str) -> Any:
    """``fastjsonschema``'s validator of schema ``name`` (generated code: ~15x jsonschema's speed, a tenth of its
    import time), or ``_NO_FAST`` when the package is missing. Only its *yes* is used: a record it refuses goes to
    jsonschema, which has the last word and names the fault (tests/core/test_schemas.py checks the two agree, and that
    this one never accepts what jsonschema refuses)."""
    try:
        import fastjsonschema

        return fastjsonschema.compile(_schema(name), use_default=False)
    except Exception:  # noqa: BLE001 - not installed, or a schema it cannot compile: jsonschema does it all
        return _NO_FAST


def _fast_yes(name: str, obj: Any) -> bool:
    check = _fast_check(name)
    if check is _NO_FAST:
        return False
    try:
        check(obj)
    except Exception:  # noqa: BLE001 - any doubt goes to jsonschema
        return False
    return True


def json_path(parts: Iterable[Any]) -> str:
    """``["haystack_sessions", 3, 0, "role"]`` -> ``haystack_sessions[3][0].role`` (``$`` for the root)."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "$"


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe(err: ValidationError) -> str:
    """One readable phrase for a jsonschema error: the field and what was wrong with it."""
    path = list(err.absolute_path)
    validator = err.validator
    if validator == "required":
        missing = [k for k in err.validator_value if isinstance(err.instance, dict) and k not in err.instance]
        field = json_path(path + missing[:1]) if missing else json_path(path)
        return f"field {field}: required but missing"
    if validator == "additionalProperties":
        allowed = set(err.schema.get("properties", {}))
        extra = sorted(k for k in err.instance if k not in allowed) if isinstance(err.instance, dict) else []
        return f"field {json_path(path + extra[:1])}: unknown field (not allowed here)"
    if validator == "enum":
        options = ", ".join(str(v) for v in err.validator_value)
        return f"field {json_path(path)}: {_short(err.instance)} is not one of: {options}"
    if validator == "type":
        want = err.validator_value if isinstance(err.validator_value, str) else " or ".join(err.validator_value)
        return f"field {json_path(path)}: expected {want}, got {_short(err.instance)}"
    return f"field {json_path(path)}: {err.message}"


def _best_error(errors: list[ValidationError]) -> ValidationError:
    # Prefer the deepest, most specific error; `if/then` failures surface their inner cause this way.
    def depth(e: ValidationError) -> tuple[int, int]:
        return (len(list(e.absolute_path)), 0 if e.validator in ("if", "then", "allOf") else 1)

    flat: list[ValidationError] = []
    stack = list(errors)
    while stack:
        e = stack.pop()
        if e.context:
            stack.extend(e.context)
        else:
            flat.append(e)
    return max(flat or errors, key=depth)


def validate(name: str, obj: Any, *, where: str) -> None:
    """Validate ``obj`` against schema ``name``; raise ``SchemaError`` naming ``where``, the field and the fault."""
    if _fast_yes(name, obj):
        return
    errors = list(_validator(name).iter_errors(obj))
    if not errors:
        return
    err = _best_error(errors)
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    raise SchemaError(f"{where}: invalid {name} record: {describe(err)}{more}")


def is_valid(name: str, obj: Any) -> bool:
    return _fast_yes(name, obj) or _validator(name).is_valid(obj)


UPDATE_FIX = f"update the plugin: claude plugin update {PLUGIN}@{PLUGIN}; or use the version that wrote it"


class NewerVersionError(SchemaError):
    """A file written by a newer version of the plugin that this one cannot read: refused as such, never read as a
    bad file (and never turned into an item's error row)."""


def _major_minor(version: Any) -> tuple[int, int] | None:
    parts = version.split(".") if isinstance(version, str) else []
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def from_newer_version(obj: Any, known: str = SCHEMA_VERSION) -> bool:
    """Whether ``obj`` carries a ``schemaVersion`` whose major.minor is newer than ``known``."""
    found = _major_minor(obj.get("schemaVersion")) if isinstance(obj, dict) else None
    return found is not None and found > (_major_minor(known) or (0, 0))


def newer_version_error(where: str, found: Any, known: str = SCHEMA_VERSION) -> NewerVersionError:
    return NewerVersionError(f"{where} was written by a newer version of {PLUGIN} (schemaVersion {found}; this "
                             f"version reads up to {known})", fix=UPDATE_FIX)


def validate_versioned(name: str, obj: Any, *, where: str, known: str | None = None) -> None:
    """``validate``, except that a record this version cannot read that a newer version wrote (a newer
    ``schemaVersion`` major.minor) is refused as from a newer version: its fields are not wrong, this reader is
    old. A newer record this version can read (a minor that only added fields readers ignore) is read."""
    known = known or SCHEMA_VERSIONS.get(name, SCHEMA_VERSION)
    try:
        validate(name, obj, where=where)
    except SchemaError:
        if from_newer_version(obj, known):
            raise newer_version_error(where, obj["schemaVersion"], known) from None
        raise


def check_version(obj: Any, *, where: str, kind: str | None = None) -> None:
    """Refuse a record whose ``schemaVersion`` major is not one this plugin reads: for ``kind``, majors 1 up to its
    own (older majors are brought up to date by ``migrations``); without, major 1."""
    if not isinstance(obj, dict) or "schemaVersion" not in obj:
        raise SchemaError(f"{where}: field schemaVersion: required but missing")
    version = obj["schemaVersion"]
    found = _major_minor(version)
    if found is None:
        raise SchemaError(f"{where}: field schemaVersion: expected MAJOR.MINOR.PATCH, got {_short(version)}")
    major, newest = found[0], (SCHEMA_VERSIONS[kind] if kind in SCHEMA_VERSIONS else SCHEMA_VERSION)
    if major > int(newest.split(".")[0]):
        raise newer_version_error(where, version, newest)
    if major < SUPPORTED_MAJOR:
        raise SchemaError(
            f"{where}: schemaVersion {version} is older than this plugin reads ({SUPPORTED_MAJOR}.x); "
            "re-run setup or start a new run"
        )
