#!/usr/bin/env python3
"""A dead network path to the API server (issue 11.5): how long until the agent notices and
its watches are running again.

A load-balancer failover or a broken route drops packets: nothing closes the connection and
nothing answers. To measure that honestly the fake API server runs as a test host in a network
namespace this script makes itself (`ip netns add`, a veth pair with a /30 of its own from
198.18.0.0/15, RFC 2544's benchmarking range, so that runs side by side do not collide; all
removed at the end), the agent (cluster
mode, --dry-run, an idle non-holder of the NAD Lease) outside it. Once the agent's watches run,
every TCP connection it has to the server is cut by iptables DROP rules on its ports inside the
namespace (both directions): its packets vanish, as on a dead path, while new connections (new
source ports) get through, as after a failover. The figure is the time from the cut until the
server has seen all of the agent's watches started again.

    dead_path.py --agent BUILD/sriov-agent [--kubectl kubectl] [--limit 60]

Exit 0 when the figure is within --limit, 1 when not, 77 (skipped) without root or netns.
Used by ctest (integration/kube-dead-path) and bench/run section 5.
"""
import argparse
import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = "sriov-network-operator"
NODE = "worker-1"
LEASE = "sriov-agent-networks"
TEST_NET = ipaddress.ip_network("198.18.0.0/15")  # RFC 2544: benchmarking, never routed
WATCHES = 3  # a node agent: policies, own Node, own NodeState (the NAD Lease: nad-controller's)


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True)


def remove_stale_hosts(note=print):
    """Deletes the namespaces (and veths) of earlier runs that were killed before close():
    their veths and addresses would linger. A run's tag is its pid, so a namespace whose pid
    no longer lives is stale."""
    names = sh("ip", "netns", "list", check=False).stdout.split()
    for name in names:
        if not name.startswith("k2dp") or not name[4:].isdigit():
            continue
        tag = name[4:]
        try:
            with open("/proc/%s/cmdline" % tag, "rb") as f:
                if b"dead_path" in f.read():
                    continue  # a live (concurrent) run's
        except OSError:
            pass
        note("removing stale test namespace %s from a killed run" % name)
        sh("ip", "netns", "del", name, check=False)
        sh("ip", "link", "del", "k2h" + tag, check=False)


def free_subnet(tag):
    """This run's host and peer addresses: the first /30 of TEST_NET, from the one the pid
    picks on, that no interface of this host has an address in (a concurrent run's host end
    holds the first address of its /30)."""
    used = set()
    for line in sh("ip", "-o", "-4", "addr", "show", check=False).stdout.splitlines():
        m = re.search(r"\sinet\s(\S+)", line)
        if m:
            used.add(ipaddress.ip_interface(m.group(1)).ip)
    nets = list(TEST_NET.subnets(new_prefix=30))
    start = tag % len(nets)
    for net in nets[start:] + nets[:start]:
        host, peer = list(net.hosts())
        if not used.intersection(net):
            return str(host), str(peer)
    raise RuntimeError("no free /30 left in %s" % TEST_NET)


class TestHost:
    """A network namespace with one veth to this host (addresses host_addr there, peer_addr
    in the namespace); removed by close()."""

    def __init__(self):
        remove_stale_hosts()
        tag = "%d" % os.getpid()  # at most 7 digits: "k2h" + tag fits IFNAMSIZ
        self.host_addr, self.peer_addr = free_subnet(int(tag))
        self.netns, self.host_if, self.peer_if = "k2dp" + tag, "k2h" + tag, "k2p" + tag
        sh("ip", "netns", "add", self.netns)
        try:
            sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.peer_if)
            sh("ip", "link", "set", self.peer_if, "netns", self.netns)
            sh("ip", "addr", "add", self.host_addr + "/30", "dev", self.host_if)
            sh("ip", "link", "set", self.host_if, "up")
            self.run("ip", "addr", "add", self.peer_addr + "/30", "dev", self.peer_if)
            self.run("ip", "link", "set", self.peer_if, "up")
            self.run("ip", "link", "set", "lo", "up")
            self.run("iptables", "-S")  # iptables must work in there
        except Exception:
            self.close()
            raise

    def run(self, *argv, check=True):
        return sh("ip", "netns", "exec", self.netns, *argv, check=check)

    def argv(self, *argv):
        return ["ip", "netns", "exec", self.netns] + list(argv)

    def close(self):
        sh("ip", "netns", "del", self.netns, check=False)  # takes its veth end and the pair
        sh("ip", "link", "del", self.host_if, check=False)


def agent_ports(host, pid, port):
    """Local ports of the agent's established TCP connections to the server."""
    out = sh("ss", "-tnpH", "state", "established", "dst",
             "%s:%d" % (host.peer_addr, port)).stdout
    ports = set()
    for line in out.splitlines():
        if "pid=%d," % pid in line:
            m = re.search(r"\s%s:(\d+)\s" % re.escape(host.host_addr), " " + line + " ")
            if m:
                ports.add(int(m.group(1)))
    return sorted(ports)


