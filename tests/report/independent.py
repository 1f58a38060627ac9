"""The report's numbers computed independently: DuckDB SQL over the Delta tables as delta-rs
reads them (not the report's query layer), in the words of TABLES.md's queries."""

from __future__ import annotations

from pathlib import Path

import duckdb
from deltalake import DeltaTable

TABLES = (
    "runs", "offsets", "groups", "offset_decisions", "group_decisions", "lag", "metrics",
    "rejects", "load_failures", "unread_marker_offsets",
)  # fmt: skip


class Tables:
    """A DuckDB connection with every table of ``root`` registered under its name."""

    def __init__(self, root: str) -> None:
        self.db = duckdb.connect()
        self.db.execute("SET TimeZone = 'UTC'")
        for name in TABLES:
            if (Path(root) / name / "_delta_log").is_dir():
                self.db.register(name, DeltaTable(str(Path(root) / name)).to_pyarrow_table())

    def rows(self, sql: str, *params: object) -> list[tuple]:
        return self.db.execute(sql, list(params)).fetchall()

    def one(self, sql: str, *params: object) -> object:
        return self.rows(sql, *params)[0][0]

    def latest_run(self) -> str:
        return self.one(
            "SELECT run_id FROM runs WHERE status = 'succeeded' "
            "ORDER BY finished_at DESC, run_id DESC LIMIT 1"
        )

    def has(self, name: str) -> bool:
        return bool(self.rows("SELECT 1 FROM duckdb_views() WHERE view_name = ?", name))

    def count(self, table: str, run_id: str) -> int:
        return (
            self.one(f"SELECT count(*) FROM {table} WHERE run_id = ?", run_id)
            if self.has(table)
            else 0
        )

    def tiles(self, run: str) -> dict[str, int]:
        def expiring(hours: int) -> int:
            return self.one(
                "SELECT count(*) FROM offset_decisions WHERE run_id = ? AND NOT expired "
                f"AND expires_at <= as_of + INTERVAL {hours} HOUR",
                run,
            )

        return {
            "expiring_1h": expiring(1),
            "expiring_24h": expiring(24),
            "expiring_7d": expiring(24 * 7),
            "groups_deleted_24h": self.one(
                "SELECT count(*) FROM group_decisions WHERE run_id = ? "
                "AND (deleted OR deletes_at <= as_of + INTERVAL 24 HOUR)",
                run,
            ),
            "data_loss_groups": len(self.data_loss(run)),
            "stale_offsets": self.one(
                "SELECT count(*) FROM offset_decisions d JOIN groups g "
                "USING (run_id, offsets_partition, group_id) WHERE d.run_id = ? "
                "AND d.rule IN ('EXP-STABLE-UNSUBSCRIBED', 'EXP-MODERN-COMMIT-TS') "
                "AND g.state <> 'Empty' AND g.subscribed_topics IS NOT NULL "
                "AND NOT list_contains(g.subscribed_topics, d.topic)",
                run,
            ),
            "rejects": self.one("SELECT records_rejected FROM runs WHERE run_id = ?", run),
            "load_failures": self.count("load_failures", run),
            "unread_markers": self.count("unread_marker_offsets", run),
        }

    def data_loss(self, run: str, time_format: str = "%Y-%m-%d %H:%M:%S") -> list[tuple]:
        """(group, partitions, lag, first expiry as text, rule of the first expiry)."""
        if not self.has("lag"):
            return []
        return self.rows(
            """
            WITH risk AS (
              SELECT d.group_id, d.topic, d.partition, d.expires_at, d.rule, l.lag
              FROM offset_decisions d JOIN lag l USING (run_id, group_id, topic, partition)
              WHERE d.run_id = ? AND NOT d.expired
                AND d.expires_at <= d.as_of + INTERVAL 24 HOUR AND l.lag > 0
            )
            SELECT group_id, count(*), sum(lag)::BIGINT,
                   strftime(min(expires_at), ?),
                   arg_min(rule, (expires_at, topic, partition))
            FROM risk GROUP BY group_id
            ORDER BY min(expires_at), sum(lag) DESC, group_id
            """,
            run,
            time_format,
        )

    def expiring_by_rule(self, run: str) -> dict[str, int]:
        return dict(
            self.rows(
                "SELECT rule, count(*) FROM offset_decisions WHERE run_id = ? AND NOT expired "
                "AND expires_at <= as_of + INTERVAL 7 DAY GROUP BY rule",
                run,
            )
        )

    def type_state(self, run: str) -> dict[tuple[str, str], int]:
        rows = self.rows(
            "SELECT group_type, state, count(*) FROM groups WHERE run_id = ? GROUP BY ALL", run
        )
        return {(t, s): n for t, s, n in rows}

    def top_total_lag(self, run: str, n: int = 15) -> list[tuple]:
        return self.rows(
            "SELECT group_id, sum(lag)::BIGINT AS total, max(lag) AS worst FROM lag "
            "WHERE run_id = ? AND lag IS NOT NULL GROUP BY group_id "
            "ORDER BY total DESC, worst DESC, group_id LIMIT ?",
            run,
            n,
        )

    def commits_per_partition(self, run: str) -> list[tuple]:
        return self.rows(
            "SELECT offsets_partition, sum(offset_commits)::BIGINT FROM metrics WHERE run_id = ? "
            "GROUP BY 1 ORDER BY 1",
            run,
        )

    def meters_per_hour(self, run: str) -> list[tuple]:
        return self.rows(
            "SELECT strftime(hour, '%Y-%m-%d %H:%M:%S'), sum(offset_commits)::BIGINT, "
            "sum(groups_deleted)::BIGINT FROM metrics WHERE run_id = ? GROUP BY hour ORDER BY hour",
            run,
        )

    def group_lag(self, run: str, group: str) -> int | None:
        return self.one(
            "SELECT sum(lag)::BIGINT FROM lag WHERE run_id = ? AND group_id = ?", run, group
        )

    def lag_across_runs(self, group: str) -> list[tuple]:
        return self.rows(
            "SELECT r.run_id, sum(l.lag)::BIGINT FROM lag l JOIN runs r USING (run_id) "
            "WHERE l.group_id = ? AND r.status = 'succeeded' GROUP BY r.run_id, r.as_of "
            "ORDER BY r.as_of",
            group,
        )
