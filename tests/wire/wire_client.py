#!/usr/bin/python3
"""A distgraph client written from docs/WIRE.md alone, run against a real `distgraph serve`.

It partitions a small graph, starts one server (machine 0 of two, with a secret, in clear:
--no-tls) on 127.0.0.1, and speaks every message type, reaches every documented error status and runs
the handshake with good and bad proofs, checking each reply against the document. The
server is killed at the end whatever happens. Exits 0 when every check passed, 1 when one
failed, 77 (printing "SKIPPED: ...") when numpy is missing.

Usage: wire_client.py --distgraph PATH --work DIR
"""

import argparse
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed for " + sys.executable)
    sys.exit(77)

# --- The document's constants ---------------------------------------------------------

MAGIC = b"DGRF"
VERSION = 1
HEADER = struct.Struct("<4sHHQHHIQ")  # magic, version, type, id, status, flags, reserved, length
assert HEADER.size == 32
FLAG_REPLY = 1

T = dict(hello=1, ping=2, metadata=10, create_tensor=11, delete_tensor=12, list_tensors=13,
         pull=20, push=21, push_add=22, sparse_step=23, init_rows=24, save_tensors=25,
         load_tensors=26, remove_checkpoint=27, sample_neighbors=30, degrees=31, find_edges=32,
         orig_ids=33, sample_sources=34, barrier=40, shutdown=41)
S = dict(ok=0, bad_request=1, unknown_message=2, not_found=3, out_of_range=4, dtype_mismatch=5,
         shape_mismatch=6, frame_too_large=7, unauthorized=8, internal_error=9,
         shutting_down=10, timeout=11)
STATUS_NAME = {v: k for k, v in S.items()}
DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16",
          "uint32", "uint64", "bool", "bfloat16"]
DT = {name: code for code, name in enumerate(DTYPES)}
NP = {"float32": "<f4", "float64": "<f8", "float16": "<f2", "int8": "i1", "int16": "<i2",
      "int32": "<i4", "int64": "<i8", "uint8": "u1", "uint16": "<u2", "uint32": "<u4",
      "uint64": "<u8", "bool": "?", "bfloat16": "<u2"}
NODE, EDGE = 0, 1

# --- Checks ----------------------------------------------------------------------------

failures = []
statuses_seen = set()
types_sent = set()


def check(cond, what):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what)
        failures.append(what)
    return cond


def expect(reply, status, what, contains=None):
    """Checks that `reply` has `status` (and, if given, head text containing `contains`)."""
    got = reply.status
    text = reply.text()
    ok = got == S[status] and (contains is None or contains in text)
    check(ok, "%s -> %s (got %s%s)" % (what, status, STATUS_NAME.get(got, got),
                                       "" if got == S["ok"] else ": " + text[:160]))
    return ok


# --- Frames and messages ----------------------------------------------------------------

def pad8(n):
    return (8 - n % 8) % 8


def encode_message(head=b"", parts=()):
    out = bytearray(struct.pack("<II", len(head), len(parts)))
    for p in parts:
        out += struct.pack("<Q", len(p))
    out += head
    for p in parts:
        out += b"\0" * pad8(len(out))
        out += p
    return bytes(out)


def decode_message(payload):
    """Head and parts of a payload, checking the layout exactly as the document states."""
    if len(payload) < 8:
        raise ValueError("payload under 8 bytes")
    head_len, n = struct.unpack_from("<II", payload, 0)
    if n > 64:
        raise ValueError("%d parts" % n)
    lens = struct.unpack_from("<%dQ" % n, payload, 8)
    off = 8 + 8 * n
    head = payload[off:off + head_len]
    off += head_len
    parts = []
    for ln in lens:
        pad = pad8(off)
        if payload[off:off + pad] != b"\0" * pad:
            raise ValueError("padding not zero")
        off += pad
        parts.append(payload[off:off + ln])
        off += ln
    if off != len(payload):
        raise ValueError("payload of %d bytes encodes %d" % (len(payload), off))
    return head, parts


def header(mtype, rid, payload_len, status=0, flags=0, magic=MAGIC, version=VERSION, reserved=0):
    return HEADER.pack(magic, version, mtype, rid, status, flags, reserved, payload_len)


class Frame:
    def __init__(self, raw_header, payload):
        (self.magic, self.version, self.type, self.id, self.status, self.flags, self.reserved,
         self.length) = HEADER.unpack(raw_header)
        self.payload = payload
        self.head, self.parts = decode_message(payload)

    def text(self):
        return self.head.decode("utf-8", "replace")


