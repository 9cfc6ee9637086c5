#!/usr/bin/env python3
"""A cluster operator's days 0-2 against test/fake-apiserver, with the real kubectl and helm.

Usage: test-operator-journey.py SRCDIR SRIOV_AGENT
Environment: KUBECTL, HELM (default: from PATH).

For each install path, on a fresh fake API server with one node:
  helm   `helm lint --strict` and `helm package` of manifests/helm/sriov-agent as release
         0.1.1 and of the newest git tag's chart (this one too while there is no tag) as
         0.1.0 (version, appVersion and default image stamped as scripts/release does); `helm install` 0.1.0 (Helm's release records are ConfigMaps: HELM_DRIVER=
         configmap); policy + network applied as docs/install.md says, the node labelled,
         the real `sriov-agent nad-controller` (what the Deployment runs) renders the NAD and
         puts its finalizer on the network; a pod holding a VF; `helm upgrade` to 0.1.1 with
         the operator's values (a raised memory limit, a pull secret); `helm rollback` to 1;
         then the uninstall of docs/install.md: networks first (the controller removes their
         NADs and finalizers), policies, `helm uninstall`, the CRDs.
  plain  the same with `kubectl apply` of the rendered plain manifests, an upgrade by applying
         the next release's manifests and a rollback by applying the previous ones, and
         `kubectl delete` in the documented order; then the recovery docs/install.md gives
         for a network deleted after its controller was gone (finalizer removed by hand,
         the rendered NAD deleted by its label).
After each upgrade and rollback: the DaemonSet and Deployment run the expected image and
resources, and the user's objects (policy, network, NAD, pod) are untouched (same uid and
resourceVersion). After the uninstall: no object anywhere is Terminating, no NAD is left,
no CRD, RBAC, APF or admission object of the agent's, nothing in its namespace, no Helm
release. Only 127.0.0.1 and temp dirs."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import yaml

SRC, AGENT = sys.argv[1:3]
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl") or "kubectl"
HELM = os.environ.get("HELM") or shutil.which("helm") or "/opt/sriov-agent-tools/bin/helm"
FAKE = os.path.join(SRC, "test", "fake-apiserver", "fake_apiserver.py")
CHART = os.path.join(SRC, "manifests", "helm", "sriov-agent")
EXAMPLES = os.path.join(SRC, "manifests", "examples")
NS = "sriov-network-operator"
REGISTRY = "registry.example/net"
failures = []


def check(cond, what):
    print("ok:" if cond else "FAIL:", what, flush=True)
    if not cond:
        failures.append(what)


class Cluster:
    """A fake API server, a kubeconfig for it, and kubectl/helm bound to them."""

    def __init__(self, tmp, name):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.server = subprocess.Popen([sys.executable, FAKE, "--port", "0", "--node", "node1",
                                        "--kubeconfig-out", self.kubeconfig],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                       text=True)
        line = self.server.stdout.readline()
        assert line.startswith("PORT "), f"fake API server did not start: {line}"
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"
        self.env = dict(os.environ, HOME=self.dir, KUBECONFIG=self.kubeconfig,
                        HELM_DRIVER="configmap", HELM_CACHE_HOME=self.dir,
                        HELM_CONFIG_HOME=self.dir, HELM_DATA_HOME=self.dir)
        self.env.pop("KUBERNETES_SERVICE_HOST", None)
        self.controller = None

    def run(self, tool, *args, ok=True):
        r = subprocess.run([tool, *args], capture_output=True, text=True, env=self.env,
                           timeout=120)
        if ok:
            check(r.returncode == 0, f"{os.path.basename(tool)} {' '.join(args)[:150]} "
                                     f"({(r.stderr or r.stdout).strip()[-300:]})")
        return r

    def kubectl(self, *args, ok=True):
        return self.run(KUBECTL, *args, ok=ok)

    def helm(self, *args, ok=True):
        return self.run(HELM, *args, ok=ok)

    def get(self, path):
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def obj(self, path):
        o = self.get(path)
        return None if o is None else o

    def all_objects(self):
        """Every stored object, by walking discovery as kubectl would."""
        out = []
        gvs = ["/api/v1"] + ["/apis/" + v["groupVersion"]
                             for g in self.get("/apis")["groups"] for v in g["versions"]]
        for gv in gvs:
            for res in (self.get(gv) or {}).get("resources", []):
                if "/" in res["name"] or "list" not in res.get("verbs", ["list"]):
                    continue
                lst = self.get(f"{gv}/{res['name']}") or {}
                out += [(res["kind"], o["metadata"].get("namespace"), o["metadata"]["name"], o)
                        for o in lst.get("items", [])]
        return out

    def start_controller(self):
        log = open(os.path.join(self.dir, "nad-controller.log"), "a")
        self.controller = subprocess.Popen(
            [AGENT, "nad-controller", "--identity", "journey", "--namespace", NS,
             "--kubeconfig", self.kubeconfig], stdout=log, stderr=log, env=self.env)

    def stop_controller(self):
        if self.controller:
            self.controller.send_signal(signal.SIGTERM)
            self.controller.wait(timeout=20)
            self.controller = None

    def close(self):
        if self.controller:
            self.controller.kill()
            self.controller.wait()
        self.server.kill()
        self.server.wait()


def wait_for(what, cond, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    check(False, f"within {timeout} s: {what}")
    return None


def previous_chart(tmp):
    """The chart of the newest release tag, if the repository has one (then the upgrade starts
    from what that release shipped); else None and both ends are this checkout's chart."""
    r = subprocess.run(["git", "-C", SRC, "describe", "--tags", "--abbrev=0"],
                       capture_output=True, text=True)
    tag = r.stdout.strip()
    if r.returncode != 0 or not tag:
        print("no release tag: the upgrade goes from this chart as 0.1.0 to it as 0.1.1")
        return None
    d = os.path.join(tmp, "tag-" + tag)
    os.makedirs(d)
    archive = subprocess.run(["git", "-C", SRC, "archive", tag, "manifests/helm", "crds"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", d], input=archive, check=True)
    print(f"upgrade from the chart of tag {tag}")
    return os.path.join(d, "manifests", "helm", "sriov-agent")


def package(tmp, version, chart=CHART):
    """The chart as scripts/release packages it: version, appVersion and image stamped."""
    d = os.path.join(tmp, f"chart-{version}")
    shutil.copytree(chart, os.path.join(d, "sriov-agent"), symlinks=False)
    values = os.path.join(d, "sriov-agent", "values.yaml")
    with open(values) as f:
        text = f.read()
    with open(values, "w") as f:
        f.write("\n".join(f"image: {REGISTRY}/sriov-agent:{version}" if ln.startswith("image:")
                          else ln for ln in text.split("\n")))
    env = dict(os.environ, HELM_CACHE_HOME=d, HELM_CONFIG_HOME=d, HELM_DATA_HOME=d)
    r = subprocess.run([HELM, "lint", "--strict", os.path.join(d, "sriov-agent")],
                       capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0, f"helm lint --strict ({r.stdout.strip()[-200:]})")
    r = subprocess.run([HELM, "package", os.path.join(d, "sriov-agent"), "--version", version,
                        "--app-version", version, "--destination", d],
                       capture_output=True, text=True, env=env, timeout=120)
    check(r.returncode == 0, f"helm package {version} ({r.stderr.strip()[-200:]})")
    tgz = os.path.join(d, f"sriov-agent-{version}.tgz")
    r = subprocess.run([HELM, "template", "sriov-agent", tgz], capture_output=True, text=True,
                       env=env, timeout=120)
    manifests = os.path.join(d, "manifests.yaml")
    with open(manifests, "w") as f:
        f.write(r.stdout)
    crds = os.path.join(d, "crds.yaml")
    with open(crds, "w") as f:
        for name in sorted(os.listdir(os.path.join(SRC, "crds"))):
            with open(os.path.join(SRC, "crds", name)) as c:
                f.write("---\n" + c.read())
    return tgz, manifests, crds


DS = f"/apis/apps/v1/namespaces/{NS}/daemonsets/sriov-agent"
DEP = f"/apis/apps/v1/namespaces/{NS}/deployments/sriov-agent-nad-controller"
POLICY = f"/apis/sriovnetwork.openshift.io/v1/namespaces/{NS}/sriovnetworknodepolicies/highnet-sriov-policy"
NETWORK = f"/apis/sriovnetwork.openshift.io/v1/namespaces/{NS}/sriovnetworks/highnet-rdma-network"
NAD = "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions/highnet-rdma-network"
POD = "/api/v1/namespaces/default/pods/vf-holder"
FINALIZER = "netattdef.finalizers.sriovnetwork.openshift.io"
VF_POD = {"apiVersion": "v1", "kind": "Pod",
          "metadata": {"name": "vf-holder", "namespace": "default", "annotations": {
              "k8s.v1.cni.cncf.io/networks": "highnet-rdma-network"}},
          "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {
              "requests": {"openshift.io/sriov_highnet": "1"},
              "limits": {"openshift.io/sriov_highnet": "1"}}}]}}


