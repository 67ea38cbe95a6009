"""The benchmarks (each prints its figures as one JSON line): run one from the repository root as
``python -m bench.<name>``, for example ``.venv/bin/python -m bench.api_requests --nodes 10``."""