def measure(agent_bin, kubectl, work, limit=90.0, note=print):
    """Seconds from the cut until the watches run again (None: not within limit)."""
    host = TestHost()
    procs = []
    stop = threading.Event()
    try:
        kcfg = os.path.join(work, "kubeconfig")
        api = subprocess.Popen(host.argv(
            sys.executable, os.path.join(SRC, "test/fake-apiserver/fake_apiserver.py"),
            "--bind", host.peer_addr, "--port", "0", "--node", NODE, "--kubeconfig-out", kcfg,
            "--rbac", NS + ":sriov-agent"), stdout=subprocess.PIPE, text=True,
            stderr=open(os.path.join(work, "api.err"), "w"))
        procs.append(api)
        port = int(api.stdout.readline().split()[1])
        env = dict(os.environ, KUBECONFIG=kcfg, HOME=work)

        def kc(*args, stdin=None):
            p = subprocess.run([kubectl] + list(args), env=env, input=stdin, text=True,
                               capture_output=True, timeout=60)
            if p.returncode:
                raise RuntimeError("kubectl %s: %s" % (" ".join(args[:3]), p.stderr[-300:]))

        for f in ("crds", "test/kube/namespace.yaml", "manifests/10-serviceaccount.yaml",
                  "manifests/20-rbac.yaml"):
            kc("apply", "-f", os.path.join(SRC, f))

        def hold():  # another node holds the Lease: the agent is an idle non-holder
            while True:
                now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
                kc("apply", "-f", "-", stdin=json.dumps({
                    "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": LEASE, "namespace": NS},
                    "spec": {"holderIdentity": "other-node", "leaseDurationSeconds": 30,
                             "acquireTime": now, "renewTime": now}}))
                if stop.wait(10):
                    return
        kc("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": LEASE, "namespace": NS},
            "spec": {"holderIdentity": "other-node", "leaseDurationSeconds": 30}}))
        holder = threading.Thread(target=hold, daemon=True)
        holder.start()

        agent_cfg = os.path.join(work, "agent.kubeconfig")
        with open(kcfg) as f:
            text = f.read()
        with open(agent_cfg, "w") as f:
            f.write(text.replace("user:\n    {}", "user:\n    token: agent-" + NODE))
        os.makedirs(os.path.join(work, "sys/bus/pci/devices"))
        log = open(os.path.join(work, "agent.log"), "w")
        agent = subprocess.Popen(
            [agent_bin, "run", "--dry-run", "--node-name", NODE, "--kubeconfig", agent_cfg,
             "--sysfs-root", os.path.join(work, "sys"), "--kubelet-dir", os.path.join(work, "dp"),
             "--state-dir", os.path.join(work, "state"),
             "--devinfo-dir", os.path.join(work, "devinfo"),
             "--pod-resources-socket", os.path.join(work, "none.sock"), "--log-level", "info"],
            stdout=log, stderr=log,
            # The test host is not on loopback: allow its bearer token over plain http.
            env=dict(os.environ, SRIOV_AGENT_INSECURE_HTTP_TOKEN="1"))
        procs.append(agent)

        def watches():
            with urllib.request.urlopen("http://%s:%d/_fake/stats" % (host.peer_addr, port),
                                        timeout=5) as r:
                return json.load(r)["watches"]

        end = time.monotonic() + 30
        while watches() < WATCHES and time.monotonic() < end:
            time.sleep(0.2)
        time.sleep(3)  # its first writes done: idle
        ports = agent_ports(host, agent.pid, port)
        if not ports:
            raise RuntimeError("the agent has no connection to the server")
        w0 = watches()
        t0 = time.monotonic()
        for p in ports:
            host.run("iptables", "-I", "INPUT", "-p", "tcp", "--sport", str(p), "-j", "DROP")
            host.run("iptables", "-I", "OUTPUT", "-p", "tcp", "--dport", str(p), "-j", "DROP")
        note("dead path: %d connections of the agent cut (ports %s)" % (
            len(ports), ",".join(map(str, ports))))
        while time.monotonic() - t0 < limit:
            if watches() >= w0 + WATCHES:
                return time.monotonic() - t0
            time.sleep(0.25)
        return None
    finally:
        stop.set()
        for p in reversed(procs):
            if p.poll() is None:
                p.kill()
                p.wait()
        host.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    ap.add_argument("--limit", type=float, default=60.0)
    args = ap.parse_args()
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("iptables"):
        print("SKIP: needs root, ip and iptables to make a test host (network namespace)")
        return 77
    work = tempfile.mkdtemp(prefix="dead-path-")
    try:
        took = measure(args.agent, args.kubectl, work, limit=args.limit + 20)
    except subprocess.CalledProcessError as e:
        print("SKIP: cannot make a test host: %s %s" % (" ".join(e.cmd), e.stderr.strip()))
        return 77
    ok = took is not None and took <= args.limit
    print("%s dead path detected and watches resumed in %s (<= %.0f s)" % (
        "PASS" if ok else "FAIL", "%.1f s" % took if took is not None else "never",
        args.limit))
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("logs in " + work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
