#!/usr/bin/env python3
"""Checks of manifests/, crds/ and the install rules, as a cluster operator would meet them.

Usage: test-manifests.py CASE SRIOV_AGENT SRCDIR BUILDDIR
CASE:
  parse    every YAML/JSON file of manifests/ and crds/ parses; every object has apiVersion,
           kind and name; the install set lives in sriov-network-operator; every policy is
           accepted by `sriov-agent plan`; pods ask for prefixed extended resources with
           limits equal to requests; the RDMA shared ConfigMap carries the JSON file
  apply    real kubectl applies crds/, manifests/ and manifests/examples/ against
           test/fake-apiserver, a second apply changes nothing, and the stored objects are
           what the files say
  cluster  `sriov-agent run` with the DaemonSet's arguments ($(VAR)s expanded as the kubelet
           would, host paths moved to a temp dir, the fake's kubeconfig, --dry-run) writes
           the NodeState of the labelled node with the seed policy's desired PF
  plan     the seed policy of the examples plans to one PF (ens1f0) with 8 VFs in
           sriov_highnet on the generated seed tree; the VM-lab variant to 4 VFs on an igb PF
  flags    the DaemonSet runs `sriov-agent run` with flags that `sriov-agent run --help` lists
  probe    the DaemonSet's liveness script: alive before the agent owns a PF; after, alive
           only while one of its <prefix>_*.sock device-plugin sockets exists
  host     `sriov-agent run` with the arguments of examples/host/sriov-agent.default (paths
           moved to a temp dir, --dry-run, generated seed sysfs) starts, loads the RDMA shared
           config and applies the seed policy, and stops cleanly on SIGTERM
  rbac     the RBAC grants exactly the verbs the agent needs, nothing else
  hostpaths every host directory the agent writes (its --state-dir, --kubelet-dir,
           --devinfo-dir, /sys, the CNI plugin's records for their lock) and the install-cni
           init container writes (/opt/cni/bin) is a writable hostPath mount, what it only
           reads (/dev, the PodResources socket's directory, /etc/sriov-operator with the
           InfiniBand GUID pool) is read-only, and no other
           hostPath is mounted; no container is
           privileged, the agent adds CAP_NET_ADMIN only, the init container none
  image    every container runs the image scripts/build-image builds by default
  helm     manifests/helm/sriov-agent through the real helm (HELM, from scripts/install-deps):
           `helm lint --strict`; `helm template` with default values gives exactly the objects
           of manifests/*.yaml (parsed YAML), --include-crds adds exactly crds/; other values
           (namespace, image, prefix, node selector, RDMA shared config, resync interval,
           metrics, DRA resources with the hostpaths checks, imagePullSecrets, resources,
           tolerations, affinity, priorityClassName, podAnnotations, extraArgs,
           updateStrategy) land where they must; `helm package` carries crds/ as regular
           files of the same content
  netop    migration from NVIDIA's Network Operator: the chart with rdmaSharedConfigMap.namespace
           nvidia-network-operator, the agent run with that DaemonSet's arguments against
           test/fake-apiserver takes the rdma-devices ConfigMap in the shape the Network
           Operator renders it (config.json a single-quoted JSON string)
  initcni  the install-cni init container's script (busybox sh) installs the plugin
           atomically (rename over the old file, mode 0755, no leftover) with its bundle of
           loader and libraries (a new directory renamed into place) and fails without one;
           the installed sriov and ib-sriov answer CNI_COMMAND=VERSION in a chroot holding
           nothing but that /opt/cni/bin (needs root; chroot)
  install  `cmake --install` puts the binary, the unit (ExecStart = installed binary), the
           manifests and the CRDs under the prefix; `systemd-analyze verify` accepts the unit;
           the man page sriov-agent(8) renders and names every flag of every command's --help
Uses only temp dirs and 127.0.0.1. Environment: KUBECTL (default "kubectl")."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

CASE, AGENT, SRC, BUILD = sys.argv[1:5]
MANIFESTS = os.path.join(SRC, "manifests")
EXAMPLES = os.path.join(MANIFESTS, "examples")
CRDS = os.path.join(SRC, "crds")
NS = "sriov-network-operator"
KUBECTL = os.environ.get("KUBECTL") or "kubectl"
failures = []


def check(cond, what):
    if cond:
        print("ok:", what)
    else:
        failures.append(what)
        print("FAIL:", what)


def object_files(*dirs):
    files = []
    for d in dirs:
        for ext in ("yaml", "yml", "json"):
            files += glob.glob(os.path.join(d, "**", "*." + ext), recursive=True)
    return sorted(files)


def load_docs(path):
    with open(path) as f:
        if path.endswith(".json"):
            return [json.load(f)]
        return [d for d in yaml.safe_load_all(f) if d is not None]


def objects_in(path):
    """(kind, name, object) of the Kubernetes objects of a file (a JSON config is not one)."""
    return [(d["kind"], d["metadata"]["name"], d) for d in load_docs(path)
            if isinstance(d, dict) and "kind" in d]


def one(kind, path):
    found = [o for k, _, o in objects_in(path) if k == kind]
    assert len(found) == 1, f"{path}: expected one {kind}, found {len(found)}"
    return found[0]


DAEMONSET = os.path.join(MANIFESTS, "30-daemonset.yaml")
RBAC = os.path.join(MANIFESTS, "20-rbac.yaml")
NAD_CONTROLLER = os.path.join(MANIFESTS, "35-nad-controller.yaml")
FLOWCONTROL = os.path.join(MANIFESTS, "60-flowcontrol.yaml")
SEED_POLICY = os.path.join(EXAMPLES, "highnet-sriov-policy.yaml")
IGB_POLICY = os.path.join(EXAMPLES, "vm-lab", "highnet-sriov-policy.yaml")


# ------------------------------------------------------------------------------------ parse

def case_parse():
    # the Helm chart's templates are not YAML until rendered: case "helm" checks them
    files = [f for f in object_files(MANIFESTS, CRDS)
             if not f.startswith(os.path.join(MANIFESTS, "helm") + os.sep)]
    check(len(files) >= 10, f"found the manifest files ({len(files)})")
    for path in files:
        rel = os.path.relpath(path, SRC)
        try:
            docs = load_docs(path)
        except (yaml.YAMLError, json.JSONDecodeError) as e:
            check(False, f"{rel} parses: {e}")
            continue
        check(len(docs) > 0, f"{rel} parses and is not empty")
        for d in docs:
            if path.endswith(".json") and "kind" not in d:
                continue  # a plain config file (RDMA shared config), checked below
            meta = d.get("metadata") or {}
            check(bool(d.get("apiVersion")) and bool(d.get("kind")) and bool(meta.get("name")),
                  f"{rel}: {d.get('kind')} {meta.get('name')} has apiVersion, kind and name")
            if d.get("kind") == "SriovNetworkNodePolicy":
                r = subprocess.run([AGENT, "plan", "--policies", path, "-o", "json"],
                                   capture_output=True, text=True, timeout=60)
                check(r.returncode == 0,
                      f"{rel}: sriov-agent plan accepts the policy (exit {r.returncode}: "
                      f"{r.stderr.strip()[:300]})")

    # The install set: everything namespaced is in the agent's namespace, except the read
    # grant on the RDMA shared config, which lives next to its ConfigMap.
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding",
                      "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                      "FlowSchema", "PriorityLevelConfiguration"}
    for path in glob.glob(os.path.join(MANIFESTS, "*.yaml")):
        for kind, name, o in objects_in(path):
            if kind not in cluster_scoped:
                want = "kube-system" if name == "sriov-agent-rdma-devices" else NS
                check(o["metadata"].get("namespace") == want, f"{kind} {name} is in {want}")

    # Pods: extended resources need a domain prefix and limits equal to requests.
    for path in glob.glob(os.path.join(EXAMPLES, "*pod*.yaml")):
        pod = one("Pod", path)
        for c in pod["spec"]["containers"]:
            res = c.get("resources", {})
            req, lim = res.get("requests", {}), res.get("limits", {})
            extended = [k for k in list(req) + list(lim) if k not in ("cpu", "memory")]
            check(extended and all(re.fullmatch(r"[a-z0-9.-]+\.?[a-z0-9-]*/[A-Za-z0-9_.-]+", k)
                                   for k in extended),
                  f"{os.path.basename(path)}: extended resources carry a domain prefix "
                  f"{extended}")
            check(req == lim, f"{os.path.basename(path)}: limits equal requests {req}")
    training = one("Pod", os.path.join(EXAMPLES, "training-pod.yaml"))
    tc = training["spec"]["containers"][0]
    check(tc["resources"]["limits"] == {"nvidia.com/gpu": 8, "openshift.io/sriov_highnet": 1},
          "training pod: 8 GPUs and one sriov_highnet VF")
    env = {e["name"]: e.get("value") for e in tc.get("env", [])}
    check(env.get("NCCL_SOCKET_IFNAME") == "net1" and "NCCL_IB_HCA" in env and
          "NCCL_NET_GDR_LEVEL" in env, f"training pod: NCCL environment {env}")
    check("IPC_LOCK" in tc["securityContext"]["capabilities"]["add"],
          "training pod: IPC_LOCK for RDMA")
    check(training["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] ==
          "highnet-sriov-network", "training pod: attached to highnet-sriov-network")
    whole = one("Pod", os.path.join(EXAMPLES, "whole-card-pod.yaml"))
    check(whole["spec"]["containers"][0]["resources"]["limits"] ==
          {"nvidia.com/gpu": 8, "rdma/rdma_hca": 1},
          "whole-card pod asks for 8 GPUs and rdma/rdma_hca: 1")

    net = one("SriovNetwork", os.path.join(EXAMPLES, "highnet-sriov-network.yaml"))
    check(net["spec"]["resourceName"] == "sriov_highnet" and
          net["spec"]["networkNamespace"] == "default", "SriovNetwork: sriov_highnet -> default")
    ipam = json.loads(net["spec"]["ipam"])
    check(isinstance(ipam, dict) and ipam.get("type"), f"SriovNetwork ipam is JSON: {ipam}")

    with open(os.path.join(EXAMPLES, "host", "rdma-shared-config.json")) as f:
        host_config = json.load(f)
    cm = one("ConfigMap", os.path.join(EXAMPLES, "rdma-device-plugin-config.yaml"))
    check((cm["metadata"]["namespace"], cm["metadata"]["name"]) == ("kube-system", "rdma-devices"),
          "the RDMA shared ConfigMap is the seed's kube-system/rdma-devices")
    config = json.loads(cm["data"]["config.json"])
    check(config == {"configList": [{"resourceName": "rdma_hca", "rdmaHcaMax": 1,
                                     "selectors": {"vendors": ["15b3"]}}]},
          f"the seed's RDMA shared config: {config}")
    # The host file spells out the defaults (prefix rdma, update every 60 s).
    check(host_config == {"periodicUpdateInterval": 60,
                          "configList": [dict(config["configList"][0], resourcePrefix="rdma")]},
          f"host/rdma-shared-config.json is the same config: {host_config}")
    ds = one("DaemonSet", DAEMONSET)
    args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
    check("--rdma-shared-configmap=kube-system/rdma-devices" in args and
          not any(a.startswith("--rdma-shared-config=") for a in args),
          f"the DaemonSet follows that ConfigMap through the API, no file: {args}")
    whole_env = {e["name"]: e.get("value")
                 for e in whole["spec"]["containers"][0].get("env", [])}
    check(whole["spec"]["containers"][0]["resources"]["requests"] ==
          {"nvidia.com/gpu": 8, "rdma/rdma_hca": 1} and "NCCL_IB_HCA" in whole_env and
          "IPC_LOCK" in whole["spec"]["containers"][0]["securityContext"]["capabilities"]["add"],
          f"whole-card pod: 8 GPUs, rdma/rdma_hca 1, IPC_LOCK, NCCL environment {whole_env}")


# ------------------------------------------------------------------------------------ apply

def kubeconfig_text(url):
    return ("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
            f"    server: {url}\nusers:\n- name: u\n  user: {{}}\n"
            "contexts:\n- name: c\n  context:\n    cluster: fake\n    user: u\n"
            "current-context: c\n")


def case_apply():
    if not shutil.which(KUBECTL):
        print(f"{KUBECTL} not found")
        sys.exit(1)
    fake = os.path.join(SRC, "test", "fake-apiserver", "fake_apiserver.py")
    tmp = tempfile.mkdtemp(prefix="sriov-manifests-")
    server = subprocess.Popen([sys.executable, fake, "--port", "0", "--node", "node1"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        if not line.startswith("PORT "):
            check(False, f"fake API server starts: {line} {server.stderr.read()}")
            return
        kc = os.path.join(tmp, "kubeconfig")
        with open(kc, "w") as f:
            f.write(kubeconfig_text(f"http://127.0.0.1:{int(line.split()[1])}"))
        env = dict(os.environ, HOME=tmp, KUBECONFIG=kc)
        env.pop("KUBERNETES_SERVICE_HOST", None)

        def kubectl(*args):
            r = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True,
                               timeout=120)
            return r.returncode, r.stdout, r.stderr

        def get_json(*args):
            rc, out, err = kubectl("get", *args, "-o", "json")
            check(rc == 0, f"kubectl get {' '.join(args)} ({err.strip()[:200]})")
            return json.loads(out) if rc == 0 else {}

        # The order of docs/install.md "Install with kubectl".
        rc, out, err = kubectl("apply", "-f", CRDS)
        check(rc == 0, f"kubectl apply -f crds/ ({err.strip()[:300]})")
        rc, _, err = kubectl("wait", "--for", "condition=established", "--timeout=30s",
                             "crd", "--all")
        check(rc == 0, f"CRDs established ({err.strip()[:200]})")
        rc, out, err = kubectl("apply", "-f", MANIFESTS)
        check(rc == 0, f"kubectl apply -f manifests/ ({err.strip()[:300]})")
        expect = ["namespace/sriov-network-operator created",
                  "serviceaccount/sriov-agent created",
                  "serviceaccount/sriov-agent-nad-controller created",
                  "role.rbac.authorization.k8s.io/sriov-agent created",
                  "rolebinding.rbac.authorization.k8s.io/sriov-agent created",
                  "clusterrole.rbac.authorization.k8s.io/sriov-agent created",
                  "clusterrolebinding.rbac.authorization.k8s.io/sriov-agent created",
                  "role.rbac.authorization.k8s.io/sriov-agent-rdma-devices created",
                  "rolebinding.rbac.authorization.k8s.io/sriov-agent-rdma-devices created",
                  "role.rbac.authorization.k8s.io/sriov-agent-nad-controller created",
                  "rolebinding.rbac.authorization.k8s.io/sriov-agent-nad-controller created",
                  "clusterrole.rbac.authorization.k8s.io/sriov-agent-nad-controller created",
                  "clusterrolebinding.rbac.authorization.k8s.io/sriov-agent-nad-controller created",
                  "validatingadmissionpolicy.admissionregistration.k8s.io/sriov-agent-own-node created",
                  "validatingadmissionpolicybinding.admissionregistration.k8s.io/sriov-agent-own-node created",
                  "daemonset.apps/sriov-agent created",
                  "deployment.apps/sriov-agent-nad-controller created",
                  "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/sriov-agent-critical created",
                  "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/sriov-agent created",
                  "flowschema.flowcontrol.apiserver.k8s.io/sriov-agent-nad-controller-lease created",
                  "flowschema.flowcontrol.apiserver.k8s.io/sriov-agent-nodestate-writes created",
                  "flowschema.flowcontrol.apiserver.k8s.io/sriov-agent created"]
        check(out.splitlines() == expect, f"manifests/ creates the install set in order: {out}")
        rc, out, err = kubectl("apply", "-f", EXAMPLES)
        check(rc == 0, f"kubectl apply -f manifests/examples/ ({err.strip()[:300]})")
        check(len(out.splitlines()) == 6 and all(x.endswith(" created")
                                                 for x in out.splitlines()),
              f"examples/ creates six objects: {out}")
        rc, out, err = kubectl("apply", "-f", MANIFESTS, "-f", EXAMPLES)
        check(rc == 0 and out.splitlines() and all(x.endswith(" unchanged")
                                                    for x in out.splitlines()),
              f"a second apply changes nothing: {out} {err.strip()[:200]}")

        ds = get_json("daemonset", "sriov-agent", "-n", NS)
        if ds:
            want = one("DaemonSet", DAEMONSET)
            spec = ds["spec"]["template"]["spec"]
            check(spec["containers"][0]["args"] == want["spec"]["template"]["spec"][
                "containers"][0]["args"], "the stored DaemonSet has the file's args")
            env_vars = {e["name"]: e for e in spec["containers"][0]["env"]}
            check(env_vars["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName",
                  "NODE_NAME comes from the downward API")
            check(spec["serviceAccountName"] == "sriov-agent", "runs as the sriov-agent SA")
        policy = get_json("sriovnetworknodepolicies", "highnet-sriov-policy", "-n", NS)
        if policy:
            check(policy["spec"]["numVfs"] == 8 and
                  policy["spec"]["nicSelector"]["pfNames"] == ["ens1f0"],
                  "the seed policy is stored as written (CRD schema accepted it)")
        pods = get_json("pods", "-n", "default")
        names = sorted(p["metadata"]["name"] for p in pods.get("items", []))
        check(names == ["nccl-training", "rdma-whole-card"], f"both example pods: {names}")
        rc, out, err = kubectl("delete", "-f", EXAMPLES, "--wait=false")
        check(rc == 0, f"kubectl delete -f manifests/examples/ ({err.strip()[:200]})")
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------- cluster

def daemonset_argv(ds, container, tmp, gen):
    """The agent's command line as the kubelet would start the DaemonSet's container on node1
    ($(VAR) from the downward API and env values), each mounted host path moved under tmp
    (created), and a generated seed node's sysfs under tmp/sysfs: (argv, sysfs root)."""
    values = {"NODE_NAME": "node1", "POD_NAMESPACE": ds["metadata"]["namespace"]}
    values.update({e["name"]: e["value"] for e in container["env"] if "value" in e})
    host_dirs = {m["mountPath"]: os.path.join(tmp, m["name"])
                 for m in container["volumeMounts"]}
    argv = [AGENT]
    for a in container["args"]:
        a = re.sub(r"\$\((\w+)\)", lambda m: values[m.group(1)], a)
        for path, moved in host_dirs.items():
            a = a.replace("=" + path, "=" + moved)
        argv.append(a)
    for d in host_dirs.values():
        os.makedirs(d, exist_ok=True)
    root = os.path.join(tmp, "sysfs")
    subprocess.run([sys.executable, gen, "--out", root, "--profile", "seed"], check=True,
                   capture_output=True)
    return argv, root


