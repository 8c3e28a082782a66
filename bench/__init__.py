"""Benchmarks (`make bench`): each prints ratios against a baseline measured in the same run."""

import nardy  # noqa: F401  - first, for its process settings (no grpc fork handlers)
