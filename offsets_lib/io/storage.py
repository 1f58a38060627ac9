"""Where tables and files live: local disk or an object store, named the same for every client.

Spark reaches S3 through Hadoop's S3A (`s3a://`, job/session.py configures it); pyarrow and
delta-rs run in the driver and in the Python workers of every executor and name the same
objects `s3://`. Every pyarrow and delta-rs access goes through this module, so one `--output`
URI means the same objects everywhere.

Every reader and writer names a location through `location` (and a table through `table_uri`):
a local one, given as a path or as ``file:/a`` / ``file:///a``, is an absolute plain path; any
other URI (``s3a://``, ``abfss://``, ``dbfs:/``...) stays as given.

Settings come from the standard AWS environment (or the profile the AWS SDKs read):
``AWS_ENDPOINT_URL`` (an S3-compatible server; path-style requests then), ``AWS_ACCESS_KEY_ID``
/ ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``. Nothing here reads or logs a secret: the clients
find the credentials themselves.

delta-rs commits to S3 with conditional puts (``If-None-Match: *`` on the next log entry), so two
writers can never both write version N of a table: the loser gets a commit conflict, never a
lost or overwritten commit. No DynamoDB lock table is needed (S3 and most S3-compatible servers
support conditional writes since 2024).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from offsets_lib.io.sources import InputNotReadable

if TYPE_CHECKING:
    from deltalake import DeltaTable
    from obstore.store import ObjectStore

_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}  # Hadoop's names of S3 -> pyarrow's and delta-rs'
DEFAULT_REGION = "us-east-1"  # what S3-compatible servers expect when no region is configured
# RFC 3986's scheme, at least two letters long: "C:" is a Windows drive, not a scheme
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
_LOCAL_HOSTS = ("", "localhost")  # file://localhost/a is file:///a


def scheme(uri: str) -> str:
    """The location's scheme in lower case: '' for a plain path, 'file' for ``file:/a`` and
    ``file:///a``, 'dbfs' for ``dbfs:/mnt/a`` (Hadoop's URIs need no ``//``)."""
    found = _SCHEME.match(uri)
    return found.group(1).lower() if found else ""


def local_path(uri: str) -> str | None:
    """The local path a location names, relative ones kept relative (``file:/a``,
    ``file:///a`` and ``file://localhost/a`` are ``/a``), or None for any other scheme
    (``dbfs:/``, ``s3a://``, ``abfss://``, ``file://host/a``...)."""
    kind = scheme(uri)
    if kind == "":
        return uri
    if kind != "file":
        return None
    rest = uri[len("file:") :]
    if not rest.startswith("//"):
        return rest
    host, _slash, path = rest[2:].partition("/")
    return f"/{path}" if host.lower() in _LOCAL_HOSTS else None


def is_local(uri: str) -> bool:
    """True when the location is on this machine's file system (a path or a ``file:`` URI)."""
    return local_path(uri) is not None


def location(uri: str) -> str:
    """The one name of a location for every reader and writer: a local one as an absolute plain
    path (``file:`` dropped, so the catalog's ``file:/w/t`` and ``--output /w/t`` compare
    equal), any other URI as given without a trailing slash."""
    local = local_path(uri)
    return os.path.abspath(local) if local is not None else uri.rstrip("/")


def table_uri(root: str, name: str) -> str:
    """Location of table (or folder) ``name`` under the tables' root ``root`` (`location`)."""
    return f"{location(root).rstrip('/')}/{name}"


def arrow_uri(uri: str) -> str:
    """A Spark/Hadoop file URI as pyarrow and delta-rs name it (s3a:// and s3n:// are s3://,
    Spark's file:/a/b is file:///a/b); a plain path unchanged."""
    kind = scheme(uri)
    if kind in _SCHEME_ALIASES:
        return _SCHEME_ALIASES[kind] + uri[len(kind) :]
    local = local_path(uri) if kind == "file" else None
    return f"file://{local}" if local is not None else uri


