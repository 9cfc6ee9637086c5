#!/usr/bin/env python3
"""The NAD controller's two replicas when the leader is cut off or frozen, not killed.

Against the fake API server under the manifests' RBAC, two replicas of `sriov-agent
nad-controller`, each reaching the server through a TCP proxy of its own that the test can cut
(a network partition: what the replica sends is dropped, nothing is answered, nothing is
closed) and mend (the connections that were cut are closed, new ones go through).

1. Partition: the leader is cut off. It must give leadership up (its renew deadline) before the
   other replica's write that takes the Lease reaches the server; the other replica renders a
   network created meanwhile. Mended, the old leader stays a candidate: it writes no NAD and
   takes no Lease.
2. SIGSTOP, then SIGCONT: the leader is frozen until the other replica took over and rendered a
   change, then resumed with its timers and watch events all due. It writes nothing (no NAD, no
   Lease) and says it is no longer the holder.

--case upgrade: from the single-DaemonSet layout. A node agent `sriov-agent run
--nad-controller=on` holds the Lease and renders three networks under the old RBAC (the
controller's roles bound to the DaemonSet's account); two of the NADs lose their label, as an
earlier version rendered them. The controller's replicas start and wait (the Lease is the
agent's); then the new RBAC is applied and the agent stopped (SIGTERM), as `kubectl apply -f
manifests/` replaces its pod. Every NAD keeps spec, annotations and owner references; a
labelled one gets no write at all (same resourceVersion), an unlabelled one one PATCH of its
label. The agent's own attempts after the RBAC change are refused (403), not counted.

The ordering in 1 is read on one clock: the server's request log (CLOCK_MONOTONIC, shifted
conservatively) and the time the old leader's step-down line was read from its stderr (later
than it was written). No timing is asserted beyond that order; waits only bound a hang.
Exit 1 on any failure.
"""
import argparse
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import check, finish, wait  # noqa: E402
import nadfake  # noqa: E402
from nadfake import LABEL, LEASE, NAD_API, NS, network  # noqa: E402

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (NS, LEASE)
NET_API = "/apis/sriovnetwork.openshift.io/v1/namespaces/%s/sriovnetworks" % NS
REPLICAS = ("nad-ctl-a", "nad-ctl-b")
# The controller's Lease: 30 s, renew deadline 20 s; a takeover comes 30-32 s after the last
# renewal the other replica saw. Waits are hang bounds well past that.
TAKEOVER_BOUND = 90
STEP_DOWN = "giving up leadership"


class Proxy:
    """127.0.0.1 TCP proxy to the API server that a test can cut and mend."""

    def __init__(self, upstream_port):
        self.upstream = ("127.0.0.1", upstream_port)
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.lock = threading.Lock()
        self.cut = False
        self.dead = []  # connections open while cut: closed when mended
        self.dropped = 0  # bytes the replica sent while cut
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        try:
            u = socket.create_connection(self.upstream)
        except OSError:
            c.close()
            return
        with self.lock:
            if self.cut:
                self.dead.append((c, u))
        socks = [c, u]
        try:
            while True:
                r, _, _ = select.select(socks, [], [], 0.5)
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        return
                    with self.lock:
                        cut = self.cut
                        if cut and s is c:
                            self.dropped += len(data)
                        if cut and (c, u) not in self.dead:
                            self.dead.append((c, u))
                    if not cut:
                        (u if s is c else c).sendall(data)
        except OSError:
            pass
        finally:
            for s in socks:
                s.close()

    def partition(self):
        with self.lock:
            self.cut = True

    def mend(self):
        with self.lock:
            self.cut = False
            dead, self.dead = self.dead, []
        for pair in dead:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class Server(nadfake.Server):
    def holder(self):
        return ((self.get(LEASE_PATH) or {}).get("spec") or {}).get("holderIdentity")

    def writes_of(self, token):
        """{resource: writes} the server counted for the bearer token."""
        return dict(self.stats().get("writes_by_client", {}).get("Bearer " + token, {}))

    def lease_writes_ok(self, token):
        """Lease writes of the token the server accepted (a write on a stale resourceVersion,
        refused with 409, is how a candidate learns it lost the Lease, and is not counted)."""
        return sum(1 for _t, method, path, _refused, error, auth in self.requests()
                   if method in ("PUT", "POST") and "/leases" in path and error is None and
                   auth == "Bearer " + token)

    def lease_taken_at(self, token):
        """When (on this process' CLOCK_MONOTONIC, never later than it was) the server
        received the first Lease write of the token that succeeded; None when none did."""
        before = time.monotonic()
        log = self.get("/_fake/requests")
        shift = before - log["now"]  # the server's "now" was read after `before`
        for t, method, path, _refused, error, auth in log["requests"]:
            if method in ("PUT", "POST") and path.split("?")[0].startswith(LEASE_PATH[:-len(
                    LEASE) - 1]) and error is None and auth == "Bearer " + token:
                return t + shift
        return None


