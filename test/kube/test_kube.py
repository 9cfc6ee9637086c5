#!/usr/bin/env python3
"""Integration tests for lib/kube, crds/ and `sriov-agent watch`, with the real kubectl against
test/fake-apiserver. Each case runs in a fresh HOME and temp dir and uses only 127.0.0.1.

Usage: test_kube.py CASE   (CASE: see CASES at the bottom; "all" runs every case)
Environment: SRCDIR, BUILDDIR (set by ctest), KUBECTL (optional, default "kubectl").
"""

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

SRCDIR = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILDDIR = os.environ.get("BUILDDIR", os.path.join(SRCDIR, "build"))
KUBECTL = os.environ.get("KUBECTL", "kubectl")
FAKE = os.path.join(SRCDIR, "test", "fake-apiserver", "fake_apiserver.py")
AGENT = os.path.join(BUILDDIR, "sriov-agent")
HARNESS = os.path.join(BUILDDIR, "kube-harness")
POLICY = os.path.join(SRCDIR, "test", "kube", "highnet-sriov-policy.yaml")
NAMESPACE_YAML = os.path.join(SRCDIR, "test", "kube", "namespace.yaml")
NS = "sriov-network-operator"
TOKEN = "s3cret-token"


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)
    print(f"  ok: {what}")


def kubeconfig_text(server, token=None, extra_cluster="", extra_user=""):
    user = f"    token: {token}\n" if token else ""
    user += extra_user
    if not user:
        user = "    {}\n"
    return ("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
            f"    server: {server}\n{extra_cluster}"
            "users:\n- name: u\n  user:\n" + user +
            "contexts:\n- name: c\n  context:\n    cluster: fake\n    user: u\n"
            "current-context: c\n")


class Env:
    """A fake API server plus a fresh HOME and kubeconfigs for kubectl and the agent."""

    def __init__(self, nodes=("node1",), tls=None):
        self.dir = tempfile.mkdtemp(prefix="kube-test-")
        self.procs = []
        args = [sys.executable, FAKE, "--port", "0", "--token", TOKEN, "--anonymous"]
        for n in nodes:
            args += ["--node", n]
        if tls:
            args += tls
        self.server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       text=True)
        line = self.server.stdout.readline()
        if not line.startswith("PORT "):
            raise Failure(f"fake apiserver did not start: {line} {self.server.stderr.read()}")
        self.port = int(line.split()[1])
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.control_url = self.url
        self.kubectl_kc = os.path.join(self.dir, "kubectl.kubeconfig")
        self.agent_kc = os.path.join(self.dir, "agent.kubeconfig")
        with open(self.kubectl_kc, "w") as f:
            f.write(kubeconfig_text(self.url))
        with open(self.agent_kc, "w") as f:
            f.write(kubeconfig_text(self.url, TOKEN))
        self.env = dict(os.environ, HOME=self.dir, KUBECONFIG=self.kubectl_kc)
        self.env.pop("KUBERNETES_SERVICE_HOST", None)
        self.env.pop("NODE_NAME", None)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
        self.server.terminate()
        self.server.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)

    def kubectl(self, *args, stdin=None, ok=True):
        r = subprocess.run([KUBECTL, *args], env=self.env, input=stdin, capture_output=True,
                           text=True, timeout=60)
        if ok and r.returncode != 0:
            raise Failure(f"kubectl {' '.join(args)} failed: {r.stderr.strip()}")
        return r

    def fault(self, **faults):
        req = urllib.request.Request(self.control_url + "/_fake/faults",
                                     data=json.dumps(faults).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10, context=getattr(self, "ssl_ctx", None)) as r:
            return json.load(r)

    def stats(self):
        with urllib.request.urlopen(self.control_url + "/_fake/stats", timeout=10,
                                    context=getattr(self, "ssl_ctx", None)) as r:
            return json.load(r)

    def setup_crds(self, policy=False):
        self.kubectl("apply", "-f", os.path.join(SRCDIR, "crds"))
        if os.environ.get("KUBE_TEST_CRDS") == "upstream":
            # The second CRD set: a NodeState CRD shaped like upstream's (prunes unknown
            # status fields).
            self.kubectl("apply", "-f", os.path.join(SRCDIR, "test/fixtures/crds-upstream"))
        self.kubectl("wait", "--for", "condition=established", "--timeout=20s",
                     "crd/sriovnetworknodepolicies.sriovnetwork.openshift.io")
        self.kubectl("apply", "-f", NAMESPACE_YAML)
        if policy:
            self.kubectl("apply", "-f", POLICY)

    def harness(self, *args, ok=True):
        r = subprocess.run([HARNESS, *args], env=self.env, capture_output=True, text=True,
                           timeout=60)
        if ok and r.returncode != 0:
            raise Failure(f"kube-harness {' '.join(args)} failed ({r.returncode}): {r.stderr}")
        return r


class Watcher:
    """`sriov-agent watch` in the background; collects its JSON lines and stderr."""

    def __init__(self, env, extra=(), kubeconfig=None, prefix=(), argv=None, proc_env=None):
        self.lines, self.errors = [], []
        self.cond = threading.Condition()
        args = argv or [*prefix, AGENT, "watch", "--node-name", "node1", "--kubeconfig",
                        kubeconfig or env.agent_kc, *extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=proc_env or env.env)
        env.procs.append(self.proc)
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines, True),
                         daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.errors, False),
                         daemon=True).start()

    def _read(self, stream, into, parse):
        for line in stream:
            with self.cond:
                if parse:
                    try:
                        into.append(json.loads(line))
                    except ValueError:
                        into.append({"unparsable": line})
                else:
                    into.append(line.rstrip("\n"))
                self.cond.notify_all()

    def wait_for(self, pred, what, timeout=20):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for ev in self.lines:
                    if pred(ev):
                        print(f"  ok: {what}")
                        return ev
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failure(f"timed out waiting for {what}; saw "
                                  f"{[(e.get('type'), e.get('kind'), e.get('name')) for e in self.lines]}"
                                  f"; stderr: {self.errors[-10:]}")
                self.cond.wait(left)

    def wait_stderr(self, text, timeout=20):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not any(text in e for e in self.errors):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failure(f"timed out waiting for '{text}' on stderr: {self.errors}")
                self.cond.wait(left)
        print(f"  ok: agent logged '{text}'")

    def mark(self):
        with self.cond:
            return len(self.lines)

    def since(self, mark):
        with self.cond:
            return list(self.lines[mark:])

    def cache(self, kind):
        """The agent's view, rebuilt from its event stream: name -> resourceVersion."""
        view = {}
        with self.cond:
            for ev in self.lines:
                if ev.get("kind") != kind:
                    continue
                rv = ev["object"]["metadata"].get("resourceVersion")
                if ev["type"] == "DELETED":
                    view.pop(ev["name"], None)
                else:
                    view[ev["name"]] = rv
        return view

    def stop(self):
        self.proc.send_signal(2)
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise Failure("sriov-agent watch did not exit on SIGINT")
        check(rc == 0, "sriov-agent watch exits 0 on SIGINT")


