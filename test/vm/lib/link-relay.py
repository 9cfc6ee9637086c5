#!/usr/bin/env python3
"""Acts on the host for a scenario: the guest's emulated cable, and the fake API server.

Follows a boot's console log; for each line `@@vm host-set-link ID on|off` it sends
`set_link ID on|off` to QEMU's human monitor on a unix socket (what a cable pull does to the
emulated NIC: the guest driver sees the link go down), and for `@@vm host-flap ID N MS` it
toggles the link N times, MS milliseconds apart, ending in the state it started from (on).
With --api (the fake API server of the e2e and lifecycle boots) also:
  `@@vm host-api-apply FILE...`   creates the objects of YAML files of the repository (--repo)
  `@@vm host-api-post PATH JSON`  POSTs the one-line JSON object to PATH
  `@@vm host-api-delete PATH`     DELETEs PATH
(anonymously: the server is started with --anonymous; an object that exists already is left
as it is). These work while the guest is down (e.g. rebooting), which the guest cannot do itself.
It stops at `@@vm done` or when QEMU (--pid) is gone. The guest sees the result in its own
sysfs (carrier) or through the API server, so no answer travels back; what it did is printed
on stdout (link-relay-PROFILE.out in the run's last-run/).
"""
import argparse
import json
import os
import socket
import time
import urllib.error
import urllib.request


def monitor(path, command):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(command.encode() + b"\n")
    time.sleep(0.05)  # the HMP prompt and echo are not needed
    s.close()


def api(base, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print("api %s %s: %d" % (method, path, r.status), flush=True)
    except urllib.error.HTTPError as e:
        print("api %s %s: %d %s" % (method, path, e.code, e.read()[:200]), flush=True)
    except (OSError, ValueError) as e:
        print("api %s %s: %s" % (method, path, e), flush=True)


def collection(obj):
    """The collection path of a manifest's object (kinds: a plural of its lower-cased name)."""
    group_version = obj["apiVersion"]
    kind = obj["kind"].lower()
    plural = kind[:-1] + "ies" if kind.endswith("y") else kind + "s"
    prefix = "/api/" + group_version if "/" not in group_version else "/apis/" + group_version
    ns = obj.get("metadata", {}).get("namespace")
    return prefix + ("/namespaces/%s" % ns if ns else "") + "/" + plural


def apply_files(base, repo, files):
    import yaml  # python3-yaml (scripts/install-deps); only needed for this action
    for f in files:
        with open(os.path.join(repo, f)) as fh:
            for obj in yaml.safe_load_all(fh):
                if obj:
                    api(base, "POST", collection(obj), obj)


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--monitor", required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--api", help="the fake API server, http://127.0.0.1:PORT")
    ap.add_argument("--repo", help="the repository (host-api-apply's files are relative to it)")
    args = ap.parse_args()
    with open(args.log, "rb") as log:
        pending = b""
        while True:
            chunk = log.read()
            if not chunk:
                if not alive(args.pid):
                    return 0
                time.sleep(0.02)
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace").strip()
                words = line.split()
                if line.startswith("@@vm done"):
                    return 0
                if len(words) == 4 and words[:2] == ["@@vm", "host-set-link"]:
                    monitor(args.monitor, "set_link %s %s" % (words[2], words[3]))
                elif len(words) == 5 and words[:2] == ["@@vm", "host-flap"]:
                    for i in range(int(words[3])):
                        monitor(args.monitor, "set_link %s %s" % (words[2],
                                                                   "off" if i % 2 == 0 else "on"))
                        time.sleep(int(words[4]) / 1000)
                    monitor(args.monitor, "set_link %s on" % words[2])
                elif args.api and len(words) >= 3 and words[1] == "host-api-apply":
                    apply_files(args.api, args.repo, words[2:])
                elif args.api and len(words) >= 4 and words[1] == "host-api-post":
                    api(args.api, "POST", words[2], json.loads(line.split(None, 3)[3]))
                elif args.api and len(words) == 3 and words[1] == "host-api-delete":
                    api(args.api, "DELETE", words[2])


if __name__ == "__main__":
    raise SystemExit(main())