def images(c):
    out = set()
    for path in (DS, DEP):
        spec = (c.get(path) or {}).get("spec", {}).get("template", {}).get("spec", {})
        out |= {x["image"] for x in spec.get("containers", []) + spec.get("initContainers", [])}
    return out


def user_objects(c):
    return {p: (o["metadata"]["uid"], o["metadata"]["resourceVersion"])
            for p in (POLICY, NETWORK, NAD, POD) for o in [c.get(p)] if o}


def day1(c, tmp):
    """Policy + network, as docs/install.md's steps; the controller renders the NAD."""
    c.kubectl("apply", "-f", os.path.join(EXAMPLES, "highnet-sriov-policy.yaml"))
    c.kubectl("label", "node", "node1", "highnet-node=true")
    c.start_controller()
    c.kubectl("apply", "-f", os.path.join(EXAMPLES, "sriov-network.yaml"))
    nad = wait_for("the controller renders NAD default/highnet-rdma-network",
                   lambda: c.get(NAD))
    net = c.get(NETWORK)
    check(nad is not None and FINALIZER in net["metadata"].get("finalizers", []),
          "the network carries the controller's finalizer")
    pod_file = os.path.join(c.dir, "pod.json")
    with open(pod_file, "w") as f:
        json.dump(VF_POD, f)
    c.kubectl("apply", "-f", pod_file)
    before = user_objects(c)
    check(len(before) == 4, f"policy, network, NAD and a pod holding a VF ({sorted(before)})")
    return before