def event_is(type_, kind, name, pred=None):
    return lambda e: (e.get("type") == type_ and e.get("kind") == kind and
                      e.get("name") == name and (pred is None or pred(e["object"])))


def server_view(env, resource="sriovnetworknodepolicies"):
    items = json.loads(env.kubectl("get", resource, "-n", NS, "-o", "json").stdout)["items"]
    return {i["metadata"]["name"]: i["metadata"]["resourceVersion"] for i in items}


def policy_variant(name=None, **spec_changes):
    text = open(POLICY).read()
    if name:
        text = text.replace("name: highnet-sriov-policy", f"name: {name}")
    for key, value in spec_changes.items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith(f"  {key}:"):
                lines[i] = f"  {key}: {value}"
        text = "\n".join(lines) + "\n"
    return text


# ------------------------------------------------------------------------------ cases

def case_crds_and_policy(env):
    r = env.kubectl("apply", "-f", os.path.join(SRCDIR, "crds"))
    check(r.stdout.count("created") == 4, "kubectl apply -f crds/ creates four CRDs")
    env.kubectl("wait", "--for", "condition=established", "--timeout=20s",
                "crd/sriovnetworknodepolicies.sriovnetwork.openshift.io",
                "crd/sriovnetworknodestates.sriovnetwork.openshift.io",
                "crd/sriovnetworks.sriovnetwork.openshift.io",
                "crd/sriovibnetworks.sriovnetwork.openshift.io")
    check(True, "all four CRDs are Established")
    r = env.kubectl("apply", "-f", os.path.join(SRCDIR, "crds"))
    check(r.stdout.count("unchanged") == 4, "re-applying the CRDs changes nothing")
    env.kubectl("apply", "-f", NAMESPACE_YAML)

    watch = subprocess.Popen([KUBECTL, "get", "sriovnetworknodepolicies", "-n", NS, "--watch",
                              "-o", "name"], env=env.env, stdout=subprocess.PIPE, text=True)
    env.procs.append(watch)
    r = env.kubectl("apply", "-f", POLICY)
    check("highnet-sriov-policy created" in r.stdout, "the seed policy applies")
    pol = json.loads(env.kubectl("get", "sriovnetworknodepolicy", "highnet-sriov-policy", "-n",
                                 NS, "-o", "json").stdout)
    spec = pol["spec"]
    check(spec["resourceName"] == "sriov_highnet" and spec["priority"] == 90 and
          spec["numVfs"] == 8 and spec["mtu"] == 1500 and spec["deviceType"] == "netdevice" and
          spec["isRdma"] is True and spec["nodeSelector"] == {"highnet-node": "true"} and
          spec["nicSelector"] == {"vendor": "15b3", "pfNames": ["ens1f0"]},
          "kubectl get -o json shows the seed policy's spec")
    table = env.kubectl("get", "sriovnetworknodepolicies", "-n", NS).stdout.split("\n")
    check(table[0].split()[:6] == ["NAME", "RESOURCE", "PRIORITY", "NUMVFS", "DEVICETYPE", "AGE"]
          and table[1].split()[:5] == ["highnet-sriov-policy", "sriov_highnet", "90", "8",
                                       "netdevice"],
          "kubectl get shows the CRD's printer columns")
    line = watch.stdout.readline().strip()
    check(line == "sriovnetworknodepolicy.sriovnetwork.openshift.io/highnet-sriov-policy",
          "kubectl get --watch reports the policy")
    watch.terminate()

    r = env.kubectl("apply", "-f", POLICY)
    check("unchanged" in r.stdout, "re-applying the same policy is 'unchanged'")
    rv = server_view(env)["highnet-sriov-policy"]
    env.kubectl("apply", "-f", POLICY)
    check(server_view(env)["highnet-sriov-policy"] == rv,
          "a no-op apply does not bump resourceVersion")

    # The schema carries the policy rules: each bad value is refused, naming the field.
    bad = [
        ({"priority": 100}, "spec.priority"),
        ({"priority": -1}, "spec.priority"),
        ({"numVfs": -1}, "spec.numVfs"),
        ({"mtu": 0}, "spec.mtu"),
        ({"deviceType": "bogus"}, "spec.deviceType"),
        ({"resourceName": "bad.name"}, "spec.resourceName"),
        ({"resourceName": "-leading"}, "spec.resourceName"),
        ({"resourceName": "a" * 64}, "spec.resourceName"),
        ({"linkType": "wifi"}, "spec.linkType"),
        ({"eSwitchMode": "offload"}, "spec.eSwitchMode"),
        ({"vdpaType": "virtio-net"}, "spec.vdpaType"),
        ({"isRdma": '"yes"'}, "spec.isRdma"),
    ]
    for change, field in bad:
        text = policy_variant("bad-policy", **change)
        if not any(text.find(f"  {k}:") >= 0 for k in change):
            text = text.rstrip("\n") + "\n" + "".join(f"  {k}: {v}\n" for k, v in change.items())
        r = env.kubectl("apply", "-f", "-", stdin=text, ok=False)
        check(r.returncode != 0 and field in r.stderr,
              f"policy with {change} is rejected naming {field}")
    # Size limits (they bound every agent's memory): too many or too long entries are refused.
    base = {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
            "metadata": {"name": "huge-policy", "namespace": NS},
            "spec": {"resourceName": "huge", "numVfs": 1, "nodeSelector": {"a": "b"},
                     "nicSelector": {"pfNames": ["ens1f0"]}}}
    for what, path, value, field in (
            ("300 pfNames", ("nicSelector", "pfNames"), ["p%d" % i for i in range(300)],
             "spec.nicSelector.pfNames"),
            ("a 200-character pfName", ("nicSelector", "pfNames"), ["x" * 200],
             "spec.nicSelector.pfNames[0]"),
            ("300 rootDevices", ("nicSelector", "rootDevices"), ["0000:00:00.0"] * 300,
             "spec.nicSelector.rootDevices"),
            ("65 nodeSelector labels", ("nodeSelector",), {"k%d" % i: "v" for i in range(65)},
             "spec.nodeSelector")):
        obj = json.loads(json.dumps(base))
        target = obj["spec"]
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        r = env.kubectl("apply", "-f", "-", stdin=json.dumps(obj), ok=False)
        check(r.returncode != 0 and field in r.stderr, f"policy with {what} is rejected")
    for good in ({"resourceName": "sriov-highnet_2"}, {"linkType": "IB"},
                 {"eSwitchMode": "switchdev"}, {"priority": 0}, {"numVfs": 0}):
        text = policy_variant("good-policy", **good)
        if not any(text.find(f"  {k}:") >= 0 for k in good):
            text = text.rstrip("\n") + "\n" + "".join(f"  {k}: {v}\n" for k, v in good.items())
        env.kubectl("apply", "-f", "-", stdin=text)
        check(True, f"policy with {good} is accepted")
    env.kubectl("delete", "sriovnetworknodepolicy", "good-policy", "-n", NS)
    for missing in ("resourceName", "numVfs", "nodeSelector", "nicSelector"):
        text = "\n".join(l for l in open(POLICY).read().splitlines()
                         if not l.startswith(f"  {missing}:"))
        if missing in ("nodeSelector", "nicSelector"):
            out, skip = [], False
            for l in open(POLICY).read().splitlines():
                if l.startswith(f"  {missing}:"):
                    skip = True
                    continue
                if skip and l.startswith("    "):
                    continue
                skip = False
                out.append(l)
            text = "\n".join(out)
        r = env.kubectl("apply", "-f", "-", stdin=text.replace("highnet-sriov-policy", "x") +
                        "\n", ok=False)
        check(r.returncode != 0 and f"spec.{missing}" in r.stderr and "Required" in r.stderr,
              f"a policy without {missing} is rejected as required")
    r = env.kubectl("apply", "-f", "-", ok=False, stdin=policy_variant("typo").replace(
        "  numVfs: 8", "  numVFs: 8\n  numVfs: 8"))
    check(r.returncode != 0 and "numVFs" in r.stderr and "BadRequest" in r.stderr and
          "strict decoding error" in r.stderr,
          "an unknown field is rejected (Strict): 400 strict decoding error, as the real server")

    net = ("apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetwork\nmetadata:\n"
           f"  name: highnet\n  namespace: {NS}\nspec:\n  resourceName: sriov_highnet\n"
           "  networkNamespace: default\n  vlan: 100\n  spoofChk: \"on\"\n"
           "  ipam: '{\"type\": \"host-local\"}'\n")
    env.kubectl("apply", "-f", "-", stdin=net)
    check(True, "a SriovNetwork applies")
    r = env.kubectl("apply", "-f", "-", stdin=net.replace("vlan: 100", "vlan: 5000"), ok=False)
    check(r.returncode != 0 and "spec.vlan" in r.stderr, "SriovNetwork vlan 5000 is rejected")

    r = env.kubectl("apply", "--server-side", "-f", "-",
                    stdin=policy_variant("ssa-policy", numVfs=2))
    check("serverside-applied" in r.stdout, "kubectl apply --server-side creates a policy")
    r = env.kubectl("apply", "--server-side", "-f", "-",
                    stdin=policy_variant("ssa-policy", numVfs=3))
    got = json.loads(env.kubectl("get", "sriovnetworknodepolicy", "ssa-policy", "-n", NS,
                                 "-o", "json").stdout)
    check(got["spec"]["numVfs"] == 3, "... and updates it")
    r = env.kubectl("replace", "-f", "-", stdin=policy_variant("ssa-policy", numVfs=5))
    check(r.returncode == 0, "kubectl replace works")
    env.kubectl("delete", "sriovnetworknodepolicy", "ssa-policy", "-n", NS)

    r = env.kubectl("delete", "-f", POLICY)
    check("deleted" in r.stdout, "kubectl delete -f removes the policy")
    r = env.kubectl("get", "sriovnetworknodepolicy", "highnet-sriov-policy", "-n", NS, ok=False)
    check(r.returncode != 0 and "NotFound" in r.stderr, "the deleted policy is NotFound")