def case_cluster():
    """The DaemonSet's own command line, run against the fake API server."""
    if not shutil.which(KUBECTL):
        print(f"{KUBECTL} not found")
        sys.exit(1)
    fake = os.path.join(SRC, "test", "fake-apiserver", "fake_apiserver.py")
    gen = os.path.join(SRC, "test", "sysfs-gen", "gen-sysfs.py")
    tmp = tempfile.mkdtemp(prefix="sriov-manifests-cluster-")
    kc = os.path.join(tmp, "kubeconfig")
    server = subprocess.Popen([sys.executable, fake, "--port", "0", "--node", "node1",
                               "--kubeconfig-out", kc],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    agent = None
    try:
        server.stdout.readline()
        env = dict(os.environ, HOME=tmp, KUBECONFIG=kc)
        env.pop("KUBERNETES_SERVICE_HOST", None)

        def kubectl(*args):
            r = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True,
                               timeout=120)
            check(r.returncode == 0, f"kubectl {' '.join(args)} ({r.stderr.strip()[:200]})")
            return r.stdout

        kubectl("apply", "-f", CRDS)
        kubectl("wait", "--for", "condition=established", "--timeout=30s", "crd", "--all")
        kubectl("apply", "-f", MANIFESTS)
        kubectl("apply", "-f", SEED_POLICY)
        kubectl("label", "node", "node1", "highnet-node=true")

        ds = one("DaemonSet", DAEMONSET)
        container = ds["spec"]["template"]["spec"]["containers"][0]
        argv, root = daemonset_argv(ds, container, tmp, gen)
        # Only what keeps the run off this machine: the fake's kubeconfig instead of the
        # in-cluster service account, a generated sysfs, no host changes.
        argv += ["--kubeconfig", kc, "--sysfs-root", root, "--dry-run",
                 "--pod-resources-socket", os.path.join(tmp, "pod-resources", "kubelet.sock")]
        print("agent:", " ".join(argv))
        log = open(os.path.join(tmp, "agent.log"), "w+")
        agent = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=env)

        state, deadline = None, time.monotonic() + 60
        while time.monotonic() < deadline and agent.poll() is None:
            r = subprocess.run([KUBECTL, "get", "sriovnetworknodestates", "-n", NS, "node1",
                                "-o", "json"], env=env, capture_output=True, text=True,
                               timeout=60)
            if r.returncode == 0:
                state = json.loads(r.stdout)
                if state.get("spec", {}).get("interfaces"):
                    break
            time.sleep(0.5)
        log.seek(0)
        print("agent log:\n  " + "\n  ".join(log.read().splitlines()[:40]))
        check(agent.poll() is None, "the agent runs with the DaemonSet's arguments")
        ifaces = (state or {}).get("spec", {}).get("interfaces", [])
        check(len(ifaces) == 1 and ifaces[0].get("name") == "ens1f0" and
              ifaces[0].get("numVfs") == 8,
              f"NodeState node1 in {NS} wants ens1f0 with 8 VFs: {ifaces}")
    finally:
        if agent and agent.poll() is None:
            agent.terminate()
            try:
                agent.wait(30)
            except subprocess.TimeoutExpired:
                agent.kill()
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------ netop

