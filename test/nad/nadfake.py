"""The fake API server as the NAD tests drive it (test/fake-apiserver/fake_apiserver.py):
started with its kubeconfig, kubectl against it, raw calls to its API and its /_fake log, a
kubeconfig per bearer token (optionally through a proxy's port)."""
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

from testlib import check

NS = "sriov-network-operator"
LEASE = "sriov-agent-networks"
LABEL = "sriovnetwork.openshift.io/rendered-by"
NAD_API = "/apis/k8s.cni.cncf.io/v1/namespaces/%s/network-attachment-definitions"


def network(name, team, **spec):
    """A SriovNetwork rendered into team's namespace, with spec's extra fields (vlan=...)."""
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetwork",
            "metadata": {"name": name, "namespace": NS},
            "spec": dict({"resourceName": "sriov_" + name.replace("-", "_"),
                          "networkNamespace": team, "ipam": '{"type": "dhcp"}'}, **spec)}


class Server:
    def __init__(self, src, work, kubectl, nodes=("worker-1",), rbac=True):
        """rbac: the agents' accounts as the manifests give them (tokens "controller-*" are
        the NAD controller's ServiceAccount), else every request allowed."""
        self.work, self.kubectl = work, kubectl
        self.env = dict(os.environ, HOME=os.path.join(work, "home"),
                        KUBECONFIG=os.path.join(work, "kubeconfig"))
        os.makedirs(self.env["HOME"])
        argv = [sys.executable, os.path.join(src, "test/fake-apiserver/fake_apiserver.py"),
                "--port", "0", "--kubeconfig-out", self.env["KUBECONFIG"]]
        for node in nodes:
            argv += ["--node", node]
        if rbac:
            argv += ["--rbac", NS + ":sriov-agent",
                     "--rbac-token", "controller-=" + NS + ":sriov-agent-nad-controller"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                                     stderr=open(os.path.join(work, "api.err"), "w"))
        self.port = int(self.proc.stdout.readline().split()[1])
        self.base = "http://127.0.0.1:%d" % self.port

    def kubectl_ok(self, *args, stdin=None):
        p = subprocess.run([self.kubectl] + list(args), env=self.env, input=stdin,
                           capture_output=True, text=True, timeout=120)
        check("kubectl " + " ".join(args[:4]), p.returncode == 0, (p.stdout + p.stderr)[-400:])

    def call(self, method, path, body=None, ctype="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": ctype})
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, None

    def get(self, path):
        code, obj = self.call("GET", path)
        return obj if code == 200 else None

    def stats(self):
        return self.get("/_fake/stats")

    def requests(self):
        return self.get("/_fake/requests")["requests"]

    def kubeconfig_for(self, token, port=None):
        """A kubeconfig with the bearer token, to this server or to port (a proxy's)."""
        path = os.path.join(self.work, "kubeconfig." + token)
        with open(self.env["KUBECONFIG"]) as f:
            text = f.read()
        if port:
            text = text.replace("127.0.0.1:%d" % self.port, "127.0.0.1:%d" % port)
        with open(path, "w") as f:
            f.write(text.replace("user:\n    {}", "user:\n    token: " + token))
        return path

    def stop(self):
        self.proc.kill()
        self.proc.wait()