def case_watch_events(env):
    r = subprocess.run([AGENT, "watch"], capture_output=True, text=True, env=env.env)
    check(r.returncode == 2 and "--node-name (or NODE_NAME) is required" in r.stderr,
          "sriov-agent watch without --node-name or NODE_NAME is a usage error")
    r = subprocess.run([AGENT, "watch", "--help"], capture_output=True, text=True, env=env.env)
    check(r.returncode == 0 and "--kubeconfig" in r.stdout, "sriov-agent watch --help")
    r = subprocess.run([AGENT, "--help"], capture_output=True, text=True, env=env.env)
    check("watch" in r.stdout, "sriov-agent --help lists the watch command")
    env.setup_crds()
    w = Watcher(env)
    w.wait_for(event_is("ADDED", "Node", "node1"), "the agent sees its Node")
    env.kubectl("apply", "-f", POLICY)
    w.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "highnet-sriov-policy",
                        lambda o: o["spec"]["numVfs"] == 8 and
                        o["spec"]["resourceName"] == "sriov_highnet"),
               "kubectl apply → ADDED with the policy object")
    env.kubectl("apply", "-f", "-", stdin=policy_variant(numVfs=4))
    w.wait_for(event_is("MODIFIED", "SriovNetworkNodePolicy", "highnet-sriov-policy",
                        lambda o: o["spec"]["numVfs"] == 4), "changed apply → MODIFIED")
    m = w.mark()
    env.kubectl("apply", "-f", "-", stdin=policy_variant(numVfs=4))
    env.kubectl("delete", "-f", POLICY)
    w.wait_for(event_is("DELETED", "SriovNetworkNodePolicy", "highnet-sriov-policy"),
               "kubectl delete -f → DELETED")
    check([e["type"] for e in w.since(m)] == ["DELETED"], "a no-op apply produced no event")
    other = policy_variant("other-policy").replace(f"namespace: {NS}", "namespace: default")
    env.kubectl("apply", "-f", "-", stdin=other)
    time.sleep(1)
    check(all(e.get("name") != "other-policy" for e in w.lines),
          "a policy in another namespace is not watched")
    for e in w.lines:
        check(set(e) >= {"type", "kind", "name", "object"}, "each line has type/kind/name/object")
        break
    env.kubectl("apply", "-f", "-", stdin=policy_variant("last-policy"))
    w.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "last-policy"), "another policy")
    env.kubectl("delete", "-f", os.path.join(SRCDIR, "crds"))
    w.wait_for(event_is("DELETED", "SriovNetworkNodePolicy", "last-policy"),
               "deleting the CRDs deletes the policies, and the agent sees it")
    w.wait_stderr("is the CRD installed")
    check(w.proc.poll() is None, "the agent keeps running without the CRD")
    w.stop()


def case_node_labels(env):
    env.kubectl("apply", "-f", NAMESPACE_YAML)  # CRDs absent: the policy informer retries
    w = Watcher(env)
    w.wait_for(event_is("ADDED", "Node", "node1"), "the agent lists its Node")
    env.kubectl("label", "node", "node1", "highnet-node=true")
    w.wait_for(event_is("MODIFIED", "Node", "node1",
                        lambda o: o["metadata"]["labels"].get("highnet-node") == "true"),
               "kubectl label node → MODIFIED with the new label")
    env.kubectl("label", "node", "node2", "highnet-node=true")
    env.kubectl("label", "node", "node1", "highnet-node-")
    w.wait_for(event_is("MODIFIED", "Node", "node1",
                        lambda o: "highnet-node" not in o["metadata"]["labels"]),
               "removing the label → MODIFIED without it")
    check(all(e.get("name") != "node2" for e in w.lines),
          "other nodes' changes are filtered out by the field selector")
    w.wait_stderr("is the CRD installed")
    env.setup_crds(policy=True)
    w.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "highnet-sriov-policy"),
               "once the CRDs exist, the policy informer recovers")
    w.stop()


