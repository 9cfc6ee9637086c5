#!/usr/bin/env python3
"""N real cluster-mode agents against one fake API server, for fleet measurements.

Fleet(work, agent, kubectl, n) starts test/fake-apiserver with nodes node-0..node-(n-1),
applies the CRDs, the namespace, the RBAC of manifests/ and the seed policy, labels every node
for it, and starts one `sriov-agent run` per node, each on its own generated seed node (sysfs
tree, kubelet, state and device-info directories under work/node-<i>). The fake's request log
(GET /_fake/requests) then tells each agent's requests apart by its node name. No kubelet:
the agents' pools wait for one, which costs the API server nothing.

As a program it is its own smoke test: it starts --agents agents, waits until every
NodeState says Succeeded, prints what the start cost the API server, and stops them.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

SRC = os.environ.get("SRCDIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NS = "sriov-network-operator"


class Fleet:
    def __init__(self, work, agent, kubectl, n, extra_args=()):
        self.work, self.kubectl, self.n = work, kubectl, n
        self.nodes = ["node-%d" % i for i in range(n)]
        self.env = dict(os.environ, HOME=os.path.join(work, "home"),
                        KUBECONFIG=os.path.join(work, "kubeconfig"))
        os.makedirs(self.env["HOME"], exist_ok=True)
        agent_kubeconfig = os.path.join(work, "agent.kubeconfig")
        argv = [sys.executable, os.path.join(SRC, "test/fake-apiserver/fake_apiserver.py"),
                "--port", "0", "--kubeconfig-out", agent_kubeconfig, "--token", "agent-token",
                "--anonymous"]
        for node in self.nodes:
            argv += ["--node", node]
        self.api = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                                    stderr=open(os.path.join(work, "api.err"), "w"))
        self.port = int(self.api.stdout.readline().split()[1])
        with open(self.env["KUBECONFIG"], "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                    "    server: http://127.0.0.1:%d\nusers:\n- name: admin\n  user: {}\n"
                    "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: admin\n"
                    "current-context: fake\n" % self.port)
        for path in ("crds", "test/kube/namespace.yaml", "manifests/20-rbac.yaml",
                     "test/fixtures/policies/highnet-sriov-policy.yaml"):
            self.kubectl_ok("apply", "-f", os.path.join(SRC, path))
        for node in self.nodes:
            self.kubectl_ok("label", "node", node, "highnet-node=true")
        self.agents = []
        for node in self.nodes:
            d = os.path.join(work, node)
            subprocess.run([sys.executable, os.path.join(SRC, "test/sysfs-gen/gen-sysfs.py"),
                            "--out", os.path.join(d, "sys"), "--profile", "seed"],
                           check=True, stdout=subprocess.DEVNULL)
            os.makedirs(os.path.join(d, "device-plugins"))
            self.agents.append(subprocess.Popen(
                [agent, "run", "--node-name", node, "--kubeconfig", agent_kubeconfig,
                 "--sysfs-root", os.path.join(d, "sys"),
                 "--kubelet-dir", os.path.join(d, "device-plugins"),
                 "--state-dir", os.path.join(d, "state"),
                 "--devinfo-dir", os.path.join(d, "devinfo"),
                 "--pod-resources-socket", "none", "--vf-timeout", "1"] + list(extra_args),
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "agent.log"), "w")))

    def kubectl_ok(self, *args):
        p = subprocess.run([self.kubectl] + list(args), env=self.env, capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError("kubectl %s: %s" % (" ".join(args), p.stdout + p.stderr))
        return p.stdout

    def fake(self, path, body=None):
        """GET (or POST body to) a /_fake/ endpoint of the API server, as JSON."""
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path),
                                     data=json.dumps(body).encode() if body else None,
                                     method="POST" if body else "GET")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def synced(self):
        """The nodes whose NodeState says Succeeded."""
        out = json.loads(self.kubectl_ok("get", "sriovnetworknodestates", "-n", NS, "-o",
                                         "json"))
        return sorted(o["metadata"]["name"] for o in out.get("items", [])
                      if o.get("status", {}).get("syncStatus") == "Succeeded")

    def running(self):
        return [a.poll() is None for a in self.agents]

    def stop(self):
        for a in self.agents:
            if a.poll() is None:
                a.terminate()
        for a in self.agents:
            try:
                a.wait(timeout=10)
            except subprocess.TimeoutExpired:
                a.kill()
                a.wait()
        self.api.kill()
        self.api.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    work = os.path.join(os.environ.get("TMPDIR", "/tmp"), "fleet-%d" % os.getpid())
    os.makedirs(work)
    fleet = Fleet(work, args.agent, args.kubectl, args.agents)
    try:
        end = time.monotonic() + args.timeout
        while time.monotonic() < end and len(fleet.synced()) < args.agents:
            time.sleep(0.5)
        synced = fleet.synced()
        log = fleet.fake("/_fake/requests")["requests"]
        print(json.dumps({"agents": args.agents, "succeeded": len(synced),
                          "running": sum(fleet.running()), "requests": len(log)}))
        ok = len(synced) == args.agents and all(fleet.running())
    finally:
        fleet.stop()
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("FAILED (logs in %s)" % work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