def resources_of(c):
    spec = c.get(DS)["spec"]["template"]["spec"]
    return spec["containers"][0]["resources"], spec.get("imagePullSecrets")


def uninstall_networks_first(c, label):
    """docs/install.md "Uninstall", steps 1-2: while the NAD controller still runs."""
    c.kubectl("delete", "sriovnetworks,sriovibnetworks", "--all", "-A", "--timeout=60s")
    check(c.get(NETWORK) is None and c.get(NAD) is None,
          f"{label}: the network is gone and so is its NAD (the controller removed both)")
    c.kubectl("delete", "pod", "vf-holder", "-n", "default", "--wait=false")
    c.kubectl("delete", "sriovnetworknodepolicies", "--all", "-n", NS, "--timeout=60s")


def check_nothing_left(c, label):
    everything = c.all_objects()
    namespaces = {n for k, _, n, _ in everything if k == "Namespace"}
    check(NS not in namespaces, f"{label}: the namespace {NS} is deleted")
    # A real server's namespace controller deletes what is left in a deleted namespace (the
    # controller's Lease, Events); the fake has none: such objects count as gone.
    left = [x for x in everything if x[1] is None or x[1] in namespaces]
    terminating = [(k, ns, n) for k, ns, n, o in left if o["metadata"].get("deletionTimestamp")]
    check(not terminating, f"{label}: nothing Terminating ({terminating})")
    nads = [(ns, n) for k, ns, n, o in left if k == "NetworkAttachmentDefinition"]
    check(not nads, f"{label}: no NAD left ({nads})")
    ours = [(k, ns, n) for k, ns, n, o in left
            if ns == NS or "sriov" in n and k not in ("Node", "Event") or
            k == "CustomResourceDefinition" and n.endswith(".sriovnetwork.openshift.io") or
            k == "ConfigMap" and n.startswith("sh.helm.release")]
    check(not ours, f"{label}: no object of the agent's, no Helm release record ({ours})")


def helm_path(tmp, rel):
    (old_tgz, _, _), (new_tgz, _, _) = rel
    c = Cluster(tmp, "helm")
    try:
        c.helm("install", "sriov-agent", old_tgz)
        c.kubectl("wait", "--for", "condition=established", "crd", "--all", "--timeout=30s")
        check(images(c) == {f"{REGISTRY}/sriov-agent:0.1.0"}, f"helm install: 0.1.0 ({images(c)})")
        # the NAD CRD is Multus'; the fake has none built in
        c.kubectl("apply", "-f", os.path.join(SRC, "test", "fixtures",
                                              "network-attachment-definition-crd.yaml"))
        before = day1(c, tmp)

        values = os.path.join(c.dir, "values.yaml")
        with open(values, "w") as f:
            yaml.safe_dump({"resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                                          "limits": {"memory": "256Mi"}},
                            "imagePullSecrets": [{"name": "regcred"}]}, f)
        c.helm("upgrade", "sriov-agent", new_tgz, "-f", values)
        res, secrets = resources_of(c)
        check(images(c) == {f"{REGISTRY}/sriov-agent:0.1.1"} and
              res["limits"]["memory"] == "256Mi" and secrets == [{"name": "regcred"}],
              f"helm upgrade: 0.1.1 with the operator's values ({images(c)}, {res}, {secrets})")
        check(user_objects(c) == before, "helm upgrade: policy, network, NAD, pod untouched")
        c.helm("rollback", "sriov-agent", "1")
        res, secrets = resources_of(c)
        check(images(c) == {f"{REGISTRY}/sriov-agent:0.1.0"} and
              res["limits"]["memory"] == "64Mi" and not secrets,
              f"helm rollback 1: 0.1.0 with its values again ({images(c)}, {res})")
        check(user_objects(c) == before, "helm rollback: policy, network, NAD, pod untouched")
        hist = c.helm("history", "sriov-agent", "-o", "json")
        check([h["status"] for h in json.loads(hist.stdout or "[]")] ==
              ["superseded", "superseded", "deployed"], "helm history: install, upgrade, rollback")

        uninstall_networks_first(c, "helm")
        c.helm("uninstall", "sriov-agent", "--timeout=60s")
        c.stop_controller()  # the Deployment's pods, gone with it
        # Helm never deletes the CRDs of crds/
        c.kubectl("delete", "-f", os.path.join(CHART, "crds"), "--timeout=60s")
        c.kubectl("delete", "-f", os.path.join(SRC, "test", "fixtures",
                                               "network-attachment-definition-crd.yaml"))
        check(c.helm("list", "-A", "-q").stdout.strip() == "", "helm list: no release")
        check_nothing_left(c, "helm")
    finally:
        c.close()