def case_faults(env):
    env.setup_crds(policy=True)
    w = Watcher(env, extra=("--watch-timeout", "2"))
    w.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "highnet-sriov-policy"),
               "initial list")
    n = [0]

    def change(what):
        n[0] += 1
        env.kubectl("apply", "-f", "-", stdin=policy_variant(mtu=1500 + n[0]))
        mtu = 1500 + n[0]
        w.wait_for(event_is("MODIFIED", "SriovNetworkNodePolicy", "highnet-sriov-policy",
                            lambda o: o["spec"]["mtu"] == mtu), f"change seen after {what}",
                   timeout=40)

    def cache_matches(what):
        deadline = time.monotonic() + 20
        while w.cache("SriovNetworkNodePolicy") != server_view(env):
            if time.monotonic() > deadline:
                raise Failure(f"agent cache {w.cache('SriovNetworkNodePolicy')} != server "
                              f"{server_view(env)} after {what}")
            time.sleep(0.2)
        check(True, f"agent cache equals the server after {what}")

    watches = env.stats()["watches"]
    time.sleep(5)
    check(env.stats()["watches"] >= watches + 2, "watches are renewed after timeoutSeconds")
    change("watch renewals")

    env.fault(close_watches=True)
    change("a watch closed mid-stream")

    # Away while a policy is deleted and the history is compacted: 410 → relist → DELETED.
    env.kubectl("apply", "-f", "-", stdin=policy_variant("doomed-policy"))
    w.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "doomed-policy"), "second policy")
    env.fault(reject_token=True)
    env.fault(close_watches=True)
    w.wait_stderr("rejected our credentials")
    env.kubectl("delete", "sriovnetworknodepolicy", "doomed-policy", "-n", NS)
    env.fault(compact=True)
    env.fault(reject_token=False)
    w.wait_for(event_is("DELETED", "SriovNetworkNodePolicy", "doomed-policy"),
               "a deletion that happened while away arrives after 410 + relist", timeout=40)
    w.wait_stderr("relisting")
    cache_matches("410 Expired")

    env.fault(expire_watches=1, close_watches=True)
    change("410 on the next watch")

    # Two in a row: the backoff (0.8 s doubling, as client-go) makes every further one cost
    # seconds of test time without testing more.
    env.fault(errors_500=2, close_watches=True)
    change("500 errors")
    w.wait_stderr("500 InternalError")

    # Longer than the agent's reconnect window (a retry lands anywhere in 4 s or more, jittered),
    # so that at least one retry meets the hang-up; kubectl waits for its end, the agent need not.
    refuse_s = 8.0
    refused_at = time.monotonic()
    env.fault(refuse_ms=int(refuse_s * 1000), close_watches=True)
    w.wait_stderr("Empty reply from server")
    time.sleep(max(0.0, refused_at + refuse_s + 0.1 - time.monotonic()))
    change("the server hanging up for 8 s")

    env.fault(slow_ms=1500)
    env.fault(close_watches=True)
    change("slow replies")
    env.fault(slow_ms=0)

    env.fault(garble_events=1)
    change("a garbled event")
    w.wait_stderr("malformed JSON")

    env.fault(truncate_events=1)
    change("a truncated event")

    env.fault(huge_events=1)
    change("a 17 MiB event")
    w.wait_stderr("larger than")

    env.fault(reject_token=True)
    env.fault(close_watches=True)
    time.sleep(1.5)
    env.fault(reject_token=False)
    change("401 Unauthorized")
    cache_matches("all faults")
    check(w.proc.poll() is None, "the agent is still running")
    w.stop()


def case_nodestate(env):
    env.setup_crds()
    spec = {"interfaces": [{"pciAddress": "0000:3b:00.0", "name": "ens1f0", "numVfs": 8,
                            "mtu": 1500, "vfGroups": [{"resourceName": "sriov_highnet",
                                                       "deviceType": "netdevice",
                                                       "vfRange": "0-7",
                                                       "policyName": "highnet-sriov-policy",
                                                       "isRdma": True}]}]}
    ifaces = [{"name": "ens1f0", "pciAddress": "0000:3b:00.0", "vendor": "15b3",
               "deviceID": "1017", "driver": "mlx5_core", "mtu": 1500, "numVfs": 8,
               "totalvfs": 16, "linkType": "ETH", "Vfs": [{"pciAddress": "0000:3b:00.2",
                                                          "vfID": 0, "driver": "mlx5_core"}]}]
    base = ["nodestate", "--kubeconfig", env.agent_kc, "--node", "node1", "--events"]
    r = env.harness(*base, "--spec", json.dumps(spec), "--interfaces", json.dumps(ifaces),
                    "--sync-status", "InProgress")
    check(json.loads(r.stdout)["writes"] == 2, "missing NodeState: create + status patch "
          f"({r.stdout.strip()})")
    obj = json.loads(env.kubectl("get", "sriovnetworknodestates", "node1", "-n", NS,
                                 "-o", "json").stdout)
    check(obj["spec"] == spec, "kubectl get shows the spec we wrote")
    check(obj["status"]["interfaces"] == ifaces and obj["status"]["syncStatus"] == "InProgress"
          and obj["status"]["lastSyncError"] == "", "kubectl get shows the status we wrote")
    yaml = env.kubectl("get", "sriovnetworknodestates", "-n", NS, "-o", "yaml").stdout
    check("syncStatus: InProgress" in yaml and "pciAddress: 0000:3b:00.0" in yaml,
          "kubectl get sriovnetworknodestates -o yaml shows it")
    table = env.kubectl("get", "sriovnetworknodestates", "-n", NS).stdout.split("\n")
    check(table[0].startswith("NAME") and "SYNC STATUS" in table[0] and
          table[1].split()[:2] == ["node1", "InProgress"],
          "kubectl get sriovnetworknodestates prints the Sync Status column")
    # -o wide: every column shows something the agent wrote (no column the agent never fills)
    env.harness(*base, "--spec", json.dumps(spec), "--interfaces", json.dumps(ifaces),
                "--sync-status", "Failed", "--error", "PF 0000:3b:00.0: 16 VFs wanted")
    wide = env.kubectl("get", "sriovnetworknodestates", "-n", NS, "-o", "wide").stdout
    head, row = wide.split("\n")[:2]
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=  ))\S", head)]
    empty = [head[i:].split("  ")[0] for i in starts if i >= len(row) or row[i] == " "]
    ours = os.environ.get("KUBE_TEST_CRDS") != "upstream"  # upstream's has no such column
    check(not empty and "<none>" not in row and
          (not ours or ("LAST SYNC ERROR" in head and "16 VFs wanted" in row)),
          f"kubectl get -o wide: every column filled (empty: {empty}), the last sync error "
          f"shown: {wide!r}")
    env.harness(*base, "--spec", json.dumps(spec), "--interfaces", json.dumps(ifaces),
                "--sync-status", "InProgress")
    obj = json.loads(env.kubectl("get", "sriovnetworknodestates", "node1", "-n", NS,
                                 "-o", "json").stdout)
    rv = obj["metadata"]["resourceVersion"]

    r = env.harness(*base, "--spec", json.dumps(spec), "--interfaces", json.dumps(ifaces),
                    "--sync-status", "InProgress")
    check(json.loads(r.stdout)["writes"] == 0, "unchanged state: no write at all")
    obj = json.loads(env.kubectl("get", "sriovnetworknodestates", "node1", "-n", NS,
                                 "-o", "json").stdout)
    check(obj["metadata"]["resourceVersion"] == rv, "resourceVersion unchanged")

    env.fault(conflicts=1)
    r = env.harness(*base, "--interfaces", json.dumps(ifaces), "--sync-status", "Failed",
                    "--error", "cannot set sriov_numvfs on 0000:3b:00.0: EBUSY")
    check(json.loads(r.stdout)["writes"] == 2, "409 Conflict: refetch and retry once")
    obj = json.loads(env.kubectl("get", "sriovnetworknodestates", "node1", "-n", NS,
                                 "-o", "json").stdout)
    check(obj["status"]["syncStatus"] == "Failed" and
          "EBUSY" in obj["status"]["lastSyncError"], "status is Failed with the error")
    check(obj["spec"] == spec, "a status write leaves the spec alone")

    spec2 = {"interfaces": [dict(spec["interfaces"][0], numVfs=4)]}
    r = env.harness(*base, "--spec", json.dumps(spec2))
    obj = json.loads(env.kubectl("get", "sriovnetworknodestates", "node1", "-n", NS,
                                 "-o", "json").stdout)
    check(obj["spec"] == spec2 and obj["status"]["syncStatus"] == "Failed" and
          obj["metadata"]["generation"] == 2, "a spec write keeps the status, bumps generation")

    env.fault(errors_500=2)
    r = env.harness(*base, "--interfaces", json.dumps(ifaces), "--sync-status", "Succeeded")
    check("retrying" in r.stderr, "500s are logged and retried")
    obj = json.loads(env.kubectl("get", "sriovnetworknodestates", "node1", "-n", NS,
                                 "-o", "json").stdout)
    check(obj["status"]["syncStatus"] == "Succeeded" and obj["status"]["lastSyncError"] == "",
          "status reaches Succeeded after the 500s")

    env.kubectl("delete", "sriovnetworknodestates", "node1", "-n", NS)
    r = env.harness(*base, "--spec", json.dumps(spec), "--interfaces", "[]",
                    "--sync-status", "Succeeded")
    env.kubectl("get", "sriovnetworknodestates", "node1", "-n", NS)
    check(True, "a deleted NodeState is re-created")

    events = json.loads(env.kubectl("get", "events", "-n", NS, "-o", "json").stdout)["items"]
    msgs = sorted(e["message"] for e in events if e["reason"] == "SyncStatusChanged" and
                  e["involvedObject"]["kind"] == "SriovNetworkNodeState" and
                  e["involvedObject"]["name"] == "node1")
    check(any("from InProgress to Failed" in m and "EBUSY" in m for m in msgs) and
          any("to InProgress" in m for m in msgs) and
          any("from Failed to Succeeded" in m for m in msgs),
          f"SyncStatusChanged events on the NodeState: {msgs}")
    check(all(e["source"]["component"] == "sriov-agent" and e["source"]["host"] == "node1"
              for e in events), "events name sriov-agent on node1 as their source")


