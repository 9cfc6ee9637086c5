#!/usr/bin/env python3
"""The seed's whole-card mode from its ConfigMap: real kubectl against the fake API server (RBAC
enforced on the agent's token with manifests/20-rbac.yaml), the agent in cluster mode with the
DaemonSet's arguments (no --rdma-shared-config) on a generated seed node, and the grpc-go fake
kubelet reporting the node's resources to the API server.

1. No ConfigMap: no whole-card pool and no error; the SR-IOV pool is served and
   `kubectl describe node` lists openshift.io/sriov_highnet with its 8 VFs.
2. manifests/examples/rdma-device-plugin-config.yaml (the seed's kube-system/rdma-devices, byte
   for byte) applied with kubectl: the kubelet gets rdma/rdma_hca with rdmaHcaMax (1) devices,
   `kubectl describe node` shows it, the journal and the NodeState name the ConfigMap.
3. Edited (rdmaHcaMax 4): applied live, no restart; describe node says 4.
4. Broken (rdmaHcaMax -1): the pool keeps the last good config (4), an
   InvalidRdmaSharedConfig Event names the ConfigMap, field and value, the NodeState is Failed.
5. Deleted: the pool goes; the kubelet drops it after its endpoint grace period; the NodeState
   says absent.
6. --rdma-shared-config FILE next to the ConfigMap: the file wins, the journal says so.
5b. A ConfigMap of that name without the config.json key: reported like an invalid one.
7. RBAC: the agent may get, and list/watch with fieldSelector metadata.name=rdma-devices, that
   one ConfigMap; any other ConfigMap of kube-system, or the list without the selector, is 403;
   the agent itself never got a 403.
8. A malformed --rdma-shared-configmap is refused at start.
Exit 1 on any failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import Agent, Proc, check, ev, finish, seed_sysfs, wait  # noqa: E402
import fakecluster as ct  # noqa: E402


HCA = "rdma/rdma_hca"
ORIGIN = "ConfigMap kube-system/rdma-devices key config.json"


def described(cluster):
    """{resource: (capacity, allocatable)} from `kubectl describe node`'s two sections."""
    rc, out = cluster.run("describe", "node", ct.NODE)
    if rc != 0:
        return None
    sections, current = {}, None
    for line in out.splitlines():
        if re.match(r"^(Capacity|Allocatable):", line):
            current = line.split(":")[0]
            sections[current] = {}
        elif current and line.startswith(" "):
            m = re.match(r"^\s+(\S+):\s+(\S+)\s*$", line)
            if m:
                sections[current][m.group(1)] = m.group(2)
        else:
            current = None
    cap, alloc = sections.get("Capacity", {}), sections.get("Allocatable", {})
    return {r: (cap.get(r), alloc.get(r)) for r in set(cap) | set(alloc)}


def node_has(cluster, resource, count):
    def pred():
        d = described(cluster) or {}
        return d if d.get(resource) == (str(count), str(count)) else None
    return pred


def seed_with(hca_max):
    """The seed's ConfigMap with another rdmaHcaMax, as a user edits it."""
    with open(SEED) as f:
        text = f.read()
    return text.replace('"rdmaHcaMax": 1,', '"rdmaHcaMax": %s,' % hca_max)


def extra_rdma(cluster):
    ns = cluster.nodestate() or {}
    extra = ((ns.get("metadata") or {}).get("annotations") or {}).get(
        "sriovnetwork.openshift.io/status-extra", "{}")
    return json.loads(extra).get("rdmaSharedConfig") or {}


