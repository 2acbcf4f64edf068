#!/usr/bin/python3
"""Writes the seed corpus (corpus/<target>/) of the fuzz targets: a few valid inputs of
each kind, so that the fuzzers start past the framing. Run again after a wire change."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0x53594D4D46555A5A  # fuzz_store_common.hpp kMagic
OPS = dict(hello=1, set=2, get=3, wait=4, add=5, check=6, erase=7,
           ok=0x80, refused=0x81, value=0x82, int=0x83, bools=0x84, timeout=0x85, error=0x86)


def frame(op, body=b""):
    payload = bytes([OPS[op]]) + body
    return struct.pack(">I", len(payload)) + payload


def s(text):
    b = text.encode() if isinstance(text, str) else text
    return struct.pack(">I", len(b)) + b


def strs(items):
    return struct.pack(">I", len(items)) + b"".join(s(i) for i in items)


def hello(mode, magic=MAGIC, version=2):
    return frame("hello", struct.pack(">IHQIB", 0x53594D53, version, magic, 0, mode))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


requests = (frame("set", s("key") + s("value")) + frame("get", s("key") + struct.pack(">Q", 0)) +
            frame("get", s("missing") + struct.pack(">Q", 1)) +
            frame("wait", strs(["key", "a", "a"]) + struct.pack(">Q", 0)) +
            frame("add", s("n") + struct.pack(">q", 5)) + frame("add", s("n") + struct.pack(">q", 2**63 - 1)) +
            frame("add", s("key") + struct.pack(">q", 1)) + frame("check", strs(["key", "n", "x"])) +
            frame("erase", s("key")) + frame("check", strs([])))
# fuzz_store_server: byte 0 where the stream starts (0 plain from the hello, 1 TLS from the
# hello, 2 plain after it, 3 TLS after the handshake), byte 1 the piece size (0 all at once).
HELLO_SIZE = len(hello(0))
write("fuzz_store_server", "plain_session", b"\x00\x00" + hello(0) + requests)
write("fuzz_store_server", "plain_session_in_pieces", b"\x00\x07" + hello(0) + requests)
write("fuzz_store_server", "plain_wrong_magic", b"\x00\x00" + hello(0, MAGIC ^ 1))
write("fuzz_store_server", "plain_old_version", b"\x00\x00" + hello(0, version=1))
write("fuzz_store_server", "http", b"\x00\x00GET / HTTP/1.0\r\n\r\n")
write("fuzz_store_server", "tls_data_before_ok", b"\x01\x00" + hello(1) + b"\x16\x03\x01\x00\x05hello")
# The hello alone, then a TLS record header and a ClientHello-shaped body.
client_hello = b"\x16\x03\x01\x00\x2f\x01\x00\x00\x2b\x03\x03" + bytes(32) + b"\x00\x00\x02\x13\x01\x01\x00"
write("fuzz_store_server", "tls_client_hello", b"\x01" + bytes([HELLO_SIZE]) + hello(1) + client_hello)
write("fuzz_store_server", "tls_plain_client", b"\x01\x00" + hello(0))
write("fuzz_store_server", "after_hello", b"\x02\x00" + requests)
write("fuzz_store_server", "after_hello_bad_op", b"\x02\x00" + frame("ok") + frame("set", s("k")))
write("fuzz_store_server", "after_tls", b"\x03\x00" + requests)
write("fuzz_store_server", "after_tls_blocking_get", b"\x03\x00" + frame("get", s("never") + struct.pack(">Q", 60000)))

# fuzz_store_client: byte 0 0 plain from the hello's answer, 1 TLS from it, 2 after TLS.
# The client's calls in order: set, get, wait, add, check (3 keys), erase.
answers = (frame("ok") + frame("value", s("value")) + frame("ok") + frame("int", struct.pack(">q", 1)) +
           frame("bools", struct.pack(">I", 3) + b"\x01\x00\x01") + frame("ok"))
failures = (frame("error", b"\x02" + s("no")) + frame("timeout", strs(["key"])) +
            frame("timeout", strs(["a", "b"])) + frame("error", b"\x09" + s("overflow")) +
            frame("bools", struct.pack(">I", 2) + b"\x01\x00") + frame("refused", s("x")))
write("fuzz_store_client", "plain_answers", b"\x00" + frame("ok") + answers)
write("fuzz_store_client", "plain_failures", b"\x00" + frame("ok") + failures)
write("fuzz_store_client", "plain_refused", b"\x00" + frame("refused", s("wrong job magic")))
write("fuzz_store_client", "tls_server_hello", b"\x01" + frame("ok") + b"\x16\x03\x03\x00\x04\x02\x00\x00\x00")
write("fuzz_store_client", "tls_answers", b"\x02" + answers)
write("fuzz_store_client", "tls_failures", b"\x02" + failures)

# unique id: int32 version (host order), my_pe, n_pes, then the 124 opaque bytes.
def uid(mode, family, addr, port, job):
    head = struct.pack("<iii", (1 << 16) + 136, -1, 0)
    body = b"SYMU" + bytes([1, mode, family, 0]) + struct.pack(">H", port) + addr.ljust(16, b"\0")
    body += struct.pack(">Q", 0x1122334455667788) + bytes(range(32)) + job.encode()
    return (head + body).ljust(136, b"\0")


v4 = uid(1, 4, bytes([127, 0, 0, 1]), 4242, "abcdef012345")
v6 = uid(0, 6, bytes(15) + b"\x01", 65535, "zzzzzzzzzzzz")
write("fuzz_unique_id", "v4_psk", v4)
write("fuzz_unique_id", "v6_plain", v6)
write("fuzz_unique_id", "text_v4", b"symmem-uid1:" + v4.hex().encode())
write("fuzz_unique_id", "text_v6_upper", b"symmem-uid1:" + v6.hex().upper().encode())

names = ["SHMEM_SYMMETRIC_SIZE", "SHMEM_DEBUG", "SYMMEM_LOG_LEVEL", "SYMMEM_INIT_TIMEOUT"]
for i, v in enumerate([b"2G", b"yes", b"debug", b"60.5"]):
    write("fuzz_tunables", names[i].lower(), bytes([i]) + v)
for n, v in [("size_fraction", b"1.5g"), ("size_kib", b"64KiB"), ("size_bytes", b"4096b"),
             ("size_huge", b"16000000t"), ("size_hex", b"0x10m"), ("size_junk", b"12q")]:
    write("fuzz_tunables", n, b"\x00" + v)
write("fuzz_tunables", "int_negative", b"\x05-1")

for n, words in [("basic", ["-n", "4", "prog", "arg"]),
                 ("all_options", ["--timeout=2.5", "-np", "2", "--tag-output", "-x", "A=B", "--env=C=", "./a.out"]),
                 ("inline", ["-n4", "-xFOO=1", "--", "-prog"]), ("help", ["--help"]), ("version", ["--version"]),
                 ("bad", ["-n", "0", "--timeout", "-1", "p"])]:
    write("fuzz_run_options", n, b"\0".join(w.encode() for w in words))
