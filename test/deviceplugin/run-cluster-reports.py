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
5. Changes left after the apply rounds (agent/reconcile.c, agent/daemon.c): an MTU policy on
   ens2f0 whose changes the apply accepts every round while the node does not show them yet.
   The NodeState says InProgress "5 changes left after the apply rounds, applying again: ..."
   naming them, the journal "reconciling again in 1 s", then 2 s (the retry backoff, not the
   periodic check: that is 300 s here); once the node shows the new MTUs, the next retry
   converges and the NodeState says Succeeded with lastSyncError "". On a generated tree the
   MTU changes go by netlink to the kernel, so this case needs links of the tree's names: the
   script runs itself in a private network namespace (`unshare -n`, root) with veth links
   named ens2f0 and as its VFs there; the netlink calls succeed while the tree, which
   discovery reads, keeps MTU 1500 until the test writes 9000 into it (the node "catching up",
   as a driver finishing an MTU change late would). Without root, unshare or veth links the
   case is skipped.
Exit 1 on any failure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import Proc, check, ev, finish, private_netns, seed_sysfs, wait  # noqa: E402
import fakecluster as ct  # noqa: E402


# Set in the copy of this script that runs in its own network namespace (case 5); only
# loopback and unix sockets are used, so cases 1-4 run the same either way.
NETNS_MARK = "CLUSTER_REPORTS_NETNS"


def link_mtu(name):
    out = subprocess.run(["ip", "-j", "link", "show", "dev", name], capture_output=True,
                         text=True)
    return json.loads(out.stdout)[0].get("mtu") if out.returncode == 0 else None


def main():
    netns = private_netns(NETNS_MARK)
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(HERE, "..", ".."))

    work = tempfile.mkdtemp(prefix="cluster-reports-")
    sysfs, kdir, state = (os.path.join(work, d) for d in ("sys", "device-plugins", "state"))
    os.makedirs(kdir)
    manifest = seed_sysfs(src, sysfs)
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
        cluster.seed(serviceaccount=False, rbac=False)
        log = open(os.path.join(work, "agent.log"), "w")
        agent = subprocess.Popen(
            [args.agent, "run", "--node-name", ct.NODE, "--kubeconfig", cluster.env["KUBECONFIG"],
             "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--state-dir", state,
             "--devinfo-dir", os.path.join(work, "devinfo"), "--rdma-shared-config", cfg,
             "--pod-resources-socket", os.path.join(work, "no-kubelet", "kubelet.sock"),
             "--vf-timeout", "1", "--resync-interval", "2"], stdout=log, stderr=log)

        # 1. Invalid RDMA shared config.
        ns = wait(ct.sync_status(cluster, "Failed"), 40)
        err = (ns or {}).get("status", {}).get("lastSyncError", "")
        check("bad RDMA config: NodeState Failed, lastSyncError names file, field and value",
              "RDMA shared config not used" in err and cfg in err and "rdmaHcaMax" in err and
              "-3" in err, json.dumps((ns or {}).get("status", {}))[:500])
        out = wait(lambda: (lambda r: r[1] if "InvalidRdmaSharedConfig" in r[1] else None)(
            cluster.run("get", "events", "-n", ct.NS)), 20)
        check("bad RDMA config: InvalidRdmaSharedConfig Event", out is not None, str(out)[-400:])
        check("bad RDMA config: the SR-IOV pool is served",
              kubelet.wait_for(ev("register", ct.SEED_RESOURCE), 10) is not None or
              any(ev("register", ct.SEED_RESOURCE)(e) for e in kubelet.seen))
        with open(cfg + ".tmp", "w") as f:
            f.write('{"configList": [{"resourceName": "hca", "rdmaHcaMax": 1, '
                    '"selectors": {"vendors": ["15b3"]}}]}')
        os.rename(cfg + ".tmp", cfg)
        ns = wait(ct.sync_status(cluster, "Succeeded"), 30)
        check("fixed RDMA config: NodeState Succeeded again", ns is not None,
              json.dumps((cluster.nodestate() or {}).get("status", {}))[:400])

        # 2. The kubelet cannot be asked: a disruptive change is held and reported.
        cluster.ok("apply", "-f", "-",
                   stdin=ct.policy_yaml("e810", "sriov_e810", "ens2f0", ice["numVfs"] + 2))
        ns = wait(ct.sync_status(cluster, "InProgress"), 40)
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
        ns = wait(ct.sync_status(cluster, "Failed"), 20)
        err = (ns or {}).get("status", {}).get("lastSyncError", "")
        check("discovery fails: NodeState Failed, lastSyncError names discovery and the error",
              err == "discovery under %s: No such file or directory" % sysfs,
              err or json.dumps((cluster.nodestate() or {}).get("status", {}))[:400])
        check("discovery fails: the interfaces last seen are kept",
              seen and pcis(ns) == seen, "%s, before: %s" % (pcis(ns), seen))
        os.rename(devices + ".away", devices)
        ns = wait(ct.sync_status(cluster, "InProgress"), 20)
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
        st = wait(dry_run_status, 20) or {}
        err = st.get("lastSyncError", "")
        check("dry run: NodeState InProgress naming the planned change, not applied",
              st.get("syncStatus") == "InProgress" and "planned, not applied: " in err and
              "%s (ens2f0): set-num-vfs -> %d" % (ice["pciAddress"], ice["numVfs"] + 2) in err,
              json.dumps(st or (cluster.nodestate() or {}).get("status", {}))[:400])
        check("dry run: sriov_numvfs untouched",
              ct.numvfs(sysfs, ice["pciAddress"]) == str(ice["numVfs"]),
              ct.numvfs(sysfs, ice["pciAddress"]))

        # 5. Changes left after the apply rounds: InProgress, the retry backoff, Succeeded.
        agent.terminate()
        agent.wait(timeout=10)
        agent = None
        if not netns:
            print("SKIP changes left after the apply rounds: needs root and unshare -n for "
                  "links named as the tree's netdevs", flush=True)
        elif not add_links(ice):
            print("SKIP changes left after the apply rounds: cannot add veth links", flush=True)
        else:
            agent = changes_left(args, cluster, kubelet, sysfs, kdir, state, work, ice)
    finally:
        if agent:
            agent.terminate()
            agent.wait(timeout=10)
        kubelet.send({"cmd": "quit"})
        kubelet.stop()
        cluster.stop()

    return finish(work)