# The ConfigMap NVIDIA's Network Operator renders from its NicClusterPolicy's
# spec.rdmaSharedDevicePlugin.config (its manifests/state-rdma-shared-device-plugin/
# 0050_rdma-shared-dev-plugin-config-map.yaml): named rdma-devices, in the operator's own
# namespace, the config string as the single-quoted value of config.json.
NETOP_NS = "nvidia-network-operator"
NETOP_CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: rdma-devices
  namespace: nvidia-network-operator
data:
  config.json: '{
  "configList": [
    {
      "resourceName": "rdma_shared_device_a",
      "rdmaHcaMax": 63,
      "selectors": {
        "vendors": ["15b3"]
      }
    }
  ]
}'
"""


def case_netop():
    """Migrating from the Network Operator: the chart pointed at its rdma-devices ConfigMap
    (value rdmaSharedConfigMap.namespace), the agent run with the rendered DaemonSet's
    arguments against the fake API server takes the config in that ConfigMap's shape."""
    helm = os.environ.get("HELM") or shutil.which("helm")
    fake = os.path.join(SRC, "test", "fake-apiserver", "fake_apiserver.py")
    gen = os.path.join(SRC, "test", "sysfs-gen", "gen-sysfs.py")
    tmp = tempfile.mkdtemp(prefix="sriov-manifests-netop-")
    kc = os.path.join(tmp, "kubeconfig")
    server = subprocess.Popen([sys.executable, fake, "--port", "0", "--node", "node1",
                               "--kubeconfig-out", kc],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    agent = None
    try:
        server.stdout.readline()
        env = dict(os.environ, HOME=tmp, KUBECONFIG=kc, HELM_CACHE_HOME=tmp,
                   HELM_CONFIG_HOME=tmp, HELM_DATA_HOME=tmp)
        env.pop("KUBERNETES_SERVICE_HOST", None)

        def kubectl(*args, stdin=None):
            r = subprocess.run([KUBECTL, *args], env=env, capture_output=True, text=True,
                               timeout=120, input=stdin)
            check(r.returncode == 0, f"kubectl {' '.join(args)} ({r.stderr.strip()[:200]})")
            return r.stdout

        r = subprocess.run([helm, "template", "sriov-agent", os.path.join(MANIFESTS, "helm",
                                                                          "sriov-agent"),
                            "--set", f"rdmaSharedConfigMap.namespace={NETOP_NS}"],
                           env=env, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"helm template --set rdmaSharedConfigMap.namespace={NETOP_NS}")
        rendered = [o for o in yaml.safe_load_all(r.stdout) if o]
        role = next((o for o in rendered if o["kind"] == "Role" and
                     o["metadata"]["name"] == "sriov-agent-rdma-devices"), None)
        check(role is not None and role["metadata"]["namespace"] == NETOP_NS and
              role["rules"][0]["resourceNames"] == ["rdma-devices"],
              "the read grant on the ConfigMap is in the Network Operator's namespace")
        kubectl("apply", "-f", CRDS)
        kubectl("wait", "--for", "condition=established", "--timeout=30s", "crd", "--all")
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NETOP_NS}}))
        kubectl("apply", "-f", "-", stdin=NETOP_CONFIGMAP)
        kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(rendered))

        ds = next(o for o in rendered if o["kind"] == "DaemonSet")
        container = ds["spec"]["template"]["spec"]["containers"][0]
        check(f"--rdma-shared-configmap={NETOP_NS}/rdma-devices" in container["args"],
              f"the DaemonSet reads {NETOP_NS}/rdma-devices")
        argv, root = daemonset_argv(ds, container, tmp, gen)
        argv += ["--kubeconfig", kc, "--sysfs-root", root, "--dry-run",
                 "--pod-resources-socket", os.path.join(tmp, "pod-resources", "kubelet.sock")]
        # no port of this machine taken
        argv = [a for a in argv if not a.startswith("--metrics-listen=")]
        log_path = os.path.join(tmp, "agent.log")
        log = open(log_path, "w")
        agent = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=env)
        want = f"RDMA shared config in use: ConfigMap {NETOP_NS}/rdma-devices"
        text, deadline = "", time.monotonic() + 60
        while time.monotonic() < deadline and agent.poll() is None:
            with open(log_path) as f:
                text = f.read()
            if want in text:
                break
            time.sleep(0.3)
        used = [ln for ln in text.splitlines() if want in ln]
        print("agent log:\n  " + "\n  ".join(text.splitlines()[:30]))
        check(bool(used) and "rdma_shared_device_a" in used[0],
              f"the agent takes the Network Operator's ConfigMap: {used[:1]}")
    finally:
        if agent and agent.poll() is None:
            agent.terminate()
            try:
                agent.wait(30)
            except subprocess.TimeoutExpired:
                agent.kill()
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------- plan

