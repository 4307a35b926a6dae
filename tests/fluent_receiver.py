#!/usr/bin/python3
"""A receiver of Fluent's Forward Protocol v1, for the tests: the server side
of the spec, decoded with an independent MessagePack implementation
(Debian's python3-msgpack).

It accepts Message mode ([tag, time, record, option?]), Forward mode ([tag,
[[time, record], ...], option?]), PackedForward ([tag, bin or str holding a
stream of [time, record], option?]) and CompressedPackedForward (the same,
gzip-compressed, option "compressed": "gzip"); time as an integer or as
EventTime (extension type 0: seconds and nanoseconds, big-endian); and
answers {"ack": chunk} when a message's option has a chunk.

Each event becomes one JSON line in OUT, flushed at once:
    {"conn": N, "mode": ..., "tag": ..., "time": [sec, nsec] | sec,
     "event_time": true|false, "record": {...}, "chunk": ... | null,
     "types": {key: "int" | "str" | "float" | "bool" | "nil" | "bin" | ...}}
and each acknowledgement sent a line {"acked": chunk}. A message it cannot
decode is a line {"error": ...} and the connection is closed.

Usage: fluent_receiver.py (--tcp PORTFILE [--port N] | --unix PATH) --out OUT
         [--never-ack] [--close-after BYTES] [--slow MS] [--wait-for PATH]
PORTFILE gets the TCP port once the receiver listens (127.0.0.1, port N or
any); each connection is a line {"connected": N}; with
--unix, PATH.ready is made once it listens. --never-ack never answers a
chunk; --close-after closes the first connection once it has read BYTES
(mid-message, the sender's batch cut in two); --slow reads 4 KiB at a time
with MS between reads; --wait-for reads nothing of a connection until PATH
exists (the sender's queue fills however slowly it runs).
"""

import argparse
import gzip
import json
import os
import socket
import struct
import sys
import threading
import time

import msgpack


class EventTime:
    def __init__(self, seconds, nanoseconds):
        self.seconds = seconds
        self.nanoseconds = nanoseconds


def ext_hook(code, data):
    if code == 0 and len(data) == 8:
        seconds, nanoseconds = struct.unpack(">II", data)
        return EventTime(seconds, nanoseconds)
    return msgpack.ExtType(code, data)


def unpacker():
    return msgpack.Unpacker(raw=False, ext_hook=ext_hook, strict_map_key=False,
                            max_buffer_size=64 << 20)


def kind(value):
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (bytes, bytearray)):
        return "bin"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def plain(value):
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, EventTime):
        return [value.seconds, value.nanoseconds]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


class Receiver:
    def __init__(self, args):
        self.args = args
        self.out = open(args.out, "a", encoding="utf-8")
        self.lock = threading.Lock()
        self.connections = 0

    def write(self, obj):
        with self.lock:
            self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
            self.out.flush()

    def event(self, conn, mode, tag, when, record, chunk):
        if not isinstance(record, dict):
            raise ValueError(f"a record that is not a map: {record!r}")
        if isinstance(when, EventTime):
            t, event_time = [when.seconds, when.nanoseconds], True
        elif isinstance(when, int) and not isinstance(when, bool):
            t, event_time = when, False
        else:
            raise ValueError(f"a time that is neither an integer nor EventTime: {when!r}")
        self.write({"conn": conn, "mode": mode, "tag": tag, "time": t,
                    "event_time": event_time, "record": plain(record), "chunk": chunk,
                    "types": {str(k): kind(v) for k, v in record.items()}})

    def message(self, conn, sock, msg):
        if not isinstance(msg, (list, tuple)) or len(msg) < 2 or not isinstance(msg[0], str):
            raise ValueError(f"not a forward protocol message: {msg!r}")
        tag, second = msg[0], msg[1]
        if isinstance(second, (EventTime, int)) and not isinstance(second, bool):
            mode = "Message"
            if len(msg) not in (3, 4):
                raise ValueError("Message mode has 3 or 4 elements")
            option = msg[3] if len(msg) == 4 else None
            entries = [(second, msg[2])]
        elif isinstance(second, (list, tuple)):
            mode = "Forward"
            option = msg[2] if len(msg) == 3 else None
            entries = second
        elif isinstance(second, (bytes, str)):
            option = msg[2] if len(msg) == 3 else None
            data = second.encode("utf-8", "surrogateescape") if isinstance(second, str) else second
            if isinstance(option, dict) and option.get("compressed") == "gzip":
                mode = "CompressedPackedForward"
                data = gzip.decompress(data)
            else:
                mode = "PackedForward"
            inner = unpacker()
            inner.feed(data)
            entries = list(inner)
        else:
            raise ValueError(f"an unknown mode: {second!r}")
        if option is not None and not isinstance(option, dict):
            raise ValueError("an option that is not a map")
        chunk = option.get("chunk") if option else None
        if option and "size" in option and option["size"] != len(entries):
            raise ValueError(f"option size {option['size']} but {len(entries)} events")
        for entry in entries:
            if not isinstance(entry, (list, tuple)) or len(entry) != 2:
                raise ValueError(f"an entry that is not [time, record]: {entry!r}")
            self.event(conn, mode, tag, entry[0], entry[1], chunk)
        if chunk is not None and not self.args.never_ack:
            sock.sendall(msgpack.packb({"ack": chunk}))
            self.write({"acked": chunk})

    def serve(self, sock):
        with self.lock:
            self.connections += 1
            conn = self.connections
        self.write({"connected": conn})
        feed = unpacker()
        read = 0
        if self.args.wait_for:
            while not os.path.exists(self.args.wait_for):
                time.sleep(0.01)
        try:
            while True:
                if self.args.slow:
                    time.sleep(self.args.slow / 1000)
                data = sock.recv(4096 if self.args.slow else 65536)
                if not data:
                    return
                if self.args.close_after and conn == 1:
                    room = self.args.close_after - read
                    if len(data) >= room:
                        feed.feed(data[:room])
                        for msg in feed:
                            self.message(conn, sock, msg)
                        self.write({"closed": conn, "after": self.args.close_after})
                        return
                read += len(data)
                feed.feed(data)
                for msg in feed:
                    self.message(conn, sock, msg)
        except Exception as e:  # a test reads what went wrong
            self.write({"error": f"{type(e).__name__}: {e}"})
        finally:
            sock.close()

    def run(self):
        if self.args.tcp:
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.args.port))
            listener.listen(16)
            tmp = self.args.tcp + ".tmp"
            with open(tmp, "w") as f:
                f.write(str(listener.getsockname()[1]))
            os.rename(tmp, self.args.tcp)
        else:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(self.args.unix)
            listener.listen(16)
            open(self.args.unix + ".ready", "w").close()
        while True:
            sock, _ = listener.accept()
            threading.Thread(target=self.serve, args=(sock,), daemon=True).start()


def main():
    p = argparse.ArgumentParser()
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--tcp", metavar="PORTFILE")
    where.add_argument("--unix", metavar="PATH")
    p.add_argument("--out", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--never-ack", action="store_true")
    p.add_argument("--close-after", type=int, default=0)
    p.add_argument("--slow", type=int, default=0)
    p.add_argument("--wait-for", default="")
    Receiver(p.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
