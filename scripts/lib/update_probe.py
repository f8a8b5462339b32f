"""Shared by the latency probes of the benchmarks (imported, not run): updates sent on a few
keep-alive connections at a steady pace beside a load, and the p50 and p99 of groups of them.

Each stream sends one update every `interval` seconds to an activity of its own (a new one each
50 s, before the scaled soak's lifetime ends it); the streams are staggered over the interval.
"""
import http.client
import json
import random
import threading
import time
from urllib.parse import urlparse


class UpdateProbe:
    def __init__(self, base, key, interval=0.02, streams=4):
        self.url = urlparse(base)
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self.interval = interval
        self.streams = streams
        self.stopped = threading.Event()
        self.samples = []  # (monotonic start, seconds, answered 200), from every stream
        self.threads = [threading.Thread(target=self._run, args=(stream,), daemon=True) for stream in range(streams)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.stopped.set()
        for thread in self.threads:
            thread.join()

    def _run(self, stream):
        time.sleep(stream * self.interval / self.streams)
        connection = http.client.HTTPConnection(self.url.hostname, self.url.port)
        activity, born, serial = None, 0.0, 0
        while not self.stopped.is_set():
            now = time.monotonic()
            if activity is None or now - born > 50:
                serial += 1
                activity, born = f"probe-{int(time.time())}-{stream}-{serial}", now
                body = {"activityId": activity, "activityType": "probe", "contentState": {"n": 0}}
                connection.request("POST", "/v1/activities", json.dumps(body), self.headers)
                connection.getresponse().read()
            started = time.monotonic()
            body = {"contentState": {"n": serial}, "priority": 5}
            connection.request("POST", f"/v1/activities/{activity}/updates", json.dumps(body), self.headers)
            response = connection.getresponse()
            response.read()
            self.samples.append((started, time.monotonic() - started, response.status == 200))
            time.sleep(max(0.0, self.interval - (time.monotonic() - started)))

    def failures(self):
        return sum(1 for *_, ok in self.samples if not ok)


def p99(ordered):
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000


def p99_interval(latencies, rounds=1000):
    """A 90 % interval of the p99 of `latencies` (bootstrap)."""
    resampled = sorted(p99(sorted(random.choices(latencies, k=len(latencies)))) for _ in range(rounds))
    return resampled[rounds // 20], resampled[rounds - rounds // 20 - 1]


def summary(name, latencies, interval_below=2000):
    """p50 and p99 of a group; for a group of fewer than `interval_below` updates, also a 90 %
    interval of the p99, since the p99 of a few hundred updates rests on their few slowest."""
    if not latencies:
        return f"{name}: no updates"
    ordered = sorted(latencies)
    line = f"{name}: {len(ordered)} updates, p50 {ordered[len(ordered) // 2] * 1000:.1f} ms, p99 {p99(ordered):.1f} ms"
    if len(ordered) < interval_below:
        low, high = p99_interval(ordered)
        line += f" (90 % interval {low:.1f}–{high:.1f})"
    return line