def netdev_names(pf):
    return [pf["ifname"]] + [vf["ifname"] for vf in pf["vfs"]]


def add_links(pf):
    """Links named as the PF's and its VFs' netdevs, MTU 1500 as in the tree: veth pairs (the
    dummy module is not in every kernel). False when the kernel refuses."""
    names = netdev_names(pf)
    ends = names + ([] if len(names) % 2 == 0 else ["left-spare"])
    for a, b in zip(ends[0::2], ends[1::2]):
        if subprocess.run(["ip", "link", "add", "name", a, "type", "veth", "peer", "name", b],
                          capture_output=True).returncode != 0:
            return False
    return True


def changes_left(args, cluster, kubelet, sysfs, kdir, state, work, ice):
    """Case 5; returns the agent it started (the caller stops it)."""
    pf = ice["ifname"]
    names = netdev_names(ice)
    policy = json.loads(ct.policy_yaml("e810", "sriov_e810", pf, ice["numVfs"]))
    policy["spec"]["mtu"] = 9000
    cluster.ok("apply", "-f", "-", stdin=json.dumps(policy))
    log_path = os.path.join(work, "agent-left.log")
    kubelet.wait_for(lambda e: False, 1)  # what the earlier agents' pools said is not looked at
    mark = len(kubelet.seen)
    # --resync-interval 300: only the retry backoff can bring the next reconcile in time.
    agent = subprocess.Popen(
        [args.agent, "run", "--node-name", ct.NODE, "--kubeconfig", cluster.env["KUBECONFIG"],
         "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--state-dir", state,
         "--devinfo-dir", os.path.join(work, "devinfo"), "--pod-resources-socket", "none",
         "--resync-interval", "300"], stdout=open(log_path, "w"), stderr=subprocess.STDOUT)

    def log():
        with open(log_path) as f:
            return f.read()

    def left_status():
        st = (cluster.nodestate() or {}).get("status", {})
        return st if " left after the apply rounds" in st.get("lastSyncError", "") else None
    st = wait(left_status, 20) or {}
    err = st.get("lastSyncError", "")
    want = "5 changes left after the apply rounds, applying again: " + ", ".join(
        ["%s (%s): set-pf-mtu -> 9000" % (ice["pciAddress"], pf)] +
        ["%s (%s): set-vf-mtu vf %d -> 9000" % (ice["pciAddress"], pf, i) for i in range(3)] +
        ["and 1 more"])
    check("changes left: NodeState InProgress naming the changes still due",
          st.get("syncStatus") == "InProgress" and err == want,
          "%s\nwanted: %s" % (
              json.dumps(st or (cluster.nodestate() or {}).get("status", {}))[:600], want))
    check("changes left: the apply did change the links (netlink)",
          all(link_mtu(n) == 9000 for n in names), str([link_mtu(n) for n in names]))
    line = "5 change(s) left after the apply rounds; reconciling again in %d s"
    retried = wait(lambda: line % 2 in log(), 15)
    check("changes left: retried through the backoff (journal: again in 1 s, then in 2 s)",
          retried and line % 1 in log() and log().index(line % 1) < log().index(line % 2),
          log()[-1500:])
    check("changes left: still InProgress while the node does not show them",
          (cluster.nodestate() or {}).get("status", {}).get("syncStatus") == "InProgress")
    e810 = ev("devices", ct.E810_RESOURCE)
    kubelet.wait_for(lambda e: False, 0.5)  # every event so far into kubelet.seen
    lists = [e for e in kubelet.seen[mark:] if e810(e)]
    check("changes left: the PF's pool has no devices while its own MTU change is due",
          lists and not lists[-1].get("devices"), json.dumps(lists[-1:])[:400])

    # The node catches up: the tree shows what the links have.
    for name in names:
        path = os.path.realpath(os.path.join(sysfs, "class", "net", name, "mtu"))
        with open(path + ".new", "w") as f:
            f.write("9000\n")
        os.rename(path + ".new", path)
    caught_up = time.monotonic()
    ns = wait(ct.sync_status(cluster, "Succeeded"), 15)
    st = (ns or cluster.nodestate() or {}).get("status", {})
    check("changes left: the next retry converges, NodeState Succeeded, lastSyncError \"\"",
          ns is not None and st.get("lastSyncError") == "", json.dumps(st)[:600])
    print("  converged %.1f s after the node caught up" % (time.monotonic() - caught_up))
    vfs = sorted(vf["pciAddress"] for vf in ice["vfs"])
    full = kubelet.wait_for(lambda e: e810(e) and sorted(
        d["id"] for d in e.get("devices") or [] if d["health"] == "Healthy") == vfs, 10)
    check("changes left: once converged, the PF's pool has its %d VFs" % len(vfs),
          full is not None, json.dumps([e for e in kubelet.seen[mark:] if e810(e)][-1:])[:400])
    return agent


if __name__ == "__main__":
    sys.exit(main())
