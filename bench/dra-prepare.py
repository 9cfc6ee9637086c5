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
    Unprepare+Prepare rounds, the Prepare timed alone. The API read is included here.
 3. Idle API requests with DRA on: requests the agent sends the API server in 20 s with
    nothing changing and a periodic check every second (slices are written on change only).
"""
import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(SRC, "test", "lib"))
from testlib import Agent, Proc, ev, wait  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "cluster_tests", os.path.join(SRC, "test", "agent", "run-cluster-tests.py"))
ct = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ct)

DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", default=os.path.join(SRC, "build", "gcc"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    args = ap.parse_args()
    b = args.build_dir
    work = tempfile.mkdtemp(prefix="bench-dra-")
    sysfs, root, state, cdi = (os.path.join(work, d) for d in ("sys", "kubelet", "state", "cdi"))
    kdir = os.path.join(root, "device-plugins")
    os.makedirs(kdir)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, os.path.join(SRC, "test/sysfs-gen/gen-sysfs.py"), "--out", sysfs,
         "--profile", "seed", "--manifest"]))
    vf = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")["vfs"][0]
    device = vf["pciAddress"].replace(":", "-").replace(".", "-")
    cluster = ct.Cluster(SRC, work, args.kubectl)
    kubelet = Proc([os.path.join(b, "fake-kubelet"), "--dir", kdir],
                   os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    dra = Proc([os.path.join(b, "go-bin", "fake-dra-kubelet"), "--root", root],
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
                       "--dra-resources", "sriov_highnet", "--log-level", "info"],
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
        firsts = []
        for _ in range(50):
            dra.send({"cmd": "unprepare", "driver": DRIVER, "claims": claim})
            dra.wait_for(ev("unprepare"), 10)
            dra.send({"cmd": "bench-prepare", "driver": DRIVER, "claims": claim, "n": 1})
            firsts.append((dra.wait_for(ev("bench-prepare"), 10) or {}).get("median_us", 0))
        firsts.sort()
        dra.send({"cmd": "bench-prepare", "driver": DRIVER, "claims": claim, "n": args.calls})
        rep = dra.wait_for(ev("bench-prepare"), 600) or {}

        before = cluster.stats()["requests"]
        time.sleep(20)
        idle = cluster.stats()["requests"] - before

        print("| figure | value | target |")
        print("|---|---|---|")
        print("| NodePrepareResources, one VF, prepared claim (no API read), %d calls "
              "| median %.0f µs, p99 %.0f µs | beside Allocate (bench/run row 1) |"
              % (args.calls, rep.get("median_us", -1), rep.get("p99_us", -1)))
        print("| NodePrepareResources, one VF, first time (claim read from the API), 50 calls "
              "| median %.0f µs, p99 %.0f µs | |"
              % (statistics.median(firsts), firsts[int(len(firsts) * 0.99)]))
        print("| API requests in 20 s idle, DRA on, periodic check every 1 s | %d | 0 "
              "(slices on change only) |" % idle)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