def plan_on(policy, labels, *gen_args):
    gen = os.path.join(SRC, "test", "sysfs-gen", "gen-sysfs.py")
    with tempfile.TemporaryDirectory(prefix="sriov-manifests-plan-") as tmp:
        root = os.path.join(tmp, "sys")
        subprocess.run([sys.executable, gen, "--out", root, *gen_args], check=True,
                       capture_output=True)
        r = subprocess.run([AGENT, "plan", "--policies", policy, "--node-labels", labels,
                            "--sysfs-root", root, "-o", "json"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"plan {os.path.relpath(policy, SRC)} exits 0 "
                                 f"(got {r.returncode}: {r.stderr.strip()[:300]})")
        return json.loads(r.stdout) if r.returncode == 0 else None


def case_plan():
    out = plan_on(SEED_POLICY, "highnet-node=true", "--profile", "seed")
    if out:
        ifaces = out["desired"]["interfaces"]
        check(len(ifaces) == 1, f"seed: one PF desired (got {len(ifaces)})")
        i = ifaces[0] if ifaces else {}
        check(i.get("name") == "ens1f0" and i.get("numVfs") == 8 and i.get("mtu") == 1500,
              f"seed: ens1f0 with 8 VFs, MTU 1500: {i}")
        groups = i.get("vfGroups", [])
        check(len(groups) == 1 and groups[0].get("resourceName") == "sriov_highnet" and
              groups[0].get("deviceType") == "netdevice" and groups[0].get("isRdma") is True,
              f"seed: one netdevice RDMA group sriov_highnet: {groups}")
        check([p["status"] for p in out["policies"]] == ["applied"],
              f"seed: the policy applies: {out['policies']}")
    out = plan_on(SEED_POLICY, "other=true", "--profile", "seed")
    if out:
        check(out["desired"]["interfaces"] == [], "seed policy without the label: nothing")
    out = plan_on(IGB_POLICY, "highnet-node=true", "--profile", "none", "--pf", "igb:eth0:0")
    if out:
        ifaces = out["desired"]["interfaces"]
        check(len(ifaces) == 1 and ifaces[0]["name"] == "eth0" and ifaces[0]["numVfs"] == 4 and
              ifaces[0]["vfGroups"][0]["resourceName"] == "sriov_highnet" and
              ifaces[0]["vfGroups"][0]["deviceType"] == "netdevice",
              f"VM lab: eth0 (igb) with 4 netdevice VFs in sriov_highnet: {ifaces}")


# ------------------------------------------------------------------------------------ flags

def case_flags():
    r = subprocess.run([AGENT, "run", "--help"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"sriov-agent run --help exits 0 ({r.stderr.strip()[:200]})")
    documented = set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", r.stdout, re.M))
    check({"--node-name", "--namespace", "--state-dir", "--kubelet-dir"} <= documented,
          f"run --help lists its flags: {sorted(documented)}")
    ds = one("DaemonSet", DAEMONSET)
    container = ds["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    check(args[0] == "run", f"the DaemonSet runs 'sriov-agent run': {args[:1]}")
    env = {e["name"] for e in container.get("env", [])}
    for a in args[1:]:
        check(a.startswith("--"), f"argument {a!r} is a --flag (value after '=')")
        flag = a.split("=", 1)[0]
        check(flag in documented, f"{flag} is listed by sriov-agent run --help")
        for var in re.findall(r"\$\((\w+)\)", a):
            check(var in env, f"{a}: $({var}) is defined in the container's env")
    # The probe's prefix and the agent's are the same variable.
    check("--resource-prefix=$(RESOURCE_PREFIX)" in args and
          "$RESOURCE_PREFIX" in " ".join(container["livenessProbe"]["exec"]["command"]),
          "liveness probe and agent share RESOURCE_PREFIX")
    # The NAD controller's Deployment: `sriov-agent nad-controller` with flags its --help lists.
    r = subprocess.run([AGENT, "nad-controller", "--help"], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 0, "sriov-agent nad-controller --help exits 0")
    documented = set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", r.stdout, re.M))
    container = one("Deployment", NAD_CONTROLLER)["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    env = {e["name"] for e in container.get("env", [])}
    check(args[0] == "nad-controller", f"the Deployment runs 'sriov-agent nad-controller': "
                                       f"{args[:1]}")
    for a in args[1:]:
        flag = a.split("=", 1)[0]
        check(a.startswith("--") and flag in documented,
              f"{flag} is listed by sriov-agent nad-controller --help")
        for var in re.findall(r"\$\((\w+)\)", a):
            check(var in env, f"{a}: $({var}) is defined in the container's env")


# ------------------------------------------------------------------------------------ probe

def case_probe():
    import socket
    ds = one("DaemonSet", DAEMONSET)
    container = ds["spec"]["template"]["spec"]["containers"][0]
    command = container["livenessProbe"]["exec"]["command"]
    check(command[:2] == ["/bin/sh", "-c"], f"the probe is a shell script: {command[:2]}")
    prefix = next(e["value"] for e in container["env"] if e["name"] == "RESOURCE_PREFIX")
    with tempfile.TemporaryDirectory(prefix="sriov-probe-") as tmp:
        state, plugins = os.path.join(tmp, "state"), os.path.join(tmp, "device-plugins")
        os.makedirs(state)
        os.makedirs(plugins)
        script = command[2].replace("/var/lib/sriov-agent", state).replace(
            "/var/lib/kubelet/device-plugins", plugins)
        check(script != command[2], "the probe reads the state and device-plugin dirs")
        sockets = []

        def probe():
            r = subprocess.run(["/bin/sh", "-c", script], env={"RESOURCE_PREFIX": prefix},
                               capture_output=True, text=True, timeout=10)
            return r.returncode

        def listen(name):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(os.path.join(plugins, name))
            sockets.append(s)

        listen("kubelet.sock")
        check(probe() == 0, "no PF owned yet: alive")
        with open(os.path.join(state, "notes.json"), "w") as f:
            f.write("{}")
        check(probe() == 0, "a stray notes.json is not a record: still alive")
        with open(os.path.join(state, "0000:3b:00.0.json"), "w") as f:
            f.write("{}")
        check(probe() != 0, "owns a PF, serves no socket: not alive")
        listen("nvidia-gpu.sock")
        check(probe() != 0, "another plugin's socket does not count")
        with open(os.path.join(plugins, prefix + "_sriov_highnet.sock"), "w"):
            pass
        check(probe() != 0, "a regular file named like our socket does not count")
        os.unlink(os.path.join(plugins, prefix + "_sriov_highnet.sock"))
        listen(prefix + "_sriov_highnet.sock")
        check(probe() == 0, f"owns a PF and serves {prefix}_sriov_highnet.sock: alive")
        for s in sockets:
            s.close()


# ------------------------------------------------------------------------------------- host

def case_host():
    import shlex
    import signal
    default = os.path.join(EXAMPLES, "host", "sriov-agent.default")
    with open(default) as f:
        lines = [l for l in f if l.startswith("SRIOV_AGENT_ARGS=")]
    check(len(lines) == 1, f"{default}: one active SRIOV_AGENT_ARGS line")
    # EnvironmentFile= unquotes the value; ExecStart=... $SRIOV_AGENT_ARGS splits it at spaces.
    args = " ".join(shlex.split(lines[0].split("=", 1)[1])).split()
    gen = os.path.join(SRC, "test", "sysfs-gen", "gen-sysfs.py")
    with tempfile.TemporaryDirectory(prefix="sriov-host-") as tmp:
        policies = os.path.join(tmp, "policies")
        os.makedirs(policies)
        shutil.copy(SEED_POLICY, policies)
        where = {"/etc/sriov-agent/policies": policies,
                 "/etc/sriov-agent/rdma-shared-config.json":
                     os.path.join(EXAMPLES, "host", "rdma-shared-config.json")}
        for host_path, test_path in where.items():
            check(any(a.endswith("=" + host_path) for a in args),
                  f"the example configures {host_path}")
        args = [a.split("=", 1)[0] + "=" + where.get(a.split("=", 1)[1], a.split("=", 1)[1])
                if "=" in a else a for a in args]
        root = os.path.join(tmp, "sys")
        subprocess.run([sys.executable, gen, "--out", root, "--profile", "seed"], check=True,
                       capture_output=True)
        # The example's arguments, then only what keeps the run off this machine's host.
        argv = [AGENT, "run", *args, "--dry-run", "--sysfs-root", root,
                "--state-dir", os.path.join(tmp, "state"),
                "--kubelet-dir", os.path.join(tmp, "device-plugins"),
                "--devinfo-dir", os.path.join(tmp, "devinfo"),
                "--pod-resources-socket", os.path.join(tmp, "pod-resources.sock")]
        os.makedirs(os.path.join(tmp, "device-plugins"))
        env = dict(os.environ, NODE_NAME="node1")
        env.pop("NOTIFY_SOCKET", None)
        env.pop("JOURNAL_STREAM", None)
        proc = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                text=True, env=env)
        seen, applied = [], False
        deadline = time.monotonic() + 60
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(proc.stderr, selectors.EVENT_READ)
        while time.monotonic() < deadline and not applied and proc.poll() is None:
            if sel.select(timeout=1):
                line = proc.stderr.readline()
                seen.append(line.rstrip())
                applied = "VFs 0-7 as sriov_highnet" in line
        running = proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        try:
            rest = proc.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            proc.kill()
            rest = proc.communicate()[1]
        seen += rest.splitlines()
        print("agent:\n  " + "\n  ".join(seen))
        check(running and applied,
              "sriov-agent run with the example's arguments applies the seed policy "
              "(ens1f0 VFs 0-7 as sriov_highnet)")
        errors = [l for l in seen if "[err]" in l]
        check(not errors, f"no errors (the RDMA shared config loads): {errors}")
        check(proc.returncode == 0, f"SIGTERM ends it with status 0 (got {proc.returncode})")


# ------------------------------------------------------------------------------------- rbac

def rules_of(kind, name, named=False):
    """{(group, resource): verbs}; named: rules must name their objects (resourceNames), and
    the key is (group, resource, names)."""
    found = [o for k, n, o in objects_in(RBAC) if k == kind and n == name]
    check(len(found) == 1, f"one {kind} {name}")
    grants = {}
    for rule in found[0]["rules"] if found else []:
        allowed = {"apiGroups", "resources", "verbs"} | ({"resourceNames"} if named else set())
        check(set(rule) <= allowed and (not named or rule.get("resourceNames")),
              f"{kind} rule has no extras (resourceNames only where named): {rule}")
        for g in rule["apiGroups"]:
            for res in rule["resources"]:
                check("*" not in (g, res) and "*" not in rule["verbs"],
                      f"{kind}: no wildcard in {rule}")
                key = (g, res, tuple(rule["resourceNames"])) if named else (g, res)
                grants.setdefault(key, set()).update(rule["verbs"])
    return grants


def case_rbac():
    sn = "sriovnetwork.openshift.io"
    check(rules_of("Role", "sriov-agent") == {
        (sn, "sriovnetworknodepolicies"): {"get", "list", "watch"},
        (sn, "sriovnetworknodestates"): {"create", "get", "list", "watch", "patch"},
        (sn, "sriovnetworknodestates/status"): {"get", "patch"},
        ("", "events"): {"create", "patch"},
        ("", "configmaps"): {"get", "list", "watch"},
    }, "Role: read policies and the supported-nic-ids ConfigMap; create/get/list/watch/patch NodeStates (+status get/patch); create/patch "
       "Events; nothing more (no SriovNetworks, no Leases: the NAD controller's)")
    check(rules_of("ClusterRole", "sriov-agent") == {
        ("", "nodes"): {"get", "list", "watch"},
        ("resource.k8s.io", "resourceslices"): {"list", "create", "update", "delete"},
        ("resource.k8s.io", "resourceclaims"): {"get"},
        ("resource.k8s.io", "resourceclaims/status"): {"update"},
    }, "ClusterRole: get/list/watch nodes, the node's ResourceSlices (list/create/update/"
       "delete), ResourceClaims (get, status update), nothing more (no NADs, no namespaces)")
    # The NAD controller's own account (35-nad-controller.yaml).
    check(rules_of("Role", "sriov-agent-nad-controller") == {
        (sn, "sriovnetworks"): {"get", "list", "watch", "patch"},
        (sn, "sriovnetworks/status"): {"get", "patch"},
        (sn, "sriovnetworks/finalizers"): {"update"},
        (sn, "sriovibnetworks"): {"get", "list", "watch", "patch"},
        (sn, "sriovibnetworks/status"): {"get", "patch"},
        (sn, "sriovibnetworks/finalizers"): {"update"},
        ("", "events"): {"create", "patch"},
        ("coordination.k8s.io", "leases"): {"get", "list", "watch", "create", "update"},
    }, "Role sriov-agent-nad-controller: watch/patch SriovNetworks and SriovIBNetworks "
       "(+status, +finalizers), create/patch Events, get/list/watch/create/update Leases")
    check(rules_of("ClusterRole", "sriov-agent-nad-controller") == {
        ("", "namespaces"): {"get", "list", "watch"},
        ("k8s.cni.cncf.io", "network-attachment-definitions"):
            {"get", "list", "watch", "create", "update", "patch", "delete"},
    }, "ClusterRole sriov-agent-nad-controller: get/list/watch namespaces, NADs (patch: the "
       "label of NADs an earlier version rendered), nothing more")
    check(rules_of("Role", "sriov-agent-rdma-devices", named=True) == {
        ("", "configmaps", ("rdma-devices",)): {"get", "list", "watch"},
    }, "Role sriov-agent-rdma-devices: get/list/watch the ConfigMap rdma-devices only")
    objs = {(k, n): o for k, n, o in objects_in(RBAC)}
    roles = {n: o for k, n, o in objects_in(RBAC) if k == "Role"}
    check(roles["sriov-agent"]["metadata"]["namespace"] == NS, f"Role in {NS}")
    check(roles["sriov-agent-rdma-devices"]["metadata"]["namespace"] == "kube-system",
          "the RDMA shared config Role is in kube-system, next to its ConfigMap")
    b = objs.get(("RoleBinding", "sriov-agent-rdma-devices"))
    check(b is not None and b["metadata"]["namespace"] == "kube-system" and
          b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                           "name": "sriov-agent-rdma-devices"} and
          b["subjects"] == [{"kind": "ServiceAccount", "name": "sriov-agent", "namespace": NS}],
          "RoleBinding sriov-agent-rdma-devices binds that Role to the ServiceAccount only")
    for kind, ref in (("RoleBinding", "Role"), ("ClusterRoleBinding", "ClusterRole")):
        b = objs.get((kind, "sriov-agent"))
        check(b is not None and b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                                 "kind": ref, "name": "sriov-agent"} and
              b["subjects"] == [{"kind": "ServiceAccount", "name": "sriov-agent",
                                 "namespace": NS}],
              f"{kind} binds {ref} sriov-agent to the ServiceAccount only")
    for kind, ref in (("RoleBinding", "Role"), ("ClusterRoleBinding", "ClusterRole")):
        b = objs.get((kind, "sriov-agent-nad-controller"))
        check(b is not None and b["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io",
                                                 "kind": ref,
                                                 "name": "sriov-agent-nad-controller"} and
              b["subjects"] == [{"kind": "ServiceAccount", "name": "sriov-agent-nad-controller",
                                 "namespace": NS}],
              f"{kind} binds {ref} sriov-agent-nad-controller to its ServiceAccount only")
    sas = {n for k, n, _ in objects_in(os.path.join(MANIFESTS, "10-serviceaccount.yaml"))
           if k == "ServiceAccount"}
    check(sas == {"sriov-agent", "sriov-agent-nad-controller"},
          f"two ServiceAccounts: the agents' and the NAD controller's ({sorted(sas)})")
    ds = one("DaemonSet", DAEMONSET)
    check(ds["spec"]["template"]["spec"]["serviceAccountName"] == "sriov-agent",
          "the DaemonSet uses the agents' ServiceAccount")
    dep = one("Deployment", NAD_CONTROLLER)
    pod = dep["spec"]["template"]["spec"]
    check(pod["serviceAccountName"] == "sriov-agent-nad-controller" and
          dep["spec"]["replicas"] == 2,
          "the NAD controller: its own ServiceAccount, 2 replicas")
    args = ds["spec"]["template"]["spec"]["containers"][0]["args"]
    check("--nad-controller=off" in args, "the DaemonSet's agents do not render NADs "
                                          "(--nad-controller=off)")
    c = pod["containers"][0]
    check(c["args"][0] == "nad-controller" and "--identity=$(POD_NAME)" in c["args"] and
          c["securityContext"].get("runAsNonRoot") is True and
          c["securityContext"]["capabilities"] == {"drop": ["ALL"]} and
          not pod.get("hostNetwork") and not [v for v in pod.get("volumes", [])
                                              if "hostPath" in v],
          "the NAD controller runs `sriov-agent nad-controller` as the pod (Lease identity), "
          "non-root, no capability, no host access")
    # API Priority and Fairness (60-flowcontrol.yaml).
    fc = {(k, n): o for k, n, o in objects_in(FLOWCONTROL)}
    lease = fc.get(("FlowSchema", "sriov-agent-nad-controller-lease"))
    ns_writes = fc.get(("FlowSchema", "sriov-agent-nodestate-writes"))
    rest = fc.get(("FlowSchema", "sriov-agent"))
    check(lease and ns_writes and rest and
          lease["spec"]["priorityLevelConfiguration"]["name"] == "sriov-agent-critical" and
          ns_writes["spec"]["priorityLevelConfiguration"]["name"] == "sriov-agent-critical" and
          rest["spec"]["priorityLevelConfiguration"]["name"] == "sriov-agent" and
          lease["spec"]["matchingPrecedence"] < rest["spec"]["matchingPrecedence"] and
          ns_writes["spec"]["matchingPrecedence"] < rest["spec"]["matchingPrecedence"] and
          ("PriorityLevelConfiguration", "sriov-agent-critical") in fc and
          ("PriorityLevelConfiguration", "sriov-agent") in fc and
          fc[("PriorityLevelConfiguration", "sriov-agent-critical")]["spec"]["limited"][
              "lendablePercent"] == 0,
          "APF: the Lease and the NodeState writes match first, on a level of their own that "
          "lends nothing; the rest of both accounts on another")
    check(all(o["spec"]["distinguisherMethod"]["type"] == "ByUser"
              for (k, _), o in fc.items() if k == "FlowSchema"),
          "APF: flows distinguished ByUser")
    subj = lambda f: {s_["serviceAccount"]["name"] for r in f["spec"]["rules"]
                      for s_ in r["subjects"]}
    check(lease and subj(lease) == {"sriov-agent-nad-controller"} and ns_writes and
          subj(ns_writes) == {"sriov-agent"} and
          [r_["resources"] for r_ in ns_writes["spec"]["rules"][0]["resourceRules"]] ==
          [["sriovnetworknodestates", "sriovnetworknodestates/status"]] and
          set(ns_writes["spec"]["rules"][0]["resourceRules"][0]["verbs"]) <= {"create", "patch"},
          "APF: the Lease schema is the controller's only, the NodeState schema the agents' "
          "writes only (not their lists or watches)")


# ---------------------------------------------------------------------------------- install

def case_install():
    with tempfile.TemporaryDirectory(prefix="sriov-install-") as prefix:
        r = subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix],
                           capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"cmake --install ({r.stderr.strip()[:300]})")
        installed = sorted(os.path.relpath(os.path.join(d, f), prefix)
                           for d, _, fs in os.walk(prefix) for f in fs)
        print("installed:\n  " + "\n  ".join(installed))
        for m in ("sbin/sriov-agent", "lib/systemd/system/sriov-agent.service"):
            check(m in installed, f"installs {m}")
        # Every file of manifests/ and crds/ but the unit, under share/sriov-agent/.
        shipped = sorted(os.path.join("share/sriov-agent", os.path.relpath(os.path.join(d, f),
                                                                           SRC))
                         for top in (MANIFESTS, CRDS) for d, _, fs in os.walk(top) for f in fs
                         if not f.endswith(".service"))
        check(len(shipped) >= 10 and set(shipped) <= set(installed),
              f"installs manifests/ and crds/ under share/sriov-agent "
              f"(missing: {sorted(set(shipped) - set(installed))})")
        check(not any(p.endswith(".service") and "share/" in p for p in installed),
              "the unit is installed once, as a unit")
        unit = os.path.join(prefix, "lib/systemd/system/sriov-agent.service")
        with open(unit) as f:
            text = f.read()
        exec_start = re.search(r"^ExecStart=(\S+)", text, re.M)
        check(exec_start and exec_start.group(1) == os.path.join(prefix, "sbin/sriov-agent"),
              f"ExecStart names the installed binary: {exec_start and exec_start.group(1)}")
        # A rebooting node: the kubelet starts after READY=1 (the recorded state applied), and
        # that readiness is bounded below the unit's own start timeout.
        check(re.search(r"^Before=.*\bkubelet\.service\b", text, re.M) and
              re.search(r"^Type=notify$", text, re.M),
              "the unit is Type=notify and ordered Before=kubelet.service")
        # --stop-mode auto asks systemd and logind over D-Bus at SIGTERM: at shutdown the unit
        # must stop before D-Bus and logind do (reverse start order), but it must not need them.
        after = " ".join(re.findall(r"^After=(.*)$", text, re.M)).split()
        check("dbus.service" in after and "systemd-logind.service" in after and
              not re.search(r"^(Wants|Requires|Requisite|BindsTo)=.*\b(dbus|systemd-logind)\.",
                            text, re.M),
              f"the unit is ordered After=dbus.service systemd-logind.service, without "
              f"depending on them (After= {after})")
        start_timeout = re.search(r"^TimeoutStartSec=(\d+)min$", text, re.M)
        check(start_timeout and int(start_timeout.group(1)) * 60 > int(default_of(
            "--ready-timeout") or 10 ** 9),
              "--ready-timeout (READY=1 at the latest) is below TimeoutStartSec")
        r = subprocess.run([os.path.join(prefix, "sbin/sriov-agent"), "version"],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "the installed binary runs")
        # The man page sriov-agent(8), generated from --help at build time, and the docs.
        man = "share/man/man8/sriov-agent.8"
        check(man in installed, f"installs {man}")
        check("share/doc/sriov-agent/README.md" in installed and
              "share/doc/sriov-agent/docs/configuration.md" in installed,
              "installs README.md and docs/ under share/doc/sriov-agent")
        if man in installed:
            r = subprocess.run(["groff", "-Tutf8", "-man", "-P-c", os.path.join(prefix, man)],
                               capture_output=True, text=True, timeout=30)
            page = re.sub(r".\x08", "", r.stdout)
            check(r.returncode == 0 and "sriov-agent - SR-IOV node agent" in page,
                  f"the man page renders with its NAME line ({r.stderr.strip()[:200]})")
            for command in ("run", "nad-controller", "plan", "discover", "watch"):
                h = subprocess.run([os.path.join(prefix, "sbin/sriov-agent"), command, "--help"],
                                   capture_output=True, text=True, timeout=30).stdout
                flags = set(re.findall(r"^\s+(?:-\w, )?(--[a-z-]+)", h, re.M))
                missing = sorted(f for f in flags if f not in page)
                check(flags and not missing,
                      f"the man page lists every flag of 'sriov-agent {command} --help' "
                      f"(missing: {missing})")
        analyze = shutil.which("systemd-analyze")
        check(analyze is not None, "systemd-analyze is installed (scripts/install-deps)")
        if analyze:
            r = subprocess.run([analyze, "verify", unit], capture_output=True, text=True,
                               timeout=60)
            # verify also lints units it loads as dependencies; only our unit's lines count
            ours = [l for l in (r.stdout + r.stderr).splitlines() if "sriov-agent" in l]
            check(r.returncode == 0 and not ours,
                  f"systemd-analyze verify accepts the unit: {ours}")
            r = subprocess.run([analyze, "security", "--offline=true", unit],
                               capture_output=True, text=True, timeout=60)
            m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout)
            check(m is not None and float(m.group(1)) <= 3.0,
                  f"systemd-analyze security: exposure {m and m.group(1)} <= 3.0 "
                  f"(docs/install.md quotes it)")

