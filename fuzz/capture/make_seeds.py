#!/usr/bin/env python3
"""Turns frames recorded by record_frames.py into the committed seeds of fuzz/corpus/<target>/ (docs/fuzzing.md).

    make_seeds.py RAW_DIR CORPUS_DIR

One seed per distinct kind of frame (request code or response, header encoding, direction), the smallest of each,
so the corpus stays a few dozen small files. Standard library only.
"""

import hashlib
import json
import os
import struct
import sys

MAX_SEED = 16 * 1024
REGISTER_BROKER, UPDATE_CONFIG, GET_CONFIG = 103, 318, 319


def parse_header(serialize_type, header):
    """(code, flag, version, opaque, ext dict) of a JSON or ROCKETMQ header."""
    if serialize_type == 0:
        h = json.loads(header.decode("utf-8"))
        return h.get("code", 0), h.get("flag", 0), h.get("version", 0), h.get("opaque", 0), h.get("extFields") or {}
    code, _lang, version, opaque, flag, remark_len = struct.unpack(">hbhiii", header[:17])
    pos = 17 + remark_len
    (ext_len,) = struct.unpack(">i", header[pos : pos + 4])
    pos += 4
    end, ext = pos + ext_len, {}
    while pos < end:
        (klen,) = struct.unpack(">h", header[pos : pos + 2])
        key = header[pos + 2 : pos + 2 + klen].decode("utf-8", "replace")
        pos += 2 + klen
        (vlen,) = struct.unpack(">i", header[pos : pos + 4])
        ext[key] = header[pos + 4 : pos + 4 + vlen].decode("utf-8", "replace")
        pos += 4 + vlen
    return code, flag, version, opaque, ext


def version_class(version):
    """The selector bits of fuzz/checks.rs::register_version: < V3_0_11, < V5_0_0, or later."""
    return 0 if version < 37 else 1 if version < 413 else 2


def main():
    raw_dir, corpus = sys.argv[1], sys.argv[2]
    frames = []
    for name in sorted(os.listdir(raw_dir)):
        with open(os.path.join(raw_dir, name), "rb") as f:
            data = f.read()
        word = struct.unpack(">I", data[4:8])[0]
        st, hlen = word >> 24, word & 0xFFFFFF
        header, body = data[8 : 8 + hlen], data[8 + hlen :]
        code, flag, version, opaque, ext = parse_header(st, header)
        frames.append((name, data, st, header, body, code, flag, version, opaque, ext))

    # Requests by opaque and connection, so a response can be named after its request's code.
    requests = {(f[0][:3], f[8]): f[5] for f in frames if not f[6] & 1}
    best = {}  # kind -> (target, bytes)

    def offer(target, kind, data):
        if 0 < len(data) <= MAX_SEED and (kind not in best or len(data) < len(best[kind][1])):
            best[kind] = (target, data)

    for name, data, st, header, body, code, flag, version, opaque, ext in frames:
        is_resp = flag & 1
        req_code = requests.get((name[:3], opaque), -1) if is_resp else code
        kind = ("resp" if is_resp else "req", req_code, st)
        offer("frame", ("frame",) + kind, data)
        offer("header_rocketmq" if st else "header_json", ("header",) + kind, header)
        if body[:1] in (b"{", b"["):
            offer("json_reader", ("json",) + kind, body)
        if not is_resp and code == REGISTER_BROKER and body:
            compressed = ext.get("compressed", "false").lower() == "true"
            selector = bytes([int(compressed) | version_class(version) << 1])
            offer("register_body", ("register", body[:1], compressed, version_class(version)), selector + body)
        if (not is_resp and code == UPDATE_CONFIG) or (is_resp and req_code == GET_CONFIG):
            offer("properties", ("props",) + kind, body)

    for target, data in best.values():
        os.makedirs(os.path.join(corpus, target), exist_ok=True)
        digest = hashlib.sha1(data).hexdigest()[:12]
        with open(os.path.join(corpus, target, "seed-captured-" + digest), "wb") as f:
            f.write(data)
    for target in sorted({t for t, _ in best.values()}):
        print(target, sum(1 for t, _ in best.values() if t == target))


if __name__ == "__main__":
    main()
