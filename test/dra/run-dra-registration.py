#!/usr/bin/env python3
"""DRA registration test: the C DRA plugin (dra-harness) against the grpc-go fake DRA kubelet.

What the kubelet's plugin watcher and DRA manager do, checked from the kubelet's side: the
plugin is found in plugins_registry, GetInfo names type DRAPlugin, the driver, the endpoint
<root>/plugins/<driver>/dra.sock and both service versions, the kubelet dials the endpoint and
reports the registration, and NodePrepareResources/NodeUnprepareResources answer claim by claim
over the version under test (--api). Then: the same claims again (idempotent), a claim the
node has no allocation for (an error in its entry, the others still served), a restarted
kubelet, a registration socket removed under the plugin, and a restarted plugin. Between them,
400 hostile clients on the two sockets (silent, half a preface, half a frame), then gone.
"""
import argparse
import json
import os
import signal
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import Proc, check, finish  # noqa: E402

DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"


def ev(kind, **fields):
    return lambda e: isinstance(e, dict) and e.get("event") == kind and \
        all(e.get(k) == v for k, v in fields.items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--api", default="v1")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="dra-reg-")
    root = os.path.join(work, "kubelet")
    reg_sock = os.path.join(root, "plugins_registry", DRIVER + "-reg.sock")
    endpoint = os.path.join(root, "plugins", DRIVER, "dra.sock")
    alloc = {
        "uid-a": [{"request": "nic", "pool": "node-a", "device": "pci-0000-3b-00-2",
                   "cdi": [DRIVER + "/vf=pci-0000-3b-00-2"]}],
        "uid-b": [{"request": "nic", "pool": "node-a", "device": "pci-0000-3b-00-3",
                   "cdi": [DRIVER + "/vf=pci-0000-3b-00-3"]},
                  {"request": "nic2", "pool": "node-a", "device": "pci-0000-af-00-2",
                   "cdi": [DRIVER + "/vf=pci-0000-af-00-2"]}],
    }
    alloc_path = os.path.join(work, "allocations.json")
    with open(alloc_path, "w") as f:
        json.dump(alloc, f)

    def start_plugin(n):
        p = Proc([args.harness, "--kubelet-root", root, "--allocations", alloc_path],
                 os.path.join(work, "harness-%d.log" % n))
        check("plugin %d serving" % n, p.wait_for(lambda e: e == "ready", 10) is not None)
        return p

    kubelet = Proc([args.fake_kubelet, "--root", root, "--api", args.api],
                   os.path.join(work, "kubelet.log"))
    check("fake kubelet ready", kubelet.wait_for(ev("ready"), 10) is not None)
    plugin = start_plugin(1)

    reg = kubelet.wait_for(ev("register"), 10)
    check("kubelet registered the driver", reg is not None and reg.get("code") == "OK",
          json.dumps(reg))
    reg = reg or {}
    check("GetInfo type", reg.get("type") == "DRAPlugin", str(reg.get("type")))
    check("GetInfo driver name", reg.get("driver") == DRIVER, str(reg.get("driver")))
    check("GetInfo endpoint", reg.get("endpoint") == endpoint, str(reg.get("endpoint")))
    check("GetInfo versions", sorted(reg.get("versions") or []) ==
          ["v1.DRAPlugin", "v1beta1.DRAPlugin"], str(reg.get("versions")))
    check("registration socket in plugins_registry", reg.get("socket") == reg_sock,
          str(reg.get("socket")))

    def expected(uid):
        return sorted((d["pool"], d["device"], tuple(d["cdi"]), (d["request"],))
                      for d in alloc[uid])

    def got(answer, uid):
        devs = ((answer or {}).get("claims") or {}).get(uid, {}).get("devices") or []
        return sorted((d["pool"], d["device"], tuple(d["cdi"] or []), tuple(d["requests"] or []))
                      for d in devs)

    claims = [{"namespace": "team", "name": "gpu-nic", "uid": "uid-a"},
              {"namespace": "team", "name": "two-nics", "uid": "uid-b"}]
    for attempt in (1, 2):  # the kubelet repeats Prepare after its own restart: same answer
        kubelet.send({"cmd": "prepare", "driver": DRIVER, "claims": claims})
        ans = kubelet.wait_for(ev("prepare"), 10)
        check("prepare #%d over %s: call OK" % (attempt, args.api),
              ans is not None and ans.get("code") == "OK" and ans.get("api") == args.api,
              json.dumps(ans))
        for uid in ("uid-a", "uid-b"):
            check("prepare #%d: devices and CDI IDs of %s" % (attempt, uid),
                  got(ans, uid) == expected(uid), "%s != %s" % (got(ans, uid), expected(uid)))

    kubelet.send({"cmd": "prepare", "driver": DRIVER, "claims": [
        {"namespace": "team", "name": "gone", "uid": "uid-gone"}, claims[0]]})
    ans = kubelet.wait_for(ev("prepare"), 10) or {}
    entry = (ans.get("claims") or {}).get("uid-gone") or {}
    check("unknown claim: call still OK", ans.get("code") == "OK", json.dumps(ans))
    check("unknown claim: error in its entry naming it",
          "team/gone" in (entry.get("error") or "") and not entry.get("devices"),
          json.dumps(entry))
    check("unknown claim: the other claim still prepared", got(ans, "uid-a") == expected("uid-a"))

    for attempt in (1, 2):
        kubelet.send({"cmd": "unprepare", "driver": DRIVER, "claims": claims})
        ans = kubelet.wait_for(ev("unprepare"), 10) or {}
        errs = {u: c.get("error") for u, c in (ans.get("claims") or {}).items()}
        check("unprepare #%d: every claim answered without error" % attempt,
              ans.get("code") == "OK" and errs == {"uid-a": "", "uid-b": ""}, json.dumps(ans))

    # Hostile clients on both sockets (root on the node: nobody else can open them): 200 each,
    # far over the server's 64 connections, that send nothing, half the HTTP/2 preface, or the
    # preface and half a frame, held together, then gone. The kubelet's own connection is
    # served meanwhile, and the restarted kubelet below connects anew after them.
    held = []
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    halves = (b"", preface[:10], preface + b"\x00\x00\x40\x04\x00\x00\x00\x00\x00")
    for path in (endpoint, reg_sock):
        for i in range(200):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            try:
                s.connect(path)
                if halves[i % 3]:
                    s.send(halves[i % 3])
            except OSError:
                pass  # a client over the limit is closed by the server at once
            held.append(s)
    time.sleep(0.5)
    kubelet.send({"cmd": "prepare", "driver": DRIVER, "claims": claims[:1]})
    ans = kubelet.wait_for(ev("prepare"), 10) or {}
    check("prepare while 400 hostile clients hold the sockets: answered",
          ans.get("code") == "OK" and got(ans, "uid-a") == expected("uid-a"), json.dumps(ans))
    for s in held:
        s.close()
    check("plugin still running after the hostile clients", plugin.p.poll() is None)

    # A restarted kubelet finds the socket again and registers the driver anew.
    kubelet.send({"cmd": "restart"})
    check("kubelet restart", kubelet.wait_for(ev("restart"), 5) is not None)
    reg = kubelet.wait_for(ev("register"), 10)
    check("re-registered after a kubelet restart", reg is not None and reg.get("code") == "OK",
          json.dumps(reg))

    # The registration socket removed under the plugin: served anew, registered again.
    t0 = time.monotonic()
    os.remove(reg_sock)
    reg = kubelet.wait_for(ev("register"), 10)
    check("registration socket served anew after removal",
          reg is not None and reg.get("code") == "OK", json.dumps(reg))
    print("re-registration after removal: %.0f ms" % ((time.monotonic() - t0) * 1000))

    # The plugin restarts: its sockets go (the kubelet deregisters), then come back.
    plugin.p.send_signal(signal.SIGTERM)
    plugin.p.wait(timeout=10)
    plugin.stop()
    check("plugin removed its sockets on stop",
          not os.path.exists(reg_sock) and not os.path.exists(endpoint))
    check("kubelet deregistered the stopped plugin",
          kubelet.wait_for(ev("deregister", driver=DRIVER), 5) is not None)
    kubelet.send({"cmd": "prepare", "driver": DRIVER, "claims": claims[:1]})
    ans = kubelet.wait_for(ev("prepare"), 10) or {}
    check("no Prepare while the plugin is away", ans.get("code") == "NoDriver", json.dumps(ans))
    plugin = start_plugin(2)
    reg = kubelet.wait_for(ev("register"), 10)
    check("registered again after a plugin restart", reg is not None and reg.get("code") == "OK",
          json.dumps(reg))
    kubelet.send({"cmd": "prepare", "driver": DRIVER, "claims": claims[:1]})
    ans = kubelet.wait_for(ev("prepare"), 10)
    check("prepare after the plugin restart", got(ans, "uid-a") == expected("uid-a"),
          json.dumps(ans))

    kubelet.send({"cmd": "quit"})
    kubelet.stop()
    plugin.stop()
    with open(os.path.join(work, "harness-1.log")) as f:
        log = f.read()
    check("plugin logged the kubelet's registration status",
          "registered with the kubelet" in log, "see harness-1.log")
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