# -------------------------------------------------------------------------------- hostpaths

def pod_spec():
    return one("DaemonSet", DAEMONSET)["spec"]["template"]["spec"]


def default_of(flag):
    r = subprocess.run([AGENT, "run", "--help"], capture_output=True, text=True, timeout=30)
    m = re.search(re.escape(flag) + r"\b.*?\(default:\s*(\S+?)\)", r.stdout, re.S)
    return m.group(1) if m else None


DRA_DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"


def case_hostpaths():
    check_hostpaths(pod_spec())


def check_hostpaths(spec):
    host_volumes = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    agent = next(c for c in spec["containers"] if c["name"] == "sriov-agent")
    init = next((c for c in spec.get("initContainers", []) if c["name"] == "install-cni"), None)
    check(init is not None, "an install-cni init container installs the CNI plugin")
    if init is None:
        init = {"name": "install-cni", "volumeMounts": [], "command": [""]}
    args = dict(a.split("=", 1) for a in agent["args"][1:] if "=" in a)

    def mounts_of(container):
        # mount path -> (host path, read-only)
        return {m["mountPath"]: (host_volumes[m["name"]], bool(m.get("readOnly")))
                for m in container["volumeMounts"] if m["name"] in host_volumes}

    # What the agent writes: the directories its flags name (the DaemonSet's value, else the
    # default `run --help` prints), and sysfs (sriov_numvfs, driver binding). What it reads:
    # /dev (checks that vfio/infiniband nodes exist) and the PodResources socket's directory.
    writes = {"/sys"}
    for flag in ("--state-dir", "--kubelet-dir", "--devinfo-dir"):
        path = args.get(flag) or default_of(flag)
        check(path is not None, f"{flag}: the agent's directory is known ({path})")
        writes.add(path)
    # With DRA on: the registration socket's directory the kubelet's plugin watcher scans, the
    # driver's own socket directory, and where CDI specs go.
    if "--dra-resources" in args:
        root = args.get("--kubelet-root") or default_of("--kubelet-root")
        writes |= {f"{root}/plugins_registry", f"{root}/plugins/{DRA_DRIVER}",
                   args.get("--cdi-root") or default_of("--cdi-root")}
    socket = args.get("--pod-resources-socket") or default_of("--pod-resources-socket")
    # The CNI plugin's records directory: read, and its node-wide re-bind lock taken (a file
    # the plugin may not have made yet).
    cni_state = args.get("--cni-state-dir") or default_of("--cni-state-dir")
    check(cni_state is not None, f"--cni-state-dir: the directory is known ({cni_state})")
    writes.add(cni_state)
    # The InfiniBand GUID pool (upstream's /etc/sriov-operator/infiniband/guids): its
    # directory's parent, upstream's configuration directory, read only.
    guid_pool = args.get("--ib-guid-pool") or default_of("--ib-guid-pool")
    check(guid_pool is not None, f"--ib-guid-pool: the file is known ({guid_pool})")
    reads = {"/dev", os.path.dirname(socket), os.path.dirname(os.path.dirname(guid_pool or "/x"))}
    am = mounts_of(agent)
    print("agent hostPath mounts:", am)
    for path in sorted(writes):
        check(am.get(path) == (path, False),
              f"the agent writes {path}: mounted read-write from the same host path")
    for path in sorted(reads):
        check(am.get(path) == (path, True), f"the agent only reads {path}: mounted read-only")
    check(set(am) == writes | reads,
          f"the agent mounts no other host path: {sorted(set(am) - writes - reads)}")

    # The init container writes the node's /opt/cni/bin (mounted at /host/opt/cni/bin) and
    # reads nothing else of the host.
    im = mounts_of(init)
    print("install-cni hostPath mounts:", im)
    check(im == {"/host/opt/cni/bin": ("/opt/cni/bin", False)},
          f"install-cni mounts only the node's /opt/cni/bin, read-write: {im}")
    script = init["command"][-1]
    # shell variables set to a path (h=/host/opt/cni/bin) count where they are used
    for var, val in re.findall(r"^\s*(\w+)=(/\S+)$", script, re.M):
        script = re.sub(rf"^\s*{var}=.*$", "", script, flags=re.M).replace("$" + var, val)
    targets = set(re.findall(r"(/host/\S+)", script))
    check(targets and all(t.startswith("/host/opt/cni/bin/") for t in targets),
          f"install-cni writes only under that mount: {sorted(targets)}")
    used = {m["name"] for c in spec["containers"] + spec.get("initContainers", [])
            for m in c["volumeMounts"]}
    check(set(host_volumes) <= used, f"every hostPath volume is mounted somewhere: "
                                     f"{sorted(set(host_volumes) - used)}")

    # Least privilege (issue 12.14).
    check(spec.get("hostNetwork") is True and not spec.get("hostPID") and
          not spec.get("hostIPC"), "hostNetwork only (no hostPID, no hostIPC)")
    for c, add in ((agent, ["NET_ADMIN"]), (init, [])):
        sc = c.get("securityContext", {})
        caps = sc.get("capabilities", {})
        check(not sc.get("privileged"), f"{c['name']}: not privileged")
        check(caps.get("drop") == ["ALL"] and caps.get("add", []) == add,
              f"{c['name']}: drops every capability, adds {add or 'none'}: {caps}")
        check(sc.get("allowPrivilegeEscalation") is False and
              sc.get("readOnlyRootFilesystem") is True and
              sc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
              f"{c['name']}: no privilege escalation, read-only root, default seccomp")