class Replica:
    """A replica of the Deployment, its stderr read line by line with the time it was read."""

    def __init__(self, binary, work, server, name):
        self.name, self.token = name, "controller-" + name
        self.proxy = Proxy(server.port)
        self.lines = []  # (time read, line)
        self.logf = open(os.path.join(work, name + ".log"), "w")
        self.proc = subprocess.Popen(
            [binary, "nad-controller", "--identity", name, "--namespace", NS,
             "--kubeconfig", server.kubeconfig_for(self.token, self.proxy.port if self.proxy else None), "--log-level",
             "info"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))
            self.logf.write(line)
            self.logf.flush()

    def said(self, text, after=0.0):
        """When a line containing text was first read after `after`; None if not yet."""
        for t, line in list(self.lines):
            if t >= after and text in line:
                return t
        return None

    def errors(self):
        return [line for _, line in self.lines if "[err]" in line]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()


def vlan_of(nad):
    return json.loads(((nad or {}).get("spec") or {}).get("config") or "{}").get("vlan")


OLD_RBAC = """
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: old-layout, namespace: %(ns)s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: sriov-agent-nad-controller}
subjects: [{kind: ServiceAccount, name: sriov-agent, namespace: %(ns)s}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: old-layout}
roleRef:
  {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: sriov-agent-nad-controller}
subjects: [{kind: ServiceAccount, name: sriov-agent, namespace: %(ns)s}]
""" % {"ns": NS}