def endpoint_url() -> str | None:
    """The S3 endpoint other than AWS's (``AWS_ENDPOINT_URL_S3`` wins over
    ``AWS_ENDPOINT_URL``, as in the AWS SDKs), or None for AWS itself."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


def region() -> str:
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or DEFAULT_REGION


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system and path for a URI (local path, file://, s3a://, s3://, gs://...).

    pyarrow's S3 client reads the endpoint, region and credentials from the AWS environment;
    requests are path-style unless ``force_virtual_addressing``, which S3-compatible servers
    need.
    """
    target = arrow_uri(uri)
    if scheme(target) != "s3":
        return pafs.FileSystem.from_uri(target)
    bucket_and_key = target.partition("://")[2]
    endpoint = endpoint_url()
    fs = pafs.S3FileSystem(
        region=region(),
        endpoint_override=endpoint,
        scheme="http" if endpoint and endpoint.startswith("http://") else "https",
    )
    return fs, bucket_and_key.rstrip("/")


def object_store(
    uri: str, retry_config: Mapping[str, object] | None = None, **client_options: object
) -> ObjectStore:
    """obstore's client for the folder a URI names (S3 only here): the endpoint and region of
    this module, the credentials found by the client itself (environment or instance role)."""
    from obstore.store import from_url

    endpoint = endpoint_url()
    config: dict[str, object] = {"region": region()}
    if endpoint:
        config["endpoint"] = endpoint
    return from_url(
        arrow_uri(uri).rstrip("/"),
        config=config,
        client_options={"allow_http": bool(endpoint), **client_options},
        retry_config=retry_config,
    )


class StoreUnreachable(InputNotReadable):
    """An object store that cannot be read: no endpoint, no or wrong credentials, no bucket,
    access denied. `str(exc)` is one line naming the URI and the cause, never a secret."""


# S3's error codes (the <Code> of an error response) -> the cause a user can act on
_S3_CAUSES = {
    "NoSuchBucket": "the bucket does not exist",
    "InvalidAccessKeyId": "wrong credentials: the access key is not known to the store",
    "SignatureDoesNotMatch": "wrong credentials: the secret key does not match the access key",
    "InvalidToken": "wrong credentials: the session token is not valid",
    "ExpiredToken": "the credentials have expired",
    "AccessDenied": "access denied by the credentials' policy",
    "AllAccessDisabled": "access denied: all access to the bucket is disabled",
}
_S3_CODE = re.compile(r"<Code>([A-Za-z]+)</Code>")
_INSTANCE_METADATA = "169.254.169.254"  # where an SDK looks for an instance role's credentials
PROBE_TIMEOUT_S = 5  # one list request: a store that answers does so well within this