def case_events(env):
    env.setup_crds(policy=True)
    pol = json.loads(env.kubectl("get", "sriovnetworknodepolicy", "highnet-sriov-policy", "-n",
                                 NS, "-o", "json").stdout)
    ref = ["--kubeconfig", env.agent_kc, "--kind", "SriovNetworkNodePolicy", "--api-version",
           "sriovnetwork.openshift.io/v1", "--name", "highnet-sriov-policy", "--namespace", NS,
           "--uid", pol["metadata"]["uid"]]
    env.harness("event", *ref, "--reason", "InvalidPolicy", "--message",
                "spec.numVfs: 200 exceeds totalvfs 16 on 0000:3b:00.0", "--repeat", "20",
                "--interval-ms", "600000")

    def events():
        return json.loads(env.kubectl("get", "events", "-n", NS, "-o", "json").stdout)["items"]

    ev = [e for e in events() if e["reason"] == "InvalidPolicy"]
    check(len(ev) == 1, "20 identical reports make one Event")
    e = ev[0]
    check(e["involvedObject"]["name"] == "highnet-sriov-policy" and
          e["involvedObject"]["kind"] == "SriovNetworkNodePolicy" and
          e["involvedObject"]["uid"] == pol["metadata"]["uid"] and e["type"] == "Warning" and
          "exceeds totalvfs" in e["message"] and e["count"] == 1,
          "the Event names the policy, the reason and the validation message")
    r = env.kubectl("get", "events", "-n", NS)
    check("InvalidPolicy" in r.stdout and
          "sriovnetworknodepolicy/highnet-sriov-policy" in r.stdout,
          "kubectl get events lists it against the policy")

    env.harness("event", *ref, "--reason", "ConflictingPolicy", "--message",
                "VF range 0-7 on ens1f0 overlaps policy other-policy", "--repeat", "8",
                "--interval-ms", "200", "--spacing-ms", "100")
    ev = [e for e in events() if e["reason"] == "ConflictingPolicy"]
    check(len(ev) == 1 and ev[0]["count"] > 1,
          f"repeats past the interval bump count on the same Event (count {ev[0]['count']})")
    check(ev[0]["count"] <= 8, "count never exceeds the number of reports")
    check(ev[0]["lastTimestamp"] >= ev[0]["firstTimestamp"], "lastTimestamp moves forward")

    env.harness("event", *ref, "--reason", "InvalidPolicy", "--message", "another problem")
    check(len([e for e in events() if e["reason"] == "InvalidPolicy"]) == 2,
          "a different message is a different Event")

    env.fault(reject_token=True)
    r = env.harness("event", *ref, "--reason", "InvalidPolicy", "--message", "x", ok=False)
    env.fault(reject_token=False)
    check("cannot create the Event" in r.stderr and "401" in r.stderr,
          "a rejected Event is logged with the server's reason")


def make_pki(d):
    def run(*a):
        subprocess.run(["openssl", *a], check=True, capture_output=True, cwd=d)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
        "-days", "2", "-subj", "/CN=fake-ca")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for name, cn in (("server", "127.0.0.1"), ("client", "system:node:node1")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out",
            f"{name}.csr", "-subj", f"/CN={cn}")
        extra = ["-extfile", "san.ext"] if name == "server" else []
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", f"{name}.crt", "-days", "2", *extra)