class Conn:
    """One TCP connection speaking frames; every read is bounded by the socket timeout."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.next_id = 1

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, mtype, head=b"", parts=(), rid=None, status=0, flags=0):
        types_sent.add(mtype)
        if rid is None:
            rid = self.next_id
            self.next_id += 1
        payload = encode_message(head, parts)
        self.send_raw(header(mtype, rid, len(payload), status, flags) + payload)
        return rid

    def _read_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                if buf:
                    raise ValueError("connection closed in the middle of a frame")
                return None
            buf += chunk
        return bytes(buf)

    def read(self):
        """The next frame, or None when the server closed the connection."""
        h = self._read_exact(32)
        if h is None:
            return None
        length = struct.unpack_from("<Q", h, 24)[0]
        payload = self._read_exact(length) if length else b""
        if payload is None:
            raise ValueError("connection closed in the middle of a frame")
        f = Frame(h, payload)
        statuses_seen.add(f.status)
        return f

    def closed(self):
        """Whether the server closed the connection (nothing more arrives)."""
        try:
            return self.read() is None
        except socket.timeout:
            return False

    def call(self, mtype, head=b"", parts=(), **kw):
        rid = self.send(mtype, head, parts, **kw)
        r = self.read()
        if r is None:
            raise ValueError("%s #%d: connection closed" % (mtype, rid))
        assert r.id == rid and r.type == mtype and r.flags == FLAG_REPLY, \
            "reply header %r for request %d of type %d" % (vars(r), rid, mtype)
        return r


# --- Handshake --------------------------------------------------------------------------

def read_server_hello(c):
    h = c.read()
    check(h is not None and h.type == T["hello"] and h.id == 0 and h.flags == 0 and
          h.status == 0 and len(h.head) == 40 and not h.parts,
          "server hello: type hello, ID 0, flags 0, 40-byte head, no parts")
    version, flags, reserved = struct.unpack_from("<HHI", h.head, 0)
    check(version == VERSION and flags & 1 == 1,
          "server hello: version 1, flag 'secret required' set")
    check(flags & 6 == 0, "server hello: no TLS flag (the server runs --no-tls)")
    return h.head[8:40]


def client_hello(server_nonce, secret, proof="good", version=VERSION, client_nonce=None):
    cn = client_nonce or os.urandom(32)
    if proof == "good":
        p, flags = hmac.new(secret, server_nonce + cn, hashlib.sha256).digest(), 1
    elif proof == "wrong":
        p, flags = hmac.new(secret + b"!", server_nonce + cn, hashlib.sha256).digest(), 1
    else:
        p, flags = b"\0" * 32, 0
    return struct.pack("<HHI", version, flags, 0) + cn + p, cn


def connect(port, secret):
    """A connection past the handshake, having checked the server's proof."""
    c = Conn(port)
    sn = read_server_hello(c)
    head, cn = client_hello(sn, secret)
    r = c.call(T["hello"], head, rid=0)
    expected = hmac.new(secret, cn + sn, hashlib.sha256).digest()
    assert r.status == S["ok"] and r.head == expected, "handshake failed: %s" % r.text()
    return c


def test_handshake(port, secret):
    c = connect(port, secret)
    check(True, "hello with the right proof: ok, and the server proves the secret back")
    c.close()
    for what, mutate, status in [
        ("no proof", lambda sn: client_hello(sn, secret, "none")[0], "unauthorized"),
        ("wrong proof", lambda sn: client_hello(sn, secret, "wrong")[0], "unauthorized"),
        ("version 2", lambda sn: client_hello(sn, secret, version=2)[0], "bad_request"),
        ("71-byte head", lambda sn: client_hello(sn, secret)[0][:71], "bad_request"),
        ("73-byte head", lambda sn: client_hello(sn, secret)[0] + b"\0", "bad_request"),
    ]:
        c = Conn(port)
        sn = read_server_hello(c)
        r = c.call(T["hello"], mutate(sn), rid=7)
        expect(r, status, "hello with " + what, contains="handshake refused")
        check(r.text() == "handshake refused", "refusal text is generic: %r" % r.text())
        check(c.closed(), "connection closed after refusing a hello with " + what)
        c.close()
    # A valid proof with an extra part is still a malformed hello.
    c = Conn(port)
    sn = read_server_hello(c)
    r = c.call(T["hello"], client_hello(sn, secret)[0], [b"\0" * 8], rid=0)
    expect(r, "bad_request", "hello with a valid proof and one part")
    check(c.closed(), "connection closed after a hello with a part")
    c.close()
    # The first frame must be a hello request.
    for what, kw in [("a ping first", dict(mtype=T["ping"])),
                     ("a hello with the reply flag", dict(mtype=T["hello"], flags=FLAG_REPLY))]:
        c = Conn(port)
        sn = read_server_hello(c)
        mtype = kw.pop("mtype")
        head = client_hello(sn, secret)[0] if mtype == T["hello"] else b""
        rid = c.send(mtype, head, rid=3, **kw)
        r = c.read()
        check(r is not None and r.type == T["hello"] and r.id == rid and
              r.status == S["bad_request"] and r.text() == "handshake refused",
              what + " -> a hello reply: bad_request 'handshake refused'")
        check(c.closed(), "connection closed after " + what)
        c.close()


# --- Heads ------------------------------------------------------------------------------

def string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<I", len(b)) + b


def create_head(name, dtype, kind, rows, cols, init=0, a=0.0, b=0.0, seed=0):
    return (string(name) + struct.pack("<HBqq", dtype, kind, rows, cols) +
            struct.pack("<BddQ", init, a, b, seed))


def rows_head(name, kind, count):
    return string(name) + struct.pack("<Bq", kind, count)


def step_head(name, kind, count, opt, lr, eps=1e-10, b1=0.9, b2=0.999):
    return string(name) + struct.pack("<BqBdddd", kind, count, opt, lr, eps, b1, b2)


def ckpt_head(tag, names, with_state=1):
    return string(tag) + struct.pack("<BI", with_state, len(names)) + b"".join(
        string(n) for n in names)


