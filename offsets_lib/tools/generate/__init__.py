"""Synthetic `__consumer_offsets` dumps (`offsets generate`), deterministic by seed.

`generate_dump(out, groups=..., records=..., seed=...)` writes Parquet files with the Spark
Kafka-source schema plus the batch-metadata columns (shared/spec/contract.md):

    key binary, value binary (null = tombstone), topic string ("__consumer_offsets"),
    partition int32, offset int64, timestamp timestamp[us, UTC], timestampType int32 (0),
    producer_id int64, producer_epoch int32, is_transactional bool, is_control bool

Files are `part-NNNNN.parquet` (at most `CHUNK_ROWS` rows each, `ROW_GROUP_ROWS`-row row groups,
snappy), rows sorted by (partition, offset) inside a file, files in time order. The same
arguments give byte-identical files (with the same pyarrow version); stale `part-*.parquet`
files of an earlier run in `out` are removed. `_generate.json` records the parameters.

Parameters
----------
groups      number of groups in the model (every group type, shares set by the profile)
records     exact number of rows written (data records + control markers + corrupt records);
            must be >= groups, and large enough for every group's first records
seed        everything random derives from it (numpy PCG64 via SeedSequence per purpose)
partitions  partitions of `__consumer_offsets`; group -> abs(java String.hashCode) % partitions
profile     "realistic" (default) or "bench", see `PROFILES`
days        length of the time window; it always ends at `END_MS` (seed-independent), so the
            newest record is at most `END_MS` and `--as-of latest` is close to it

Data model (both profiles; shares are of `records` unless said otherwise)
-------------------------------------------------------------------------
- Topics: a pool of ~0.15 x groups names (20..3000), 3-24 partitions each, a topic id each.
- Groups (realistic shares of `groups`): classic consumer groups 62% (GroupMetadata v3, members
  with real ConsumerProtocolSubscription v0-v3 / Assignment bytes), simple groups 12% (offsets
  only), Connect worker groups 4% (protocolType "connect", opaque member bytes, no offsets),
  KIP-848 consumer groups 16% (records 3, 5, 6, 7, 8; some use regex subscriptions with records 16;
  some carry AssignmentEpochs / AssignmentTimestamp / MetadataHash tags and ClassicMemberMetadata),
  streams groups 3% (17, 19, 20, 21, 22, 23), share groups 3% (10-15). Each group has 1 + Poisson(4)
  topics, an activity weight (lognormal), and lives on its hashed partition. A few group ids
  are non-ASCII (incl. a supplementary character) so hashing over UTF-16 units matters.
- Offset commits (the bulk, built with numpy/pyarrow, no Python per record): keys are drawn by
  group weight, then uniformly over the group's (topic, partition) keys; timestamps follow a
  daily cycle; committed offsets grow per key; leaderEpoch per key (-1 for old clients).
  Values: v3 by default, v1 with an explicit expireTimestamp for groups whose clients set a
  retention (~15% of commits), v4 (with topicId tag 90% of the time) on ~30% of the
  partitions after a broker upgrade at 60% of the window, ~0.2% legacy v0/v2; metadata ""
  90% of the time.
- Group life: rebalances rewrite GroupMetadata with new generations (member churn); KIP-848,
  streams and share groups bump epochs (3/6/8, 17/20/22, 11/12/14) with member churn (tombstones
  8, 7, 5 of a leaving member); ~10% of groups drop a topic (new subscriptions; its offsets become
  unsubscribed, some are then deleted with OffsetDelete tombstones); ~8% of groups go Empty
  (some early enough that their offsets are past a 7-day retention) and ~60% of those are
  deleted (offset tombstones, then the group tombstones); ~15% of groups appear mid-window.
- Tombstones: ~2% of records in total (deletions above plus random offset deletions).
- Transactions (realistic): streams groups and ~5% of classic groups commit through
  transactional producers: 1-6 offset records per transaction (producer_id, producer_epoch,
  is_transactional) then a COMMIT (96%) or ABORT (4%) control record on the same partition;
  the last transaction of ~25% of those producers has no marker (pending). Other rows have
  producer_id -1, producer_epoch -1, is_transactional false, is_control false.
- Rare records (realistic): ~0.05% type-0 (legacy) offset keys with value v0, and ~0.05% corrupt
  records (truncated values, unknown record type, unknown value version, invalid UTF-8
  metadata), each of which fails `wire.decode_record`; every other data record decodes.
- Offsets: each partition starts at a random base; offsets strictly increase with occasional
  gaps (as left by the log cleaner); timestamps are non-decreasing per partition.

The "bench" profile (`make bench`'s dumps) keeps the same machinery with the benchmark's mix:
classic groups 85%, KIP-848 groups 12%, simple groups 3%; ~1% group metadata, ~3% KIP-848
records, ~2% tombstones, v3/v1 values only, no transactions, no corrupt records. With 20k
groups it has ~1.2M offset-commit keys (about 1.1-1.2M distinct keys are hit at 10M records).
"""

from __future__ import annotations

from offsets_lib.tools.generate.chunks import SCHEMA
from offsets_lib.tools.generate.encoding import (
    Template,
    assignment,
    fill_column,
    group_metadata,
    subscription,
    template,
)
from offsets_lib.tools.generate.model import (
    END_MS,
    KINDS,
    PROFILES,
    GenerateError,
    Profile,
    java_hash,
    partition_for,
)
from offsets_lib.tools.generate.output import END_OFFSETS_FILE, GenerateReport, generate_dump

__all__ = [
    "END_MS",
    "END_OFFSETS_FILE",
    "KINDS",
    "PROFILES",
    "SCHEMA",
    "GenerateError",
    "GenerateReport",
    "Profile",
    "Template",
    "assignment",
    "fill_column",
    "generate_dump",
    "group_metadata",
    "java_hash",
    "partition_for",
    "subscription",
    "template",
]