def check_hostpaths_mounts_guid_pool(spec):
    vols = {v["name"]: v.get("hostPath", {}).get("path") for v in spec["volumes"]}
    agent = next(c for c in spec["containers"] if c["name"] == "sriov-agent")
    return any(vols.get(m["name"]) == "/etc/sriov-operator" and
               m["mountPath"] == "/etc/sriov-operator" and m.get("readOnly")
               for m in agent["volumeMounts"])


def case_image():
    r = subprocess.run([os.path.join(SRC, "scripts", "build-image"), "--print-name",
                        "--build-dir", os.path.dirname(AGENT)],
                       capture_output=True, text=True, timeout=60)
    name = r.stdout.strip()
    check(r.returncode == 0 and name, f"scripts/build-image --print-name: {name} {r.stderr}")
    spec = pod_spec()
    for c in spec["containers"] + spec.get("initContainers", []):
        check(c["image"] == name, f"{c['name']} runs {c['image']} = the built image {name}")


def bundle_like_image(image_bin, plugin):
    """An image's /opt/cni/bin as scripts/build-image makes it: sriov (the copy linked against
    the bundle dir), ib-sriov a link to it, .sriov-agent/ links to the loader and to every
    library the plugin loads (here this machine's, which the image's are copies of)."""
    shutil.copy(plugin, os.path.join(image_bin, "sriov"))
    os.symlink("sriov", os.path.join(image_bin, "ib-sriov"))
    bundle = os.path.join(image_bin, ".sriov-agent")
    os.makedirs(bundle)
    loader = "/lib64/ld-linux-x86-64.so.2"
    os.symlink(loader, os.path.join(bundle, os.path.basename(loader)))
    listed = subprocess.run([loader, "--list", plugin], capture_output=True, text=True,
                            check=True).stdout
    for lib in re.findall(r"=> (/\S+)", listed):
        if os.path.basename(lib) != os.path.basename(loader):
            os.symlink(lib, os.path.join(bundle, os.path.basename(lib)))


def run_on_bare_node(host_bin, argv0):
    """CNI_COMMAND=VERSION of host_bin/argv0 in a root holding nothing but host_bin as its
    /opt/cni/bin: no /lib, /usr, /etc (no host library, loader or ld.so.cache), and
    LD_LIBRARY_PATH pointing nowhere. (rc, stdout, stderr)"""
    with tempfile.TemporaryDirectory(prefix="sriov-bare-node-") as root:
        shutil.copytree(host_bin, os.path.join(root, "opt", "cni", "bin"), symlinks=True)
        r = subprocess.run([shutil.which("chroot") or "/usr/sbin/chroot", root, "/opt/cni/bin/" + argv0], capture_output=True,
                           text=True, timeout=30,
                           env={"CNI_COMMAND": "VERSION", "LD_LIBRARY_PATH": "/usr/lib:/lib"})
        return r.returncode, r.stdout, r.stderr


def check_bundled_plugin(host_bin, what):
    """The installed plugin names the bundle's loader and finds its libraries there only; every
    library any of them needs is in the bundle; it answers VERSION on a node without them."""
    bundle = os.path.join(host_bin, ".sriov-agent")
    plugin = os.path.join(host_bin, "sriov")
    prog = subprocess.run(["readelf", "-l", plugin], capture_output=True, text=True).stdout
    interp = re.findall(r"Requesting program interpreter: (.*)\]", prog)
    check(interp == ["/opt/cni/bin/.sriov-agent/ld-linux-x86-64.so.2"],
          f"{what}: the plugin's loader is the bundle's: {interp}")
    dyn = subprocess.run(["readelf", "-d", plugin], capture_output=True, text=True).stdout
    rpath = re.findall(r"\((?:RPATH|RUNPATH)\).*\[(.*)\]", dyn)
    check(rpath == ["/opt/cni/bin/.sriov-agent"] and "(RPATH)" in dyn,
          f"{what}: its DT_RPATH (which the libraries' own lookups use too) is the bundle: {rpath}")
    files = sorted(os.listdir(bundle)) if os.path.isdir(bundle) else []
    check(all(os.path.isfile(os.path.join(bundle, f)) and
              not os.path.islink(os.path.join(bundle, f)) for f in files) and
          "libc.so.6" in files and "ld-linux-x86-64.so.2" in files,
          f"{what}: the bundle holds files (not links into the image): {files}")
    missing = []
    for elf in [plugin] + [os.path.join(bundle, f) for f in files]:
        d = subprocess.run(["readelf", "-d", elf], capture_output=True, text=True).stdout
        missing += [f"{os.path.basename(elf)}: {n}" for n in
                    re.findall(r"\(NEEDED\).*\[(.+)\]", d) if n not in files]
    check(not missing, f"{what}: every library the plugin and the bundle need is in the bundle "
          f"({len(files)} files): missing {missing}")
    if any(f.startswith("libasan") for f in files):
        # ASan's runtime needs /proc, which this bare root has not (a node has it); the gcc
        # build of the same suite runs the plugin there
        print(f"skip: {what}: the plugin on a bare node (a sanitizer build)")
        return
    for argv0 in ("sriov", "ib-sriov"):
        rc, out, err = run_on_bare_node(host_bin, argv0)
        try:
            versions = json.loads(out).get("supportedVersions", [])
        except ValueError:
            versions = []
        check(rc == 0 and "1.0.0" in versions,
              f"{what}: CNI_COMMAND=VERSION {argv0} on a node with nothing but /opt/cni/bin: "
              f"rc {rc} {out.strip()[:200]} {err.strip()[-300:]}")