def barrier_head(name, participants, timeout_ms):
    return string(name) + struct.pack("<qq", participants, timeout_ms)


def sample_head(count, fanout, sampler="uniform", params=b"", seed=1, epoch=0, rank=0, batch=0,
                layer=0):
    return (struct.pack("<Qqqqiq", seed, epoch, rank, batch, layer, fanout) + string(sampler) +
            string(params) + struct.pack("<q", count))


def ids(values):
    return np.asarray(values, dtype="<i8").tobytes()


def as_ids(part):
    return np.frombuffer(part, dtype="<i8")


def decode_specs(head):
    (n,) = struct.unpack_from("<I", head, 0)
    off, out = 4, {}
    for _ in range(n):
        (ln,) = struct.unpack_from("<I", head, off)
        name = head[off + 4:off + 4 + ln].decode()
        off += 4 + ln
        dtype, rows, cols = struct.unpack_from("<Hqq", head, off)
        off += 18
        out[name] = (DTYPES[dtype], rows, cols)
    assert off == len(head), "spec list of %d bytes, %d read" % (len(head), off)
    return out


# --- The messages -----------------------------------------------------------------------

class Graph:
    """The input graph: node v has in-edges from (v+1), (v+7), (v+13) mod N; edge row r."""
    N = 60
    edges = [((v + d) % 60, v) for v in range(60) for d in (1, 7, 13)]


def test_frames(port, secret):
    c = connect(port, secret)
    expect(c.call(T["ping"]), "ok", "ping")
    expect(c.call(T["ping"], rid=0), "ok", "ping with request ID 0")
    expect(c.call(T["ping"], status=S["timeout"]), "ok", "ping whose status field is not 0")
    expect(c.call(T["ping"], b"x"), "bad_request", "ping with a head byte")
    expect(c.call(T["ping"], b"", [b""]), "bad_request", "ping with an empty part")
    r = c.call(T["ping"], flags=FLAG_REPLY)
    expect(r, "bad_request", "a request with the reply flag set")
    expect(c.call(T["hello"], client_hello(os.urandom(32), secret)[0]), "bad_request",
           "a second hello after the handshake")
    expect(c.call(T["ping"]), "ok", "the connection stays after those")
    # A message with no parts has no padding after its head.
    padded = struct.pack("<II", 1, 0) + b"x" + b"\0" * 7
    c.send_raw(header(T["ping"], 90, len(padded)) + padded)
    r = c.read()
    check(r is not None and r.id == 90 and r.status == S["bad_request"],
          "a no-part message with a padded head -> bad_request")
    # Lying lengths: bad_request, the connection stays.
    lying = struct.pack("<IIQ", 0, 1, 100) + b"\0" * 8
    c.send_raw(header(T["pull"], 91, len(lying)) + lying)
    r = c.read()
    check(r is not None and r.id == 91 and r.status == S["bad_request"],
          "a part length that overruns the payload -> bad_request")
    expect(c.call(T["ping"]), "ok", "the connection stays after lying lengths")
    expect(c.call(T["init_rows"]), "unknown_message", "init_rows (reserved)")
    expect(c.call(999), "unknown_message", "an unknown type")
    c.close()
    # Bad headers: a reply, then the close.
    for what, raw, rid, status in [
        ("bad magic", header(T["ping"], 5, 8, magic=b"HTTP") + b"\0" * 8, 0, "bad_request"),
        ("version 2", header(T["ping"], 6, 8, version=2) + b"\0" * 8, 6, "bad_request"),
        ("flag bit 1", header(T["ping"], 7, 8, flags=2) + b"\0" * 8, 7, "bad_request"),
        ("reserved bits", header(T["ping"], 8, 8, reserved=1) + b"\0" * 8, 8, "bad_request"),
        ("a payload of 4 bytes", header(T["ping"], 9, 4) + b"\0" * 4, 9, "bad_request"),
        ("a payload of 2^40 bytes", header(T["push"], 77, 1 << 40), 77, "frame_too_large"),
    ]:
        c = connect(port, secret)
        c.send_raw(raw)
        r = c.read()
        check(r is not None and r.id == rid and r.status == S[status] and r.flags == FLAG_REPLY
              and r.type == 2 and "127.0.0.1" not in r.text(),
              "%s -> %s with ID %d, type 2, no address in the text" % (what, status, rid))
        check(c.closed(), "connection closed after " + what)
        c.close()


