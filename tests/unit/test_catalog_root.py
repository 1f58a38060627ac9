"""io/catalog.py without Spark: which folder the readers read for a database or a path."""

from __future__ import annotations

import socket

import pytest

from offsets_lib.io.catalog import (
    CatalogUnreachable,
    NoTablesInDatabase,
    resolve_tables_root,
    tables_root,
)
from offsets_lib.io.metastore import check_metastore_ports, metastore_failure, shown_uris
from offsets_lib.io.storage import location
from tests.support.ports import free_ports


def test_a_path_is_read_as_given_without_a_session() -> None:
    assert resolve_tables_root("tables/", None) == "tables/"


@pytest.mark.parametrize(("output", "database"), [(None, None), ("tables/", "audit")])
def test_exactly_one_of_path_and_database(output: str | None, database: str | None) -> None:
    with pytest.raises(ValueError, match="one of them"):
        resolve_tables_root(output, database)


def test_the_tables_folder_of_a_database() -> None:
    locations = {"runs": "/w/audit.db/runs", "offsets": "/w/audit.db/offsets/"}
    assert tables_root("audit", locations) == "/w/audit.db"
    assert location("file:/w/audit.db/runs") == "/w/audit.db/runs"
    assert location("file:///w/audit.db") == "/w/audit.db"
    assert location("s3a://bucket/audit/runs") == "s3a://bucket/audit/runs"


def test_tables_not_side_by_side_or_none_are_refused() -> None:
    with pytest.raises(ValueError, match="not side by side"):
        tables_root("audit", {"runs": "/a/runs", "offsets": "/b/offsets"})
    with pytest.raises(ValueError, match="not side by side"):
        tables_root("audit", {"runs": "/a/runs", "offsets": "/a/other"})
    with pytest.raises(NoTablesInDatabase, match="no tables in database 'audit'"):
        tables_root("audit", {})


def test_a_warehouse_without_a_metastore_has_no_database(tmp_path) -> None:
    """The local catalog is read, never created: no JVM, nothing written."""
    with pytest.raises(NoTablesInDatabase, match="no database 'audit' in the catalog"):
        resolve_tables_root(None, "audit", warehouse=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_another_catalog_without_a_session_starts_none(no_spark: None) -> None:
    with pytest.raises(ValueError, match="pass the session"):
        resolve_tables_root(None, "audit")


def test_what_failed_in_hive_clients_own_words() -> None:
    """The first line of the MetaException that Hive's client throws (its stack trace after)."""
    refused = (
        "Could not connect to meta store using any of the URIs provided. Most recent failure:"
        " org.apache.thrift.transport.TTransportException: java.net.ConnectException:"
        " Connection refused\n\tat org.apache.thrift.transport.TSocket.open(TSocket.java:255)"
    )
    assert metastore_failure(refused, "5s") == "Connection refused"
    silent = (
        "Got exception: org.apache.thrift.transport.TTransportException"
        " java.net.SocketTimeoutException: Read timed out"
    )
    assert metastore_failure(silent, "30s") == (
        "no answer within 30s (hive.metastore.client.socket.timeout)"
    )
    assert metastore_failure("", "5s") == "no answer"


def test_metastore_uris_are_shown_without_a_password() -> None:
    assert shown_uris("thrift://a:9083, thrift://hive:secret@b:9083") == (
        "thrift://a:9083, thrift://b:9083"
    )


def test_metastore_ports_that_all_refuse_are_unreachable_before_a_jvm() -> None:
    """Every URI refused: one line naming them; one that takes the connection (a listener that
    never answers included) is left to the check through Hive's client."""
    first, second = free_ports(2)
    uris = f"thrift://127.0.0.1:{first}, thrift://127.0.0.1:{second}"
    with pytest.raises(CatalogUnreachable) as refused:
        check_metastore_ports(uris)
    assert str(refused.value) == (
        f"the catalog cannot be reached (metastore thrift://127.0.0.1:{first},"
        f" thrift://127.0.0.1:{second}): Connection refused"
    )
    with socket.create_server(("127.0.0.1", 0)) as silent:
        check_metastore_ports(f"{uris},thrift://127.0.0.1:{silent.getsockname()[1]}")
    check_metastore_ports(None)
    check_metastore_ports(f"{uris},thrift://127.0.0.1:port")  # left to Hive's client


def test_the_views_a_first_run_reports_leave_out_the_old_views_it_drops() -> None:
    """The catalog answer a first run builds (no second metastore query): an earlier release's
    view of an internal table (ours: it carries a digest) is dropped, a user's own view without
    one is kept, and each audit table's view carries the digest it was made with."""
    from offsets_lib.io.catalog import latest_view_digests, latest_view_sql

    existing = {"latest__kept": "0123456789abcdef", "latest_mine": None}
    expected = {
        "latest_mine": None,
        "latest_offsets": latest_view_sql("audit", "offsets")[1],
        "latest_runs": latest_view_sql("audit", "runs")[1],
    }
    assert latest_view_digests("audit", ["offsets", "runs"], existing) == expected
