"""A stand-in for the app in server tests: speaks textual-serve's start-up, records how it started.

It writes its arguments to the file named by ATTN_TEST_RECORD, announces
itself, sends one data packet (``ready``), then waits: by default until its
standard input closes; with ``--stubborn`` it ignores its input and SIGTERM
(so only a kill ends it). Either way it exits by itself after 60 seconds, so
nothing outlives a test run.
"""

import json
import os
import signal
import sys
import time

record = os.environ.get("ATTN_TEST_RECORD")
if record:
    with open(record, "w", encoding="utf-8") as file:
        json.dump({"argv": sys.argv[1:], "pid": os.getpid()}, file)

out = sys.stdout.buffer
out.write(b"__GANGLION__\n")
payload = b"ready"
out.write(b"D" + len(payload).to_bytes(4, "big") + payload)
out.flush()

deadline = time.monotonic() + 60
if "--stubborn" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while time.monotonic() < deadline:
        time.sleep(0.1)
else:
    while time.monotonic() < deadline and sys.stdin.buffer.read(1024):
        pass