def test_tensors(port, secret, meta, ckpt_dir):
    c = connect(port, secret)
    n_nodes, n_edges = meta["num_nodes"], meta["num_edges"]
    own_n, own_e = meta["owned_nodes"], meta["owned_edges"]
    mine = list(range(min(own_n, 6)))

    # create_tensor
    r = c.call(T["create_tensor"], create_head("emb", DT["float32"], NODE, n_nodes, 4, 1, -1.0, 1.0, 9))
    check(r.status == S["ok"] and r.head == b"\x01", "create_tensor emb: ok, created (1)")
    r = c.call(T["create_tensor"], create_head("emb", DT["float32"], NODE, n_nodes, 4, 1, -1.0, 1.0, 9))
    check(r.status == S["ok"] and r.head == b"\x00", "create_tensor emb again: ok, reused (0)")
    expect(c.call(T["create_tensor"], create_head("emb", DT["float64"], NODE, n_nodes, 4)),
           "dtype_mismatch", "create_tensor emb as float64")
    expect(c.call(T["create_tensor"], create_head("emb", DT["float32"], NODE, n_nodes, 5)),
           "shape_mismatch", "create_tensor emb with 5 columns")
    expect(c.call(T["create_tensor"], create_head("x", DT["float32"], NODE, n_nodes + 1, 1)),
           "shape_mismatch", "create_tensor with rows other than the graph's node count")
    for code in (13, 256):
        expect(c.call(T["create_tensor"], create_head("x", code, NODE, n_nodes, 1)),
               "dtype_mismatch", "create_tensor with dtype code %d" % code)
    expect(c.call(T["create_tensor"], create_head("x", DT["int32"], NODE, n_nodes, 1, 1, 0, 1)),
           "dtype_mismatch", "create_tensor int32 with a uniform fill")
    expect(c.call(T["create_tensor"], create_head("x", DT["float32"], 2, n_nodes, 1)),
           "bad_request", "create_tensor with row_kind 2")
    expect(c.call(T["create_tensor"], create_head("x", DT["float32"], NODE, n_nodes, 0)),
           "bad_request", "create_tensor with 0 columns")
    expect(c.call(T["create_tensor"], create_head("x", DT["float32"], NODE, n_nodes, 1, 7, 0, 1)),
           "bad_request", "create_tensor with init_kind 7")
    for what, a, b, kind in [("a = inf", float("inf"), 1.0, 1), ("b = nan", 0.0, float("nan"), 2),
                             ("zeros with a = -inf", float("-inf"), 0.0, 0),
                             ("uniform with b < a", 1.0, -1.0, 1),
                             ("normal with b < 0", 0.0, -1.0, 2)]:
        expect(c.call(T["create_tensor"], create_head("x", DT["float32"], NODE, n_nodes, 1, kind, a, b)),
               "bad_request", "create_tensor with " + what)
    expect(c.call(T["create_tensor"], create_head("x", DT["float32"], NODE, n_nodes, 1), [b"\0" * 8]),
           "bad_request", "create_tensor with a part")
    for bad in (".", "..", "a//b", "/a", "a/", "a/../b", "has space", "n" * 201, "é"):
        expect(c.call(T["create_tensor"], create_head(bad, DT["float32"], NODE, n_nodes, 1)),
               "bad_request", "create_tensor named %r" % bad[:20])
    expect(c.call(T["create_tensor"], create_head("n" * 257, DT["float32"], NODE, n_nodes, 1)),
           "bad_request", "create_tensor with a 257-byte name string")
    for good in ("n" * 200, "...", "x.y:z-w_v", "t/u"):
        expect(c.call(T["create_tensor"], create_head(good, DT["int8"], NODE, n_nodes, 1)),
               "ok", "create_tensor named %r" % good[:20])
        expect(c.call(T["delete_tensor"], string(good)), "ok", "delete_tensor %r" % good[:20])
    expect(c.call(T["delete_tensor"], string("t/u")), "not_found", "delete_tensor twice")
    expect(c.call(T["delete_tensor"], string("."), [b"x"]), "bad_request", "delete_tensor with a part")

    # list_tensors
    r = c.call(T["list_tensors"])
    specs = decode_specs(r.head) if r.status == S["ok"] else {}
    check(specs.get("emb") == ("float32", own_n, 4), "list_tensors: emb float32, owned rows, 4 cols")
    check(list(specs) == sorted(specs), "list_tensors: sorted by name")
    expect(c.call(T["list_tensors"], b"\0"), "bad_request", "list_tensors with a head")

    # pull: rows packed, the part 8-aligned
    r = c.call(T["pull"], rows_head("emb", NODE, len(mine)), [ids(mine)])
    expect(r, "ok", "pull emb")
    emb = np.frombuffer(r.parts[0], dtype="<f4").reshape(len(mine), 4) if r.parts else None
    check(emb is not None and len(r.parts[0]) == len(mine) * 16 and
          ((emb >= -1) & (emb < 1)).all(), "pull: %d rows of 16 bytes in [-1, 1)" % len(mine))
    expect(c.call(T["pull"], rows_head("emb", NODE, len(mine) + 1), [ids(mine)]), "bad_request",
           "pull whose count disagrees with its ID part")
    expect(c.call(T["pull"], rows_head("emb", NODE, 1)), "bad_request", "pull without an ID part")
    expect(c.call(T["pull"], rows_head("nope", NODE, 1), [ids([0])]), "not_found", "pull of an unknown tensor")
    expect(c.call(T["pull"], rows_head("emb", NODE, 1), [ids([own_n])]), "out_of_range",
           "pull of partition 1's first node")
    expect(c.call(T["pull"], rows_head("emb", NODE, 1), [ids([n_nodes])]), "out_of_range",
           "pull of an ID outside the graph")
    expect(c.call(T["pull"], rows_head("emb", EDGE, 1), [ids([0])]), "shape_mismatch",
           "pull of a node tensor by edge IDs")
    expect(c.call(T["pull"], rows_head("emb", 9, 1), [ids([0])]), "bad_request", "pull with row_kind 9")

    # push, then pull back: 3 float32 columns are 12-byte rows, packed
    expect(c.call(T["create_tensor"], create_head("h", DT["float32"], NODE, n_nodes, 3)), "ok",
           "create_tensor h (3 float32 columns, zeros)")
    vals = np.arange(len(mine) * 3, dtype="<f4").reshape(len(mine), 3)
    expect(c.call(T["push"], rows_head("h", NODE, len(mine)), [ids(mine), vals.tobytes()]), "ok", "push h")
    r = c.call(T["pull"], rows_head("h", NODE, len(mine)), [ids(mine)])
    check(r.status == S["ok"] and r.parts[0] == vals.tobytes(),
          "pull h returns the pushed rows, %d bytes packed" % (len(mine) * 12))
    expect(c.call(T["push"], rows_head("h", NODE, len(mine)), [ids(mine), vals.tobytes()[:-4]]),
           "shape_mismatch", "push with rows 4 bytes short")
    expect(c.call(T["push"], rows_head("h", NODE, len(mine)), [ids(mine)]), "bad_request",
           "push without its rows part")
    twice = [mine[0], mine[0]]
    expect(c.call(T["push"], rows_head("h", NODE, 2), [ids(twice), np.array([[1, 1, 1], [2, 2, 2]], "<f4").tobytes()]),
           "ok", "push listing a row twice")
    r = c.call(T["pull"], rows_head("h", NODE, 1), [ids([mine[0]])])
    check(np.frombuffer(r.parts[0], "<f4").tolist() == [2, 2, 2], "push: a row listed twice ends as its last listing")

    # push_add
    expect(c.call(T["create_tensor"], create_head("cnt", DT["int64"], NODE, n_nodes, 2)), "ok", "create_tensor cnt (int64)")
    add = np.array([[1, 2], [10, 20], [100, 200]], "<i8")
    expect(c.call(T["push_add"], rows_head("cnt", NODE, 3), [ids([mine[1], mine[1], mine[2]]), add.tobytes()]),
           "ok", "push_add cnt")
    r = c.call(T["pull"], rows_head("cnt", NODE, 2), [ids([mine[1], mine[2]])])
    check(np.frombuffer(r.parts[0], "<i8").tolist() == [11, 22, 100, 200],
          "push_add: a row listed twice receives both additions")
    expect(c.call(T["create_tensor"], create_head("f16", DT["float16"], NODE, n_nodes, 1)), "ok", "create_tensor f16")
    expect(c.call(T["push_add"], rows_head("f16", NODE, 1), [ids([0]), b"\0\0"]), "dtype_mismatch",
           "push_add on float16")

    # sparse_step: one Adagrad and one Adam step, checked against the formulas
    g = np.array([[0.5, -0.25, 1.0, 2.0], [1.0, 1.0, -1.0, 0.0]], "<f4")
    two = mine[:2]
    w0 = emb[:2].astype(np.float64)
    lr, eps = 0.1, 1e-10
    expect(c.call(T["sparse_step"], step_head("emb", NODE, 2, 0, lr, eps), [ids(two), g.tobytes()]), "ok", "sparse_step Adagrad")
    w1 = np.frombuffer(c.call(T["pull"], rows_head("emb", NODE, 2), [ids(two)]).parts[0], "<f4").reshape(2, 4)
    g64 = g.astype(np.float64)
    want = w0 - lr * g64 / (np.sqrt(g64 * g64) + eps)
    check(np.allclose(w1, want, atol=1e-5), "sparse_step Adagrad: w -= lr g / (sqrt(g^2) + eps)")
    expect(c.call(T["sparse_step"], step_head("emb", NODE, 2, 1, lr, 1e-8, 0.9, 0.999), [ids(two), g.tobytes()]), "ok", "sparse_step Adam")
    w2 = np.frombuffer(c.call(T["pull"], rows_head("emb", NODE, 2), [ids(two)]).parts[0], "<f4").reshape(2, 4)
    want = w1.astype(np.float64) - lr * g64 / (np.abs(g64) + 1e-8)  # first step: mhat = g, vhat = g^2
    check(np.allclose(w2, want, atol=1e-5), "sparse_step Adam, first step: w -= lr g / (|g| + eps)")
    specs = decode_specs(c.call(T["list_tensors"]).head)
    check(all(("emb" + s) in specs for s in (".adagrad_sum", ".adam_m", ".adam_v", ".adam_t")),
          "list_tensors shows the optimizer state tensors")
    for what, head in [("lr = +inf", step_head("emb", NODE, 2, 0, float("inf"))),
                       ("lr = nan", step_head("emb", NODE, 2, 1, float("nan"))),
                       ("lr = 0", step_head("emb", NODE, 2, 0, 0.0)),
                       ("eps = +inf", step_head("emb", NODE, 2, 0, 0.1, float("inf"))),
                       ("beta1 = 1", step_head("emb", NODE, 2, 1, 0.1, 1e-8, 1.0)),
                       ("beta2 = -inf", step_head("emb", NODE, 2, 1, 0.1, 1e-8, 0.9, float("-inf"))),
                       ("optimizer 5", step_head("emb", NODE, 2, 5, 0.1))]:
        expect(c.call(T["sparse_step"], head, [ids(two), g.tobytes()]), "bad_request", "sparse_step with " + what)
    w3 = c.call(T["pull"], rows_head("emb", NODE, 2), [ids(two)]).parts[0]
    check(w3 == w2.tobytes(), "refused sparse steps changed no row")
    expect(c.call(T["sparse_step"], step_head("cnt", NODE, 1, 0, 0.1), [ids([0]), b"\0" * 8]),
           "dtype_mismatch", "sparse_step on an int64 tensor")

    # save_tensors, load_tensors, remove_checkpoint
    expect(c.call(T["save_tensors"], ckpt_head("t1", ["emb", "cnt"])), "ok", "save_tensors t1")
    part_dir = os.path.join(ckpt_dir, "t1", "part-0")
    check(os.path.isfile(os.path.join(part_dir, "meta.json")), "save_tensors wrote <dir>/t1/part-0/meta.json")
    expect(c.call(T["push"], rows_head("emb", NODE, 2), [ids(two), np.zeros((2, 4), "<f4").tobytes()]), "ok", "push zeros over emb")
    expect(c.call(T["load_tensors"], ckpt_head("t1", ["emb"])), "ok", "load_tensors t1")
    w4 = c.call(T["pull"], rows_head("emb", NODE, 2), [ids(two)]).parts[0]
    check(w4 == w2.tobytes(), "load_tensors restored the saved rows")
    expect(c.call(T["save_tensors"], ckpt_head("t2", ["nope"])), "not_found", "save_tensors of an unknown tensor")
    expect(c.call(T["load_tensors"], ckpt_head("t9", ["emb"])), "not_found", "load_tensors of an unknown tag")
    expect(c.call(T["load_tensors"], ckpt_head("t1", ["h"])), "not_found", "load_tensors of a tensor not saved")
    for tag in ("../x", "", ".hidden", "a/b", "x" * 129):
        expect(c.call(T["save_tensors"], ckpt_head(tag, ["emb"])), "bad_request", "save_tensors with tag %r" % tag[:12])
    expect(c.call(T["save_tensors"], ckpt_head("t1", ["emb"]), [b"\0"]), "bad_request", "save_tensors with a part")
    too_many = string("t1") + struct.pack("<BI", 1, 4097)
    expect(c.call(T["save_tensors"], too_many), "bad_request", "save_tensors listing 4097 names")
    # The saved int64 'cnt' against a float64 one of the same shape.
    expect(c.call(T["delete_tensor"], string("cnt")), "ok", "delete_tensor cnt")
    expect(c.call(T["create_tensor"], create_head("cnt", DT["float64"], NODE, n_nodes, 2)), "ok", "create_tensor cnt as float64")
    expect(c.call(T["load_tensors"], ckpt_head("t1", ["cnt"], 0)), "dtype_mismatch", "load_tensors into another dtype")
    expect(c.call(T["delete_tensor"], string("cnt")), "ok", "delete_tensor cnt again")
    expect(c.call(T["create_tensor"], create_head("cnt", DT["int64"], NODE, n_nodes, 3)), "ok", "create_tensor cnt with 3 columns")
    expect(c.call(T["load_tensors"], ckpt_head("t1", ["cnt"], 0)), "shape_mismatch", "load_tensors into another shape")
    with open(os.path.join(part_dir, "meta.json"), "w") as f:
        f.write("{")
    expect(c.call(T["load_tensors"], ckpt_head("t1", ["emb"])), "internal_error", "load_tensors of a damaged checkpoint")
    expect(c.call(T["remove_checkpoint"], string("t1")), "ok", "remove_checkpoint t1")
    check(not os.path.exists(part_dir), "remove_checkpoint deleted the partition's folder")
    expect(c.call(T["remove_checkpoint"], string("t1")), "ok", "remove_checkpoint of a missing tag")
    expect(c.call(T["remove_checkpoint"], string("../..")), "bad_request", "remove_checkpoint '../..'")
    c.close()