def write_parquet(table: pa.Table, path: str, fs: pafs.FileSystem) -> None:
    """Write `table` as one Snappy Parquet file at `path` on `fs`, with dictionary pages for
    its text columns only: ids, names and rule labels repeat, offsets and times mostly do not.
    Measured on the largest 10M task's offset table (56k rows, 26 columns): 28 ms and 1,193 KB
    against 41 ms and 1,397 KB with a dictionary tried for every column."""
    text = [
        f.name
        for f in table.schema
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    pq.write_table(table, path, filesystem=fs, compression="snappy", use_dictionary=text)


def check_reachable(*uris: str | None) -> None:
    """Raise `StoreUnreachable` unless every object-store URI among `uris` can be listed: one
    request each, no retry, within seconds, before a lock or Spark needs the store (whose
    clients would retry for minutes and print an SDK's warnings and tracebacks).

    Local paths, None and schemes other than S3's (checked by their own readers) pass.
    """
    for uri in dict.fromkeys(u for u in uris if u):
        if scheme(arrow_uri(uri)) != "s3":
            continue
        import obstore

        store = object_store(
            uri,
            retry_config={"max_retries": 0},
            connect_timeout=f"{PROBE_TIMEOUT_S // 2}s",
            timeout=f"{PROBE_TIMEOUT_S}s",
        )
        try:
            next(iter(obstore.list(store, chunk_size=1)), None)
        except Exception as exc:  # obstore's errors carry the HTTP exchange as text
            raise StoreUnreachable(f"{uri}: {store_fault(str(exc))}") from None


def store_fault(error: str) -> str:
    """The cause an object-store client's error text names, in a few words (no secret: the
    text's request details are dropped)."""
    code = _S3_CODE.search(error)
    if code:
        return _S3_CAUSES.get(code.group(1), f"the store answered {code.group(1)}")
    if _INSTANCE_METADATA in error or "credential" in error.lower():
        return (
            "no credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            " (or run with an instance role)"
        )
    status = re.search(r"status code: (\d{3})", error)
    if status:
        return f"the store answered HTTP {status.group(1)}"
    where = endpoint_url() or "the S3 endpoint"
    for text, why in (
        ("refused", "connection refused"),
        ("timed out", "no answer (timed out)"),
        ("dns error", "host name not found"),
        ("certificate", "TLS certificate not trusted"),
    ):
        if text in error.lower():
            return f"cannot reach {where}: {why}"
    return f"cannot reach {where}"


def delta_options(uri: str) -> dict[str, str]:
    """delta-rs storage options for a table URI (no secret: delta-rs reads the credentials from
    the environment itself). S3: conditional-put commits, plain HTTP for a local endpoint."""
    if scheme(arrow_uri(uri)) != "s3":
        return {}
    options = {"AWS_CONDITIONAL_PUT": "etag", "AWS_REGION": region()}
    endpoint = endpoint_url()
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
        options["AWS_ALLOW_HTTP"] = str(endpoint.startswith("http://")).lower()
    return options


def delta_table(uri: str) -> DeltaTable:
    """The Delta table at a URI, opened with the storage's options."""
    from deltalake import DeltaTable

    return DeltaTable(arrow_uri(uri), storage_options=delta_options(uri) or None)


def is_delta_table(uri: str) -> bool:
    from deltalake import DeltaTable

    return DeltaTable.is_deltatable(arrow_uri(uri), storage_options=delta_options(uri) or None)


# Reader features a plain Parquet scan of the add actions would get wrong (delta-rs refuses them
# in to_pyarrow_dataset too); the job's tables have none.
_UNREADABLE_FEATURES = frozenset({"columnMapping", "deletionVectors"})


def delta_dataset(uri: str) -> ds.Dataset:
    """The current files of a Delta table as a pyarrow dataset that prunes on partition values
    only, read through pyarrow's own file system.

    Why not ``DeltaTable.to_pyarrow_dataset()``: (1) it turns each file's min/max stats into the
    fragment's guarantee, and delta-rs 1.6 writes a missing min or max as ``col >= null``, so
    any filter on that column skips the file (a long group id, or a file of another writer,
    read 0 rows); here filters run on the rows (and on the Parquet footers' exact bounds), so
    no answer depends on Delta stats. (2) Its file system is a Python one (``PyFileSystem``):
    Arrow's I/O threads call back into Python, and a read still in flight when the interpreter
    exits takes the GIL during finalization, which ends the thread through C++ frames that
    cannot unwind: "terminate called without an active exception", exit 134 (3 to 10 in 100
    filtered scans here). pyarrow's native file systems need no GIL.
    """
    from deltalake.exceptions import DeltaProtocolError

    dt = delta_table(uri)
    protocol = dt.protocol()
    unreadable = _UNREADABLE_FEATURES & set(protocol.reader_features or ())
    if unreadable:
        raise DeltaProtocolError(f"{uri}: reader features {sorted(unreadable)} are not supported")
    schema = pa.schema(dt.schema().to_arrow())
    partition_columns = list(dt.metadata().partition_columns)
    actions = pa.table(dt.get_add_actions(flatten=True))
    fs, root = filesystem(uri)
    fmt = ds.ParquetFileFormat()
    fragments = []
    listed = ["path", *(f"partition.{c}" for c in partition_columns)]
    for action in actions.select(listed).to_pylist() if actions.num_rows else []:
        condition = ds.scalar(True)
        for column in partition_columns:
            value = action[f"partition.{column}"]
            field = ds.field(column)
            condition &= (
                field.is_null()
                if value is None
                else field == pa.scalar(value).cast(schema.field(column).type)
            )
        # relative to the table, or absolute (a URI) in shallow clones; either way a URI whose
        # characters the writer escaped ("%3A" in a Hive-escaped partition folder is "%253A")
        path = action["path"]
        where = filesystem(path)[1] if scheme(path) else f"{root}/{unquote(path)}"
        fragments.append(fmt.make_fragment(where, filesystem=fs, partition_expression=condition))
    return ds.FileSystemDataset(fragments, schema, fmt, fs)
