#!/usr/bin/env python3
"""A stand-in OpenTelemetry collector for benchmarks: answers every OTLP/HTTP export with STATUS
(200 by default; 503 plays a collector that refuses) and counts the bytes and requests it got
(printed on SIGTERM). Usage: otlp-sink.py PORT [STATUS]"""
import http.server
import signal
import sys
import threading

received = {"requests": 0, "bytes": 0}
STATUS = int(sys.argv[2]) if len(sys.argv) > 2 else 200
lock = threading.Lock()


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        with lock:
            received["requests"] += 1
            received["bytes"] += len(body)
        self.send_response(STATUS)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def stop(*_):
    print(f"otlp-sink: {received['requests']} exports, {received['bytes']} bytes", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
