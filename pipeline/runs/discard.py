"""Withdrawing a run that did not finish (``designloop discard RUN``).

A paused, stopped or interrupted run stays resumable for ever, and every later batch would
resume it. Discarding it records a ``discarded`` event: ``status`` and ``runs`` show it as
discarded, ``resume`` refuses it, and a batch (or a worker) never resumes it again; the next
batch decides as if it had not run. Its files stay as they are: the documents it left are
recorded as designloop's own (a ``wrote`` event), so a later ``create`` does not take them for
a hand edit. Nothing is deleted.
"""

from __future__ import annotations

from pipeline.errors import InputError
from pipeline.formats.design_dir import open_design_dir
from pipeline.runs.events import Discarded, Wrote
from pipeline.runs.fingerprint import file_digests, written_files
from pipeline.runs.lock import RunLocked, holder_for
from pipeline.runs.records import locate
from pipeline.runs.run_view import RunView
from pipeline.runs.store import RunStore, emit


def refuse_discarded(view: RunView) -> None:
    """A discarded run is never resumed."""
    if view.state == "discarded":
        raise InputError(
            f"run {view.run_id} was discarded; it is never resumed",
            hint=f"start a new run on {view.directory} (designloop create, final or batch)",
        )


def discard(store: RunStore, run_id: str) -> RunView:
    """Withdraw ``run_id`` (paused, stopped or interrupted); returns its view as it was."""
    view = store.view(run_id)
    if view.outcome is not None:
        raise InputError(
            f"run {run_id} finished ({view.outcome}); there is nothing to withdraw",
            hint="a finished run is a record, not work in progress: leave it",
        )
    if view.state == "discarded":
        raise InputError(f"run {run_id} is already discarded", hint="nothing to do")
    record = store.record(run_id)
    run_dir = store.run_dir(run_id)
    _, directory, _ = locate(record, run_dir)
    lock = store.lock(directory, record.directory)
    try:
        lock.acquire(holder_for(f"discard-{run_id}"), False, None)
    except RunLocked as exc:
        raise InputError(
            f"run {run_id} cannot be discarded while {exc.message}",
            file=directory,
            hint="wait for the run to stop (or stop it), then discard it",
        ) from None
    try:
        design = open_design_dir(directory)
        emit(store, run_dir, Wrote(files=file_digests(design, written_files(design, record.kind))))
        emit(store, run_dir, Discarded(message="discarded: it is never resumed"))
    finally:
        lock.release()
    return view