def as_agent(cluster, path):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (cluster.port, path),
                                 headers={"Authorization": "Bearer agent-token"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def main():
    global SEED
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(HERE, "..", ".."))
    SEED = os.path.join(src, "manifests/examples/rdma-device-plugin-config.yaml")

    work = tempfile.mkdtemp(prefix="whole-card-")
    sysfs, kdir, state = (os.path.join(work, d) for d in ("sys", "device-plugins", "state"))
    os.makedirs(kdir)
    manifest = seed_sysfs(src, sysfs)
    cx = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")

    cluster = ct.Cluster(src, work, args.kubectl)
    kubelet = Proc([args.fake_kubelet, "--dir", kdir,
                    "--api-server", "http://127.0.0.1:%d" % cluster.port, "--node", ct.NODE,
                    "--endpoint-grace", "2s"], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    agent = None

    def agent_run(*extra):
        return Agent(args.agent, ["--node-name", ct.NODE, "--kubeconfig",
                                  cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                                  "--kubelet-dir", kdir, "--state-dir", state,
                                  "--devinfo-dir", os.path.join(work, "devinfo"),
                                  "--pod-resources-socket", "none", "--vf-timeout", "1",
                                  "--resync-interval", "30", "--log-level", "debug"] +
                     list(extra), os.path.join(work, "agent.log"))

    def hca_devices(n, timeout=20):
        return kubelet.wait_for(lambda e: ev("devices", HCA)(e) and
                                len(e["devices"] or []) == n, timeout)

    try:
        cluster.seed()
        forbidden_before = cluster.stats().get("forbidden", 0)
        agent = agent_run()

        # 1. No ConfigMap: SR-IOV only, no error.
        ns = wait(ct.sync_status(cluster, "Succeeded"), 40)
        check("no ConfigMap: NodeState Succeeded", ns is not None,
              json.dumps((cluster.nodestate() or {}).get("status", {}))[:400])
        check("no ConfigMap: the journal says where the config would come from, no error",
              agent.wait_log("RDMA shared config (whole-card pools) from " + ORIGIN, 5) and
              "does not exist: no whole-card RDMA pools" in agent.text() and
              "[err]" not in agent.text(), agent.text()[-800:])
        check("no ConfigMap: the NodeState says so",
              extra_rdma(cluster) == {"source": ORIGIN, "state": "absent", "resources": []},
              json.dumps(extra_rdma(cluster)))
        check("no ConfigMap: no whole-card pool registered",
              not any(ev("register", HCA)(e) for e in kubelet.seen))
        d = wait(node_has(cluster, ct.SEED_RESOURCE, len(cx["vfs"])), 20)
        check("kubectl describe node: openshift.io/sriov_highnet: 8 (capacity, allocatable)",
              d is not None, str(described(cluster)))

        # 2. The seed's ConfigMap, byte for byte.
        since = len(agent.text())
        cluster.ok("apply", "-f", SEED)
        check("seed ConfigMap: the kubelet gets rdma/rdma_hca with rdmaHcaMax 1 device",
              hca_devices(1) is not None, str(kubelet.seen[-3:]))
        check("seed ConfigMap: kubectl describe node shows rdma/rdma_hca: 1",
              wait(node_has(cluster, HCA, 1), 20) is not None, str(described(cluster)))
        check("seed ConfigMap: the journal names the ConfigMap in use",
              agent.wait_log("RDMA shared config in use: %s: rdma/rdma_hca (rdmaHcaMax 1)" %
                             ORIGIN, 5, since), agent.text()[since:][-600:])
        check("seed ConfigMap: the NodeState names it",
              wait(lambda: extra_rdma(cluster).get("state") == "in use", 10) and
              extra_rdma(cluster) == {"source": ORIGIN, "state": "in use", "resources": [
                  {"resourceName": HCA, "rdmaHcaMax": 1}]}, json.dumps(extra_rdma(cluster)))

        # 3. Edited live.
        cluster.ok("apply", "-f", "-", stdin=seed_with(4))
        check("edited rdmaHcaMax 4: applied live (4 devices, same agent)",
              hca_devices(4) is not None and agent.p.poll() is None, str(kubelet.seen[-3:]))
        check("edited: kubectl describe node shows rdma/rdma_hca: 4",
              wait(node_has(cluster, HCA, 4), 20) is not None, str(described(cluster)))

        # 4. Broken: last good kept, Event, Failed.
        cluster.ok("apply", "-f", "-", stdin=seed_with(-1))
        ns = wait(ct.sync_status(cluster, "Failed"), 20)
        err = (ns or {}).get("status", {}).get("lastSyncError", "")
        check("broken: NodeState Failed naming the ConfigMap, field and value",
              ORIGIN in err and "rdmaHcaMax" in err and "-1" in err, err)
        out = wait(lambda: (lambda r: r[1] if "InvalidRdmaSharedConfig" in r[1] else None)(
            cluster.run("get", "events", "-n", ct.NS)), 20)
        check("broken: an InvalidRdmaSharedConfig Event", out is not None and ORIGIN in out,
              str(out)[-400:])
        check("broken: the pool keeps the last good config (4 devices, no new list)",
              kubelet.wait_for(lambda e: ev("devices", HCA)(e) or ev("watch-end", HCA)(e), 3)
              is None and (described(cluster) or {}).get(HCA) == ("4", "4"),
              str(kubelet.seen[-3:]))
        check("broken: the NodeState says the last good one is used",
              extra_rdma(cluster).get("state") == "invalid: the last good one is used",
              json.dumps(extra_rdma(cluster)))

        # 5. Deleted: the pool goes.
        cluster.ok("delete", "-f", SEED)
        check("deleted: the whole-card plugin stops",
              kubelet.wait_for(ev("watch-end", HCA), 20) is not None, str(kubelet.seen[-3:]))
        check("deleted: after the kubelet's grace period describe node lists no rdma/rdma_hca",
              wait(lambda: (lambda d: d is not None and HCA not in d)(described(cluster)), 20),
              str(described(cluster)))
        check("deleted: NodeState Succeeded, the config absent",
              wait(ct.sync_status(cluster, "Succeeded"), 20) is not None and
              wait(lambda: extra_rdma(cluster).get("state") == "absent", 10),
              json.dumps(extra_rdma(cluster)))

        # 5b. A ConfigMap of that name without the key: reported, nothing served.
        cluster.ok("apply", "-f", "-", stdin="apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                   "  name: rdma-devices\n  namespace: kube-system\ndata:\n"
                   "  config.yaml: \"configList: []\"\n")
        ns = wait(ct.sync_status(cluster, "Failed"), 20)
        err = (ns or {}).get("status", {}).get("lastSyncError", "")
        check("no config.json key: NodeState Failed naming the ConfigMap and the key",
              ORIGIN + ': the ConfigMap has no key "config.json"' in err, err)
        check("no config.json key: no whole-card pool, the NodeState says none is used",
              extra_rdma(cluster).get("state") == "invalid: none is used" and
              kubelet.wait_for(ev("register", HCA), 2) is None,
              json.dumps(extra_rdma(cluster)))
        cluster.ok("delete", "configmap", "-n", "kube-system", "rdma-devices")
        check("no config.json key, deleted: NodeState Succeeded",
              wait(ct.sync_status(cluster, "Succeeded"), 20) is not None)

        # 6. A file next to the ConfigMap: the file wins.
        agent.stop()
        cluster.ok("apply", "-f", SEED)
        cfg = os.path.join(work, "rdma-shared.json")
        with open(cfg, "w") as f:
            json.dump({"configList": [{"resourceName": "rdma_hca", "rdmaHcaMax": 3,
                                       "selectors": {"vendors": ["15b3"]}}]}, f)
        since = len(agent.text())
        agent = agent_run("--rdma-shared-config", cfg)
        check("file and ConfigMap: the file wins (3 devices)", hca_devices(3, 30) is not None,
              str(kubelet.seen[-3:]))
        check("file and ConfigMap: the journal says the ConfigMap is not used",
              agent.wait_log(ORIGIN + " is not used: --rdma-shared-config %s is given and wins"
                             % cfg, 10, since), agent.text()[since:][-600:])
        check("file and ConfigMap: the NodeState names the file",
              wait(lambda: extra_rdma(cluster).get("source") == "file " + cfg, 10),
              json.dumps(extra_rdma(cluster)))

        # 7. RBAC, as the fake enforces it on the agent's token.
        base = "/api/v1/namespaces/kube-system/configmaps"
        sel = "fieldSelector=metadata.name%3Drdma-devices"
        forbidden_agent = cluster.stats().get("forbidden", 0) - forbidden_before
        check("RBAC: the agent never got a 403", forbidden_agent == 0, str(forbidden_agent))
        check("RBAC: get, list and watch of rdma-devices (with the name selector) allowed",
              [as_agent(cluster, base + "/rdma-devices"), as_agent(cluster, base + "?" + sel),
               as_agent(cluster, base + "?" + sel + "&watch=1&timeoutSeconds=1")] ==
              [200, 200, 200])
        cluster.ok("apply", "-f", "-", stdin="apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                   "  name: other\n  namespace: kube-system\ndata: {a: b}\n")
        check("RBAC: another ConfigMap of kube-system, or the list without the selector, 403",
              [as_agent(cluster, base + "/other"), as_agent(cluster, base),
               as_agent(cluster, base + "?fieldSelector=metadata.name%3Dother"),
               as_agent(cluster, base + "?watch=1&timeoutSeconds=1")] == [403, 403, 403, 403])
        # 8. A malformed --rdma-shared-configmap stops the agent at start, naming the flag.
        bad = subprocess.run([args.agent, "run", "--node-name", ct.NODE, "--kubeconfig",
                              cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                              "--kubelet-dir", kdir, "--state-dir", os.path.join(work, "st2"),
                              "--pod-resources-socket", "none",
                              "--rdma-shared-configmap", "rdma-devices"],
                             capture_output=True, text=True, timeout=30)
        check("--rdma-shared-configmap without a namespace: refused at start, naming the flag",
              bad.returncode != 0 and '--rdma-shared-configmap: "rdma-devices" is not '
              'NAMESPACE/NAME' in bad.stderr, bad.stderr[-300:])
    finally:
        if agent:
            agent.stop()
        kubelet.stop()
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