def upgrade(args, work, server, replicas):
    """--case upgrade (the module's docstring)."""
    rbac = os.path.join(work, "old-layout.yaml")
    with open(rbac, "w") as f:
        f.write(OLD_RBAC)
    server.kubectl_ok("apply", "-f", rbac)
    os.makedirs(os.path.join(work, "sys/bus/pci/devices"))
    d = os.path.join(work, "worker-1")
    os.makedirs(os.path.join(d, "dp"))
    agent_log = os.path.join(work, "worker-1.log")
    agent = subprocess.Popen(
        [args.agent, "run", "--dry-run", "--nad-controller=on", "--node-name", "worker-1",
         "--kubeconfig", server.kubeconfig_for("agent-worker-1"),
         "--sysfs-root", os.path.join(work, "sys"), "--kubelet-dir", os.path.join(d, "dp"),
         "--state-dir", os.path.join(d, "state"), "--devinfo-dir", os.path.join(d, "devinfo"),
         "--pod-resources-socket", os.path.join(d, "none.sock")],
        stdout=open(agent_log, "w"), stderr=subprocess.STDOUT)
    try:
        names = ("old-1", "old-2", "old-3")
        for name in names:
            server.call("POST", NET_API, network(name, "team-1", vlan=0))
        nad_path = lambda n: NAD_API % "team-1" + "/" + n  # noqa: E731
        check("old layout: the node agent renders the three networks",
              wait(lambda: all(server.get(nad_path(n)) for n in names), 60))
        check("old layout: the node agent holds the Lease", server.holder() == "worker-1",
              str(server.holder()))
        for name in REPLICAS:
            replicas[name] = Replica(args.agent, work, server, name)
        time.sleep(6)
        check("the new replicas wait while the node agent holds the Lease",
              server.holder() == "worker-1" and
              all(not server.writes_of(r.token).get("network-attachment-definitions")
                  for r in replicas.values()))
        # kubectl apply -f manifests/: the RBAC first (the agent may no longer write NADs or
        # the Lease), then the DaemonSet's pod is replaced.
        server.kubectl_ok("delete", "-f", rbac)
        # Two NADs as an earlier version rendered them, without the label (this binary's
        # agent, had it still the rights, would label them again).
        for name in names[:2]:
            code, _ = server.call("PATCH", nad_path(name),
                                  {"metadata": {"labels": {LABEL: None}}},
                                  "application/merge-patch+json")
            check("NAD team-1/%s: label removed by hand" % name, code == 200, str(code))
        before = {n: server.get(nad_path(n)) for n in names}
        check("two NADs without the label, one with it",
              [bool((before[n]["metadata"].get("labels") or {}).get(LABEL)) for n in names] ==
              [False, False, True])
        log0 = len(server.requests())
        agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=30)
        took = wait(lambda: server.holder() in REPLICAS, TAKEOVER_BOUND, step=0.5)
        check("a replica takes the Lease (%s)" % server.holder(), took)
        check("the unlabelled NADs are labelled", wait(lambda: all(
            ((server.get(nad_path(n))["metadata"].get("labels")) or {}).get(LABEL) ==
            "sriov-agent" for n in names), 30))
        time.sleep(3)
        after = {n: server.get(nad_path(n)) for n in names}
        for n in names:
            b, a = before[n], after[n]
            check("NAD team-1/%s: spec, annotations and owner references unchanged" % n,
                  a["spec"] == b["spec"] and
                  a["metadata"].get("annotations") == b["metadata"].get("annotations") and
                  a["metadata"].get("ownerReferences") == b["metadata"].get("ownerReferences"))
            writes = [(r[1], (r[5] or "")[7:]) for r in
                      server.requests()[log0:]
                      if r[1] != "GET" and r[2].split("?")[0] == nad_path(n) and
                      r[4] is None]
            want = [] if n == "old-3" else [("PATCH", "controller-" + server.holder())]
            check("NAD team-1/%s: accepted writes since the RBAC change %s (want %s)" %
                  (n, writes, want), writes == want)
        check("the labelled NAD kept its resourceVersion (not written)",
              after["old-3"]["metadata"]["resourceVersion"] ==
              before["old-3"]["metadata"]["resourceVersion"])
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    ap.add_argument("--case", choices=("partition", "upgrade"), default="partition")
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    work = tempfile.mkdtemp(prefix="nad-%s-" % args.case)
    server = Server(src, work, args.kubectl)
    replicas = {}
    try:
        server.kubectl_ok("apply", "-f", os.path.join(src, "crds"))
        server.kubectl_ok("apply", "-f", os.path.join(src, "test/kube/namespace.yaml"))
        server.kubectl_ok("apply", "-f", os.path.join(src, "test/fixtures",
                                                      "network-attachment-definition-crd.yaml"))
        server.kubectl_ok("apply", "-f", os.path.join(src, "manifests/10-serviceaccount.yaml"))
        server.kubectl_ok("apply", "-f", os.path.join(src, "manifests/20-rbac.yaml"))
        server.call("POST", "/api/v1/namespaces", {"metadata": {"name": "team-1"}})
        if args.case == "upgrade":
            upgrade(args, work, server, replicas)
            return finish(work)
        for name in ("net-1", "net-2"):
            server.call("POST", NET_API, network(name, "team-1", vlan=0))
        for name in REPLICAS:
            replicas[name] = Replica(args.agent, work, server, name)
        rendered = wait(lambda: all(server.get(NAD_API % "team-1" + "/" + n)
                                    for n in ("net-1", "net-2")), 60)
        check("two networks rendered by the replicas", rendered)
        leader = server.holder()
        check("one replica leads", leader in REPLICAS, str(leader))
        if leader not in REPLICAS:
            return finish(work)
        other = [n for n in REPLICAS if n != leader][0]
        old, new = replicas[leader], replicas[other]

        # 1. The leader partitioned from the API server.
        nads0 = server.writes_of(old.token).get("network-attachment-definitions", 0)
        leases0 = server.lease_writes_ok(old.token)
        t_cut = time.monotonic()
        old.proxy.partition()
        requests_cut = server.stats().get("requests_by_client", {}).get(
            "Bearer " + old.token, 0)
        took = wait(lambda: server.holder() == other, TAKEOVER_BOUND, step=0.5)
        check("partition: %s takes the Lease (%.1f s after the cut)" %
              (other, time.monotonic() - t_cut), took)
        t_down = old.said(STEP_DOWN, t_cut)
        t_taken = server.lease_taken_at(new.token)
        check("partition: the cut-off leader gave leadership up", t_down is not None,
              "\n".join(line for _, line in old.lines[-8:]))
        check("partition: it did so before %s's write taking the Lease reached the server "
              "(step-down %.1f s, takeover %.1f s after the cut)" %
              (other, (t_down or 0) - t_cut, (t_taken or 0) - t_cut),
              t_down is not None and t_taken is not None and t_down < t_taken)
        code, _ = server.call("POST", NET_API, network("during-partition", "team-1", vlan=0))
        check("partition: %s renders a network created meanwhile" % other,
              code == 201 and wait(lambda: server.get(NAD_API % "team-1" + "/during-partition"),
                                   30) is not None)
        check("partition: the cut-off leader's requests were dropped (%d bytes)" %
              old.proxy.dropped, old.proxy.dropped > 0)
        old.proxy.mend()
        check("mended: %s reaches the server again" % leader,
              wait(lambda: server.stats().get("requests_by_client", {}).get(
                  "Bearer " + old.token, 0) > requests_cut, 30))
        # It watches the Lease again and sees the new holder; a leader that thought it still
        # led would write the NAD of the network created meanwhile.
        time.sleep(8)
        check("mended: %s still holds the Lease" % other, server.holder() == other,
              str(server.holder()))
        nads1 = server.writes_of(old.token).get("network-attachment-definitions", 0)
        leases1 = server.lease_writes_ok(old.token)
        check("mended: the old leader sent no NAD write and took no Lease since the cut (NAD "
              "writes %d -> %d, Lease writes accepted %d -> %d)" % (nads0, nads1, leases0, leases1),
              nads1 == nads0 and leases1 == leases0)

        # 2. The new leader frozen (SIGSTOP) until the old one took over, then resumed.
        frozen, waker = new, old
        nads0 = server.writes_of(frozen.token).get("network-attachment-definitions", 0)
        leases0 = server.lease_writes_ok(frozen.token)
        t_stop = time.monotonic()
        frozen.proc.send_signal(signal.SIGSTOP)
        took = wait(lambda: server.holder() == waker.name, TAKEOVER_BOUND, step=0.5)
        check("SIGSTOP: %s takes the Lease (%.1f s)" % (waker.name, time.monotonic() - t_stop),
              took)
        # A change the frozen replica, once resumed, would write if it still thought it led.
        net = server.get(NET_API + "/net-2")
        net["spec"]["vlan"] = 42
        server.call("PUT", NET_API + "/net-2", net)
        check("SIGSTOP: %s renders a change (vlan 42)" % waker.name,
              wait(lambda: vlan_of(server.get(NAD_API % "team-1" + "/net-2")) == 42, 30))
        t_cont = time.monotonic()
        frozen.proc.send_signal(signal.SIGCONT)
        told = wait(lambda: frozen.said("no longer the holder", t_cont), 15)
        check("SIGCONT: the resumed replica says it is no longer the holder", told is not None,
              "\n".join(line for _, line in frozen.lines[-8:]))
        time.sleep(5)
        nads1 = server.writes_of(frozen.token).get("network-attachment-definitions", 0)
        leases1 = server.lease_writes_ok(frozen.token)
        check("SIGCONT: the resumed replica sent no NAD write and took no Lease (NAD writes "
              "%d -> %d, Lease writes accepted %d -> %d)" % (nads0, nads1, leases0, leases1),
              nads1 == nads0 and leases1 == leases0)
        check("SIGCONT: %s still holds the Lease, the NAD keeps vlan 42" % waker.name,
              server.holder() == waker.name and
              vlan_of(server.get(NAD_API % "team-1" + "/net-2")) == 42)
        check("no request outside manifests/20-rbac.yaml",
              server.stats().get("forbidden", 0) == 0)
        errs = [line for r in replicas.values() for line in r.errors()]
        check("no errors logged", not errs, "\n".join(errs[:5]))
    finally:
        for r in replicas.values():
            r.stop()
        server.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
