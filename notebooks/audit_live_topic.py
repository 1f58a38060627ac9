# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Audit the live `__consumer_offsets` topic from a notebook
#
# `offsets_lib.run(spark, **options)` is `offsets run` inside the session the notebook has: it
# takes the output's lock, reads the topic from the stored checkpoint to its end, audits, and
# publishes the Delta tables; it never creates, stops or retunes the session. Its keywords are
# `RunOptions`' fields (`offsets run --help` names the same options). On Databricks or another
# platform `spark` exists already; the cell below makes a local one only where none runs.

# %% tags=["parameters"]
bootstrap_servers = "localhost:9092"  # the Kafka cluster (more client settings: kafka_options)
topic = "__consumer_offsets"
output = "offsets-audit"  # root folder (or URI) of the Delta tables
as_of = "now"  # the evaluation time: now | latest | ISO-8601 | epoch ms
run_id = ""  # "" = run-<UTC time>

# %%
# ruff: noqa: E402  (a notebook: the imports follow the parameters cell)
import offsets_lib
from offsets_lib.io import sink
from offsets_lib.job import session

spark = session.get_or_create()  # the running session as it is, else a local one
spark.sql("SELECT 1").collect()  # Delta's extension sets two settings at a first query
settings_before = dict(spark.conf.getAll)

# %%
report = offsets_lib.run(
    spark,
    source="kafka",
    kafka_options={"bootstrap.servers": bootstrap_servers},
    topic=topic,
    output=output,
    as_of=as_of,
    **({"run_id": run_id} if run_id else {}),
)
print(report.status, report.run_id, f"{report.records_read} records read")

# %% [markdown]
# The run's offsets, read back from its Delta table (delta-rs: no Spark job).

# %%
offsets = sink.read_table(output, "offsets", run_id=report.run_id).to_pandas()
offsets.sort_values(["group_id", "topic", "partition"]).head(20)

# %%
assert dict(spark.conf.getAll) == settings_before, "the session's settings changed"
