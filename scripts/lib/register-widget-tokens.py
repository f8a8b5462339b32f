"""Registers COUNT devices' widget tokens (devices w1 … wCOUNT, one widget of kind Score each)
through the API, over keep-alive connections from THREADS threads.

    python3 scripts/lib/register-widget-tokens.py COUNT BASE KEY [THREADS]
"""
import http.client
import json
import sys
import threading
import urllib.parse


def register(base, key, devices):
    url = urllib.parse.urlsplit(base)
    connection = http.client.HTTPConnection(url.hostname, url.port)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    for device in devices:
        body = json.dumps({
            "widgetPushToken": f"{device:08x}" + "0" * 56,
            "widgets": [{"kind": "Score", "family": "systemSmall"}],
        })
        connection.request("PUT", f"/v1/devices/w{device}/widget-push-token", body, headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise SystemExit(f"device w{device}: {response.status}")


def main():
    count, base, key = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    workers = [
        threading.Thread(target=register, args=(base, key, range(1 + lane, count + 1, threads)))
        for lane in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


main()