def start_nghttpx(env):
    """nghttpx (Debian nghttp2-proxy) in front of the fake API server, as in front of a real
    one: TLS with ALPN h2. Returns its port and the access log's path."""
    import socket
    nghttpx = shutil.which("nghttpx") or "/usr/sbin/nghttpx"
    if not os.path.exists(nghttpx):
        raise Failure("nghttpx not found: install nghttp2-proxy (scripts/install-deps)")
    d = env.dir
    make_pki(d)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    access = os.path.join(d, "access.log")
    proxy = subprocess.Popen(
        [nghttpx, "--conf=/dev/null", f"--frontend=127.0.0.1,{port}",
         f"--backend=127.0.0.1,{env.port}", "--workers=1", "--no-ocsp",
         f"--accesslog-file={access}", "--accesslog-format=$alpn $method $path $status",
         f"--errorlog-file={os.path.join(d, 'nghttpx.err')}",
         "--backend-read-timeout=15m", "--stream-read-timeout=0",
         os.path.join(d, "server.key"), os.path.join(d, "server.crt")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env.procs.append(proxy)
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise Failure("nghttpx did not start")
            time.sleep(0.1)
    return port, access


def h2_kubeconfig(env, port):
    import base64
    ca = base64.b64encode(open(os.path.join(env.dir, "ca.crt"), "rb").read()).decode()
    kc = os.path.join(env.dir, f"h2-{port}.kubeconfig")
    with open(kc, "w") as f:
        f.write(kubeconfig_text(f"https://127.0.0.1:{port}", TOKEN,
                                extra_cluster=f"    certificate-authority-data: {ca}\n"))
    return kc


def case_http2_tls(env):
    """The agent through nghttpx, as in front of a real API server: TLS with ALPN h2, every
    request and the watches multiplexed over HTTP/2."""
    port, access = start_nghttpx(env)
    kc = h2_kubeconfig(env, port)
    env.setup_crds()
    w = Watcher(env, kubeconfig=kc)
    w.wait_for(event_is("ADDED", "Node", "node1"), "the agent sees its Node through nghttpx")
    env.kubectl("apply", "-f", POLICY)
    w.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "highnet-sriov-policy"),
               "a policy applied meanwhile arrives through the watch")
    env.fault(close_watches=True)
    env.kubectl("apply", "-f", "-", stdin=policy_variant(numVfs=4))
    w.wait_for(event_is("MODIFIED", "SriovNetworkNodePolicy", "highnet-sriov-policy",
                        lambda o: o["spec"]["numVfs"] == 4),
               "after the backend ended the streams, the watch resumed over HTTP/2")
    lines = open(access).read().splitlines()
    watches = [l for l in lines if "watch=1" in l]
    check(watches and all(l.startswith("h2 ") for l in lines),
          f"every request went over HTTP/2 with ALPN h2 ({len(lines)} requests, "
          f"{len(watches)} watches)")


class CountingRelay:
    """A TCP relay in front of a port that counts the connections it accepts: how many
    connections a client opened, whatever it sent over them (TLS passes through)."""

    def __init__(self, target_port):
        import socket
        self.target = target_port
        self.accepted = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        import socket
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            try:
                u = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        import socket
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s_, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            try:
                s_.shutdown(how)
            except OSError:
                pass

    def close(self):
        self.sock.close()


def case_http2_one_connection(env):
    """Issue 39.5: an agent that starts several lists and watches at once over TLS to an h2
    server opens one connection, every request a stream of it, instead of a TLS connection
    per request (libcurl decides h2 only once ALPN answered: CURLOPT_PIPEWAIT makes the
    others wait for that)."""
    port, access = start_nghttpx(env)
    relay = CountingRelay(port)
    kc = h2_kubeconfig(env, relay.port)
    env.setup_crds(policy=True)
    w = Watcher(env, kubeconfig=kc)
    w.wait_for(event_is("ADDED", "Node", "node1"), "the agent lists its Node through nghttpx")
    w.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "highnet-sriov-policy"),
               "and the policies, at the same time")
    env.kubectl("label", "node", "node1", "h2-test=1")
    w.wait_for(event_is("MODIFIED", "Node", "node1"), "a change arrives through the Node watch")
    env.kubectl("apply", "-f", "-", stdin=policy_variant(numVfs=4))
    w.wait_for(event_is("MODIFIED", "SriovNetworkNodePolicy", "highnet-sriov-policy",
                        lambda o: o["spec"]["numVfs"] == 4),
               "and one through the policy watch")
    with relay.lock:
        accepted = relay.accepted
    check(accepted == 1, f"the agent opened one connection for its lists and watches "
          f"(opened {accepted})")
    relay.close()


def only_the_given_ca(tls, d, b64):
    """A kubeconfig's CA is the only one trusted, as client-go does (RootCAs = that pool):
    the system store must not vouch for the API server too. The system store is replaced, in
    a private mount namespace, by one holding the CA that signed the server's certificate,
    while the kubeconfig names another CA."""
    if os.geteuid() != 0 or not shutil.which("unshare") or subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "true"],
            capture_output=True).returncode != 0:
        print("  skip: the system-store check needs root and a mount namespace (unshare -m)")
        return
    def run(*a):
        subprocess.run(["openssl", *a], check=True, capture_output=True, cwd=d)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other-ca.key", "-out",
        "other-ca.crt", "-days", "2", "-subj", "/CN=another-ca")
    store = os.path.join(d, "system-store")
    os.makedirs(store, exist_ok=True)
    shutil.copy(os.path.join(d, "ca.crt"), os.path.join(store, "ca-certificates.crt"))
    shutil.copy(os.path.join(d, "ca.crt"), os.path.join(store, "fake-ca.pem"))
    run("rehash", store)
    # sh -c: the bind mount exists only for this agent (its own mount namespace)
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
              'mount --bind "$0" /etc/ssl/certs && exec "$@"', store]
    user = (f"    client-certificate: {d}/client.crt\n    client-key: {d}/client.key\n")
    for name, cluster in (
            ("data", f"    certificate-authority-data: {b64('other-ca.crt')}\n"),
            ("file", f"    certificate-authority: {d}/other-ca.crt\n")):
        kc = os.path.join(d, f"tls-other-ca-{name}.kubeconfig")
        with open(kc, "w") as f:
            f.write(kubeconfig_text(tls.url, extra_cluster=cluster, extra_user=user))
        w = Watcher(tls, kubeconfig=kc, prefix=prefix)
        w.wait_stderr("SSL certificate problem", timeout=20)
        check(not w.lines, f"certificate-authority{'-data' if name == 'data' else ''} naming "
              "another CA: the server is refused although the system store trusts its CA")
        w.stop()
    # the control: with no CA in the kubeconfig the (replaced) system store is used
    kc = os.path.join(d, "tls-system-store.kubeconfig")
    with open(kc, "w") as f:
        f.write(kubeconfig_text(tls.url, extra_user=user))
    w = Watcher(tls, kubeconfig=kc, prefix=prefix)
    w.wait_for(event_is("ADDED", "Node", "node1"),
               "without a CA in the kubeconfig the system store is trusted (the control)")
    w.stop()


