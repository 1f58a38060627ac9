"""Names the synthetic world draws from: topic domains and entities, application and team names
for group ids, offset metadata strings and the classic assignors. Data only."""

from __future__ import annotations

DOMAINS = [
    "orders",
    "payments",
    "clicks",
    "inventory",
    "users",
    "shipments",
    "audit",
    "metrics",
    "logs",
    "events",
    "sessions",
    "invoices",
    "fraud",
    "search",
    "recs",
    "billing",
    "ledger",
    "pricing",
    "catalog",
    "ads",
]
ENTITIES = [
    "created",
    "updated",
    "deleted",
    "events",
    "state",
    "changes",
    "raw",
    "enriched",
    "dlq",
    "snapshots",
]
APPS = [
    "indexer",
    "aggregator",
    "reconciler",
    "notifier",
    "enricher",
    "archiver",
    "router",
    "scorer",
    "sink",
    "loader",
    "dedup",
    "validator",
    "exporter",
    "tracker",
]
TEAMS = ["core", "data", "risk", "growth", "platform", "ops", "search", "ml", "finance", "edge"]
NON_ASCII = ("-über", "-消费者", "-café", "-😀")
METADATA = (
    "",
    '{"app":"{app}","v":3}',
    "host=ip-10-0-3-17",
    "checkpoint:{n}",
    '{"ts":1699990000,"node":"n7"}',
    "ünïcode-meta",
)
ASSIGNORS = ("range", "cooperative-sticky", "roundrobin", "sticky")
