#!/usr/bin/env python3
"""Encode JSON records as Avro binary messages, for the tests and benchmarks
of the Kafka source formats "avro" and "avro-confluent" (docs/kafka.md).

    avro_encode.py SCHEMA.json OUTDIR [--confluent ID] < records.jsonl
    avro_encode.py SCHEMA.json OUT --delimited DELIM [--confluent ID] < records.jsonl

Reads one JSON record a line from stdin and writes each as one message:
OUTDIR/000001.avro, ... (one file a message: `kcat -P -t topic FILES` sends
each file as one message), or, with --delimited, all of them into the file
OUT separated by the byte string DELIM (hex, e.g. 00ff00ff1e1e) for
`kcat -P -D` (the bench; a message must not contain DELIM, checked).
With --confluent ID each message is framed in Confluent's wire format:
magic byte 0, the schema id as 4 bytes big-endian, then the Avro binary.

Avro's binary encoding (https://avro.apache.org/docs/1.11.1/specification/)
is written by hand here for the types the tests use: null, boolean, int,
long, float, double, bytes, string, record, enum, array, map, union, fixed.
Values are JSON: bytes and fixed as strings of code points 0-255 (Avro's JSON
encoding); a union value is null, {"branch type name": value}, or a plain
value, which takes the first branch that is not null; a logical type is
written as its base type (timestamp-millis: a number of milliseconds; decimal:
a string of the unscaled integer, encoded as two's complement).  A record
field missing from the JSON takes the schema's default.
"""
import json
import os
import struct
import sys


def zigzag(n):
    return (n << 1) ^ (n >> 63)


def varint(n):
    u = zigzag(n) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


class Encoder:
    def __init__(self, schema):
        self.names = {}
        self.collect(schema, None)
        self.schema = schema

    def collect(self, t, ns):
        if isinstance(t, list):
            for b in t:
                self.collect(b, ns)
        elif isinstance(t, dict):
            kind = t.get("type")
            if isinstance(kind, (dict, list)):
                self.collect(kind, ns)
            elif kind in ("record", "error", "enum", "fixed"):
                name = t["name"]
                space = t.get("namespace", ns)
                full = name if "." in name or not space else space + "." + name
                self.names[full] = t
                self.names[full.rsplit(".", 1)[-1]] = t
                inner = full.rsplit(".", 1)[0] if "." in full else None
                for f in t.get("fields", []):
                    self.collect(f["type"], inner)
            elif kind == "array":
                self.collect(t["items"], ns)
            elif kind == "map":
                self.collect(t["values"], ns)

    def resolve(self, t):
        while True:
            if isinstance(t, str) and t in self.names:
                t = self.names[t]
            elif isinstance(t, dict) and isinstance(t.get("type"), (dict, list)):
                t = t["type"]
            else:
                return t

    @staticmethod
    def kind(t):
        if isinstance(t, str):
            return t
        if isinstance(t, list):
            return "union"
        return "record" if t["type"] == "error" else t["type"]

    def branch_name(self, t):
        t = self.resolve(t)
        k = self.kind(t)
        return t.get("name", k) if isinstance(t, dict) and k in ("record", "enum", "fixed") else k

    def encode(self, t, v, out):
        t = self.resolve(t)
        k = self.kind(t)
        if k == "null":
            if v is not None:
                raise ValueError("null expected")
        elif k == "boolean":
            out += b"\x01" if v else b"\x00"
        elif k in ("int", "long"):
            if isinstance(t, dict) and t.get("logicalType") == "decimal":
                raise ValueError("decimal on int")
            out += varint(int(v))
        elif k == "float":
            out += struct.pack("<f", float(v))
        elif k == "double":
            out += struct.pack("<d", float(v))
        elif k in ("bytes", "fixed"):
            if isinstance(t, dict) and t.get("logicalType") == "decimal":
                n = int(v)
                size = t["size"] if k == "fixed" else max(1, (n.bit_length() + 8) // 8)
                b = n.to_bytes(size, "big", signed=True)
            else:
                b = v.encode("latin-1") if isinstance(v, str) else bytes(v)
            if k == "bytes":
                out += varint(len(b))
            elif len(b) != t["size"]:
                raise ValueError("fixed of the wrong size")
            out += b
        elif k == "string":
            b = v.encode("utf-8")
            out += varint(len(b)) + b
        elif k == "enum":
            out += varint(t["symbols"].index(v))
        elif k == "array":
            if v:
                out += varint(len(v))
                for x in v:
                    self.encode(t["items"], x, out)
            out += varint(0)
        elif k == "map":
            if v:
                out += varint(len(v))
                for key, x in v.items():
                    kb = key.encode("utf-8")
                    out += varint(len(kb)) + kb
                    self.encode(t["values"], x, out)
            out += varint(0)
        elif k == "union":
            idx = None
            if v is None:
                idx = next(i for i, b in enumerate(t) if self.kind(self.resolve(b)) == "null")
            elif isinstance(v, dict) and len(v) == 1:
                name = next(iter(v))
                for i, b in enumerate(t):
                    if self.branch_name(b) == name:
                        idx, v = i, v[name]
                        break
            if idx is None:
                idx = next(i for i, b in enumerate(t) if self.kind(self.resolve(b)) != "null")
            out += varint(idx)
            self.encode(t[idx], v, out)
        elif k == "record":
            for f in t["fields"]:
                if f["name"] in v:
                    x = v[f["name"]]
                elif "default" in f:
                    x = f["default"]
                else:
                    raise ValueError("field %s missing" % f["name"])
                self.encode(f["type"], x, out)
        else:
            raise ValueError("unsupported type %r" % (t,))


def main(argv):
    args = argv[1:]
    confluent = None
    delim = None
    if "--confluent" in args:
        i = args.index("--confluent")
        confluent = int(args[i + 1])
        del args[i:i + 2]
    if "--delimited" in args:
        i = args.index("--delimited")
        delim = bytes.fromhex(args[i + 1])
        del args[i:i + 2]
    schema_file, out = args
    with open(schema_file) as f:
        enc = Encoder(json.load(f))
    prefix = b"" if confluent is None else b"\x00" + struct.pack(">i", confluent)
    if delim is None:
        os.makedirs(out, exist_ok=True)
    sink = open(out, "wb") if delim is not None else None
    n = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        buf = bytearray(prefix)
        enc.encode(enc.schema, json.loads(line), buf)
        n += 1
        if sink:
            if delim in buf:
                sys.exit("avro_encode.py: message %d contains the delimiter" % n)
            sink.write(bytes(buf) + delim)
        else:
            with open(os.path.join(out, "%06d.avro" % n), "wb") as f:
                f.write(buf)
    if sink:
        sink.close()
    print(n)


if __name__ == "__main__":
    main(sys.argv)