def case_initcni():
    init = next(c for c in pod_spec()["initContainers"] if c["name"] == "install-cni")
    command = init["command"]
    check(command[:2] == ["/bin/sh", "-c"], f"install-cni runs a shell script: {command[:2]}")
    busybox = shutil.which("busybox")
    check(busybox is not None, "busybox (the image's shell) is installed (scripts/install-deps)")
    if not busybox:
        return
    plugin = os.path.join(BUILD, "sriov-bundled")
    check(os.access(plugin, os.X_OK), f"{plugin} (the image's plugin) is built")
    if not os.access(plugin, os.X_OK):
        return
    with tempfile.TemporaryDirectory(prefix="sriov-initcni-") as tmp:
        image_bin, host_bin = os.path.join(tmp, "image"), os.path.join(tmp, "host")
        os.makedirs(image_bin)
        os.makedirs(host_bin)
        script = command[2].replace("/host/opt/cni/bin", host_bin).replace(
            "/opt/cni/bin", image_bin)
        check(script != command[2], "the script copies from /opt/cni/bin to /host/opt/cni/bin")

        def install():
            # busybox's sh finds cp/mv/chmod as its own applets, as in the image
            r = subprocess.run([busybox, "sh", "-c", script], capture_output=True, text=True,
                               timeout=30, env={"PATH": "/nonexistent"})
            return r.returncode, r.stdout + r.stderr

        rc, out = install()
        check(rc != 0 and os.listdir(host_bin) == [],
              f"no plugin in the image: fails, writes nothing ({rc}: {out.strip()})")
        bundle_like_image(image_bin, plugin)
        with open(plugin, "rb") as f:
            new = f.read()
        old = os.path.join(host_bin, "sriov")
        with open(old, "w") as f:
            f.write("old plugin")
        os.makedirs(os.path.join(host_bin, ".sriov-agent"))
        with open(os.path.join(host_bin, ".sriov-agent", "libold.so"), "w") as f:
            f.write("old library")
        held = open(old)  # a runtime executing the old plugin at this moment
        old_ino = os.fstat(held.fileno()).st_ino
        rc, out = install()
        st = os.stat(old)
        check(rc == 0, f"install-cni exits 0 ({out.strip()})")
        check(open(old, "rb").read() == new and (st.st_mode & 0o777) == 0o755,
              f"the node's sriov is the image's, mode 0755 ({oct(st.st_mode & 0o777)})")
        check(st.st_ino != old_ino and held.read() == "old plugin",
              "replaced by rename: the old file stays intact for whoever has it open")
        held.close()
        # the same binary also under the name ib-sriov (the CNI type it then answers as)
        check(open(os.path.join(host_bin, "ib-sriov"), "rb").read() == new,
              "the node's ib-sriov is the image's sriov")
        want = [".sriov-agent", "ib-sriov", "sriov"]
        check(sorted(os.listdir(host_bin)) == want, f"no leftover: {os.listdir(host_bin)}")
        check(not os.path.exists(os.path.join(host_bin, ".sriov-agent", "libold.so")),
              "the old bundle is replaced as a whole")
        check_bundled_plugin(host_bin, "first install")
        rc, out = install()
        check(rc == 0 and sorted(os.listdir(host_bin)) == want, "a second run is fine")
        check_bundled_plugin(host_bin, "second install")
        # the plugin `cmake --install` puts on a host is the ordinary one: it would not run there
        shutil.copy(os.path.join(BUILD, "sriov"), os.path.join(host_bin, "sriov"))
        rc, _, err = run_on_bare_node(host_bin, "sriov")
        check(rc != 0, f"(control) the host build's sriov does not run on such a node: rc {rc} "
              f"{err.strip()[-120:]}")


