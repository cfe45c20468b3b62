"""The report stage: ``Scorecard`` / ``Comparison`` -> the files people read (renderers only).

``scorecard.md``, the SVG and (on ``--png``) PNG charts, the report page's data and HTML, paths as pages show them,
and the files scoring writes (``score_run``). It reads the score stage's records by attribute, never by key."""

from lme import lazy_face

_EXPORTS = {
    "render_markdown": "lme.report.scorecard_md",
    "ScoreOptions": "lme.report.outputs", "score_run": "lme.report.outputs", "score_project_run": "lme.report.outputs",
    "project_run_dir": "lme.report.outputs",
    "build_report": "lme.report.page", "build_compare": "lme.report.page", "write_report": "lme.report.page",
    "write_page": "lme.report.page", "loop_history": "lme.report.page",
    "prompt_keys": "lme.report.page_data", "DEFAULT_MAX_TEXT_MB": "lme.report.page_data",
    "history_chart": "lme.report.charts", "per_type_chart": "lme.report.charts",
}
"""Name -> the module that holds it (full dotted path, so a rename is found by grep)."""

__all__ = tuple(_EXPORTS)
__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)
