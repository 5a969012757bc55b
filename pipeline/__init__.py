"""designloop: design documents written and reviewed under a strict, resumable discipline."""

__version__ = "0.1.0"
