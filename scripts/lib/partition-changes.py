#!/usr/bin/env python3
"""The latency of updates while a partition of the log is attached, detached and dropped, beside
a load (for scripts/benchmark-partition-changes.sh). A probe (scripts/lib/update_probe.py) sends
updates on STREAMS connections, one every INTERVAL_MS each; meanwhile, every PERIOD seconds, a
cycle changes `events`' partitions as retirement and creation do:

  at 0 s    a table like `events` is made and filled with ROWS of the log's newest rows (placed
            in a range of times far ahead, so no append and no reader of the tail meets them),
            then attached as a partition for that range;
  at 30 %   the partition is detached concurrently (as retirement detaches);
  at 55 %   the detached table is dropped as retirement drops it: its indexes one at a time,
            largest first, each after a rest of REST_MS, then the table (or, with DROP_AT_ONCE=1 in
            the environment, the table with its indexes in one statement);
  at 80 %   nothing is done: the same window measured with no change, to compare with.

Each change's window runs from the statement's start to WINDOW_MS after it ends. Prints, for the
updates sent in each kind of window, p50, p99 and a 90 % interval of the p99, and the p99 of all
the updates outside every window and every fill.

BALLAST empty partitions are attached first, a day past the cycles' (so that `events` has about
as many partitions as in the soak, where each change makes every session plan again over all of
them), and dropped at the end.

    partition-changes.py BASE_URL KEY DATABASE_URL CYCLES ROWS BALLAST [PERIOD] [WINDOW_MS] [INTERVAL_MS] [STREAMS]
"""
import os
import subprocess
import sys
import time
from datetime import datetime, timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from update_probe import UpdateProbe, summary  # noqa: E402

base, key, database = sys.argv[1], sys.argv[2], sys.argv[3]
cycles, rows, ballast = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
period = float(sys.argv[7] if len(sys.argv) > 7 else 12)
window = float(sys.argv[8] if len(sys.argv) > 8 else 500) / 1000
interval = float(sys.argv[9] if len(sys.argv) > 9 else 20) / 1000
streams = int(sys.argv[10] if len(sys.argv) > 10 else 4)
rest = float(os.environ.get("REST_MS", 250)) / 1000
drop_at_once = os.environ.get("DROP_AT_ONCE") == "1"


class Session:
    """One psql session; `run` sends a statement and returns its output once it has finished."""

    def __init__(self):
        self.psql = subprocess.Popen(
            ["psql", database, "-Atq", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, statement):
        self.psql.stdin.write(statement.strip() + ";\n\\echo --done--\n")
        self.psql.stdin.flush()
        output = []
        while (line := self.psql.stdout.readline()) != "--done--\n":
            if not line:
                raise SystemExit(f"psql stopped at: {statement}")
            output.append(line)
        return "".join(output).strip()

    def close(self):
        self.psql.stdin.close()
        self.psql.wait()


# The cycles' partitions lie past every partition the server makes, a minute each.
FAR = datetime(2200, 1, 1)
session = Session()
marks = []  # (kind, started, ended)


def timed(kind, statement):
    started = time.monotonic()
    session.run(statement)
    marks.append((kind, started, time.monotonic()))


def sleep_until(moment):
    time.sleep(max(0.0, moment - time.monotonic()))


def minute_range(minute):
    """The bounds of the minute `minute` minutes past FAR, as PostgreSQL reads them."""
    return tuple(f"{FAR + timedelta(minutes=m):%Y-%m-%d %H:%M:%S}+00" for m in (minute, minute + 1))


ballast_tables = [f"bench_partition_ballast_{os.getpid()}_{n}" for n in range(ballast)]
for n, table in enumerate(ballast_tables):
    low, high = minute_range(24 * 60 + n)
    session.run(f"CREATE TABLE {table} PARTITION OF events FOR VALUES FROM ('{low}') TO ('{high}')")
partitions = session.run("SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass")
probe = UpdateProbe(base, key, interval, streams)
probe.start()
time.sleep(2)
for cycle in range(cycles):
    begun = time.monotonic()
    table = f"bench_partition_change_{os.getpid()}_{cycle}"
    start, end = minute_range(cycle)
    started = time.monotonic()
    session.run(
        f"""
        CREATE TABLE {table} (LIKE events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);
        INSERT INTO {table} SELECT position, transaction_id, app_id, activity_id, version, type, data, caused_by,
                occurred_at, recorded_at, '{start}'
            FROM events WHERE stream_recorded_at < '2200-01-01' ORDER BY position DESC LIMIT {rows};
        ALTER TABLE {table} ADD CONSTRAINT {table}_bound
            CHECK (stream_recorded_at >= '{start}' AND stream_recorded_at < '{end}')
        """
    )
    marks.append(("fill", started, time.monotonic()))
    sleep_until(begun + 0.1 * period)
    timed(
        "attach",
        f"ALTER TABLE events ATTACH PARTITION {table} FOR VALUES FROM ('{start}') TO ('{end}')",
    )
    sleep_until(begun + 0.3 * period)
    timed("detach", f"ALTER TABLE events DETACH PARTITION {table} CONCURRENTLY")
    sleep_until(begun + 0.55 * period)
    if not drop_at_once:
        # As retirement drops: the indexes one at a time, largest first, then the table.
        indexes = session.run(
            f"""SELECT coalesce(string_agg(CASE WHEN c.conname IS NOT NULL
                    THEN format('ALTER TABLE %I DROP CONSTRAINT %I', '{table}', c.conname)
                    ELSE format('DROP INDEX %I', x.relname) END, E'\\n' ORDER BY pg_relation_size(i.indexrelid) DESC), '')
                FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
                LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
                WHERE i.indrelid = '{table}'::regclass"""
        )
        for statement in indexes.splitlines():
            timed("drop", statement)
            time.sleep(rest)
    timed("drop", f"DROP TABLE {table}")
    sleep_until(begun + 0.8 * period)
    timed("nothing", "SELECT 1")
    sleep_until(begun + period)
probe.stop()
for table in ballast_tables:
    session.run(f"DROP TABLE {table}")
session.close()


def kind_at(moment):
    for kind, started, ended in marks:
        if started <= moment <= ended + window:
            return kind
    return "otherwise"


groups = {}
for started, seconds, ok in probe.samples:
    groups.setdefault(kind_at(started), []).append(seconds)
print(
    f"{cycles} cycles of {period:g} s, {rows} rows a partition, {partitions} partitions of events "
    f"({ballast} of them empty), windows to {window * 1000:.0f} ms after each change; "
    + ("each table dropped with its indexes at once" if drop_at_once else "indexes dropped one at a time, then the table")
)
for kind, name in [
    ("detach", "while a partition was detached"),
    ("drop", "while a detached partition was dropped"),
    ("attach", "while a partition was attached"),
    ("nothing", "in as long a window with no change"),
    ("fill", "while a table was filled (no change yet)"),
    ("otherwise", "otherwise"),
]:
    print(summary(f"probe, {name}", groups.get(kind, []), interval_below=10**9))
took = {kind: sorted(ended - started for k, started, ended in marks if k == kind) for kind in ("attach", "detach", "drop")}
print("statements, median ms: " + ", ".join(f"{k} {1000 * v[len(v) // 2]:.0f}" for k, v in took.items() if v))
print(f"probe: {probe.failures()} updates not answered 200")