def case_helm():
    """The chart through the real helm (3.17, from scripts/install-deps): lint, template with
    the default values against manifests/*.yaml, a few other values, and what `helm package`
    ships."""
    helm = os.environ.get("HELM") or shutil.which("helm")
    check(helm is not None, "helm is installed (scripts/install-deps; HELM names it)")
    if not helm:
        return
    chart = os.path.join(MANIFESTS, "helm", "sriov-agent")

    def run_helm(*args):
        r = subprocess.run([helm, *args], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, HELM_CACHE_HOME=tmp, HELM_CONFIG_HOME=tmp,
                                    HELM_DATA_HOME=tmp))
        return r.returncode, r.stdout, r.stderr

    def template(*args):
        rc, out, err = run_helm("template", "sriov-agent", chart, *args)
        check(rc == 0, f"helm template {' '.join(args)} ({err.strip()[:300]})")
        return [o for o in yaml.safe_load_all(out) if o]

    def key(o):
        return (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])

    tmp = tempfile.mkdtemp(prefix="sriov-helm-")
    try:
        with open(os.path.join(EXAMPLES, "host", "rdma-shared-config.json")) as f:
            rdma = json.load(f)
        values = {"namespace": "net-agents", "createNamespace": False,
                  "image": "registry.example/sriov-agent:9.9", "imagePullPolicy": "Always",
                  "resourcePrefix": "example.com", "resyncInterval": 60, "logLevel": "debug",
                  "nodeSelector": {"sriov": "yes"}, "rdmaSharedConfig": rdma,
                  "rdmaMode": "exclusive"}
        values_file = os.path.join(tmp, "values.json")
        with open(values_file, "w") as f:
            json.dump(values, f)

        for args in ((), ("--values", values_file)):
            rc, out, err = run_helm("lint", "--strict", chart, *args)
            check(rc == 0 and "1 chart(s) linted, 0 chart(s) failed" in out,
                  f"helm lint --strict {' '.join(args)}: {(out + err).strip()[-300:]}")

        # Default values: exactly the objects of manifests/*.yaml, compared as parsed YAML.
        plain = {}
        for path in sorted(glob.glob(os.path.join(MANIFESTS, "*.yaml"))):
            for _, _, o in objects_in(path):
                plain[key(o)] = o
        got = {key(o): o for o in template()}
        check(set(got) == set(plain), f"default values: the same objects as manifests/*.yaml "
                                      f"(extra {sorted(set(got) - set(plain))}, "
                                      f"missing {sorted(set(plain) - set(got))})")
        for k in sorted(set(got) & set(plain)):
            check(got[k] == plain[k], f"default values: {k[0]} {k[2]} equals the plain manifest")
        # --include-crds adds exactly the CRDs of crds/.
        crds = {}
        for path in sorted(glob.glob(os.path.join(CRDS, "*.yaml"))):
            for _, _, o in objects_in(path):
                crds[key(o)] = o
        with_crds = {key(o): o for o in template("--include-crds")}
        added = {k: o for k, o in with_crds.items() if k not in got}
        check(added == crds, f"--include-crds: the CRDs of crds/ ({sorted(k[2] for k in added)})")

        # The NAD controller's replicas, and APF off for clusters before 1.29.
        objs = template("--set", "nadController.replicas=3", "--set", "flowControl=false")
        dep = [o for o in objs if o["kind"] == "Deployment"]
        check(len(dep) == 1 and dep[0]["spec"]["replicas"] == 3 and
              not [o for o in objs if o["apiVersion"].startswith("flowcontrol.")],
              "nadController.replicas sets the Deployment's replicas; flowControl=false: no "
              "FlowSchema or PriorityLevelConfiguration")
        # Other values land where they must.
        objs = template("--values", values_file)
        kinds = sorted(o["kind"] for o in objs)
        check("Namespace" not in kinds and "ConfigMap" in kinds,
              f"createNamespace false: no Namespace; rdmaSharedConfig: a ConfigMap ({kinds})")
        namespaced = [o for o in objs if o["kind"] not in ("ClusterRole", "ClusterRoleBinding",
                                                           "ValidatingAdmissionPolicy",
                                                           "ValidatingAdmissionPolicyBinding",
                                                           "FlowSchema",
                                                           "PriorityLevelConfiguration")]
        rdma_side = [o for o in namespaced if o["kind"] == "ConfigMap" or
                     o["metadata"]["name"] == "sriov-agent-rdma-devices"]
        check(all(o["metadata"]["namespace"] == "net-agents" for o in namespaced
                  if o not in rdma_side) and
              all(o["metadata"]["namespace"] == "kube-system" for o in rdma_side) and
              len(rdma_side) == 3,
              "every namespaced object is in the namespace value, the RDMA shared config's "
              "ConfigMap and its Role/RoleBinding in kube-system")
        crb = next(o for o in objs if o["kind"] == "ClusterRoleBinding")
        check(crb["subjects"][0]["namespace"] == "net-agents", "the bindings name that namespace")
        ds = next(o for o in objs if o["kind"] == "DaemonSet")["spec"]["template"]["spec"]
        agent = ds["containers"][0]
        check({c["image"] for c in ds["containers"] + ds["initContainers"]} ==
              {"registry.example/sriov-agent:9.9"} and agent["imagePullPolicy"] == "Always",
              "the image value in both containers")
        env = {e["name"]: e.get("value") for e in agent["env"]}
        check(env["RESOURCE_PREFIX"] == "example.com", f"resource prefix: {env}")
        check("--resync-interval=60" in agent["args"] and "--log-level=debug" in agent["args"],
              f"resync interval and log level: {agent['args']}")
        check("--rdma-shared-configmap=kube-system/rdma-devices" in agent["args"],
              f"the RDMA shared config ConfigMap flag: {agent['args']}")
        mounts = {m["name"]: m["mountPath"] for m in agent["volumeMounts"]}
        host_paths = {v["name"]: v.get("hostPath", {}).get("path") for v in ds["volumes"]}
        check("--rdma-mode=exclusive" in agent["args"] and
              "--modprobe-dir=/host/etc/modprobe.d" in agent["args"] and
              mounts.get("modprobe-d") == "/host/etc/modprobe.d" and
              host_paths.get("modprobe-d") == "/etc/modprobe.d",
              f"rdmaMode: the flag, and the host's modprobe.d where --modprobe-dir says "
              f"({agent['args']}, {mounts})")
        check(ds["nodeSelector"] == {"kubernetes.io/os": "linux", "sriov": "yes"},
              f"node selector merged with the default: {ds['nodeSelector']}")
        cm = next(o for o in objs if o["kind"] == "ConfigMap")
        example = one("ConfigMap", os.path.join(EXAMPLES, "rdma-device-plugin-config.yaml"))
        check(json.loads(cm["data"]["config.json"]) == rdma and
              (cm["metadata"]["namespace"], cm["metadata"]["name"]) ==
              (example["metadata"]["namespace"], example["metadata"]["name"]),
              "the ConfigMap carries the config, where the agent reads it (the seed's object)")
        # rdmaSharedConfigMap moves the flag, the read grant and the chart's ConfigMap.
        objs = template("--values", values_file, "--set", "rdmaSharedConfigMap.namespace="
                        "rdma-conf", "--set", "rdmaSharedConfigMap.name=hcas")
        agent = next(o for o in objs if o["kind"] == "DaemonSet")["spec"]["template"]["spec"][
            "containers"][0]
        role = next(o for o in objs if o["kind"] == "Role" and
                    o["metadata"]["name"] == "sriov-agent-rdma-devices")
        cm = next(o for o in objs if o["kind"] == "ConfigMap")
        check("--rdma-shared-configmap=rdma-conf/hcas" in agent["args"] and
              role["metadata"]["namespace"] == "rdma-conf" and
              role["rules"][0]["resourceNames"] == ["hcas"] and
              (cm["metadata"]["namespace"], cm["metadata"]["name"]) == ("rdma-conf", "hcas"),
              "rdmaSharedConfigMap moves the flag, the Role and the ConfigMap together")
        # The metrics endpoint: on by default (the plain DaemonSet's port), off with port 0,
        # a Service and ServiceMonitor that reach the container's port when asked for.
        def agent_of(objs):
            return next(o for o in objs if o["kind"] == "DaemonSet")[
                "spec"]["template"]["spec"]["containers"][0]
        agent = agent_of(template())
        check("--metrics-listen=:9809" in agent["args"] and
              agent.get("ports") == [{"name": "metrics", "containerPort": 9809,
                                      "hostPort": 9809, "protocol": "TCP"}],
              f"default: metrics on :9809, a host port ({agent['args']}, {agent.get('ports')})")
        check(not any(a.startswith("--metrics-pod-labels") for a in agent["args"]),
              "default: pod labels in the metrics, as upstream's exporter")
        agent = agent_of(template("--set", "metrics.podLabels=false"))
        check("--metrics-pod-labels=off" in agent["args"] and
              "--metrics-listen=:9809" in agent["args"],
              f"metrics.podLabels=false: --metrics-pod-labels=off ({agent['args']})")
        objs = template("--set", "metrics.port=0", "--set", "metrics.serviceMonitor.enabled=true")
        agent = agent_of(objs)
        check(not any(a.startswith("--metrics-listen") for a in agent["args"]) and
              "ports" not in agent and
              not any(o["kind"] in ("Service", "ServiceMonitor") for o in objs),
              f"metrics.port=0: no endpoint, no port, no Service ({agent['args']})")
        objs = template("--set", "metrics.port=9900", "--set",
                        "metrics.serviceMonitor.enabled=true", "--set",
                        "metrics.serviceMonitor.labels.release=prom")
        agent = agent_of(objs)
        pod_labels = next(o for o in objs if o["kind"] == "DaemonSet")[
            "spec"]["template"]["metadata"]["labels"]
        svc = next((o for o in objs if o["kind"] == "Service"), None)
        sm = next((o for o in objs if o["kind"] == "ServiceMonitor"), None)
        check(svc is not None and sm is not None, "serviceMonitor: a Service and a ServiceMonitor")
        if svc and sm:
            check("--metrics-listen=:9900" in agent["args"] and
                  agent["ports"][0]["containerPort"] == 9900, f"metrics.port: {agent['args']}")
            check(svc["spec"]["clusterIP"] == "None" and
                  set(svc["spec"]["selector"].items()) <= set(pod_labels.items()) and
                  svc["spec"]["ports"][0]["port"] == 9900 and
                  svc["spec"]["ports"][0]["targetPort"] == agent["ports"][0]["name"],
                  f"the headless Service selects the agent's pods, its port: {svc['spec']}")
            check(set(sm["spec"]["selector"]["matchLabels"].items()) <=
                  set(svc["metadata"]["labels"].items()) and
                  sm["spec"]["endpoints"][0]["port"] == svc["spec"]["ports"][0]["name"] and
                  sm["spec"]["endpoints"][0]["path"] == "/metrics" and
                  sm["metadata"]["labels"].get("release") == "prom",
                  f"the ServiceMonitor selects that Service and port: {sm['spec']}")

        # DRA: off by default (no flag, no kubelet plugin directories); dra.resources turns it
        # on for exactly those resources and mounts what the driver writes, nothing more.
        agent = agent_of(template())
        check(not any(a.startswith(("--dra-resources", "--cdi-root", "--kubelet-root"))
                      for a in agent["args"]) and
              not any(m["mountPath"].startswith(("/var/lib/kubelet/plugins", "/var/run/cdi"))
                      for m in agent["volumeMounts"]),
              f"default: DRA off, no plugin directories mounted ({agent['args']})")
        objs = template("--set", "dra.resources={sriov_gpudirect,rdma_hca}")
        agent = agent_of(objs)
        check("--dra-resources=sriov_gpudirect,rdma_hca" in agent["args"],
              f"dra.resources: the flag lists them ({agent['args']})")
        print("hostPath mounts with dra.resources set:")
        check_hostpaths(next(o for o in objs if o["kind"] == "DaemonSet")["spec"]["template"][
            "spec"])
        rc, out, err = run_helm("lint", "--strict", chart, "--set", "dra.resources={a}")
        check(rc == 0, f"helm lint --strict with dra.resources: {(out + err).strip()[-300:]}")

        # What an operator sets on a DaemonSet, as values (so that `helm upgrade` keeps it).
        op_values = {
            "imagePullSecrets": [{"name": "regcred"}],
            "resources": {"requests": {"cpu": "20m", "memory": "32Mi"},
                          "limits": {"memory": "256Mi"}},
            "tolerations": [{"key": "sriov", "operator": "Equal", "value": "yes",
                             "effect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "feature.node.kubernetes.io/network-sriov.capable",
                     "operator": "In", "values": ["true"]}]}]}}},
            "priorityClassName": "sriov-critical",
            "podAnnotations": {"example.com/owner": "net-team"},
            "extraArgs": ["--vf-timeout=180"],
            "updateStrategy": {"type": "OnDelete"},
        }
        op_file = os.path.join(tmp, "operator-values.json")
        with open(op_file, "w") as f:
            json.dump(op_values, f)
        rc, out, err = run_helm("lint", "--strict", chart, "--values", op_file)
        check(rc == 0 and "0 chart(s) failed" in out,
              f"helm lint --strict with the operator values: {(out + err).strip()[-300:]}")
        objs = template("--values", op_file)
        ds_obj = next(o for o in objs if o["kind"] == "DaemonSet")
        ds = ds_obj["spec"]["template"]["spec"]
        agent = ds["containers"][0]
        dep = next(o for o in objs if o["kind"] == "Deployment")["spec"]["template"]["spec"]
        check(ds.get("imagePullSecrets") == [{"name": "regcred"}] and
              dep.get("imagePullSecrets") == [{"name": "regcred"}],
              "imagePullSecrets: on the DaemonSet's and the NAD controller's pods")
        check(agent["resources"] == op_values["resources"],
              f"resources: the agent container's ({agent['resources']})")
        check(ds.get("tolerations") == op_values["tolerations"] and
              ds.get("affinity") == op_values["affinity"] and
              ds.get("priorityClassName") == "sriov-critical",
              "tolerations, affinity, priorityClassName: on the agent's pods")
        check(ds_obj["spec"]["template"]["metadata"].get("annotations") ==
              op_values["podAnnotations"], "podAnnotations: on the agent's pods")
        check(agent["args"][-1] == "--vf-timeout=180", f"extraArgs: appended ({agent['args']})")
        check(ds_obj["spec"]["updateStrategy"] == {"type": "OnDelete"},
              f"updateStrategy: {ds_obj['spec']['updateStrategy']}")
        r = subprocess.run([AGENT, "run", "--help"], capture_output=True, text=True, timeout=30)
        check("--vf-timeout" in r.stdout, "the extraArgs example is a flag of run --help")
        objs = template("--set", "priorityClassName=", "--set", "tolerations=null")
        ds = next(o for o in objs if o["kind"] == "DaemonSet")["spec"]["template"]["spec"]
        check("priorityClassName" not in ds and "tolerations" not in ds,
              "priorityClassName and tolerations empty: none on the pods")
        check(check_hostpaths_mounts_guid_pool(ds_obj["spec"]["template"]["spec"]),
              "the InfiniBand GUID pool directory is mounted read-only whatever the values")

        # --set with a single value, as docs/install.md shows it.
        objs = template("--set", "image=registry.example/sriov-agent:1.2")
        ds = next(o for o in objs if o["kind"] == "DaemonSet")["spec"]["template"]["spec"]
        check({c["image"] for c in ds["containers"] + ds["initContainers"]} ==
              {"registry.example/sriov-agent:1.2"}, "--set image=... in both containers")

        # What `helm package` ships: the chart's crds/ are links to the top-level crds/ in the
        # repository; the package must carry their content as regular files.
        rc, out, err = run_helm("package", chart, "--destination", tmp)
        check(rc == 0, f"helm package ({err.strip()[:300]})")
        tgz = os.path.join(tmp, "sriov-agent-0.1.0.tgz")
        if rc == 0:
            import tarfile
            with tarfile.open(tgz) as t:
                members = {m.name: m for m in t.getmembers()}
                packed = {os.path.basename(n): t.extractfile(m).read()
                          for n, m in members.items()
                          if n.startswith("sriov-agent/crds/") and m.isfile()}
                check(not any(m.issym() or m.islnk() for m in members.values()),
                      "the package has no links")
            want = {}
            for path in sorted(glob.glob(os.path.join(CRDS, "*.yaml"))):
                with open(path, "rb") as f:
                    want[os.path.basename(path)] = f.read()
            check(packed == want, f"the package carries crds/ as files, same content "
                                  f"({sorted(packed)})")
            rc, out, err = run_helm("template", "sriov-agent", tgz)
            check(rc == 0 and {key(o) for o in yaml.safe_load_all(out) if o} == set(plain),
                  "the packaged chart renders the same objects")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


CASES = {"parse": case_parse, "apply": case_apply, "plan": case_plan, "flags": case_flags,
         "rbac": case_rbac, "install": case_install, "probe": case_probe,
         "host": case_host, "cluster": case_cluster, "hostpaths": case_hostpaths,
         "image": case_image, "initcni": case_initcni, "helm": case_helm, "netop": case_netop}
if CASE not in CASES:
    sys.exit(f"unknown case {CASE}; one of {', '.join(CASES)}")
CASES[CASE]()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
