#!/usr/bin/env python3
"""Opens N keep-alive connections to HOST:PORT, sends one GET on each and reads its answer,
then holds them all open and prints how many are open, until stdin closes.

bench.sh reads the server's RSS while they are held:
    python3 Benchmarks/load/idle-connections.py 127.0.0.1 8080 10000 /healthz
"""
import selectors
import socket
import sys

host, port, count, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
selector = selectors.DefaultSelector()
sockets = []
pending = {}
for _ in range(count):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex((host, port))
    selector.register(s, selectors.EVENT_WRITE)
    sockets.append(s)
    pending[s] = b""
answered = 0
while pending:
    events = selector.select(timeout=10)
    if not events:
        break
    for key, mask in events:
        s = key.fileobj
        if mask & selectors.EVENT_WRITE:
            try:
                s.send(request)
            except OSError:
                pending.pop(s, None)
                selector.unregister(s)
                continue
            selector.modify(s, selectors.EVENT_READ)
        else:
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                pending.pop(s, None)
                selector.unregister(s)
                continue
            pending[s] += data
            if b"\r\n\r\n" in pending[s]:
                answered += 1
                pending.pop(s)
                selector.unregister(s)
print(answered, flush=True)
sys.stdin.read()
