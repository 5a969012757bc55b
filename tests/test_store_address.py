"""The store's address: parsed by libpq's rules (a URI or key=value) before anything runs; every
malformed one is bad input (exit 2) with a clear message; the password never shows, whatever
the form (user:password@, ?password=, password=), and nothing is written."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from batchkit import batch_repo
from conftest import cli_done

from pipeline.errors import ExitCode, InputError
from pipeline.runs.address import parse_store, redact

SECRET = "s3cretpw"


def designloop(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli_done(list(args), repo, {"DESIGNLOOP_STORE": None})


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        (f"postgresql://127.0.0.1:1/db?user=ci&password={SECRET}", "postgresql://ci:***@127.0.0.1:1/db"),
        (f"host=db.internal user=ci password={SECRET} dbname=dl", "postgresql://ci:***@db.internal/dl"),
        (f"postgres://ci:{SECRET}@h/d?sslmode=require", "postgresql://ci:***@h/d?sslmode=require"),
        ("postgresql://u@[::1]:5432/d", "postgresql://u@[::1]:5432/d"),
        ("postgresql://h1:1,h2:2/d", "postgresql://h1:1,h2:2/d"),
    ],
)
def test_every_form_is_shown_without_its_password(address: str, shown: str) -> None:
    assert parse_store(address).shown == shown
    assert redact(address) == shown


@pytest.mark.parametrize(
    ("address", "why"),
    [
        (f"postgresql://ci:{SECRET[:3]}%zz{SECRET[3:]}@127.0.0.1:1/db", "not a valid PostgreSQL address"),
        (f"postgresql://ci:{SECRET}@127.0.0.1:notaport/db", "is not a number from 1 to 65535"),
        (f"postgresql://ci:{SECRET}@127.0.0.1:99999/db", "is not a number from 1 to 65535"),
        (f"postgresql://ci:{SECRET}@127.0.0.1:1/db?bogus_option=1", "not a valid PostgreSQL address"),
        (f"host=x password={SECRET} {SECRET}", "not a valid PostgreSQL address"),
        ("mysql://x", "is not a postgresql:// address"),
    ],
)
def test_a_malformed_address_is_bad_input_and_never_quoted(address: str, why: str) -> None:
    with pytest.raises(InputError, match=why) as caught:
        parse_store(address)
    assert SECRET not in caught.value.render() and SECRET[3:] not in caught.value.render()


@pytest.mark.slow
def test_the_commands_exit_2_naming_the_address_without_its_password(tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    cases = [
        ["runs", "--store", f"postgresql://127.0.0.1:1/db?user=ci&password={SECRET}"],
        ["runs", "--store", f"host=127.0.0.1 port=1 user=ci password={SECRET} dbname=dl"],
        ["runs", "--store", f"postgresql://ci:{SECRET}%zz@127.0.0.1:1/db"],
        ["batch", "create", "docs/adr/*", "--store", f"postgresql://ci:{SECRET}@127.0.0.1:notaport/db"],
        ["runs", "--store", f"postgresql://ci:{SECRET}@127.0.0.1:99999/db"],
        ["runs", "--store", f"postgresql://ci:{SECRET}@127.0.0.1:1/db?bogus_option=1"],
    ]
    for args in cases:
        result = designloop(repo, *args)
        assert result.returncode == ExitCode.BAD_INPUT, (args, result.stderr)
        assert "internal error" not in result.stderr
        assert SECRET not in result.stdout + result.stderr, (args, result.stderr)
    unreachable = designloop(
        repo, "runs", "--store", f"host=127.0.0.1 port=1 user=ci password={SECRET} dbname=dl"
    )
    assert "cannot reach the run store postgresql://ci:***@127.0.0.1:1/dl" in unreachable.stderr
    assert not (repo / "runs").exists()  # nothing written for bad input


@pytest.mark.slow
def test_a_run_looked_up_in_a_store_named_with_a_query_password_hides_it(pg_url: str, tmp_path: Path) -> None:
    repo = batch_repo(tmp_path, ["a"])
    address = f"{pg_url}?password={SECRET}"  # the test server trusts; the password is only shown
    result = designloop(repo, "status", "nosuchrun", "--store", address)
    assert result.returncode == ExitCode.BAD_INPUT
    assert "no run named 'nosuchrun'" in result.stderr and ":***@" in result.stderr
    assert SECRET not in result.stderr
    listed = designloop(repo, "runs", "--json", "--store", " ".join(_key_values(pg_url)))
    assert listed.returncode == 0, listed.stderr  # the key=value form works as well


def _key_values(url: str) -> list[str]:
    from psycopg.conninfo import conninfo_to_dict

    return [f"{k}={v}" for k, v in conninfo_to_dict(url).items()]


@pytest.mark.slow
def test_an_address_naming_no_part_takes_them_from_the_pg_environment(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from psycopg.conninfo import conninfo_to_dict

    assert parse_store("postgresql://").shown == "postgresql://"
    parts = conninfo_to_dict(pg_url)
    pg_env = {"PGHOST": "host", "PGPORT": "port", "PGUSER": "user", "PGDATABASE": "dbname"}
    for name, key in pg_env.items():
        monkeypatch.setenv(name, str(parts[key]))
    repo = batch_repo(tmp_path, ["a"])
    listed = designloop(repo, "runs", "--json", "--store", "postgresql://")
    assert listed.returncode == 0, listed.stderr  # as a CI service container is reached