def test_graph(port, secret, meta):
    c = connect(port, secret)
    own_n, own_e, n_nodes = meta["owned_nodes"], meta["owned_edges"], meta["num_nodes"]
    nodes = list(range(own_n))
    edges = list(range(own_e))

    # orig_ids: the input IDs behind the relabeled ones
    r = c.call(T["orig_ids"], struct.pack("<Bq", NODE, own_n), [ids(nodes)])
    expect(r, "ok", "orig_ids of the owned nodes")
    orig_node = as_ids(r.parts[0])
    r = c.call(T["orig_ids"], struct.pack("<Bq", EDGE, own_e), [ids(edges)])
    expect(r, "ok", "orig_ids of the owned edges")
    orig_edge = as_ids(r.parts[0])
    check(sorted(set(orig_node.tolist())) == sorted(orig_node.tolist()) and
          all(0 <= v < Graph.N for v in orig_node), "orig_ids: distinct input node IDs")
    expect(c.call(T["orig_ids"], struct.pack("<Bq", 2, 1), [ids([0])]), "bad_request", "orig_ids with row_kind 2")
    expect(c.call(T["orig_ids"], struct.pack("<Bq", NODE, 1), [ids([own_n])]), "out_of_range", "orig_ids of a node not owned")

    # degrees: in-degrees of owned nodes are whole; out-degrees are this partition's share
    r = c.call(T["degrees"], struct.pack("<Bq", 0, own_n), [ids(nodes)])
    expect(r, "ok", "degrees in")
    check(as_ids(r.parts[0]).tolist() == [3] * own_n, "degrees in: every node has 3 in-edges")
    r = c.call(T["degrees"], struct.pack("<Bq", 1, n_nodes), [ids(range(n_nodes))])
    expect(r, "ok", "degrees out of every node")
    check(int(as_ids(r.parts[0]).sum()) == own_e, "degrees out: the shares add up to the owned edges")
    expect(c.call(T["degrees"], struct.pack("<Bq", 2, 1), [ids([0])]), "bad_request", "degrees with direction 2")
    expect(c.call(T["degrees"], struct.pack("<Bq", 0, 1), [ids([own_n])]), "out_of_range", "in-degree of a node not owned")

    # find_edges: each owned edge's destination is the input edge's destination
    r = c.call(T["find_edges"], struct.pack("<q", own_e), [ids(edges)])
    expect(r, "ok", "find_edges of the owned edges")
    dst = as_ids(r.parts[1])
    node_orig = dict(zip(nodes, orig_node.tolist()))
    check(all(node_orig.get(int(d)) == Graph.edges[int(e)][1] for d, e in zip(dst, orig_edge)),
          "find_edges: destinations match the input edge list")
    src = as_ids(r.parts[0])
    check(all(node_orig[int(s)] == Graph.edges[int(e)][0] for s, e in zip(src, orig_edge) if int(s) < own_n),
          "find_edges: owned sources match the input edge list")
    expect(c.call(T["find_edges"], struct.pack("<q", 1), [ids([own_e])]), "out_of_range", "find_edges of an edge not owned")

    # sample_neighbors
    seeds = nodes[:5]
    r = c.call(T["sample_neighbors"], sample_head(5, 2), [ids(seeds)])
    expect(r, "ok", "sample_neighbors uniform, fanout 2")
    if r.status == S["ok"]:
        s_src, s_dst, s_eid = (as_ids(p) for p in r.parts)
        check(len(r.parts) == 3 and len(s_src) == len(s_dst) == len(s_eid) == 10,
              "sample_neighbors: three int64 parts, 2 edges per seed")
        check(s_dst.tolist() == sorted(s_dst.tolist(), key=seeds.index), "sample_neighbors: grouped by seed in request order")
        f = c.call(T["find_edges"], struct.pack("<q", len(s_eid)), [ids(s_eid)])
        check(as_ids(f.parts[0]).tolist() == s_src.tolist() and as_ids(f.parts[1]).tolist() == s_dst.tolist(),
              "sample_neighbors: each (src, dst) is its edge ID's endpoints (find_edges)")
        again = c.call(T["sample_neighbors"], sample_head(5, 2), [ids(seeds)])
        check(again.parts == r.parts, "sample_neighbors: the same key picks the same edges")
        # sample_sources: the same picks, as each seed's count and the sources in seed order
        bare = c.call(T["sample_sources"], sample_head(5, 2), [ids(seeds)])
        expect(bare, "ok", "sample_sources uniform, fanout 2")
        if bare.status == S["ok"]:
            check(len(bare.parts) == 2 and as_ids(bare.parts[0]).tolist() == [2] * 5 and
                  as_ids(bare.parts[1]).tolist() == s_src.tolist(),
                  "sample_sources: a count per seed and sample_neighbors' sources")
    expect(c.call(T["sample_sources"], sample_head(1, 2), [ids([own_n])]), "out_of_range",
           "sample_sources of a seed not owned")
    r = c.call(T["sample_neighbors"], sample_head(5, -1, "full"), [ids(seeds)])
    check(r.status == S["ok"] and len(as_ids(r.parts[0])) == 15, "sample_neighbors full, fanout -1: all 15 in-edges")
    r = c.call(T["sample_neighbors"], sample_head(5, 4, "uniform_replace"), [ids(seeds)])
    check(r.status == S["ok"] and len(as_ids(r.parts[0])) == 20, "sample_neighbors uniform_replace: 4 per seed")
    expect(c.call(T["create_tensor"], create_head("edge:w", DT["float32"], EDGE, meta["num_edges"], 1, 1, 0.5, 1.0)),
           "ok", "create_tensor edge:w (edge probabilities)")
    r = c.call(T["sample_neighbors"], sample_head(5, 2, "weighted", string("w") + b"\0"), [ids(seeds)])
    check(r.status == S["ok"] and len(as_ids(r.parts[0])) == 10, "sample_neighbors weighted by edge:w")
    expect(c.call(T["sample_neighbors"], sample_head(5, 2, "weighted", string("nope") + b"\0"), [ids(seeds)]),
           "not_found", "weighted sampling without its probability tensor")
    expect(c.call(T["sample_neighbors"], sample_head(5, 2, "nope"), [ids(seeds)]), "bad_request", "an unknown sampler")
    expect(c.call(T["sample_neighbors"], sample_head(5, 2, "uniform", b"\0"), [ids(seeds)]), "bad_request",
           "uniform with a parameter block")
    expect(c.call(T["sample_neighbors"], sample_head(5, -2), [ids(seeds)]), "bad_request", "fanout -2")
    expect(c.call(T["sample_neighbors"], sample_head(1, 2), [ids([own_n])]), "out_of_range", "a seed not owned")
    c.close()


