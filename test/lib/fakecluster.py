"""The fake API server driven by real kubectl, as the cluster-mode drivers use it: one node
(worker-1), the agent's token held to manifests/20-rbac.yaml, kubectl as the admin. Import it
as `import fakecluster as ct` (test/lib on sys.path).

    cluster = ct.Cluster(src, work, kubectl)
    cluster.seed()      # CRDs, namespace, service account, RBAC, seed policy, node label
    ...
    cluster.stop()
"""
import json
import os
import subprocess
import sys
import urllib.request

from testlib import check

NODE = "worker-1"
NS = "sriov-network-operator"
SEED_RESOURCE = "openshift.io/sriov_highnet"
E810_RESOURCE = "openshift.io/sriov_e810"
SEED_POLICY = "test/fixtures/policies/highnet-sriov-policy.yaml"


class Cluster:
    def __init__(self, src, work, kubectl):
        self.src, self.work, self.kubectl = src, work, kubectl
        self.env = dict(os.environ, HOME=os.path.join(work, "home"),
                        KUBECONFIG=os.path.join(work, "kubeconfig"))
        os.makedirs(self.env["HOME"])
        self.agent_kubeconfig = os.path.join(work, "agent.kubeconfig")
        self.api = subprocess.Popen(
            [sys.executable, os.path.join(src, "test/fake-apiserver/fake_apiserver.py"),
             "--port", "0", "--node", NODE, "--kubeconfig-out", self.agent_kubeconfig,
             # The agent's token is its service account, held to manifests/20-rbac.yaml;
             # kubectl (no token) is the admin.
             "--token", "agent-token", "--anonymous", "--rbac", NS + ":sriov-agent"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "api.err"), "w"), text=True)
        line = self.api.stdout.readline()
        self.port = int(line.split()[1])
        with open(self.env["KUBECONFIG"], "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
                    "    server: http://127.0.0.1:%d\nusers:\n- name: admin\n  user: {}\n"
                    "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: admin\n"
                    "current-context: fake\n" % self.port)

    def run(self, *args, stdin=None):
        p = subprocess.run([self.kubectl] + list(args), env=self.env, input=stdin,
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    def ok(self, *args, stdin=None):
        rc, out = self.run(*args, stdin=stdin)
        check("kubectl " + " ".join(args[:3]), rc == 0, out[-400:])
        return out

    def apply(self, *paths):
        """`kubectl apply -f` of each path (relative to the source tree), one check each."""
        for path in paths:
            self.ok("apply", "-f", os.path.join(self.src, path))

    def seed(self, crds=True, serviceaccount=True, rbac=True, policy=True, label=True):
        """The cluster as the agent's manifests make it, each part applied unless switched off:
        the CRDs, the operator namespace, the agent's service account and RBAC, the seed
        policy, and the label that selects this node (highnet-node=true)."""
        self.apply(*(path for on, path in (
            (crds, "crds"), (True, "test/kube/namespace.yaml"),
            (serviceaccount, "manifests/10-serviceaccount.yaml"),
            (rbac, "manifests/20-rbac.yaml"), (policy, SEED_POLICY)) if on))
        if label:
            self.ok("label", "node", NODE, "highnet-node=true")

    def nodestate(self):
        rc, out = self.run("get", "sriovnetworknodestates", "-n", NS, NODE, "-o", "json")
        return json.loads(out) if rc == 0 else None

    def faults(self, **switches):
        req = urllib.request.Request("http://127.0.0.1:%d/_fake/faults" % self.port,
                                     data=json.dumps(switches).encode(), method="POST")
        urllib.request.urlopen(req, timeout=5).read()

    def stats(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/_fake/stats" % self.port,
                                    timeout=5) as r:
            return json.load(r)

    def stop(self):
        self.api.kill()
        self.api.wait()


def policy_yaml(name, resource, pf, num_vfs):
    return json.dumps({"apiVersion": "sriovnetwork.openshift.io/v1",
                       "kind": "SriovNetworkNodePolicy",
                       "metadata": {"name": name, "namespace": NS},
                       "spec": {"resourceName": resource, "numVfs": num_vfs, "priority": 50,
                                "nodeSelector": {"highnet-node": "true"},
                                "nicSelector": {"pfNames": [pf]}}})


def sync_status(cluster, want):
    def pred():
        ns = cluster.nodestate()
        return ns if ns and ns.get("status", {}).get("syncStatus") == want else None
    return pred


def numvfs(sysfs, pci):
    with open(os.path.join(sysfs, "bus/pci/devices", pci, "sriov_numvfs")) as f:
        return f.read().strip()