def case_kubeconfig(env):
    import base64
    d = env.dir
    b64 = lambda p: base64.b64encode(open(os.path.join(d, p), "rb").read()).decode()
    make_pki(d)
    with open(os.path.join(d, "token"), "w") as f:
        f.write(TOKEN + "\n")

    def parse(name, text):
        path = os.path.join(d, f"{name}.kubeconfig")
        with open(path, "w") as f:
            f.write(text)
        return env.harness("kubeconfig", path, ok=False), path

    url = "https://127.0.0.1:6443"
    good = {
        "token": (kubeconfig_text(url, TOKEN), {"token": True, "token_value": TOKEN}),
        "tokenfile": (kubeconfig_text(url, extra_user="    tokenFile: token\n"),
                      {"token_file": True, "token_value": TOKEN}),
        "cert-files": (kubeconfig_text(url, extra_cluster="    certificate-authority: ca.crt\n",
                                       extra_user="    client-certificate: client.crt\n"
                                                  "    client-key: client.key\n"),
                       {"ca": True, "client_cert": True, "token": False}),
        "cert-data": (kubeconfig_text(
            url, extra_cluster=f"    certificate-authority-data: {b64('ca.crt')}\n",
            extra_user=f"    client-certificate-data: {b64('client.crt')}\n"
                       f"    client-key-data: {b64('client.key')}\n"),
            {"ca": True, "client_cert": True}),
        "insecure": (kubeconfig_text(url, TOKEN,
                                     extra_cluster="    insecure-skip-tls-verify: true\n"),
                     {"insecure": True, "ca": False}),
        "insecure-quoted-false": (kubeconfig_text(
            url, TOKEN, extra_cluster="    insecure-skip-tls-verify: false\n"),
            {"insecure": False}),
    }
    for name, (text, expect) in good.items():
        r, _ = parse(name, text)
        check(r.returncode == 0, f"kubeconfig variant '{name}' parses ({r.stderr.strip()})")
        got = json.loads(r.stdout)
        check(got["server"] == url and all(got.get(k) == v for k, v in expect.items()),
              f"'{name}' yields {expect} (got {got})")

    broken = {
        "no-current-context": (kubeconfig_text(url, TOKEN).replace("current-context: c\n", ""),
                               "current-context: missing"),
        "dangling-context": (kubeconfig_text(url, TOKEN).replace("current-context: c",
                                                                  "current-context: nope"),
                             "current-context: \"nope\" names no entry"),
        "no-server": (kubeconfig_text(url, TOKEN).replace(f"    server: {url}\n",
                                                          "    insecure-skip-tls-verify: true\n"),
                      "clusters[fake].cluster.server: missing"),
        "bad-url": (kubeconfig_text("ftp://x", TOKEN), "clusters[fake].cluster.server"),
        "bad-base64": (kubeconfig_text(url, extra_cluster="    certificate-authority-data: not*base64\n"),
                       "certificate-authority-data: not valid base64"),
        "missing-ca-file": (kubeconfig_text(url, extra_cluster="    certificate-authority: "
                                                               "nonexistent.crt\n"),
                            "certificate-authority: cannot read"),
        "cert-without-key": (kubeconfig_text(url, extra_user="    client-certificate: "
                                                             "client.crt\n"),
                             "must be given together"),
        "bad-yaml": ("clusters: [\n  - {name: x\n", "invalid YAML: line"),
        "not-a-mapping": ("- just\n- a list\n", "not a YAML mapping"),
        "exec-plugin": (kubeconfig_text(url, extra_user="    exec:\n      command: aws\n"),
                        "exec and auth-provider"),
        "insecure-garbage": (kubeconfig_text(url, extra_cluster="    insecure-skip-tls-verify:"
                                                                " maybe\n"),
                             "insecure-skip-tls-verify: must be true or false"),
    }
    for name, (text, message) in broken.items():
        r, path = parse(name, text)
        check(r.returncode == 1 and path in r.stderr and message in r.stderr,
              f"broken kubeconfig '{name}' → clear error: {r.stderr.strip()}")
    r = subprocess.run([AGENT, "watch", "--node-name", "node1", "--kubeconfig",
                        os.path.join(d, "no-server.kubeconfig")], capture_output=True, text=True,
                       env=env.env, timeout=10)
    check(r.returncode == 1 and "server: missing" in r.stderr,
          "sriov-agent watch refuses a broken kubeconfig with the same message")

    # TLS end to end: the fake serves HTTPS and requires client certificates.
    tls = Env(nodes=("node1",), tls=["--tls-cert", os.path.join(d, "server.crt"), "--tls-key",
                                     os.path.join(d, "server.key"), "--client-ca",
                                     os.path.join(d, "ca.crt")])
    try:
        import ssl
        ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
        ctx.load_cert_chain(os.path.join(d, "client.crt"), os.path.join(d, "client.key"))
        tls.ssl_ctx = ctx
        kc = os.path.join(d, "tls.kubeconfig")
        with open(kc, "w") as f:
            f.write(kubeconfig_text(
                tls.url, extra_cluster=f"    certificate-authority-data: {b64('ca.crt')}\n",
                extra_user=f"    client-certificate-data: {b64('client.crt')}\n"
                           f"    client-key-data: {b64('client.key')}\n"))
        w = Watcher(tls, kubeconfig=kc)
        w.wait_for(event_is("ADDED", "Node", "node1"),
                   "over HTTPS with CA data and a client certificate the agent sees its Node")
        w.stop()
        tls.env["KUBECONFIG"] = kc
        tls.kubectl("label", "node", "node1", "tls=ok")
        check(True, "kubectl works with the same TLS kubeconfig")
        kc2 = os.path.join(d, "tls-noca.kubeconfig")
        with open(kc2, "w") as f:
            f.write(kubeconfig_text(tls.url, extra_user=f"    client-certificate: "
                                    f"{d}/client.crt\n    client-key: {d}/client.key\n"))
        w = Watcher(tls, kubeconfig=kc2)
        w.wait_stderr("SSL certificate problem", timeout=20)
        check(not w.lines, "without the CA the server certificate is refused (TLS verify on)")
        w.stop()
        kc3 = os.path.join(d, "tls-insecure.kubeconfig")
        with open(kc3, "w") as f:
            f.write(kubeconfig_text(tls.url, extra_cluster="    insecure-skip-tls-verify: true\n",
                                    extra_user=f"    client-certificate: {d}/client.crt\n"
                                               f"    client-key: {d}/client.key\n"))
        w = Watcher(tls, kubeconfig=kc3)
        w.wait_for(event_is("ADDED", "Node", "node1"),
                   "insecure-skip-tls-verify: true connects without the CA")
        w.stop()
        only_the_given_ca(tls, d, b64)
    finally:
        tls.close()

    # A rotating token file: the agent picks up the new token on its next request.
    kc = os.path.join(d, "rotating.kubeconfig")
    with open(kc, "w") as f:
        f.write(kubeconfig_text(env.url, extra_user=f"    tokenFile: {d}/token\n"))
    env.setup_crds(policy=True)
    w = Watcher(env, kubeconfig=kc)
    w.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "highnet-sriov-policy"),
               "tokenFile: authenticated list")
    env.fault(token="rotated-token")
    with open(os.path.join(d, "token.new"), "w") as f:
        f.write("rotated-token\n")
    os.rename(os.path.join(d, "token.new"), os.path.join(d, "token"))
    env.fault(close_watches=True)
    env.kubectl("apply", "-f", "-", stdin=policy_variant(numVfs=2))
    w.wait_for(event_is("MODIFIED", "SriovNetworkNodePolicy", "highnet-sriov-policy",
                        lambda o: o["spec"]["numVfs"] == 2),
               "after the token file rotates the agent reconnects with the new token")
    w.stop()

    # In-cluster configuration.
    sa = os.path.join(d, "sa")
    os.mkdir(sa)
    shutil.copy(os.path.join(d, "ca.crt"), os.path.join(sa, "ca.crt"))
    with open(os.path.join(sa, "token"), "w") as f:
        f.write("sa-token")
    r = subprocess.run([HARNESS, "in-cluster", sa], capture_output=True, text=True,
                       env=dict(env.env, KUBERNETES_SERVICE_HOST="10.96.0.1",
                                KUBERNETES_SERVICE_PORT="443"))
    got = json.loads(r.stdout)
    check(got["server"] == "https://10.96.0.1:443" and got["token_value"] == "sa-token" and
          got["ca"], "in-cluster config: service host/port, SA token and CA")
    r = subprocess.run([HARNESS, "in-cluster", sa], capture_output=True, text=True,
                       env=dict(env.env, KUBERNETES_SERVICE_HOST="", KUBERNETES_SERVICE_PORT=""))
    check(r.returncode == 1 and "KUBERNETES_SERVICE_HOST" in r.stderr,
          "in-cluster without the service variables is a clear error")


