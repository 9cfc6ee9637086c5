"""Shared helpers for the Python integration drivers: checks that print PASS/FAIL, and child
processes whose stdout lines (JSON or text) are queued for waiting with a deadline."""
import json
import queue
import subprocess
import threading
import time

FAILURES = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail), flush=True)
    if not ok:
        FAILURES.append(name)
    return ok


class Proc:
    """A child whose stdout lines are queued (parsed as JSON when they are JSON)."""

    def __init__(self, argv, stderr_path):
        self.err = open(stderr_path, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True, bufsize=1)
        self.q = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            line = line.strip()
            try:
                self.q.put(json.loads(line))
            except ValueError:
                self.q.put(line)
        self.q.put(None)

    def send(self, obj):
        self.p.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        self.p.stdin.flush()

    def wait_for(self, pred, timeout=5.0):
        """First queued item matching pred (items before it are kept in self.seen)."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            try:
                item = self.q.get(timeout=left)
            except queue.Empty:
                return None
            if item is None:
                return None
            self.seen.append(item)
            if pred(item):
                return item

    def stop(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err.close()


def ev(kind, resource=None):
    return lambda e: isinstance(e, dict) and e.get("event") == kind and \
        (resource is None or e.get("resource") == resource)
