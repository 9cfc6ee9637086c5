#!/usr/bin/env python3
"""What a cluster operator sees of the device-plugin side's failures (issues 12.2 and 15.6), with
real kubectl against the fake API server and the agent in cluster mode on a generated seed node:

1. An invalid --rdma-shared-config: the NodeState says Failed with the file, field and value in
   lastSyncError, an InvalidRdmaSharedConfig Warning Event is posted; the SR-IOV pool is served.
   Fixing the file (it is watched) brings Succeeded back.
2. The kubelet's PodResources socket is absent while a policy change would re-create a PF's
   VFs: the change is held, NodeState InProgress with the reason naming the kubelet question.
3. Discovery fails (the sysfs tree lacks bus/pci/devices): the reconcile stops early and the
   NodeState says Failed, lastSyncError naming discovery, the tree and the error, instead of
   keeping the previous InProgress; the retry after the tree is back brings InProgress again.
4. The same node under --dry-run: the pending change is planned, not applied; the NodeState
   says InProgress "dry run: N change(s) planned, not applied: ..." naming it, not Succeeded.
Exit 1 on any failure.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import Proc, check, ev, finish  # noqa: E402

# The cluster helpers of the cluster-mode agent test (fake API server + kubectl).
_spec = importlib.util.spec_from_file_location(
    "cluster_tests", os.path.join(HERE, "..", "agent", "run-cluster-tests.py"))
ct = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ct)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(HERE, "..", ".."))

    work = tempfile.mkdtemp(prefix="cluster-reports-")
    sysfs, kdir, state = (os.path.join(work, d) for d in ("sys", "device-plugins", "state"))
    os.makedirs(kdir)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, os.path.join(src, "test/sysfs-gen/gen-sysfs.py"), "--out", sysfs,
         "--profile", "seed", "--manifest"]))
    ice = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens2f0")
    cfg = os.path.join(work, "rdma", "config.json")
    os.makedirs(os.path.dirname(cfg))
    with open(cfg, "w") as f:
        f.write('{"configList": [{"resourceName": "hca", "rdmaHcaMax": -3, '
                '"selectors": {"vendors": ["15b3"]}}]}')

    cluster = ct.Cluster(src, work, args.kubectl)
    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    agent = None
    try:
        cluster.ok("apply", "-f", os.path.join(src, "crds"))
        cluster.ok("apply", "-f", os.path.join(src, "test/kube/namespace.yaml"))
        cluster.ok("apply", "-f", os.path.join(src, "test/fixtures/policies",
                                               "highnet-sriov-policy.yaml"))
        cluster.ok("label", "node", ct.NODE, "highnet-node=true")
        log = open(os.path.join(work, "agent.log"), "w")
        agent = subprocess.Popen(
            [args.agent, "run", "--node-name", ct.NODE, "--kubeconfig", cluster.env["KUBECONFIG"],
             "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--state-dir", state,
             "--devinfo-dir", os.path.join(work, "devinfo"), "--rdma-shared-config", cfg,
             "--pod-resources-socket", os.path.join(work, "no-kubelet", "kubelet.sock"),
             "--vf-timeout", "1", "--resync-interval", "2"], stdout=log, stderr=log)

        # 1. Invalid RDMA shared config.
        ns = ct.wait(ct.sync_status(cluster, "Failed"), 40)
        err = (ns or {}).get("status", {}).get("lastSyncError", "")
        check("bad RDMA config: NodeState Failed, lastSyncError names file, field and value",
              "RDMA shared config not used" in err and cfg in err and "rdmaHcaMax" in err and
              "-3" in err, json.dumps((ns or {}).get("status", {}))[:500])
        out = ct.wait(lambda: (lambda r: r[1] if "InvalidRdmaSharedConfig" in r[1] else None)(
            cluster.run("get", "events", "-n", ct.NS)), 20)
        check("bad RDMA config: InvalidRdmaSharedConfig Event", out is not None, str(out)[-400:])
        check("bad RDMA config: the SR-IOV pool is served",
              kubelet.wait_for(ev("register", ct.SEED_RESOURCE), 10) is not None or
              any(ev("register", ct.SEED_RESOURCE)(e) for e in kubelet.seen))
        with open(cfg + ".tmp", "w") as f:
            f.write('{"configList": [{"resourceName": "hca", "rdmaHcaMax": 1, '
                    '"selectors": {"vendors": ["15b3"]}}]}')
        os.rename(cfg + ".tmp", cfg)
        ns = ct.wait(ct.sync_status(cluster, "Succeeded"), 30)
        check("fixed RDMA config: NodeState Succeeded again", ns is not None,
              json.dumps((cluster.nodestate() or {}).get("status", {}))[:400])

        # 2. The kubelet cannot be asked: a disruptive change is held and reported.
        cluster.ok("apply", "-f", "-",
                   stdin=ct.policy_yaml("e810", "sriov_e810", "ens2f0", ice["numVfs"] + 2))
        ns = ct.wait(ct.sync_status(cluster, "InProgress"), 40)
        err = (ns or {}).get("status", {}).get("lastSyncError", "")
        check("kubelet not reachable: NodeState InProgress, the held change says why",
              "held back" in err and "kubelet could not be asked" in err and
              "no PodResources socket" in err, err or json.dumps(cluster.nodestate())[:400])
        check("kubelet not reachable: sriov_numvfs untouched",
              ct.numvfs(sysfs, ice["pciAddress"]) == str(ice["numVfs"]),
              ct.numvfs(sysfs, ice["pciAddress"]))

        # 3. Discovery fails: the reconcile stops early, the NodeState says so.
        def pcis(ns):
            return [i.get("pciAddress") for i in
                    (ns or {}).get("status", {}).get("interfaces") or []]
        seen = pcis(cluster.nodestate())
        devices = os.path.join(sysfs, "bus", "pci", "devices")
        os.rename(devices, devices + ".away")
        ns = ct.wait(ct.sync_status(cluster, "Failed"), 20)
        err = (ns or {}).get("status", {}).get("lastSyncError", "")
        check("discovery fails: NodeState Failed, lastSyncError names discovery and the error",
              err == "discovery under %s: No such file or directory" % sysfs,
              err or json.dumps((cluster.nodestate() or {}).get("status", {}))[:400])
        check("discovery fails: the interfaces last seen are kept",
              seen and pcis(ns) == seen, "%s, before: %s" % (pcis(ns), seen))
        os.rename(devices + ".away", devices)
        ns = ct.wait(ct.sync_status(cluster, "InProgress"), 20)
        check("discovery back: the retry reports the held change again", ns is not None,
              json.dumps((cluster.nodestate() or {}).get("status", {}))[:400])

        # 4. --dry-run: planned changes are not reported as Succeeded.
        agent.terminate()
        agent.wait(timeout=10)
        agent = subprocess.Popen(
            [args.agent, "run", "--node-name", ct.NODE, "--kubeconfig", cluster.env["KUBECONFIG"],
             "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--state-dir", state,
             "--devinfo-dir", os.path.join(work, "devinfo"), "--dry-run",
             "--pod-resources-socket", "none", "--resync-interval", "2"], stdout=log, stderr=log)

        def dry_run_status():
            st = (cluster.nodestate() or {}).get("status", {})
            return st if st.get("lastSyncError", "").startswith("dry run: ") else None
        st = ct.wait(dry_run_status, 20) or {}
        err = st.get("lastSyncError", "")
        check("dry run: NodeState InProgress naming the planned change, not applied",
              st.get("syncStatus") == "InProgress" and "planned, not applied: " in err and
              "%s (ens2f0): set-num-vfs -> %d" % (ice["pciAddress"], ice["numVfs"] + 2) in err,
              json.dumps(st or (cluster.nodestate() or {}).get("status", {}))[:400])
        check("dry run: sriov_numvfs untouched",
              ct.numvfs(sysfs, ice["pciAddress"]) == str(ice["numVfs"]),
              ct.numvfs(sysfs, ice["pciAddress"]))
    finally:
        if agent:
            agent.terminate()
            agent.wait(timeout=10)
        kubelet.send({"cmd": "quit"})
        kubelet.stop()
        cluster.stop()

    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
