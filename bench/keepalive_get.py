#!/usr/bin/env python3
"""GET /metrics COUNT times on one kept-alive connection to 127.0.0.1:PORT, reading each whole
response (by its Content-Length); with --save FILE, the last response is written to FILE as it
came, status line and headers included. Used by scripts/bench-side-by-side.sh (the floor's
responses) and bench/callgrind-scrapes.sh."""
import argparse
import socket


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--gzip", action="store_true")
    parser.add_argument("--save")
    args = parser.parse_args()
    request = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if args.gzip:
        request += b"Accept-Encoding: gzip\r\n"
    request += b"\r\n"
    connection = socket.create_connection(("127.0.0.1", args.port))
    pending = b""
    response = b""
    for _ in range(args.count):
        connection.sendall(request)
        while b"\r\n\r\n" not in pending:
            pending += connection.recv(65536)
        head, _, pending = pending.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(pending) < length:
            pending += connection.recv(65536)
        response = head + b"\r\n\r\n" + pending[:length]
        pending = pending[length:]
    if args.save:
        with open(args.save, "wb") as out:
            out.write(response)


if __name__ == "__main__":
    main()