def plain_path(tmp, rel):
    (_, old_manifests, crds), (_, new_manifests, _) = rel
    c = Cluster(tmp, "plain")
    try:
        c.kubectl("apply", "-f", crds)
        c.kubectl("wait", "--for", "condition=established", "crd", "--all", "--timeout=30s")
        c.kubectl("apply", "-f", old_manifests)
        check(images(c) == {f"{REGISTRY}/sriov-agent:0.1.0"}, f"kubectl apply: 0.1.0 ({images(c)})")
        c.kubectl("apply", "-f", os.path.join(SRC, "test", "fixtures",
                                              "network-attachment-definition-crd.yaml"))
        before = day1(c, tmp)
        c.kubectl("apply", "-f", crds)
        c.kubectl("apply", "-f", new_manifests)
        check(images(c) == {f"{REGISTRY}/sriov-agent:0.1.1"}, f"upgrade: 0.1.1 ({images(c)})")
        check(user_objects(c) == before, "upgrade: policy, network, NAD, pod untouched")
        c.kubectl("apply", "-f", old_manifests)
        check(images(c) == {f"{REGISTRY}/sriov-agent:0.1.0"}, f"rollback: 0.1.0 ({images(c)})")
        check(user_objects(c) == before, "rollback: policy, network, NAD, pod untouched")

        uninstall_networks_first(c, "plain")
        c.kubectl("delete", "-f", old_manifests, "--timeout=60s")
        c.stop_controller()
        c.kubectl("delete", "-f", crds, "--timeout=60s")

        # Recovery (docs/install.md): a network deleted after the controller was gone stays
        # Terminating with its NAD until its finalizer is removed by hand.
        c.kubectl("apply", "-f", crds)
        c.kubectl("wait", "--for", "condition=established", "crd", "--all", "--timeout=30s")
        c.kubectl("apply", "-f", old_manifests)
        c.start_controller()
        c.kubectl("apply", "-f", os.path.join(EXAMPLES, "sriov-network.yaml"))
        wait_for("the controller renders the NAD again", lambda: c.get(NAD))
        c.kubectl("delete", "-f", old_manifests, "--timeout=60s")
        c.stop_controller()
        c.kubectl("delete", "sriovnetworks", "--all", "-A", "--wait=false")
        net = c.get(NETWORK)
        check(net is not None and net["metadata"].get("deletionTimestamp") and c.get(NAD),
              "out of order: the network stays Terminating, its NAD stays")
        r = c.kubectl("get", "sriovnetworks,sriovibnetworks", "-A", "-o", "name")
        for line in r.stdout.split():
            ns = NS
            c.kubectl("patch", "-n", ns, line, "--type=merge", "-p",
                      '{"metadata":{"finalizers":null}}')
        c.kubectl("delete", "network-attachment-definitions", "-A", "-l",
                  "sriovnetwork.openshift.io/rendered-by=sriov-agent")
        c.kubectl("delete", "-f", crds, "--timeout=60s")
        c.kubectl("delete", "-f", os.path.join(SRC, "test", "fixtures",
                                               "network-attachment-definition-crd.yaml"))
        check_nothing_left(c, "plain")
    finally:
        c.close()


def main():
    for tool in (KUBECTL, HELM):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (scripts/install-deps)")
    tmp = tempfile.mkdtemp(prefix="sriov-journey-")
    try:
        rel = [package(tmp, "0.1.0", previous_chart(tmp) or CHART), package(tmp, "0.1.1")]
        t0 = time.time()
        helm_path(tmp, rel)
        print(f"helm path: {time.time() - t0:.0f} s")
        t0 = time.time()
        plain_path(tmp, rel)
        print(f"plain path: {time.time() - t0:.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
