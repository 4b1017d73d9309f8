#!/usr/bin/env python3
"""A stand-in for Confluent's schema registry, for the tests of the Kafka
source format "avro-confluent" (Debian packages no registry server).

    schema_registry.py [--port N] [--state FILE] [--user USER:PASSWORD] [--fail STATUS]

Serves on 127.0.0.1 (port 0: a free one) and prints "listening on PORT",
then the subset of the registry's REST API that stream_ext and the tests use,
with the JSON the registry itself answers:

    GET  /schemas/ids/{id}                    {"schema": "<schema JSON>"}
    GET  /subjects                            ["subject", ...]
    GET  /subjects/{subject}/versions         [1, 2, ...]
    GET  /subjects/{subject}/versions/{v}     {"subject", "version", "id", "schema"}
                                              (v: a number or "latest")
    POST /subjects/{subject}/versions         body {"schema": "<schema JSON>"}
                                              -> {"id": id}; the same schema
                                              registered again keeps its id
    errors: HTTP 404 {"error_code": 40403, "message": "Schema 7 not found"},
            40401 (subject), 40402 (version); 401 without the credentials
            when --user is given (basic auth, as the registry's own).

Test-only endpoints: GET /_test/requests (how many GET /schemas/ids/ it has
answered, in all and by id), POST /_test/fail {"status": 503} (answer every later request with
that status; 0: stop; --fail STATUS: from the start), POST /_test/redirect
{"location": URL} (answer GET /schemas/ids/ with a redirect to URL + the
path; null: stop).  Schemas are kept in --state FILE (JSON) so that a
registry stopped and started again on the same port still knows them.
"""
import base64
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"schemas": [], "subjects": {}}   # schemas[id-1] = text; subjects[s] = [ids]
COUNTERS = {"ids": 0, "fail": 0, "by_id": {}, "redirect": None}
STATE_FILE = None
AUTH = None


def save():
    if STATE_FILE:
        tmp = STATE_FILE + ".tmp"
        with open(tmp, "w") as f:
            json.dump(STATE, f)
        os.replace(tmp, STATE_FILE)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("registry: " + (fmt % args) + "\n")

    def answer(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def authorized(self):
        if AUTH is None:
            return True
        want = "Basic " + base64.b64encode(AUTH.encode()).decode()
        if self.headers.get("Authorization") == want:
            return True
        self.answer(401, {"error_code": 401, "message": "Unauthorized"})
        return False

    def failing(self):
        if COUNTERS["fail"] and not self.path.startswith("/_test/"):
            self.answer(COUNTERS["fail"], {"error_code": COUNTERS["fail"] * 100,
                                           "message": "failing on request"})
            return True
        return False

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def do_GET(self):
        if self.failing() or not self.authorized():
            return
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        with LOCK:
            if parts == ["_test", "requests"]:
                return self.answer(200, {"ids": COUNTERS["ids"], "by_id": COUNTERS["by_id"]})
            if len(parts) == 3 and parts[:2] == ["schemas", "ids"]:
                COUNTERS["ids"] += 1
                COUNTERS["by_id"][parts[2]] = COUNTERS["by_id"].get(parts[2], 0) + 1
                try:
                    i = int(parts[2])
                except ValueError:
                    i = 0
                if COUNTERS["redirect"]:
                    self.send_response(302)
                    self.send_header("Location", COUNTERS["redirect"] + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if 1 <= i <= len(STATE["schemas"]):
                    return self.answer(200, {"schema": STATE["schemas"][i - 1]})
                return self.answer(404, {"error_code": 40403,
                                         "message": "Schema %s not found" % parts[2]})
            if parts == ["subjects"]:
                return self.answer(200, sorted(STATE["subjects"]))
            if len(parts) >= 3 and parts[0] == "subjects" and parts[2] == "versions":
                ids = STATE["subjects"].get(parts[1])
                if ids is None:
                    return self.answer(404, {"error_code": 40401,
                                             "message": "Subject '%s' not found." % parts[1]})
                if len(parts) == 3:
                    return self.answer(200, list(range(1, len(ids) + 1)))
                v = len(ids) if parts[3] == "latest" else (int(parts[3]) if parts[3].isdigit() else 0)
                if not 1 <= v <= len(ids):
                    return self.answer(404, {"error_code": 40402,
                                             "message": "Version %s not found." % parts[3]})
                i = ids[v - 1]
                return self.answer(200, {"subject": parts[1], "version": v, "id": i,
                                         "schema": STATE["schemas"][i - 1]})
        self.answer(404, {"error_code": 404, "message": "HTTP 404 Not Found"})

    def do_POST(self):
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        if parts == ["_test", "redirect"]:
            COUNTERS["redirect"] = self.body().get("location")
            return self.answer(200, {"redirect": COUNTERS["redirect"]})
        if parts == ["_test", "fail"]:
            COUNTERS["fail"] = int(self.body().get("status", 0))
            return self.answer(200, {"fail": COUNTERS["fail"]})
        if self.failing() or not self.authorized():
            return
        if len(parts) == 3 and parts[0] == "subjects" and parts[2] == "versions":
            text = self.body()["schema"]
            # the registry compares schemas in canonical form; normalized JSON is close enough here
            canon = json.dumps(json.loads(text), sort_keys=True)
            with LOCK:
                i = next((k + 1 for k, s in enumerate(STATE["schemas"])
                          if json.dumps(json.loads(s), sort_keys=True) == canon), None)
                if i is None:
                    STATE["schemas"].append(text)
                    i = len(STATE["schemas"])
                ids = STATE["subjects"].setdefault(parts[1], [])
                if i not in ids:
                    ids.append(i)
                save()
            return self.answer(200, {"id": i})
        self.answer(404, {"error_code": 404, "message": "HTTP 404 Not Found"})


def main(argv):
    global STATE_FILE, AUTH
    port = 0
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--port":
            port = int(args.pop(0))
        elif a == "--state":
            STATE_FILE = args.pop(0)
        elif a == "--user":
            AUTH = args.pop(0)
        elif a == "--fail":
            COUNTERS["fail"] = int(args.pop(0))
        else:
            sys.exit("usage: schema_registry.py [--port N] [--state FILE] [--user USER:PASSWORD] [--fail STATUS]")
    if STATE_FILE and os.path.exists(STATE_FILE):
        with open(STATE_FILE) as f:
            STATE.update(json.load(f))
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("listening on %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv)
