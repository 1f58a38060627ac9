"""Kafka __consumer_offsets audit: codec, compaction, group state and broker decisions."""
