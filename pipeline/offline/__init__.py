"""The offline engine: deterministic, rule-based implementations of every role.

Each role is a pydantic-ai FunctionModel that works through the role's own confined tools
and returns the role's typed output, so the orchestrator cannot tell it from a model.
``engines.offline_model`` builds one; the package itself imports nothing, so a run whose
roles all have models loads none of it.
"""
