"""Whether each configured model's server can be reached at all, asked once before a run writes
anything: a server that refuses the connection, a name that does not resolve, a host that does
not answer within seconds. A run against it would spend its retries and rounds (tens of
seconds) on connection errors and end INCONCLUSIVE; it is bad input instead, named with the URL
and the error, and nothing is started.

The probe opens a TCP connection and closes it: no request, no key, nothing a provider counts.
It is skipped where no model request may be made (tests set pydantic-ai's
``ALLOW_MODEL_REQUESTS`` off) and where the runtime was handed an HTTP client of its own (a
transport that answers in-process).
"""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from pipeline.agents.resolve import OFFLINE, shown_url
from pipeline.agents.runtime import Runtime
from pipeline.errors import InputError

PROBE_SECONDS = 3.0
"""How long a server has to accept a connection."""


def _endpoint(url: str) -> tuple[str, int] | None:
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _probe(host: str, port: int, timeout: float) -> str | None:
    """None when the server accepts a connection; else the error, as the socket says it."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.gaierror as exc:
        return f"the name {host} does not resolve ({exc.strerror or exc})"
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc.strerror or exc}"


def _probing(runtime: Runtime) -> bool:
    if runtime.http_client is not None:
        return False
    try:
        import pydantic_ai.models
    except ImportError:  # pragma: no cover (pydantic-ai is a dependency)
        return False
    return bool(pydantic_ai.models.ALLOW_MODEL_REQUESTS)


def check_reachable(runtime: Runtime, timeout: float = PROBE_SECONDS) -> None:
    """Refuse, before anything is written, a run whose model's server cannot be reached."""
    specs = sorted(set(runtime.model_specs.values()) - {OFFLINE})
    if not specs or not _probing(runtime):
        return
    urls = {spec: str(runtime.provider_model(spec).base_url or "") for spec in specs}
    targets = {spec: end for spec, url in urls.items() if (end := _endpoint(url)) is not None}
    if not targets:
        return
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        errors = dict(
            zip(targets, pool.map(lambda end: _probe(end[0], end[1], timeout), targets.values()), strict=True)
        )
    failed = {spec: error for spec, error in errors.items() if error is not None}
    if not failed:
        return
    spec, error = next(iter(failed.items()))
    others = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
    raise InputError(
        f"cannot reach {shown_url(urls[spec])} for {spec}: {error}{others}",
        hint="start the model server, or point --base-url (OPENAI_BASE_URL) at one that runs; "
        "nothing was started",
    )