def case_in_cluster(env):
    """`kubectl exec` into the agent's pod: plan and watch with no kubeconfig use the pod's
    service account (KUBERNETES_SERVICE_HOST/PORT, token, ca.crt, namespace) over HTTPS, take
    the node from NODE_NAME and the namespace from the service account, and follow a rotated
    token as client-go does."""
    d = env.dir
    make_pki(d)
    tls = Env(nodes=("node1",), tls=["--tls-cert", os.path.join(d, "server.crt"), "--tls-key",
                                     os.path.join(d, "server.key")])
    try:
        import ssl
        tls.ssl_ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.crt"))
        kc = os.path.join(d, "admin.kubeconfig")
        with open(kc, "w") as f:
            f.write(kubeconfig_text(tls.url, TOKEN, extra_cluster=(
                f"    certificate-authority: {d}/ca.crt\n")))
        tls.env["KUBECONFIG"] = kc
        tls.setup_crds()
        ns = "highnet-ops"  # not the default: proves the namespace file is read
        tls.kubectl("apply", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n"
                                            f"  name: {ns}\n")
        tls.kubectl("apply", "-f", "-", stdin=open(POLICY).read().replace(
            "namespace: sriov-network-operator", f"namespace: {ns}"))
        tls.kubectl("label", "node", "node1", "highnet-node=true")
        sysfs = os.path.join(d, "sys")
        subprocess.run([sys.executable, os.path.join(SRCDIR, "test/sysfs-gen/gen-sysfs.py"),
                        "--out", sysfs, "--pf", "cx6:ens1f0:0"], check=True,
                       capture_output=True)

        sa = os.path.join(d, "serviceaccount")
        os.mkdir(sa)
        shutil.copy(os.path.join(d, "ca.crt"), os.path.join(sa, "ca.crt"))
        with open(os.path.join(sa, "token"), "w") as f:
            f.write(TOKEN)
        with open(os.path.join(sa, "namespace"), "w") as f:
            f.write(ns)
        pod = {k: v for k, v in tls.env.items() if k not in ("KUBECONFIG",)}
        pod.update(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(tls.port),
                   SRIOV_AGENT_SERVICE_ACCOUNT_DIR=sa, NODE_NAME="node1",
                   HOME=os.path.join(d, "no-home"))

        r = subprocess.run([AGENT, "plan", "--sysfs-root", sysfs, "-o", "json"], env=pod,
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, f"plan in a pod needs no flags for the cluster: {r.stderr[-400:]}")
        st = {p["name"]: p for p in json.loads(r.stdout).get("policies", [])}
        got = st.get("highnet-sriov-policy", {})
        check(got.get("status") == "applied" and f"{ns}/highnet-sriov-policy" in got.get(
            "reason", ""), f"plan read the policy of the pod's namespace, node from NODE_NAME: {got}")

        r = subprocess.run([AGENT, "plan", "--sysfs-root", sysfs], env=dict(pod, NODE_NAME=""),
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 1 and "NODE_NAME" in r.stderr,
              f"plan in a pod without a node name says how to give one: {r.stderr.strip()}")
        r = subprocess.run([AGENT, "plan", "--sysfs-root", sysfs], env=dict(
            pod, SRIOV_AGENT_SERVICE_ACCOUNT_DIR=os.path.join(d, "nothing")),
            capture_output=True, text=True, timeout=30)
        check(r.returncode == 1 and os.path.join(d, "nothing", "token") in r.stderr,
              f"a missing service-account token is named: {r.stderr.strip()}")
        outside = {k: v for k, v in pod.items() if not k.startswith("KUBERNETES_SERVICE")}
        r = subprocess.run([AGENT, "plan", "--sysfs-root", sysfs], env=outside,
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 1 and "--policies PATH is required" in r.stderr,
              "outside a pod plan still wants --policies or --kubeconfig")

        watcher = Watcher(tls, argv=[AGENT, "watch"], proc_env=pod)
        watcher.wait_for(event_is("ADDED", "Node", "node1"),
                         "watch in a pod: the Node named by NODE_NAME over HTTPS")
        watcher.wait_for(event_is("ADDED", "SriovNetworkNodePolicy", "highnet-sriov-policy"),
                         "watch in a pod: the policies of the service account's namespace")
        # The kubelet rotates the projected token: the agent re-reads the file.
        tls.fault(token="rotated-sa-token")
        with open(os.path.join(sa, "token.new"), "w") as f:
            f.write("rotated-sa-token")
        os.rename(os.path.join(sa, "token.new"), os.path.join(sa, "token"))
        tls.fault(close_watches=True)
        with open(kc, "w") as f:
            f.write(kubeconfig_text(tls.url, "rotated-sa-token", extra_cluster=(
                f"    certificate-authority: {d}/ca.crt\n")))
        tls.kubectl("label", "node", "node1", "rotated=yes")
        watcher.wait_for(event_is("MODIFIED", "Node", "node1",
                                  lambda o: o["metadata"]["labels"].get("rotated") == "yes"),
                         "after the token rotates the watch resumes with the new token")
        watcher.stop()
    finally:
        tls.close()


CASES = {
    "crds_and_policy": (case_crds_and_policy, ("node1",)),
    "watch_events": (case_watch_events, ("node1",)),
    "node_labels": (case_node_labels, ("node1", "node2")),
    "faults": (case_faults, ("node1",)),
    "nodestate": (case_nodestate, ("node1",)),
    "events": (case_events, ("node1",)),
    "kubeconfig": (case_kubeconfig, ("node1",)),
    "http2_tls": (case_http2_tls, ("node1",)),
    "http2_one_connection": (case_http2_one_connection, ("node1",)),
    "in_cluster": (case_in_cluster, ("node1",)),
}


def main():
    names = sys.argv[1:] or ["all"]
    if names == ["all"]:
        names = list(CASES)
    failed = []
    for name in names:
        fn, nodes = CASES[name]
        print(f"== {name}")
        env = Env(nodes=nodes)
        try:
            fn(env)
        except (Failure, subprocess.SubprocessError, OSError, ValueError, KeyError) as e:
            print(f"FAIL {name}: {e}")
            failed.append(name)
        finally:
            env.close()
    if failed:
        print(f"failed: {' '.join(failed)}")
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
