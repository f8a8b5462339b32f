#!/usr/bin/env python3
"""The latency of updates while the server retires partitions, beside a load (for
scripts/benchmark-soak.sh). STREAMS probes (4 by default), each on a keep-alive connection of its
own and staggered, send one update every INTERVAL_MS to an activity of their own (a new one each
50 s, before the lifetime of the scaled soak ends it).

Meanwhile it reads pg_stat_activity every 50 ms for the statements that change the log's
partitions: the detach and the drops (of the indexes and the table), the archive's COPY and the
removal of projection rows, and the creation of partitions ahead (which attaches them). Each
statement's time is exact: PostgreSQL keeps a session's last statement, its start
(`query_start`) and, once it is done, its end (`state_change`) until the session's next one, and
retirement rests at least 250 ms after each change to a partition's table, so every detach and
drop is read done. A statement's window runs from its start to TAIL_MS (250 by default, the
rest retirement keeps around each change) after its end.

When stopped (SIGTERM), prints p50 and p99 of the updates sent in the windows of a detach or
drop, of the other retirement steps, of the creation of partitions, and of none; for the groups
of fewer than 2,000 updates, also a 90 % interval of the p99 (bootstrap), since the p99 of a few
hundred updates rests on their few slowest. An update in windows of several kinds counts in the
first kind of that list.

    latency-probe.py BASE_URL KEY DATABASE_URL [INTERVAL_MS] [STREAMS] [TAIL_MS]
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
tail = float(sys.argv[6] if len(sys.argv) > 6 else 250) / 1000
stopped = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopped.set())

# The sessions whose statement (running, or last run) changes the partitions: "pid|kind|start|end"
# lines, times in seconds since the epoch; a running statement ends, so far, now.
KINDS = """
SELECT pid, kind, extract(epoch FROM query_start),
       extract(epoch FROM CASE WHEN state = 'active' THEN clock_timestamp() ELSE state_change END)
FROM (SELECT *, CASE WHEN query ~ '^ALTER TABLE .* (DETACH PARTITION|DROP CONSTRAINT)'
                          OR query ~ '^DROP (TABLE|INDEX)' THEN 'change'
                     WHEN query ~ '^\\s*COPY \\(' OR query ~ 'DELETE FROM activities a USING' THEN 'other'
                     WHEN query ~ 'liveline_create_partitions' THEN 'creation' END AS kind
      FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query_start IS NOT NULL) s
WHERE kind IS NOT NULL
"""
statements = {}  # (pid, start) → [kind, start, end]


def poll():
    with subprocess.Popen(["psql", database, "-Atq"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as psql:
        while not stopped.is_set():
            psql.stdin.write(KINDS.strip() + ";\n\\echo --done--\n")
            psql.stdin.flush()
            while (line := psql.stdout.readline()) not in ("--done--\n", ""):
                pid, kind, start, end = line.strip().split("|")
                statement = statements.setdefault((pid, start), [kind, float(start), float(end)])
                statement[2] = max(statement[2], float(end))
            time.sleep(0.05)
        psql.stdin.close()


threading.Thread(target=poll, daemon=True).start()
# The probe's times are monotonic, PostgreSQL's are since the epoch.
epoch_offset = time.time() - time.monotonic()
probe = UpdateProbe(base, key, interval, streams)
probe.start()
while not stopped.is_set():
    stopped.wait(1)
probe.stop()

ORDER = ["change", "other", "creation"]
windows = sorted((start, end + tail, ORDER.index(kind)) for kind, start, end in statements.values())


def kind_at(moment):
    """The first kind, in ORDER, of the windows `moment` falls in; None outside every window."""
    kinds = [kind for start, end, kind in windows if start <= moment <= end]
    return ORDER[min(kinds)] if kinds else None


groups = {kind: [] for kind in ORDER + [None]}
for started, seconds, ok in probe.samples:
    groups[kind_at(started + epoch_offset)].append(seconds)
counts = {kind: sum(1 for k, *_ in statements.values() if k == kind) for kind in ORDER}
print(
    f"probe windows: each statement from its start to {tail * 1000:.0f} ms after its end; read "
    f"{counts['change']} detaches and drops, {counts['other']} archive and removal statements, "
    f"{counts['creation']} creations"
)
print(summary("probe, while a partition was detached or dropped", groups["change"]))
print(summary("probe, while a partition was archived or its activities removed", groups["other"]))
print(summary("probe, while partitions were created", groups["creation"]))
print(summary("probe, otherwise", groups[None]))
print(f"probe: {probe.failures()} updates not answered 200")
