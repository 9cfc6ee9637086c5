#!/usr/bin/env python3
"""The NAD controller among many NADs that are not its own, and its failover.

Against the fake API server: 1,600 foreign NetworkAttachmentDefinitions of ~1.4 KB (more than
the 2 MiB an informer keeps whole: listed all together, the last ~240 would be cached as stubs
without annotations), then 10 more with the names of SriovNetworks, in their target namespaces
(5 owned by another network, 5 without an owner annotation), and 5 NADs as an earlier version
rendered them (owner annotation, no label). 30 SriovNetworks: 15 new, the 10 colliding, the 5
legacy ones. Two replicas of `sriov-agent nad-controller` under the manifests' RBAC.

What a cluster operator would check, from the server's own count of write requests per object:
- no foreign NAD is ever written (0 writes to each of the 1,610), the colliding networks say
  Ready=False naming the NAD; the 15 new networks are rendered;
- each legacy NAD gets exactly one write, a PATCH (its label), and keeps its spec and
  annotations byte for byte;
- the controller lists and watches NADs only with the label selector;
- the leader SIGSTOPped (a partition: it neither renews nor writes): the other replica takes the
  Lease once it expired, and the NADs are unchanged (0 NAD writes across the takeover, no writes
  at all by the stopped one); the stopped leader killed: the new leader renders a new network;
  only one replica ever wrote at a time.

--renderer run runs the single-DaemonSet layout instead (two `sriov-agent run --dry-run` node
agents that render NADs themselves, `--nad-controller=on` where the binary has it; no RBAC):
with a binary from before the controller split the checks fail (1,395 PUTs of one foreign NAD
in 60 s, legacy NADs never labelled, every NAD listed), which is how they were shown to fail
before the fix; with this one it is the small-setup mode and they pass.
Exit 1 on any failure.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import check, finish, wait  # noqa: E402
from nadfake import LABEL, LEASE, NAD_API, NS, Server, network  # noqa: E402

OWNER = "SriovNetwork.sriovnetwork.openshift.io/%s/%%s" % NS
FILLERS = 1600
TEAMS = 10


def nad(ns, name, annotations=None, config=None, labels=None):
    meta = {"name": name, "namespace": ns}
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": meta, "spec": {"config": config or json.dumps(
                {"cniVersion": "1.0.0", "name": name, "type": "macvlan", "master": "eth0",
                 "note": "x" * 1200})}}


def legacy_config(name):
    """What the agent (and upstream's operator) render for network_spec(name, dhcp ipam)."""
    return ('{\n    "cniVersion": "1.0.0",\n    "name": "%s",\n    "type": "sriov",\n'
            '    "vlan": 0,\n    "vlanQoS": 0,\n    "logLevel": "info",\n    "ipam": {\n'
            '        "type": "dhcp"\n    }\n}' % name)


def ready(obj):
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c
    return None


class Renderers:
    def __init__(self, binary, work, server, mode):
        self.binary, self.work, self.server, self.mode = binary, work, server, mode
        self.procs = {}
        self.names = ("nad-ctl-a", "nad-ctl-b") if mode == "controller" else (
            "worker-1", "worker-2")
        self.token_prefix = "controller-" if mode == "controller" else "agent-"
        os.makedirs(os.path.join(work, "sys/bus/pci/devices"), exist_ok=True)

    def start(self, name):
        log = open(os.path.join(self.work, name + ".log"), "a")
        kubeconfig = self.server.kubeconfig_for(self.token_prefix + name)
        if self.mode == "controller":
            argv = [self.binary, "nad-controller", "--identity", name, "--namespace", NS,
                    "--kubeconfig", kubeconfig]
        else:
            d = os.path.join(self.work, name)
            argv = [self.binary, "run", "--dry-run", "--node-name", name,
                    "--kubeconfig", kubeconfig, "--sysfs-root", os.path.join(self.work, "sys"),
                    "--kubelet-dir", os.path.join(d, "dp"), "--state-dir",
                    os.path.join(d, "state"), "--devinfo-dir", os.path.join(d, "devinfo"),
                    "--pod-resources-socket", os.path.join(d, "none.sock")]
            os.makedirs(os.path.join(d, "dp"), exist_ok=True)
            # Since the controller split the node agents render only when told to.
            if "--nad-controller" in subprocess.run([self.binary, "run", "--help"],
                                                    capture_output=True, text=True).stdout:
                argv.append("--nad-controller=on")
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=log)

    def log(self, name):
        with open(os.path.join(self.work, name + ".log")) as f:
            return f.read()

    def stop_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    ap.add_argument("--renderer", choices=("controller", "run"), default="controller")
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    work = tempfile.mkdtemp(prefix="nad-scale-")
    controller = args.renderer == "controller"
    server = Server(src, work, args.kubectl, nodes=("worker-1", "worker-2"), rbac=controller)
    rend = Renderers(args.agent, work, server, args.renderer)
    try:
        server.kubectl_ok("apply", "-f", os.path.join(src, "crds"))
        server.kubectl_ok("apply", "-f", os.path.join(src, "test/kube/namespace.yaml"))
        server.kubectl_ok("apply", "-f", os.path.join(src, "test/fixtures",
                                                      "network-attachment-definition-crd.yaml"))
        if controller:
            server.kubectl_ok("apply", "-f", os.path.join(src, "manifests/10-serviceaccount.yaml"))
            server.kubectl_ok("apply", "-f", os.path.join(src, "manifests/20-rbac.yaml"))
        for t in ["fill-%d" % i for i in range(4)] + ["team-%d" % i for i in range(TEAMS)]:
            server.call("POST", "/api/v1/namespaces", {"metadata": {"name": t}})

        # Foreign NADs: fillers first (listed first), then the colliding ones (listed last: the
        # ones an informer over every NAD would keep as stubs).
        foreign = []
        for i in range(FILLERS):
            o = nad("fill-%d" % (i % 4), "other-%d" % i)
            code, _ = server.call("POST", NAD_API % o["metadata"]["namespace"], o)
            foreign.append((o["metadata"]["namespace"], o["metadata"]["name"]))
        colliding = []
        for i in range(TEAMS):
            ann = ({"sriovnetwork.openshift.io/owner-ref":
                    "SriovNetwork.sriovnetwork.openshift.io/elsewhere/coll-%d" % i}
                   if i % 2 == 0 else None)
            o = nad("team-%d" % i, "coll-%d" % i, ann)
            server.call("POST", NAD_API % o["metadata"]["namespace"], o)
            foreign.append(("team-%d" % i, "coll-%d" % i))
            colliding.append("coll-%d" % i)
        legacy = {}
        for i in range(5):
            name, team = "legacy-%d" % i, "team-%d" % i
            o = nad(team, name, {"k8s.v1.cni.cncf.io/resourceName":
                                 "openshift.io/sriov_" + name.replace("-", "_"),
                                 "sriovnetwork.openshift.io/owner-ref": OWNER % name},
                    legacy_config(name))
            code, stored = server.call("POST", NAD_API % team, o)
            legacy[(team, name)] = stored
        total = len(server.get("/apis/k8s.cni.cncf.io/v1/network-attachment-definitions")
                    ["items"])
        check("%d NADs stored before the controller starts" % total,
              total == FILLERS + TEAMS + 5)
        fresh = ["fresh-%d" % i for i in range(15)]
        nets = [(n, "team-%d" % (i % TEAMS)) for i, n in enumerate(fresh)] + \
               [("coll-%d" % i, "team-%d" % i) for i in range(TEAMS)] + \
               [("legacy-%d" % i, "team-%d" % i) for i in range(5)]
        for name, team in nets:
            code, _ = server.call("POST", "/apis/sriovnetwork.openshift.io/v1/namespaces/%s/"
                                  "sriovnetworks" % NS, network(name, team))
            check("SriovNetwork %s created" % name, code == 201, str(code))

        for n in rend.names:
            rend.start(n)
        t0 = time.monotonic()
        rendered = wait(lambda: all(server.get(NAD_API % team + "/" + name)
                                    for name, team in nets if name.startswith("fresh-")), 60)
        check("the 15 new networks rendered among %d NADs (%.1f s)" %
              (total, time.monotonic() - t0), rendered)
        net_path = "/apis/sriovnetwork.openshift.io/v1/namespaces/%s/sriovnetworks/" % NS
        if controller:
            reported = wait(lambda: all((ready(server.get(net_path + n)) or {}).get("reason") ==
                                        "NetworkAttachmentDefinitionInvalid" for n in colliding),
                            30)
            check("the 10 colliding networks: Ready=False NetworkAttachmentDefinitionInvalid",
                  reported, json.dumps([ready(server.get(net_path + n)) for n in colliding])[:600])
            labelled = wait(lambda: all(((server.get(NAD_API % t + "/" + n) or {}).get(
                "metadata") or {}).get("labels", {}).get(LABEL) for t, n in legacy), 30)
            check("the 5 legacy NADs labelled", labelled)
        else:
            time.sleep(15)  # the old layout has no report to wait for
        time.sleep(2)
        by_object = server.stats().get("writes_by_object", {})
        written = {k: v for k, v in by_object.items()
                   if any(k == "network-attachment-definitions %s/%s" % f for f in foreign)}
        check("no foreign NAD written (server's writes per object; %d foreign NADs): %s" %
              (len(foreign), sorted(written.items())[:8]), not written)
        for (team, name), stored in legacy.items():
            now = server.get(NAD_API % team + "/" + name) or {}
            path = (NAD_API % team) + "/" + name
            methods = [r[1] for r in server.requests() if r[1] != "GET" and
                       r[2].split("?")[0] == path and r[5]]
            check("legacy NAD %s/%s: one write, a PATCH of its label (%s); spec and "
                  "annotations unchanged" % (team, name, methods),
                  methods == ["PATCH"] and now.get("spec") == stored["spec"] and
                  now["metadata"].get("annotations") == stored["metadata"]["annotations"] and
                  now["metadata"].get("labels", {}).get(LABEL) == "sriov-agent",
                  json.dumps(now.get("metadata"))[:400])
        nad_reads = [r[2] for r in server.requests() if r[1] == "GET" and r[5] and
                     r[2].startswith("/apis/k8s.cni.cncf.io/v1/network-attachment-definitions")]
        check("NADs listed and watched only with the label selector (%d requests)" %
              len(nad_reads), nad_reads and all(
                  "labelSelector=sriovnetwork.openshift.io%2Frendered-by%3Dsriov-agent" in p or
                  "labelSelector=sriovnetwork.openshift.io/rendered-by%3Dsriov-agent" in p
                  for p in nad_reads if "limit=1" not in p), str(nad_reads[:4]))

        # Failover: the leader stopped (SIGSTOP: it neither renews nor writes), then killed.
        lease_path = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (NS, LEASE)
        holder = ((server.get(lease_path) or {}).get("spec") or {}).get("holderIdentity")
        check("one replica leads", holder in rend.names, str(holder))
        if holder not in rend.names:
            return finish(work)
        other = [n for n in rend.names if n != holder][0]
        writes0 = server.stats().get("writes", {}).get("network-attachment-definitions", 0)
        by_client0 = server.stats().get("writes_by_client", {})
        rend.procs[holder].send_signal(signal.SIGSTOP)
        t0 = time.monotonic()
        took = wait(lambda: ((server.get(lease_path) or {}).get("spec") or {}).get(
            "holderIdentity") == other, 75, step=0.5)
        check("leader stopped: %s takes the Lease after it expired (%.1f s)" %
              (other, time.monotonic() - t0), took)
        # Let the new leader go through every network once (reads of the foreign NADs).
        time.sleep(5)
        writes1 = server.stats().get("writes", {}).get("network-attachment-definitions", 0)
        check("takeover: the NADs unchanged (%d NAD writes)" % (writes1 - writes0),
              writes1 == writes0)
        by_client1 = server.stats().get("writes_by_client", {})
        stopped = "Bearer " + rend.token_prefix + holder
        check("the stopped leader wrote nothing after it stopped",
              by_client1.get(stopped) == by_client0.get(stopped),
              json.dumps({"before": by_client0.get(stopped), "after": by_client1.get(stopped)}))
        rend.procs[holder].kill()
        rend.procs[holder].wait()
        code, _ = server.call("POST", net_path[:-1], network("after-failover", "team-1"))
        check("the new leader renders a new network", code == 201 and wait(
            lambda: server.get(NAD_API % "team-1" + "/after-failover"), 20) is not None,
              rend.log(other)[-400:])
        after = server.stats().get("writes_by_client", {})
        new_writers = sorted(c for c, w in after.items() if c != "anonymous" and
                             w.get("network-attachment-definitions", 0) !=
                             (by_client1.get(c) or {}).get("network-attachment-definitions", 0))
        check("after the takeover only the new leader wrote NADs: %s" % new_writers,
              new_writers == ["Bearer " + rend.token_prefix + other])
        by_object = server.stats().get("writes_by_object", {})
        written = {k: v for k, v in by_object.items()
                   if any(k == "network-attachment-definitions %s/%s" % f for f in foreign)}
        check("still no foreign NAD written", not written, str(written)[:300])
        if controller:
            check("no request outside manifests/20-rbac.yaml",
                  server.stats().get("forbidden", 0) == 0)
        errs = [line for n in rend.names for line in rend.log(n).splitlines()
                if "[err]" in line]
        check("no errors logged", not errs, "\n".join(errs[:5]))
    finally:
        rend.stop_all()
        server.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