def test_barrier_and_shutdown(port, secret, proc):
    c = connect(port, secret)
    expect(c.call(T["barrier"], barrier_head("b1", 1, 1000)), "ok", "barrier of 1")
    expect(c.call(T["barrier"], barrier_head("b2", 2, 200)), "timeout", "barrier of 2 that times out")
    expect(c.call(T["barrier"], barrier_head("b3", 0, 200)), "bad_request", "barrier of 0 participants")
    expect(c.call(T["barrier"], barrier_head("b1", 1, 1000), [b"\0"]), "bad_request", "barrier with a part")
    # Two connections meet at a barrier.
    d = connect(port, secret)
    rid = d.send(T["barrier"], barrier_head("b4", 2, 5000))
    expect(c.call(T["barrier"], barrier_head("b4", 2, 5000)), "ok", "barrier of 2: first caller")
    r = d.read()
    check(r is not None and r.id == rid and r.status == S["ok"], "barrier of 2: second caller")
    # metadata, then a shutdown with junk: refused, nothing stops.
    expect(c.call(T["metadata"], b"{}"), "bad_request", "metadata with a head")
    expect(c.call(T["shutdown"], b"junk"), "bad_request", "shutdown with a head")
    expect(c.call(T["shutdown"], b"", [b""]), "bad_request", "shutdown with a part")
    expect(c.call(T["ping"]), "ok", "the server still serves after the refused shutdowns")
    check(proc.poll() is None, "the server process is still running")
    # A barrier waiting when the shutdown comes gets shutting_down.
    rid = d.send(T["barrier"], barrier_head("last", 2, 20000))
    # Let the barrier arrive first: a request read after the shutdown began is not served.
    time.sleep(0.3)
    expect(c.call(T["shutdown"]), "ok", "shutdown")
    r = d.read()
    check(r is not None and r.id == rid and r.status == S["shutting_down"],
          "a barrier waiting at shutdown -> shutting_down")
    try:
        code = proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        code = None
    check(code == 0, "distgraph serve exits 0 after shutdown (got %r)" % code)
    c.close()
    d.close()


