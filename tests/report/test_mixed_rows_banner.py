"""The MIXED ROWS banner counts the rows the scorecard scores, as the Code line does: never items not run yet,
never re-tested ids outside the scored items."""

from __future__ import annotations

import json

from lme.core.facts import DECISIONS_FILE
from lme.report import scorecard_md
from lme.store.run_store import load_run
from factories import MS, SSU, official_row, write_run, scorecard_of

ITEMS = {"a1": SSU, "a2": SSU, "a3": SSU, "b1": MS, "b2": MS, "b3": MS}


def test_mixed_rows_banner_counts_scored_rows_only(tmp_path):
    project = tmp_path / "proj"
    run_dir = write_run(project / ".longmemeval-benchmarks" / "runs" / "loop", ITEMS,
                        [official_row(q, t, True) for q, t in list(ITEMS.items())[:4]])  # b2, b3 not run yet
    decisions = project / DECISIONS_FILE
    decisions.write_text(json.dumps({"run_id": load_run(run_dir).run_id, "round": 2, "decision": "keep",
                                     "retest_ids": ["a1", "zz_not_in_this_run"]}) + "\n")
    card = scorecard_of(load_run(run_dir))
    assert card.to_dict()["loop_rows"] == {"kept_rounds": [2], "retested": 1, "pre_fix": 3, "rows": 4}
    md = scorecard_md.render_markdown(card)
    assert "MIXED ROWS: 3 of 4 rows predate the kept fix(es) of v2; 1 were re-tested after one." in md
