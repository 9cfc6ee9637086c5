#!/usr/bin/env python3
"""The daemon in cluster mode: real kubectl drives the fake API server, `sriov-agent run`
watches it and configures a generated seed node, the grpc-go fake kubelet is its peer.

What a cluster operator would check: after `kubectl apply` of the CRDs and the seed policy and
`kubectl label node`, the NodeState says Succeeded with the desired spec and the discovered
status, and the kubelet has the pool; an invalid policy produces an InvalidPolicy Event and
changes nothing; a second policy adds a pool; deleting it releases the PF it owned (and a PF
that cannot be reset shows up as Failed with the PF named in lastSyncError; a released PF
keeps the VFs it had before the agent adopted it); dropping the
node label releases the rest; the agent survives the API server closing its watches.
Expectations come from the generator's manifest. Exit 1 on any failure.
"""
import argparse
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import Proc, check, ev, finish, wait  # noqa: E402

from fakecluster import (  # noqa: E402
    E810_RESOURCE, NODE, NS, SEED_RESOURCE, Cluster, numvfs, policy_yaml, sync_status)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    ap.add_argument("--crds", choices=["project", "upstream"], default="project",
                    help="upstream: apply test/fixtures/crds-upstream over crds/ (a NodeState "
                         "CRD that prunes unknown status fields) and run the NodeState checks")
    ap.add_argument("--no-inotify", action="store_true",
                    help="run the agent in a user namespace without inotify instances (it "
                         "polls) and run the NodeState checks and its InotifyUnavailable Event")
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))

    work = tempfile.mkdtemp(prefix="agent-cluster-")
    sysfs, kdir, state = (os.path.join(work, d) for d in ("sys", "device-plugins", "state"))
    os.makedirs(kdir)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, os.path.join(src, "test/sysfs-gen/gen-sysfs.py"), "--out", sysfs,
         "--profile", "seed", "--pf", "i350:eno2:2", "--manifest"]))
    pfs = {pf["ifname"]: pf for pf in manifest["pfs"] if pf.get("ifname")}
    cx, ice, i350 = pfs["ens1f0"], pfs["ens2f0"], pfs["eno2"]

    cluster = Cluster(src, work, args.kubectl)
    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    agent = None
    try:
        cluster.ok("apply", "-f", os.path.join(src, "crds"))
        if args.crds == "upstream":
            cluster.ok("apply", "-f", os.path.join(src, "test/fixtures/crds-upstream"))
        cluster.ok("apply", "-f", os.path.join(src, "test/kube/namespace.yaml"))
        cluster.ok("apply", "-f", os.path.join(src, "manifests/20-rbac.yaml"))
        cluster.ok("apply", "-f", os.path.join(src, "test/fixtures/policies",
                                               "highnet-sriov-policy.yaml"))
        cluster.ok("label", "node", NODE, "highnet-node=true")
        # The I350 is not in the built-in supported-NIC list; the ConfigMap adds it.
        cluster.ok("apply", "-f", "-", stdin=(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: supported-nic-ids\n"
            "  namespace: %s\ndata:\n  Intel_igb_I350: \"8086 1521 1520\"\n" % NS))

        log = open(os.path.join(work, "agent.log"), "w")
        # Without inotify: a private user namespace whose max_inotify_instances is 0.
        prefix = ["unshare", "-U", "-r", "sh", "-c",
                  'echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" "$@"'] \
            if args.no_inotify else []
        agent = subprocess.Popen(
            prefix + [args.agent, "run", "--node-name", NODE, "--kubeconfig", cluster.agent_kubeconfig,
             "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--state-dir", state,
             "--devinfo-dir", os.path.join(work, "devinfo"),
             "--pod-resources-socket", "none",  # no kubelet here: no VF in use
             "--vf-timeout", "1", "--resync-interval", "2",
             "--metrics-listen", "127.0.0.1:0"], stdout=log, stderr=log)

        def metrics():
            """{(name, sorted label items): value} from the agent's metrics endpoint."""
            with open(os.path.join(work, "agent.log")) as f:
                m = re.search(r"metrics endpoint listening on \S+ \(port (\d+)\)", f.read())
            if not m:
                return {}
            with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % m.group(1),
                                        timeout=5) as r:
                text = r.read().decode()
            out = {}
            for line in text.splitlines():
                mm = re.match(r'^(\w+)(?:\{(.*)\})? (\S+)$', line)
                if mm:
                    labels = tuple(sorted(re.findall(r'(\w+)="([^"]*)"', mm.group(2) or "")))
                    out[(mm.group(1), labels)] = float(mm.group(3))
            return out

        # 1. The seed workflow: NodeState Succeeded, spec and status right, pool served.
        ns = wait(sync_status(cluster, "Succeeded"), 40)
        check("NodeState Succeeded after apply + label", ns is not None,
              json.dumps(cluster.nodestate())[:400])
        spec = (ns or {}).get("spec", {}).get("interfaces", [])
        check("spec: ens1f0 with 8 VFs in sriov_highnet",
              len(spec) == 1 and spec[0]["pciAddress"] == cx["pciAddress"] and
              spec[0]["numVfs"] == 8 and spec[0]["vfGroups"][0]["resourceName"] == "sriov_highnet",
              json.dumps(spec))
        status_ifs = {i.get("name"): i for i in (ns or {}).get("status", {}).get("interfaces", [])}
        check("status: ens1f0 discovered with its 8 VFs",
              len(status_ifs.get("ens1f0", {}).get("Vfs", [])) == len(cx["vfs"]),
              str(sorted(status_ifs)))
        devs = kubelet.wait_for(lambda e: ev("devices", SEED_RESOURCE)(e) and
                                len(e["devices"] or []) == len(cx["vfs"]), 30)
        check("kubelet has openshift.io/sriov_highnet with 8 devices", devs is not None,
              "no device list")
        _, printed = cluster.run("get", "sriovnetworknodestates", "-n", NS)
        check("kubectl get shows the sync status column", "Succeeded" in printed, printed)
        # The agent's own work as the metrics endpoint shows it in cluster mode.
        m = metrics()
        api = {dict(k[1])["verb"] + " " + dict(k[1])["code"]: v for k, v in m.items()
               if k[0] == "sriov_agent_api_requests_total"}
        check("metrics: API requests by verb and code (GET 200, PATCH 2xx)",
              api.get("GET 200", 0) > 0 and any(k.startswith("PATCH 2") for k in api), str(api))
        check("metrics: the NodeState's sync status",
              m.get(("sriov_agent_node_sync_status", (("status", "Succeeded"),))) == 1.0,
              str([k for k in m if k[0] == "sriov_agent_node_sync_status"]))
        restarts_before = m.get(("sriov_agent_api_watch_restarts_total", ()), -1)
        extra = json.loads(((ns or {}).get("metadata", {}).get("annotations") or {}).get(
            "sriovnetwork.openshift.io/status-extra", "{}"))
        check("fields upstream's status lacks are in the status-extra annotation",
              "numaNode" in extra.get(cx["pciAddress"], {}), json.dumps(extra)[:300])

        # RBAC is enforced on the agent's token: inside the rules 200, outside 403.
        def as_agent(path, method="GET"):
            req = urllib.request.Request("http://127.0.0.1:%d%s" % (cluster.port, path),
                                         headers={"Authorization": "Bearer agent-token"},
                                         method=method)
            try:
                return urllib.request.urlopen(req, timeout=5).status
            except urllib.error.HTTPError as e:
                return e.code
        check("the agent's token may list policies",
              as_agent("/apis/sriovnetwork.openshift.io/v1/namespaces/%s/"
                       "sriovnetworknodepolicies" % NS) == 200, "")
        check("the agent's token may not list ConfigMaps cluster-wide, read secrets or delete its NodeState",
              as_agent("/api/v1/configmaps") == 403 and
              as_agent("/api/v1/namespaces/%s/secrets" % NS) == 403 and
              as_agent("/apis/sriovnetwork.openshift.io/v1/namespaces/%s/"
                       "sriovnetworknodestates/%s" % (NS, NODE), "DELETE") == 403, "")

        # 1b. Idle: several resyncs (every 2 s) write nothing, whatever the CRD prunes.
        time.sleep(2)
        patches = cluster.stats()["patches"]
        time.sleep(8)
        idle = cluster.stats()["patches"] - patches
        check("no NodeState write in 8 s idle (4 resyncs)", idle == 0, "%d PATCHes" % idle)
        # 1c. Someone else edits the status or deletes the NodeState: repaired at once (the
        # agent watches its NodeState), with no change of the desired state.
        cluster.ok("patch", "sriovnetworknodestates", "-n", NS, NODE, "--subresource=status",
                   "--type=merge", "-p", '{"status":{"syncStatus":"InProgress"}}')
        check("a status edited behind the agent's back is repaired",
              wait(sync_status(cluster, "Succeeded"), 10) is not None,
              json.dumps((cluster.nodestate() or {}).get("status", {}))[:200])
        cluster.ok("delete", "sriovnetworknodestates", "-n", NS, NODE)
        check("a deleted NodeState is re-created",
              wait(sync_status(cluster, "Succeeded"), 10) is not None, "still missing")
        if args.no_inotify:
            def inotify_events():
                rc, out = cluster.run("get", "events", "-n", NS, "-o", "json")
                items = json.loads(out).get("items", []) if rc == 0 else []
                return [e for e in items if e.get("reason") == "InotifyUnavailable" and
                        e.get("involvedObject", {}).get("kind") == "SriovNetworkNodeState"]
            found = wait(inotify_events, 20, step=0.5)
            check("without inotify: one InotifyUnavailable Warning on the NodeState",
                  found is not None and len(found) == 1 and found[0].get("type") == "Warning" and
                  found[0].get("count", 1) == 1,
                  cluster.run("get", "events", "-n", NS)[1][-800:])
            with open(os.path.join(work, "agent.log")) as f:
                said = f.read()
            check("and one line in the journal", said.count(
                "cannot watch %s with inotify" % kdir) == 1, said[-600:])
        if args.crds == "upstream" or args.no_inotify:
            # The policy workflow below does not depend on the NodeState schema.
            raise StopIteration

        # 2. An invalid policy: an Event on it, nothing applied.
        numvfs_before = numvfs(sysfs, cx["pciAddress"])
        bad = policy_yaml("bad-range", "bad", "ens1f0#0-9", 4)
        cluster.ok("apply", "-f", "-", stdin=bad)
        out = wait(lambda: (lambda r: r[1] if "InvalidPolicy" in r[1] else None)(
            cluster.run("get", "events", "-n", NS)), 30)
        check("InvalidPolicy Event for the broken policy",
              out is not None and "bad-range" in out and "pfNames" in out,
              cluster.run("get", "events", "-n", NS)[1][-600:])
        check("nothing applied from it", numvfs(sysfs, cx["pciAddress"]) == numvfs_before,
              numvfs(sysfs, cx["pciAddress"]))
        cluster.ok("delete", "sriovnetworknodepolicy", "-n", NS, "bad-range")

        # 2b. Poison policies a real API server accepts but that cannot be decoded here: a
        # free-form spec.bridge nested 2,100 deep, an integer beyond 64 bits. Each is reported
        # by name as invalid; the list and watch go on for the others (step 3 needs them).
        deep = "DEEP"  # replaced by the text below: Python's own encoder stops at ~1,000 levels
        poison = [("deep-bridge", {"resourceName": "deep", "numVfs": 1, "bridge": deep,
                                   "nodeSelector": {"highnet-node": "true"},
                                   "nicSelector": {"pfNames": ["ens2f0"]}}),
                  ("huge-mtu", {"resourceName": "huge", "numVfs": 1, "mtu": 10 ** 20,
                                "nodeSelector": {"highnet-node": "true"},
                                "nicSelector": {"pfNames": ["ens2f0"]}})]
        for name, spec in poison:
            body = json.dumps({"apiVersion": "sriovnetwork.openshift.io/v1",
                               "kind": "SriovNetworkNodePolicy",
                               "metadata": {"name": name, "namespace": NS}, "spec": spec})
            body = body.replace('"DEEP"', '{"x":' * 2100 + '{}' + '}' * 2100)
            req = urllib.request.Request(
                "http://127.0.0.1:%d/apis/sriovnetwork.openshift.io/v1/namespaces/%s/"
                "sriovnetworknodepolicies" % (cluster.port, NS), data=body.encode(),
                headers={"Content-Type": "application/json"}, method="POST")
            urllib.request.urlopen(req, timeout=30).read()
        def poison_events():
            rc, out = cluster.run("get", "events", "-n", NS, "-o", "json")
            names = set()
            for e in json.loads(out).get("items", []) if rc == 0 else []:
                if e.get("reason") == "InvalidPolicy" and "cannot be decoded" in \
                        e.get("message", ""):
                    names.add(e.get("involvedObject", {}).get("name"))
            return names if names >= {"deep-bridge", "huge-mtu"} else None
        check("each undecodable policy -> InvalidPolicy Event naming it",
              wait(poison_events, 30, step=0.5) is not None,
              cluster.run("get", "events", "-n", NS)[1][-800:])
        check("the seed pool is still served", os.path.exists(
            os.path.join(kdir, "openshift.io_sriov_highnet.sock")), str(os.listdir(kdir)))

        # 3. A second policy adds a pool; the NodeState spec grows.
        cluster.ok("apply", "-f", "-", stdin=policy_yaml("e810", "sriov_e810", "ens2f0",
                                                         ice["numVfs"]))
        reg = kubelet.wait_for(ev("register", E810_RESOURCE), 30)
        check("second policy -> openshift.io/sriov_e810 registered", reg is not None, "")
        two = wait(lambda: (lambda n: n if n and len(n.get("spec", {}).get("interfaces", []))
                            == 2 else None)(cluster.nodestate()), 30)
        check("NodeState spec has both PFs", two is not None,
              json.dumps((cluster.nodestate() or {}).get("spec")))

        # 4. The API server drops every watch: the agent relists and keeps up.
        # ens2f0 had its VFs before the policy: released, it would keep them. To see a reset
        # that fails, its record is made to say the agent created them all (originally 0).
        ice_record = os.path.join(state, ice["pciAddress"] + ".json")
        rec = wait(lambda: os.path.exists(ice_record) and json.load(open(ice_record)), 30)
        check("the record keeps the VF count ens2f0 had when adopted",
              rec and rec.get("originalNumVfs") == ice["numVfs"], str(rec))
        if rec:
            rec["originalNumVfs"] = 0
            tmp = ice_record + ".new"
            with open(tmp, "w") as f:
                json.dump(rec, f)
            os.rename(tmp, ice_record)
        cluster.faults(close_watches=True)
        time.sleep(1)
        cluster.ok("label", "node", NODE, "extra=1")
        cluster.ok("delete", "sriovnetworknodepolicy", "-n", NS, "e810")
        cluster.ok("delete", "sriovnetworknodepolicy", "-n", NS, "deep-bridge", "huge-mtu")
        # It owned ens2f0: releasing writes 0 first; the generated tree has no kernel to
        # remove the VFs, so the reset times out and must be reported, naming the PF.
        wrote = wait(lambda: numvfs(sysfs, ice["pciAddress"]) == "0", 40)
        check("after a watch drop, a policy deletion is still seen: owned PF reset",
              wrote, numvfs(sysfs, ice["pciAddress"]))
        restarts = metrics().get(("sriov_agent_api_watch_restarts_total", ()), -1)
        check("metrics: the dropped watches are counted as restarts",
              restarts_before >= 0 and restarts > restarts_before,
              "%s -> %s" % (restarts_before, restarts))
        # On a generated tree the retry then finds sriov_numvfs at 0 and succeeds, so the
        # Failed status is short-lived; the SyncStatusChanged Event is its lasting record.
        def failed_event():
            rc, out = cluster.run("get", "events", "-n", NS, "-o", "json")
            for e in json.loads(out).get("items", []) if rc == 0 else []:
                msg = e.get("message", "")
                if e.get("reason") == "SyncStatusChanged" and "to Failed" in msg and \
                        ice["pciAddress"] in msg:
                    return msg
            return None
        msg = wait(failed_event, 40, step=0.5)
        check("a PF that cannot be reset -> Failed, the error names the PF", msg is not None,
              cluster.run("get", "events", "-n", NS)[1][-800:])
        check("the other PF stays served", os.path.exists(
            os.path.join(kdir, "openshift.io_sriov_highnet.sock")), str(os.listdir(kdir)))

        # 5. The node leaves the policy: the PF it owns is released too. ens1f0 had its 8 VFs
        #    before the agent adopted it: released, it keeps them (upstream would write 0).
        cx_before = numvfs(sysfs, cx["pciAddress"])
        cx_record = os.path.join(state, cx["pciAddress"] + ".json")
        cluster.ok("label", "node", NODE, "highnet-node-")
        check("label removed -> ens1f0 released (its record removed)", wait(
            lambda: not os.path.exists(cx_record), 40), cx_record)
        check("and it keeps the VFs it had before adoption",
              numvfs(sysfs, cx["pciAddress"]) == cx_before == str(cx["numVfs"]),
              "%s -> %s" % (cx_before, numvfs(sysfs, cx["pciAddress"])))

        # 6. A PF whose model only the supported-nic-ids ConfigMap lists is configured.
        cluster.ok("label", "node", NODE, "highnet-node=true")
        cluster.ok("apply", "-f", "-", stdin=policy_yaml("mgmt", "mgmt", "eno2", 2))
        reg = kubelet.wait_for(ev("register", "openshift.io/mgmt"), 30)
        check("ConfigMap-listed I350 model -> its PF's VFs are served", reg is not None,
              "openshift.io/mgmt not registered")
        check("its VF count is kept", numvfs(sysfs, i350["pciAddress"]) == "2",
              numvfs(sysfs, i350["pciAddress"]))

        # 7. A port type the firmware would have to change: that PF failed, saying what to do.
        ib = json.loads(policy_yaml("ibport", "ibport", "ens1f1", 2))
        ib["spec"]["linkType"] = "IB"
        cluster.ok("apply", "-f", "-", stdin=json.dumps(ib))
        def firmware_failure():
            n = cluster.nodestate() or {}
            st = n.get("status", {})
            return st if st.get("syncStatus") == "Failed" and \
                "LINK_TYPE_P" in st.get("lastSyncError", "") else None
        st = wait(firmware_failure, 30)
        check("linkType IB on an Ethernet port -> NodeState Failed, lastSyncError says mlxconfig",
              st is not None, json.dumps((cluster.nodestate() or {}).get("status", {}))[:600])
        check("that PF is left alone", numvfs(sysfs, pfs["ens1f1"]["pciAddress"]) == "0",
              numvfs(sysfs, pfs["ens1f1"]["pciAddress"]))

        agent.send_signal(signal.SIGTERM)
        rc = agent.wait(timeout=30)
        check("SIGTERM exits 0", rc == 0, "exit %s" % rc)
        check("no request of the agent was outside manifests/20-rbac.yaml",
              cluster.stats().get("forbidden", 0) == 3,  # the 3 refused on purpose above
              json.dumps(cluster.stats()))
    except StopIteration:
        check("no request of the agent was outside manifests/20-rbac.yaml",
              cluster.stats().get("forbidden", 0) == 3,  # the 3 refused on purpose above
              json.dumps(cluster.stats()))
        pass
    finally:
        if agent and agent.poll() is None:
            agent.kill()
            agent.wait()
        kubelet.stop()
        cluster.stop()

    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
