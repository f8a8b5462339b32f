#!/usr/bin/env python3
"""The latency of updates while the server retires partitions, beside a load (for
scripts/benchmark-soak.sh). STREAMS probes (4 by default), each on a keep-alive connection of its
own and staggered, send one update every INTERVAL_MS to an activity of their own (a new one each
50 s, before the lifetime of the scaled soak ends it); and it polls pg_stat_activity every 50 ms
for the statements that change the log's partitions: the archive's COPY, the detach, the removal
of projection rows, the drops (of the indexes and the table), and the creation of partitions ahead (which attaches them). When
stopped (SIGTERM), prints p50 and p99 of the updates sent while a detach or drop ran, while the
other retirement steps ran, while partitions were created, and otherwise; for the groups of
fewer than 2,000 updates, also a 90 % interval of the p99 (bootstrap), since the p99 of a few
hundred updates rests on their few slowest.

    latency-probe.py BASE_URL KEY DATABASE_URL [INTERVAL_MS] [STREAMS]
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from update_probe import UpdateProbe, summary  # noqa: E402

base, key, database = sys.argv[1], sys.argv[2], sys.argv[3]
interval = float(sys.argv[4] if len(sys.argv) > 4 else 20) / 1000
streams = int(sys.argv[5] if len(sys.argv) > 5 else 4)
stopped = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopped.set())

# Which step ran at each poll: (time, step) with step 3 (partitions created), 2 (detach or drop),
# 1 (archive or removal of projection rows) or 0 (none).
STEPS = """
SELECT coalesce(max(CASE WHEN query ~ 'liveline_create_partitions' THEN 3
                         WHEN query ~ '^ALTER TABLE .* (DETACH PARTITION|DROP CONSTRAINT)'
                              OR query ~ '^DROP (TABLE|INDEX)' THEN 2
                         WHEN query ~ '^\\s*COPY \\(' OR query ~ 'DELETE FROM activities a USING' THEN 1 END), 0)
FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()
"""
polls = []


def poll():
    with subprocess.Popen(["psql", database, "-Atq"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as psql:
        while not stopped.is_set():
            psql.stdin.write(STEPS.strip() + ";\n")
            psql.stdin.flush()
            polls.append((time.monotonic(), int(psql.stdout.readline().strip() or 0)))
            time.sleep(0.05)
        psql.stdin.close()


threading.Thread(target=poll, daemon=True).start()
probe = UpdateProbe(base, key, interval, streams)
probe.start()
while not stopped.is_set():
    stopped.wait(1)
probe.stop()


def step_at(moment):
    """The retirement step that ran at `moment`: that of the polls just before and after it."""
    before = [step for at, step in polls if at <= moment][-1:] or [0]
    after = [step for at, step in polls if at >= moment][:1] or [0]
    return max(before[0], after[0])


groups = {0: [], 1: [], 2: [], 3: []}
for started, seconds, ok in probe.samples:
    groups[step_at(started)].append(seconds)
print(summary("probe, while a partition was detached or dropped", groups[2]))
print(summary("probe, while a partition was archived or its activities removed", groups[1]))
print(summary("probe, while partitions were created", groups[3]))
print(summary("probe, otherwise", groups[0]))
print(f"probe: {probe.failures()} updates not answered 200")
