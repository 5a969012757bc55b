"""The creation kinds' graph (``create`` and ``final``): the author's loop of Steps 1 to 6 with the
per-round pair, the S3 gate and the comprehension gate, then the shared finish."""