# --- Setup ------------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--distgraph", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    if not os.access(args.distgraph, os.X_OK):
        print("FAIL: %s is not built" % args.distgraph)
        return 1
    os.makedirs(args.work, exist_ok=True)
    work = tempfile.mkdtemp(prefix="wire-", dir=args.work)
    proc = None
    output = []

    def on_alarm(signum, frame):
        raise TimeoutError("the wire test ran past its time limit")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(240)
    try:
        with open(os.path.join(work, "edges.txt"), "w") as f:
            f.write("# src dst\n")
            for u, v in Graph.edges:
                f.write("%d %d\n" % (u, v))
        subprocess.run([args.distgraph, "partition", "--input", os.path.join(work, "edges.txt"),
                        "--name", "wire", "--parts", "2", "--method", "random", "--seed", "1",
                        "--out", os.path.join(work, "parts")],
                       check=True, stdout=subprocess.DEVNULL, timeout=60)
        secret = b"a wire test secret"
        secret_path = os.path.join(work, "secret")
        fd = os.open(secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, secret + b"\n")  # trailing newlines are removed
        os.close(fd)
        port = free_port()
        other = free_port()
        while other == port:
            other = free_port()
        with open(os.path.join(work, "ip_config.txt"), "w") as f:
            f.write("127.0.0.1 %d\n127.0.0.1 %d\n" % (port, other))
        ckpt = os.path.join(work, "ckpt")
        proc = subprocess.Popen(
            [args.distgraph, "serve", "--ip-config", os.path.join(work, "ip_config.txt"),
             "--part-config", os.path.join(work, "parts", "wire.json"), "--machine", "0",
             "--trainers", "2", "--threads", "2", "--storage-dir", os.path.join(work, "shm"),
             "--checkpoint-dir", ckpt, "--secret-file", secret_path,
             # In clear: Python's ssl module has no TLS 1.3 PSK before 3.13.
             "--no-tls"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        listening = threading.Event()

        def pump():
            for line in proc.stdout:
                output.append(line.rstrip("\n"))
                if "listening on" in line:
                    listening.set()

        threading.Thread(target=pump, daemon=True).start()
        if not listening.wait(60):
            print("FAIL: the server did not start listening")
            return 1

        test_handshake(port, secret)
        c = connect(port, secret)
        r = c.call(T["metadata"])
        meta = json.loads(r.text())
        c.close()
        check(meta.get("part_id") == 0 and meta.get("num_parts") == 2 and
              meta.get("num_nodes") == Graph.N and meta.get("num_edges") == len(Graph.edges) and
              meta.get("book") == "range" and "uniform" in meta.get("samplers", []) and
              isinstance(meta.get("book_fingerprint"), str),
              "metadata: partition 0 of 2, the graph's sizes, a range book, the samplers")
        test_frames(port, secret)
        test_tensors(port, secret, meta, ckpt)
        test_graph(port, secret, meta)
        test_barrier_and_shutdown(port, secret, proc)

        every_type = set(T.values())
        check(every_type <= types_sent, "every message type was sent (missing: %s)" %
              sorted(k for k, v in T.items() if v not in types_sent))
        check(set(S.values()) <= statuses_seen, "every status was received (missing: %s)" %
              sorted(k for k, v in S.items() if v not in statuses_seen))
    except Exception as e:  # a crash is a failure too; the server is killed below
        failures.append("exception: %r" % (e,))
        print("FAIL exception: %r" % (e,))
    finally:
        signal.alarm(0)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
    if failures:
        print("\n%d check(s) failed; server output:" % len(failures))
        for line in output:
            print("  | " + line)
        print("work folder kept: " + work)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print("every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
