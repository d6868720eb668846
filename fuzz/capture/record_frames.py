#!/usr/bin/env python3
"""A recording TCP proxy for RocketMQ remoting frames: how the fuzz seeds were captured (docs/fuzzing.md).

    record_frames.py LISTEN_PORT UPSTREAM_HOST:UPSTREAM_PORT OUT_DIR

Real peers (brokers, mqadmin) are pointed at 127.0.0.1:LISTEN_PORT; every byte is forwarded unchanged to the name
server at UPSTREAM and back. Each complete frame (length(4) | headerWord(4) | header | body) is also written to
OUT_DIR as `<conn>-<seq>-<c2s|s2c>.frame`. Runs until killed. Standard library only.
"""

import os
import socket
import struct
import sys
import threading

counter_lock = threading.Lock()
counter = [0]


def next_seq():
    with counter_lock:
        counter[0] += 1
        return counter[0]


def pump(src, dst, out_dir, conn_id, direction):
    buf = b""
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
            buf += data
            # Split whole frames off the front; a partial frame waits for more bytes.
            while len(buf) >= 4:
                (length,) = struct.unpack(">I", buf[:4])
                if len(buf) < 4 + length:
                    break
                frame, buf = buf[: 4 + length], buf[4 + length :]
                name = "%03d-%05d-%s.frame" % (conn_id, next_seq(), direction)
                with open(os.path.join(out_dir, name), "wb") as f:
                    f.write(frame)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def main():
    listen_port, upstream, out_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    host, port = upstream.rsplit(":", 1)
    os.makedirs(out_dir, exist_ok=True)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(64)
    conn_id = 0
    while True:
        client, _ = server.accept()
        conn_id += 1
        up = socket.create_connection((host, int(port)))
        for src, dst, d in ((client, up, "c2s"), (up, client, "s2c")):
            threading.Thread(target=pump, args=(src, dst, out_dir, conn_id, d), daemon=True).start()


if __name__ == "__main__":
    main()
