#!/usr/bin/env python3
"""bench/dra-prepare.py: the DRA driver's figures, on this machine, with the fakes.

    bench/dra-prepare.py --build-dir build/gcc [--calls N]

The agent (`sriov-agent run`, cluster mode, --dra-resources) on a generated seed node, the fake
API server set up with kubectl, the fake DRA kubelet (grpc-go) as the caller:
 1. NodePrepareResources of a one-VF claim already prepared (answered from the agent's record:
    no API read, the CDI spec checked): median and p99 of N sequential calls (default 2000).
    The device plugin's Allocate figure to compare with is bench/run's row 1.
 2. NodePrepareResources of a one-VF claim not yet prepared (the ResourceClaim read from the
    fake API server on loopback, the CDI spec and the record written): median and p99 of 50
    Unprepare+Prepare rounds, the Prepare timed alone. The API read is included here; the
    next row takes it out: per round, the call's time minus the read's as the agent's debug
    log times it (from the request's start to the claim's arrival), and the agent's own
    time from the claim's arrival to the CDI spec and the record written.
 3. Idle API requests with DRA on: requests the agent sends the API server in 20 s with
    nothing changing and a periodic check every second (slices are written on change only, and
    checked every 4 s with a list from the watch cache), from the fake's request log: those to
    resource.k8s.io, and what the others are (the lone agent holds the
    NetworkAttachmentDefinition Lease, so it renews it).
 4. Ready to published: a VF's netdev is missing (the VF is not ready, so not in the slice),
    then appears; the time until the node's ResourceSlice on the fake API server lists it
    (polled every 5 ms over loopback). A generated tree has no netlink, so the agent is told
    with SIGHUP when the netdev appears (on a node a link event does this): median and max of
    4; and with no trigger, by the periodic check every second: max of 2.
 5. Slices back after a kubelet restart: the fake DRA kubelet restarts as the kubelet does
    (deletes every ResourceSlice of the node, registers the driver again); the time from its
    wipe until the slice lists every device again: median and max of 3.
bench/run runs this as its section 13 (measure() gives the rows).
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "lib"))
from testlib import Agent, Proc, ev, wait  # noqa: E402
import fakecluster as ct  # noqa: E402

DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"


def slice_devices(port):
    """The device names of every ResourceSlice on the fake API server (anonymous admin)."""
    url = "http://127.0.0.1:%d/apis/resource.k8s.io/v1/resourceslices" % port
    with urllib.request.urlopen(url, timeout=5) as r:
        items = json.load(r).get("items") or []
    return {d["name"] for s in items for d in s["spec"].get("devices") or []}


def measure(b, calls=2000, kubectl=None):
    """The rows (what, figure, target, met or None) of the five figures."""
    kubectl = kubectl or shutil.which("kubectl") or "kubectl"
    work = tempfile.mkdtemp(prefix="bench-dra-")
    sysfs, root, state, cdi = (os.path.join(work, d) for d in ("sys", "kubelet", "state", "cdi"))
    kdir = os.path.join(root, "device-plugins")
    os.makedirs(kdir)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, os.path.join(SRC, "test/sysfs-gen/gen-sysfs.py"), "--out", sysfs,
         "--profile", "seed", "--manifest"]))
    vfs = sorted(next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")["vfs"],
                 key=lambda v: v["index"])
    vf = vfs[0]
    device = vf["pciAddress"].replace(":", "-").replace(".", "-")
    # 4.'s VFs: not ready (no netdev) until the measurement shows them.
    aside = os.path.join(work, "aside")
    os.makedirs(aside)
    probes = []
    for v in vfs[-6:]:
        netdev = os.path.join(sysfs, "bus/pci/devices", v["pciAddress"], "net", v["ifname"])
        os.rename(netdev, os.path.join(aside, v["ifname"]))
        probes.append((v["pciAddress"].replace(":", "-").replace(".", "-"), netdev,
                       os.path.join(aside, v["ifname"])))
    cluster = ct.Cluster(SRC, work, kubectl)
    kubelet = Proc([os.path.join(b, "fake-kubelet"), "--dir", kdir],
                   os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    # with the API server, it wipes the node's slices at each (re)start, as the kubelet does
    dra = Proc([os.path.join(b, "go-bin", "fake-dra-kubelet"), "--root", root,
                "--apiserver", "http://127.0.0.1:%d" % cluster.port, "--node", ct.NODE],
               os.path.join(work, "dra.err"))
    dra.wait_for(ev("ready"), 10)
    agent = None
    try:
        for f in ("crds", "test/kube/namespace.yaml", "manifests/10-serviceaccount.yaml",
                  "manifests/20-rbac.yaml", "test/fixtures/policies/highnet-sriov-policy.yaml"):
            cluster.ok("apply", "-f", os.path.join(SRC, f))
        cluster.ok("label", "node", ct.NODE, "highnet-node=true")
        agent = Agent(os.path.join(b, "sriov-agent"),
                      ["--node-name", ct.NODE, "--kubeconfig", cluster.agent_kubeconfig,
                       "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--kubelet-root", root,
                       "--cdi-root", cdi, "--state-dir", state,
                       "--devinfo-dir", os.path.join(work, "devinfo"),
                       "--pod-resources-socket", "none", "--resync-interval", "1",
                       "--dra-resources", "sriov_highnet", "--log-level", "debug"],
                      os.path.join(work, "agent.log"))
        dra.wait_for(lambda e: ev("register")(e) and e.get("code") == "OK", 20)
        wait(lambda: "sriov-agent-0" in cluster.run("get", "resourceslices")[1], 30)
        cluster.ok("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "one-vf", "namespace": ct.NS},
            "spec": {"devices": {"requests": [
                {"name": "nic", "exactly": {"deviceClassName": "sriov-vf"}}]}}}))
        cluster.ok("patch", "resourceclaim", "one-vf", "-n", ct.NS, "--subresource=status",
                   "--type=merge", "-p", json.dumps({"status": {"allocation": {"devices": {
                       "results": [{"request": "nic", "driver": DRIVER, "pool": ct.NODE,
                                    "device": device}]}}}}))
        uid = json.loads(cluster.run("get", "resourceclaim", "one-vf", "-n", ct.NS, "-o",
                                     "json")[1])["metadata"]["uid"]
        claim = [{"namespace": ct.NS, "name": "one-vf", "uid": uid}]

        # 2 first (each round starts unprepared), then 1 on the prepared claim.
        firsts, no_read, own = [], [], []
        timing = re.compile(r"read in (\d+) us, then prepared \(CDI spec and record written\) "
                            r"in (\d+) us")
        for _ in range(50):
            dra.send({"cmd": "unprepare", "driver": DRIVER, "claims": claim})
            dra.wait_for(ev("unprepare"), 10)
            since = len(agent.text())
            dra.send({"cmd": "bench-prepare", "driver": DRIVER, "claims": claim, "n": 1})
            total = (dra.wait_for(ev("bench-prepare"), 10) or {}).get("median_us", 0)
            firsts.append(total)
            m = wait(lambda: timing.search(agent.text()[since:]), 5)
            if not m:
                raise RuntimeError("no Prepare timing in the agent's log %s" % agent.log)
            no_read.append(total - int(m.group(1)))
            own.append(int(m.group(2)))
        for x in (firsts, no_read, own):
            x.sort()
        dra.send({"cmd": "bench-prepare", "driver": DRIVER, "claims": claim, "n": calls})
        rep = dra.wait_for(ev("bench-prepare"), 600) or {}

        cluster.faults(clear_requests=True)
        time.sleep(20)
        with urllib.request.urlopen("http://127.0.0.1:%d/_fake/requests" % cluster.port,
                                    timeout=5) as r:
            log = json.load(r)["requests"]
        idle = len(log)
        dra_idle = sum(1 for e in log if "/resource.k8s.io/" in e[2])
        # the slices' check: a list from the watch cache every 4 s; never a write when idle
        dra_writes = sum(1 for e in log if "/resource.k8s.io/" in e[2] and e[1] != "GET")
        dra_cached = sum(1 for e in log if "/resource.k8s.io/" in e[2] and e[1] == "GET" and
                         "resourceVersion=0" in e[2])
        kind = re.compile(r"/(?:api|apis/[^/]+)/v[^/]+/(?:namespaces/[^/]+/)?([^/?]+)")
        others = sorted({"%s %s" % (e[1], (kind.search(e[2]) or [None, e[2]])[1])
                         for e in log if "/resource.k8s.io/" not in e[2]})

        def ready_to_published(trigger):
            name, netdev, hidden = probes.pop(0)
            time.sleep(0.3)  # a quiet moment, as between two link changes
            start = time.monotonic()
            os.rename(hidden, netdev)
            if trigger:
                agent.p.send_signal(signal.SIGHUP)
            while time.monotonic() - start < 10:
                if name in slice_devices(cluster.port):
                    return (time.monotonic() - start) * 1000
                time.sleep(0.005)
            raise RuntimeError("%s never published (log %s)" % (name, agent.log))
        hup = sorted(ready_to_published(True) for _ in range(4))
        periodic = [ready_to_published(False) for _ in range(2)]

        def back_after_wipe():
            """A kubelet restart: it wipes the node's slices and registers the driver again;
            the time from the wipe to every device published again."""
            want = slice_devices(cluster.port)
            dra.send({"cmd": "restart"})
            wiped = dra.wait_for(
                lambda e: ev("wipe")(e) and e.get("why") == "kubelet start", 10) or {}
            if wiped.get("code") != "OK":
                raise RuntimeError("the fake DRA kubelet did not wipe the slices: %s" % wiped)
            start = time.monotonic()
            while time.monotonic() - start < 30:
                if slice_devices(cluster.port) == want:
                    return (time.monotonic() - start) * 1000
                time.sleep(0.005)
            raise RuntimeError("slices not back 30 s after the wipe (log %s)" % agent.log)
        wipes = sorted(back_after_wipe() for _ in range(3))

        return [
            ("NodePrepareResources, one VF, prepared claim (no API read), %d calls" % calls,
             "median %.0f µs, p99 %.0f µs" % (rep.get("median_us", -1), rep.get("p99_us", -1)),
             "beside Allocate (row 1)", None),
            ("NodePrepareResources, one VF, first time (claim read from the API), 50 calls",
             "median %.0f µs, p99 %.0f µs" % (statistics.median(firsts),
                                              firsts[int(len(firsts) * 0.99)]), "", None),
            ("NodePrepareResources, one VF, first time, excluding the API read (the call "
             "minus the claim's read), 50 calls; the agent's own part (CDI spec and record "
             "written)",
             "median %.0f µs, p99 %.0f µs; median %.0f µs, p99 %.0f µs" % (
                 statistics.median(no_read), no_read[int(len(no_read) * 0.99)],
                 statistics.median(own), own[int(len(own) * 0.99)]),
             "beside Allocate (row 1)", None),
            ("API requests in 20 s idle, DRA on, periodic check every 1 s: resource.k8s.io "
             "(of them lists from the watch cache; writes) (all; the others)",
             "%d (%d; %d) (%d; %s)" % (dra_idle, dra_cached, dra_writes, idle,
                                       ", ".join(others) or "none"),
             "<= 6 watch-cache lists (the slices' check every 4 s), 0 writes",
             dra_writes == 0 and dra_idle == dra_cached and dra_cached <= 6),
            ("VF ready -> in the ResourceSlice, netdev appears + SIGHUP, median of 4 (max)",
             "%.0f ms (%.0f)" % (statistics.median(hup), hup[-1]), "<= 1 s", hup[-1] <= 1000),
            ("VF ready -> in the ResourceSlice, no trigger, --resync-interval 1 (max of 2)",
             "%.0f ms" % max(periodic), "<= 1 s + the interval", max(periodic) <= 2000),
            ("ResourceSlices back after a kubelet restart wiped them, median of 3 (max)",
             "%.0f ms (%.0f)" % (statistics.median(wipes), wipes[-1]), "<= 5 s",
             wipes[-1] <= 5000),
        ]
    finally:
        if agent:
            agent.stop()
        kubelet.send({"cmd": "quit"})
        kubelet.stop()
        dra.send({"cmd": "quit"})
        dra.stop()
        cluster.stop()
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(SRC, "build", "gcc"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    args = ap.parse_args()
    rows = measure(args.build_dir, args.calls, args.kubectl)
    print("| figure | value | target | |")
    print("|---|---|---|---|")
    for what, figure, target, ok in rows:
        print("| %s | %s | %s | %s |" % (what, figure, target,
                                         "" if ok is None else "met" if ok else "MISSED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
