#!/usr/bin/env python3
"""An OTLP/HTTP collector that keeps nothing, for the trace benchmarks: it answers every export
(POST /v1/traces, protobuf or JSON) with an empty success, as a collector does, and counts the
exports and their bytes. GET /count answers "EXPORTS BYTES"; the counts are kept while it runs.
    python3 scripts/lib/otlp-sink.py PORT"""
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()
counts = {"exports": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with lock:
            counts["exports"] += 1
            counts["bytes"] += len(body)
        json = self.headers.get("Content-Type", "").startswith("application/json")
        answer = b"{}" if json else b""
        self.send_response(200)
        self.send_header("Content-Type", "application/json" if json else "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def do_GET(self):
        with lock:
            answer = f"{counts['exports']} {counts['bytes']}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *arguments):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
