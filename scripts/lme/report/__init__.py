"""The report stage: ``Scorecard`` / ``Comparison`` -> the files people read (renderers only).

``scorecard.md``, the SVG and (on ``--png``) PNG charts, the report page's data and HTML, paths as pages show them,
and the files scoring writes (``score_run``). It reads the score stage's records by attribute, never by key."""
