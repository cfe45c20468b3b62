"""noise_floor: the sample, the flips split by cause, the band, and a floor that goes stale with the stack."""

from __future__ import annotations

import json

import pytest

from lme.loop import noise_floor
from lme.cli import noise_floor as noise_floor_cli
from lme.core.errors import UserError, run_main
from factories import typed
from loop_testing import item_ids, make_loop_project, make_row, write_run


def test_flips_are_split_into_generation_and_judge_flips():
    before = {"a": {"type": "multi-session", "label": True, "hypothesis_sha256": noise_floor._sha("hyp a")},
              "b": {"type": "multi-session", "label": False, "hypothesis_sha256": noise_floor._sha("hyp b")},
              "c": {"type": "multi-session", "label": True, "hypothesis_sha256": noise_floor._sha("hyp c")},
              "d": {"type": "temporal-reasoning", "label": True, "hypothesis_sha256": noise_floor._sha("hyp d")}}
    rows = typed({
        "a": make_row("a", "multi-session", False, hypothesis="another answer"),  # new text, new label
        "b": make_row("b", "multi-session", True, hypothesis="hyp b"),            # same text, new label
        "c": make_row("c", "multi-session", True, hypothesis="hyp c",             # repeats disagree
                      judgment={"stability": {"n": 2, "yes": 1, "no": 1, "flaky": True},
                                "verdicts": [{"label": True}, {"label": False}]}),
        "d": make_row("d", "temporal-reasoning", True, hypothesis="hyp d"),
    })
    per_type = noise_floor.flips(before, rows)
    ms = per_type["multi-session"]
    assert (ms["n"], ms["generation_flips"], ms["judge_flips"], ms["flips"]) == (3, 1, 2, 3)
    assert per_type["temporal-reasoning"]["flips"] == 0
    assert noise_floor.overall(per_type) | {} == {"n": 4, "flips": 3, "rate": 0.75, "generation_flips": 1,
                                                  "generation_rate": 0.25, "judge_flips": 2, "judge_rate": 0.5}


def test_the_band_is_the_net_noise_alone_gives_and_a_small_type_is_shrunk_toward_the_overall_rate():
    floor = {"overall": {"n": 100, "flips": 10, "rate": 0.1},
             "per_type": {"multi-session": {"n": 10, "flips": 0, "rate": 0.0}}}
    assert noise_floor.rate_of(floor, "multi-session") == pytest.approx(0.05)  # 0/10, shrunk toward 10%
    assert noise_floor.rate_of(floor, "knowledge-update") == pytest.approx(0.1)
    band = noise_floor.band(floor, ["knowledge-update"] * 20, ["knowledge-update"] * 20)
    assert (band["expected_flips"], band["mean_net"], band["low"], band["high"]) == (4.0, 0.0, -4, 4)
    assert noise_floor.band(None, ["x"], ["y"])["measured"] is False


def test_start_drops_a_seeded_sample_once_and_finish_needs_every_item_re_run(tmp_path, capsys):
    project = make_loop_project(tmp_path)
    types = item_ids(30)
    run_dir = write_run(project, "loop", types, {q: i % 3 != 0 for i, q in enumerate(types)})
    record = noise_floor.start(project, "loop", size=12)
    assert 12 <= len(record["sample"]) <= 13 and set(noise_floor.pending_ids(project, "loop")) == set(record["sample"])
    assert noise_floor.start(project, "loop", size=12)["sample"] == record["sample"]  # pending: nothing dropped twice
    with pytest.raises(UserError, match="not re-run yet"):
        noise_floor.finish(project, "loop")
    flipped = record["sample"][0]
    write_run(project, "loop", types, {q: (not record["before"][q]["label"]) if q == flipped
                                       else record["before"][q]["label"] for q in record["sample"]})
    done = noise_floor.finish(project, "loop")
    assert done["status"] == "measured" and done["overall"]["flips"] == 1
    assert run_main(noise_floor_cli.main, ["--project", str(project), "check", "--run-id", "loop"]) == 0
    meta = json.loads((run_dir / "run-meta.json").read_text())
    meta["target"]["model"] = "another-reader"
    (run_dir / "run-meta.json").write_text(json.dumps(meta))
    capsys.readouterr()
    assert run_main(noise_floor_cli.main, ["--project", str(project), "check", "--run-id", "loop"]) == 1
    assert "stale: the stack's models changed" in capsys.readouterr().out
