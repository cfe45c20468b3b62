"""config.json: defaults, validated load, atomic write that will not clobber, paths, provider:model parsing."""

from __future__ import annotations

import json

import pytest

from lme.core import command_names
from lme.core import config
from lme.cli import config as config_cli
from lme.core.errors import UserError, run_main
from lme.core.records import OFFICIAL_JUDGE_MODEL


def test_defaults_are_the_documented_ones_and_valid(tmp_path):
    cfg = config.default_config()
    assert cfg["judgeModel"] == OFFICIAL_JUDGE_MODEL == "gpt-4o-2024-08-06"
    assert (cfg["maxEvals"], cfg["target"], cfg["concurrency"], cfg["errorThreshold"]) == (500, "full-context", 8, 0)
    assert (cfg["requestTimeoutSeconds"], cfg["maxAttempts"], cfg["cacheEnabled"]) == (600, 8, True)
    assert cfg["cache_dir"] == ".longmemeval-benchmarks/cache"
    config.write_config(tmp_path, cfg)
    assert config.load_config(tmp_path) == cfg


def test_missing_config_names_the_setup_command(tmp_path):
    with pytest.raises(UserError, match=command_names.SETUP):
        config.load_config(tmp_path)


def test_bad_json_names_line_and_column(tmp_path):
    path = config.config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{\n  "variant": "_s",\n  "maxEvals": ,\n}\n')
    with pytest.raises(UserError, match=r"line 3 column 15"):
        config.load_config(tmp_path)


def test_schema_violation_is_one_line_naming_the_field(tmp_path):
    cfg = config.default_config()
    cfg["concurrency"] = 0
    path = config.config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(cfg))
    with pytest.raises(UserError) as info:
        config.load_config(tmp_path)
    assert "field concurrency" in str(info.value) and "\n" not in str(info.value)


def test_newer_config_major_asks_for_an_upgrade(tmp_path):
    path = config.config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**config.default_config(), "schemaVersion": "3.0.0"}))
    with pytest.raises(UserError, match="newer version of longmemeval-benchmarker"):
        config.load_config(tmp_path)


def test_a_config_a_newer_version_wrote_with_keys_this_one_lacks_says_so_in_one_line(tmp_path):
    path = config.config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**config.default_config(), "schemaVersion": "1.2.0", "batch": True}))
    with pytest.raises(UserError) as info:
        config.load_config(tmp_path)
    said = str(info.value)
    assert "\n" not in said and str(path) in said and "newer version of longmemeval-benchmarker" in said
    assert "schemaVersion 1.2.0" in said and "reads up to 1.1.0" in said and "claude plugin update" in said


def test_an_unknown_key_in_todays_config_is_still_refused_as_a_typo(tmp_path):
    path = config.config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**config.default_config(), "batch": True}))
    with pytest.raises(UserError, match="batch") as info:
        config.load_config(tmp_path)
    assert "newer version" not in str(info.value)


def test_missing_optional_fields_get_defaults(tmp_path):
    minimal = {k: config.default_config()[k] for k in (
        "schemaVersion", "datasetPath", "variant", "runs_dir", "targetProvider", "targetModel", "judgeProvider", "judgeModel")}
    config.write_config(tmp_path, minimal)
    assert config.load_config(tmp_path)["concurrency"] == 8


def test_write_refuses_to_overwrite_unless_forced(tmp_path):
    cfg = config.default_config()
    config.write_config(tmp_path, cfg)
    cfg2 = {**cfg, "concurrency": 3}
    with pytest.raises(UserError, match="already exists"):
        config.write_config(tmp_path, cfg2)
    assert config.load_config(tmp_path)["concurrency"] == 8
    config.write_config(tmp_path, cfg2, force=True)
    assert config.load_config(tmp_path)["concurrency"] == 3
    assert [p.name for p in config.config_path(tmp_path).parent.iterdir()] == ["config.json"]  # no temp left


def test_invalid_config_is_never_written(tmp_path):
    with pytest.raises(UserError, match="field variant"):
        config.write_config(tmp_path, {**config.default_config(), "variant": "big"})
    assert not config.config_path(tmp_path).exists()


def test_relative_paths_resolve_from_the_project_root(tmp_path):
    assert config.resolve_path(tmp_path, "data/x.json") == (tmp_path / "data" / "x.json").resolve()
    assert config.resolve_path(tmp_path, "/abs/x.json").as_posix() == "/abs/x.json"


@pytest.mark.parametrize(
    "arg,expected",
    [
        ("openai:gpt-4o", ("openai", "gpt-4o")),
        ("anthropic:claude-x", ("anthropic", "claude-x")),
        ("gpt-4o", ("openai", "gpt-4o")),
        ("ft:gpt-4o:org:abc", ("openai", "ft:gpt-4o:org:abc")),
    ],
)
def test_parse_model_arg(arg, expected):
    assert config.parse_model_arg(arg, "openai") == expected


def test_parse_model_arg_without_a_model_is_refused():
    with pytest.raises(UserError, match="names no model"):
        config.parse_model_arg("openai:", "openai")


def test_cli_prints_config_and_exits_2_without_one(tmp_path, capsys):
    assert run_main(config_cli.main, ["--project", str(tmp_path)]) == 2
    assert command_names.SETUP in capsys.readouterr().err
    assert run_main(config_cli.main, ["--project", str(tmp_path), "--defaults"]) == 0
    assert json.loads(capsys.readouterr().out)["variant"] == "_s"


def test_a_provider_named_in_the_config_splits_a_model_argument():
    assert config.parse_model_arg("vllm:meta-llama/Llama-3.1-70B", "openai", ("vllm",)) == ("vllm", "meta-llama/Llama-3.1-70B")
    with pytest.raises(UserError, match="unknown provider 'vllm'"):
        config.parse_model_arg("vllm:meta-llama/Llama-3.1-70B", "openai")


@pytest.mark.parametrize("arg", ["antropic:claude-sonnet-4-6", ":", ":gpt-4o"])
def test_a_mistyped_or_missing_provider_is_a_clear_error(arg):
    with pytest.raises(UserError, match="provider"):
        config.parse_model_arg(arg, "openai")


def test_fine_tuned_openai_ids_keep_their_colons():
    assert config.parse_model_arg("ft:gpt-4o-mini:org:custom:abc", "openai") == ("openai", "ft:gpt-4o-mini:org:custom:abc")
