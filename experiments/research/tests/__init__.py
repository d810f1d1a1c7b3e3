"""The research's own checks: each study's summaries reproduce the tables it published from its
raw records (experiments/results/<gpu>/logs), and what it found still holds. Collected by
`python -m pytest` with the project's tests (pyproject.toml's testpaths)."""
