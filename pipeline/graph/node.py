"""How a node's typed update is stored: its records as plain JSON, validated back into the
kind's state for every node and router (the checkpoint's serializer imports no classes)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel


def plain(value: Any) -> Any:
    """Records as JSON data: what the checkpoint stores, validated back into the state on read."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


N = TypeVar("N", bound=Callable[..., Any])


def node(fn: N) -> N:
    """A node whose typed update is stored as plain JSON. Its signature is kept (LangGraph hands
    a node its ``runtime`` by the parameter's name)."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            return plain(await fn(*args, **kwargs))

        return run_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return plain(fn(*args, **kwargs))

    return run  # type: ignore[return-value]
