#!/usr/bin/env python3
"""Fault soak: `sriov-agent run` in cluster mode on a generated seed node, for a bounded time,
under random API faults (dropped watches, 410/compaction, 500s, slow replies, garbled and
truncated events, rejected tokens, conflicts, refused connections), kubelet restarts, policy
churn through kubectl (valid policies on the seed PFs with the VF counts the tree has, plus
invalid ones) and `kill -9` of the agent followed by a restart on the same state directory.

After the faults stop and the node settles, what an operator would check:
- the NodeState spec equals what `sriov-agent plan` computes from `kubectl get
  sriovnetworknodepolicies -o yaml` on the same tree and labels, and it says Succeeded;
- the pools the kubelet sees equal the plan's VF groups (resource names, device counts);
- the last agent process (started in the first half) did not grow its RSS or its number of
  open file descriptors between a sample taken in a canonical configuration before its churn
  and one taken in the same configuration after it;
- no agent exited on its own (only the kill -9s of this script), SIGTERM exits 0, no apply
  child outlives a killed agent, no sanitizer report in any agent log.

Then two hostile rounds (each behind an environment switch, on by default; 0 turns it off):
- SOAK_POISON: policies a real API server stores but that cannot be decoded or are huge
  (`spec.bridge` nested 2,100 deep, an `mtu` beyond 64 bits, five of ~1 MB selecting no
  node), before and across a kill -9: each is isolated (an InvalidPolicy Event names it), the
  other policies' pools keep being served and the NodeState converges on them;
- SOAK_KUBELET_DOWN: a pod holds a VF, the kubelet's PodResources goes away (socket removed,
  or the process gone with the socket left), and a policy change would re-create that PF's
  VFs: nothing may be destroyed while the kubelet cannot be asked.
Figures printed at the end: policies/objects tried, malformed objects isolated, kubelet
outages with pods holding VFs and VFs destroyed (must be 0), peak RSS (VmHWM over every agent
process) against the DaemonSet's memory limit (must stay below).

Every random choice comes from one seed (printed; --seed replays it; timing on a busy machine
still varies). Ends with "N passed, M failed"; exit 1 on any failure.
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import testlib  # noqa: E402
from testlib import FAILURES, Proc, wait  # noqa: E402

NODE = "worker-1"
NS = "sriov-network-operator"
TOKEN = "soak-token"
PREFIX = "openshift.io/"
LABEL = "soak-node"
# PFs of the seed tree that have VFs and a netdevice; their VF counts come from the manifest.
CHURN_PFS = ("ens1f0", "ens2f0", "eno1")
PASSES = []
POISON_PREFIX = "poison-"
# Python's json decoder recurses per nesting level; the poison policy nests 2,100 deep.
sys.setrecursionlimit(20000)


def switch(name):
    """A hostile round's environment switch: on unless set to 0/no/off."""
    return os.environ.get(name, "1").lower() not in ("0", "no", "off", "false")


def manifest_memory_limit_kib(src):
    """resources.limits.memory of the agent's DaemonSet container, in KiB."""
    units = {"Ki": 1, "Mi": 1024, "Gi": 1024 * 1024}
    in_limits = False
    with open(os.path.join(src, "manifests/30-daemonset.yaml")) as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("limits:"):
                in_limits = True
            elif in_limits and stripped.startswith("memory:"):
                value = stripped.split(":", 1)[1].strip().strip("\"'")
                for suffix, k in units.items():
                    if value.endswith(suffix):
                        return int(value[:-len(suffix)]) * k
                return int(value) // 1024
    return None


def poison_bodies(pf_count):
    """(name, raw JSON text) of policies that are valid JSON the API server stores but that
    the agent cannot decode (depth, an integer beyond 64 bits) or that are large."""
    def doc(name, spec_extra_text, pf_names_text='["ens1f0"]', label=LABEL):
        return ('{"apiVersion":"sriovnetwork.openshift.io/v1","kind":"SriovNetworkNodePolicy",'
                '"metadata":{"name":"%s","namespace":"%s"},"spec":{"resourceName":"poison",'
                '"numVfs":%d,"priority":5,"nodeSelector":{"%s":"true"},'
                '"nicSelector":{"pfNames":%s}%s}}' % (name, NS, pf_count, label,
                                                       pf_names_text, spec_extra_text))
    deep = '{"a":' * 2100 + '1' + '}' * 2100
    # The free-form spec.bridge is the part of a policy the CRD does not bound.
    megabyte = json.dumps({"x": ["%06d-%s" % (i, "x" * 44) for i in range(20000)]})
    return [
        (POISON_PREFIX + "deep-bridge", doc(POISON_PREFIX + "deep-bridge", ',"bridge":' + deep)),
        (POISON_PREFIX + "huge-mtu", doc(POISON_PREFIX + "huge-mtu",
                                         ',"mtu":100000000000000000000')),
    ] + [
        # Five of ~1 MB each, selecting no node (issue 12.3 took the agent to 98 MiB with
        # these): bounded memory, isolated, never the agent down.
        (POISON_PREFIX + "megabyte-%d" % i,
         doc(POISON_PREFIX + "megabyte-%d" % i, ',"bridge":' + megabyte, label="no-such-label"))
        for i in range(5)
    ]


def check(name, ok, detail=""):
    if ok:
        PASSES.append(name)
    return testlib.check(name, ok, detail)


INVALID = [
    # VF range past the VF count: the agent refuses the policy, the server stores it.
    lambda pf, n: ("ens1f0#0-%d" % (n + 4), 4),
    # numVfs above the PF's totalVfs.
    lambda pf, n: (pf, 4096),
    # A PF name that is not a valid interface name.
    lambda pf, n: ("../etc", n),
]


class Cluster:
    """The fake API server (agent: bearer token; kubectl: anonymous, untouched by faults)."""

    def __init__(self, src, work, kubectl):
        self.kubectl = kubectl
        self.agent_kubeconfig = os.path.join(work, "agent.kubeconfig")
        self.env = dict(os.environ, HOME=os.path.join(work, "home"),
                        KUBECONFIG=os.path.join(work, "kubectl.kubeconfig"))
        os.makedirs(self.env["HOME"])
        self.api = subprocess.Popen(
            [sys.executable, os.path.join(src, "test/fake-apiserver/fake_apiserver.py"),
             "--port", "0", "--node", NODE, "--token", TOKEN, "--anonymous",
             "--kubeconfig-out", self.agent_kubeconfig],
            stdout=subprocess.PIPE, stderr=open(os.path.join(work, "api.err"), "w"), text=True)
        self.port = int(self.api.stdout.readline().split()[1])
        with open(self.agent_kubeconfig) as f:
            text = f.read()
        with open(self.env["KUBECONFIG"], "w") as f:
            f.write(text.replace("    token: %s\n" % TOKEN, "    {}\n"))

    def run(self, *args, stdin=None):
        try:
            p = subprocess.run([self.kubectl] + list(args), env=self.env, input=stdin,
                               capture_output=True, text=True, timeout=90)
        except subprocess.TimeoutExpired:
            return 124, "timeout"
        return p.returncode, p.stdout + p.stderr

    def ok(self, *args, stdin=None):
        rc, out = self.run(*args, stdin=stdin)
        check("kubectl " + " ".join(args[:3]), rc == 0, out[-400:])
        return out

    def get_json(self, *args):
        rc, out = self.run("get", *args, "-o", "json")
        try:
            return json.loads(out) if rc == 0 else None
        except (ValueError, RecursionError):
            return None

    def create_raw(self, plural, body):
        """POST exactly these bytes (kubectl would re-encode numbers and depth)."""
        req = urllib.request.Request(
            "http://127.0.0.1:%d/apis/sriovnetwork.openshift.io/v1/namespaces/%s/%s" % (
                self.port, NS, plural), data=body.encode(), method="POST",
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def faults(self, **switches):
        req = urllib.request.Request("http://127.0.0.1:%d/_fake/faults" % self.port,
                                     data=json.dumps(switches).encode(), method="POST")
        urllib.request.urlopen(req, timeout=30).read()

    def stats(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/_fake/stats" % self.port,
                                    timeout=30) as r:
            return json.loads(r.read())

    def stop(self):
        self.api.kill()
        self.api.wait()


def policy(name, resource, pf, num_vfs, priority):
    return json.dumps({"apiVersion": "sriovnetwork.openshift.io/v1",
                       "kind": "SriovNetworkNodePolicy",
                       "metadata": {"name": name, "namespace": NS},
                       "spec": {"resourceName": resource, "numVfs": num_vfs,
                                "priority": priority, "deviceType": "netdevice",
                                "nodeSelector": {LABEL: "true"},
                                "nicSelector": {"pfNames": [pf]}}})


class KubeletView:
    """What the fake kubelet currently sees: resource -> its last device list."""

    def __init__(self, proc):
        self.proc, self.pools, self.restarts, self.registrations = proc, {}, 0, 0

    def drain(self):
        while True:
            try:
                e = self.proc.q.get_nowait()
            except Exception:
                return
            if not isinstance(e, dict):
                continue
            kind, res = e.get("event"), e.get("resource")
            if kind == "restart":
                self.pools.clear()
                self.restarts += 1
            elif kind == "register":
                self.registrations += 1
            elif kind == "devices":
                self.pools[res] = e.get("devices") or []
            elif kind == "watch-end" and e.get("code") != "Canceled":
                # Canceled is the kubelet replacing its own stream (re-registration or
                # restart); anything else is the plugin going away.
                self.pools.pop(res, None)

    def counts(self):
        self.drain()
        return {r: sum(1 for d in devs if d.get("health") == "Healthy")
                for r, devs in self.pools.items()}


class Agent:
    """One `sriov-agent run` incarnation after another, on the same state directory."""

    def __init__(self, argv, work):
        self.argv, self.work, self.n, self.p = argv, work, 0, None
        self.unexpected_exits, self.logs, self.orphans = [], [], []
        self.peak_kib = 0

    def start(self):
        self.n += 1
        path = os.path.join(self.work, "agent-%d.log" % self.n)
        self.logs.append(path)
        log = open(path, "w")
        self.p = subprocess.Popen(self.argv, stdout=log, stderr=log)
        log.close()

    def children(self):
        kids = []
        try:
            for tid in os.listdir("/proc/%d/task" % self.p.pid):
                with open("/proc/%d/task/%s/children" % (self.p.pid, tid)) as f:
                    kids += [int(x) for x in f.read().split()]
        except OSError:
            pass
        return kids

    def note_peak(self):
        """VmHWM (peak resident set) of the current process, kept as the soak's maximum."""
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))
        except (OSError, ValueError):
            pass

    def check_alive(self):
        self.note_peak()
        rc = self.p.poll()
        if rc is not None:
            self.unexpected_exits.append((self.n, rc))
            self.start()

    def kill9(self):
        self.check_alive()
        kids = self.children()
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()
        if kids:
            time.sleep(3)
        for pid in kids:
            try:
                with open("/proc/%d/stat" % pid) as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                if state != "Z":
                    self.orphans.append(pid)
            except OSError:
                pass
        self.start()

    def sample(self, times=5):
        """Smallest VmRSS and fd set of a few samples 1 s apart: transient connections
        (a request in flight, a kubelet stream being replaced) are not leaks."""
        best = None
        for i in range(times):
            try:
                rss, fds = self.sample_once()
            except (OSError, TypeError):
                rss = None
            if rss is None or self.p.poll() is not None:
                return None  # the process died: check_alive() records it
            if best is None or len(fds) < len(best[1]):
                best = (min(rss, best[0]) if best else rss, fds)
            elif rss < best[0]:
                best = (rss, best[1])
            time.sleep(1)
        return best

    def sample_once(self):
        rss = None
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
        fd_dir = "/proc/%d/fd" % self.p.pid
        fds = {}
        for fd in os.listdir(fd_dir):
            try:
                fds[fd] = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                pass
        names = socket_names()
        for fd, target in fds.items():
            if target.startswith("socket:["):
                fds[fd] = target + " " + names.get(target[8:-1], "?")
        return rss, fds


def socket_names():
    """socket inode -> what it is (unix path or tcp ports), from /proc/net."""
    names = {}
    try:
        with open("/proc/net/unix") as f:
            next(f)
            for line in f:
                parts = line.split()
                names[parts[6]] = "unix:" + (parts[7] if len(parts) > 7 else "(unnamed)")
    except OSError:
        pass
    for proto in ("tcp", "tcp6"):
        try:
            with open("/proc/net/" + proto) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, remote = (int(a.split(":")[1], 16) for a in parts[1:3])
                    names[parts[9]] = "%s:%d->%d" % (proto, local, remote)
        except OSError:
            pass
    return names


def describe(fds):
    return ", ".join("%s=%s" % kv for kv in sorted(fds.items(), key=lambda kv: int(kv[0])))


def split_api(fds, port):
    """(connections to the API server, every other fd)."""
    api = {fd: t for fd, t in fds.items() if t.endswith("->%d" % port)}
    return api, {fd: t for fd, t in fds.items() if fd not in api}


def fd_kinds(fds):
    kinds = {}
    for target in fds.values():
        k = target.split(":")[0] if ":" in target else target
        kinds[k] = kinds.get(k, 0) + 1
    return kinds


def sanitized(binary):
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    ap.add_argument("--seconds", type=int, default=120, help="length of the fault phase")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    print("soak seed %d (replay with --seed %d), %d s of faults" % (seed, seed, args.seconds),
          flush=True)
    rnd = random.Random(seed)

    work = tempfile.mkdtemp(prefix="agent-soak-")
    sysfs, kdir, state = (os.path.join(work, d) for d in ("sys", "device-plugins", "state"))
    os.makedirs(kdir)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, os.path.join(src, "test/sysfs-gen/gen-sysfs.py"), "--out", sysfs,
         "--profile", "seed", "--manifest"]))
    vf_count = {pf["ifname"]: pf["numVfs"] for pf in manifest["pfs"]
                if pf.get("ifname") in CHURN_PFS}

    cluster = Cluster(src, work, args.kubectl)
    kubelet_proc = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    # PodResources (which VFs pods hold) from a second fake kubelet, so that it can go away
    # on its own while the device-plugin side keeps going (the kubelet-down round).
    prsock, assign = os.path.join(work, "pod-resources.sock"), os.path.join(work, "assign.json")
    with open(assign, "w") as f:
        json.dump([], f)
    pr_argv = [args.fake_kubelet, "--dir", os.path.join(work, "pr-kubelet"),
               "--podresources", prsock, "--assignments", assign]
    os.makedirs(pr_argv[2])
    pr_kubelet = [Proc(pr_argv, os.path.join(work, "pr-kubelet.err"))]
    kubelet = KubeletView(kubelet_proc)
    agent = Agent([args.agent, "run", "--node-name", NODE,
                   "--kubeconfig", cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                   "--kubelet-dir", kdir, "--state-dir", state,
                   "--devinfo-dir", os.path.join(work, "devinfo"),
                   "--pod-resources-socket", prsock,
                   "--vf-timeout", "2", "--resync-interval", "5", "--log-level", "debug"],
                  work)
    tally = {}
    tally_lock = threading.Lock()

    def count(what):
        with tally_lock:
            tally[what] = tally.get(what, 0) + 1

    def server_policies():
        doc = cluster.get_json("sriovnetworknodepolicies", "-n", NS)
        return None if doc is None else doc

    def planned():
        """The plan for the server's current policies on this tree and these labels."""
        doc = server_policies()
        if doc is None:
            return None
        # The poison policies are to be isolated: the plan is that of all the others.
        doc["items"] = [i for i in doc.get("items", [])
                        if not i["metadata"]["name"].startswith(POISON_PREFIX)]
        path = os.path.join(work, "policies-now.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        p = subprocess.run([args.agent, "plan", "--policies", path, "--node-name", NODE,
                            "--node-labels", LABEL + "=true", "--sysfs-root", sysfs,
                            "-o", "json"], capture_output=True, text=True, timeout=60)
        try:
            return json.loads(p.stdout)
        except ValueError:
            return None

    def spec_key(interfaces):
        out = []
        for i in interfaces or []:
            groups = sorted((g.get("resourceName"), g.get("vfRange"), g.get("deviceType"),
                             g.get("policyName")) for g in i.get("vfGroups") or [])
            out.append((i.get("pciAddress"), i.get("numVfs"), tuple(groups)))
        return sorted(out)

    def expected_pools(plan):
        pools = {}
        for i in plan["desired"]["interfaces"]:
            for g in i.get("vfGroups") or []:
                lo, _, hi = g["vfRange"].partition("-")
                n = int(hi or lo) - int(lo) + 1
                pools[PREFIX + g["resourceName"]] = pools.get(PREFIX + g["resourceName"], 0) + n
        return pools

    def converged():
        """(ok, detail): NodeState == plan, Succeeded, kubelet pools == plan's groups."""
        plan = planned()
        ns = cluster.get_json("sriovnetworknodestates", "-n", NS, NODE)
        if plan is None or ns is None:
            return False, "no plan or no NodeState"
        want, have = spec_key(plan["desired"]["interfaces"]), spec_key(
            ns.get("spec", {}).get("interfaces"))
        status = ns.get("status", {}).get("syncStatus")
        pools_want, pools_have = expected_pools(plan), kubelet.counts()
        ok = want == have and status == "Succeeded" and pools_want == pools_have
        return ok, "plan spec %s\nNodeState spec %s\nsyncStatus %s (%s)\n" \
            "pools wanted %s\nkubelet sees %s" % (
                want, have, status, ns.get("status", {}).get("lastSyncError", ""),
                pools_want, pools_have)

    def settle(what, timeout=180):
        """Wait until converged and still converged 3 s later."""
        detail = ""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            agent.check_alive()
            ok, detail = converged()
            if ok:
                time.sleep(3)
                ok, detail = converged()
                if ok:
                    return True, detail
            time.sleep(1)
        return False, detail

    churn = {}  # name -> (pf, range or None)

    crnd = random.Random(seed + 1)  # the churn thread's own stream

    def churn_apply():
        pf = crnd.choice(CHURN_PFS)
        n = vf_count[pf]
        name = "churn-%d" % crnd.randrange(8)
        sel = pf
        if n > 1 and crnd.random() < 0.6:
            lo = crnd.randrange(n)
            hi = crnd.randrange(lo, n)
            sel = "%s#%d-%d" % (pf, lo, hi)
        resource = "soak_%s" % crnd.choice("abcdef")
        rc, _ = cluster.run("apply", "-f", "-",
                            stdin=policy(name, resource, sel, n, crnd.randrange(1, 90)))
        count("kubectl apply (valid)" if rc == 0 else "kubectl apply failed")
        if rc == 0:
            churn[name] = sel

    def churn_delete():
        if not churn:
            return churn_apply()
        name = crnd.choice(sorted(churn))
        rc, _ = cluster.run("delete", "sriovnetworknodepolicy", "-n", NS, name,
                            "--ignore-not-found")
        count("kubectl delete" if rc == 0 else "kubectl delete failed")
        churn.pop(name, None)

    def churn_invalid():
        pf = crnd.choice(CHURN_PFS)
        sel, n = crnd.choice(INVALID)(pf, vf_count[pf])
        name = "bad-%d" % crnd.randrange(3)
        rc, _ = cluster.run("apply", "-f", "-", stdin=policy(name, "soak_bad", sel, n, 10))
        count("kubectl apply (invalid, stored)" if rc == 0
              else "kubectl apply (invalid, refused by server)")
        if rc == 0:
            churn[name] = sel

    def canonical():
        """Only the anchors: delete every churn and invalid policy."""
        doc = cluster.get_json("sriovnetworknodepolicies", "-n", NS) or {"items": []}
        names = [i["metadata"]["name"] for i in doc["items"]
                 if not i["metadata"]["name"].startswith("anchor-")]
        failed = [name for name in names if cluster.run(
            "delete", "sriovnetworknodepolicy", "-n", NS, name, "--ignore-not-found")[0] != 0]
        check("kubectl delete of the %d churn policies left" % len(names), not failed,
              str(failed))
        churn.clear()

    reverts = []  # (monotonic time, switches)

    def fault():
        kind = rnd.choice(["close", "expire", "compact", "500", "slow", "garble", "truncate",
                           "token", "conflicts", "refuse"])
        count("fault " + kind)
        if kind == "close":
            cluster.faults(close_watches=True)
        elif kind == "expire":
            cluster.faults(expire_watches=rnd.randint(1, 3), close_watches=True)
        elif kind == "compact":
            cluster.faults(compact=True, close_watches=True)
        elif kind == "500":
            cluster.faults(errors_500=rnd.randint(1, 6))
        elif kind == "slow":
            cluster.faults(slow_ms=rnd.choice([200, 800, 2000]))
            reverts.append((time.monotonic() + rnd.uniform(1, 5), {"slow_ms": 0}))
        elif kind == "garble":
            cluster.faults(garble_events=rnd.randint(1, 3))
        elif kind == "truncate":
            cluster.faults(truncate_events=rnd.randint(1, 2))
        elif kind == "token":
            cluster.faults(reject_token=True)
            reverts.append((time.monotonic() + rnd.uniform(1, 5), {"reject_token": False}))
        elif kind == "conflicts":
            cluster.faults(conflicts=rnd.randint(1, 4))
        elif kind == "refuse":
            cluster.faults(refuse_ms=rnd.choice([300, 1500]), close_watches=True)

    def run_revertsdue(force=False):
        now = time.monotonic()
        for item in list(reverts):
            if force or item[0] <= now:
                cluster.faults(**item[1])
                reverts.remove(item)

    def churn_loop(end):
        while time.monotonic() < end:
            r = crnd.random()
            if r < 0.5:
                churn_apply()
            elif r < 0.8:
                churn_delete()
            else:
                churn_invalid()
            time.sleep(crnd.uniform(0.0, 0.3))

    def fault_phase(seconds, kills):
        end = time.monotonic() + seconds
        churner = threading.Thread(target=churn_loop, args=(end,), daemon=True)
        churner.start()
        while time.monotonic() < end:
            agent.check_alive()
            run_revertsdue()
            kubelet.drain()
            r = rnd.random()
            if kills and r < 0.08:
                count("kill -9 + restart")
                agent.kill9()
            elif r < 0.25:
                count("kubelet restart")
                kubelet_proc.send({"cmd": "restart"})
            else:
                fault()
            time.sleep(rnd.uniform(0.1, 1.5))
        churner.join()
        run_revertsdue(force=True)
        cluster.faults(slow_ms=0, reject_token=False, errors_500=0, conflicts=0,
                       garble_events=0, truncate_events=0, expire_watches=0)
        time.sleep(2)  # past the last refuse_ms window

    def restart_kubelet():
        before = kubelet.restarts
        kubelet_proc.send({"cmd": "restart"})
        wait(lambda: kubelet.drain() or kubelet.restarts > before, 30, step=0.3)

    figures = {"poison objects tried": 0, "poison objects stored": 0,
               "malformed objects isolated": 0, "kubelet outages with pods holding VFs": 0,
               "VFs destroyed during outages": 0}

    def invalid_policy_events():
        doc = cluster.get_json("events", "-n", NS) or {"items": []}
        return {e.get("involvedObject", {}).get("name") for e in doc["items"]
                if e.get("reason") == "InvalidPolicy"}

    def poison_round():
        """Undecodable and huge policies: isolated, the rest served, across a kill -9."""
        stored = []
        for name, body in poison_bodies(vf_count["ens1f0"]):
            figures["poison objects tried"] += 1
            code = cluster.create_raw("sriovnetworknodepolicies", body)
            count("poison create HTTP %s" % code)
            if code in (200, 201):
                stored.append(name)
        figures["poison objects stored"] = len(stored)
        check("the API server stored the poison policies (%d of %d)" % (
            len(stored), figures["poison objects tried"]), stored, "none stored")
        for phase in ("live", "after kill -9"):
            if phase != "live":
                count("kill -9 + restart")
                agent.kill9()
            ok, detail = settle("poison " + phase)
            check("poison policies present (%s): the other policies converge, their pools are "
                  "served" % phase, ok, detail)
            seen = wait(lambda: (lambda ev: ev if all(n in ev for n in stored) else None)(
                invalid_policy_events()), 30, step=0.3) or invalid_policy_events()
            isolated = [n for n in stored if n in seen]
            figures["malformed objects isolated"] = len(isolated)
            check("each poison policy isolated with an InvalidPolicy Event (%s): %d of %d" % (
                phase, len(isolated), len(stored)), len(isolated) == len(stored),
                "no Event for %s" % sorted(set(stored) - set(isolated)))
            agent.note_peak()
        for name in stored:
            cluster.run("delete", "sriovnetworknodepolicy", "-n", NS, name, "--ignore-not-found")
        ok, detail = settle("poison removed")
        check("poison policies deleted: converged again", ok, detail)

    def kubelet_down_round(how):
        """A pod holds a VF of eno1; PodResources goes away; a VF-count change on eno1 must
        be held back, never applied, while the kubelet cannot be asked."""
        pf = "eno1"
        info = next(p for p in manifest["pfs"] if p.get("ifname") == pf)
        held_vf = sorted(v["pciAddress"] for v in info["vfs"])[0]
        numvfs_path = os.path.join(sysfs, "bus/pci/devices", info["pciAddress"], "sriov_numvfs")
        with open(assign + ".tmp", "w") as f:
            json.dump([{"pod": "soak-pod", "namespace": "default", "container": "c",
                        "resource": PREFIX + "soak_anchor_" + pf, "ids": [held_vf]}], f)
        os.rename(assign + ".tmp", assign)
        if how == "socket removed":  # ENOENT: the kubelet stopped cleanly
            pr_kubelet[0].stop()
            try:
                os.remove(prsock)
            except OSError:
                pass
        else:  # ECONNREFUSED: the kubelet crashed, its socket file is still there
            pr_kubelet[0].p.kill()
            pr_kubelet[0].p.wait()
            pr_kubelet[0].err.close()
            if not os.path.exists(prsock):
                dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                dead.bind(prsock)
                dead.close()
        figures["kubelet outages with pods holding VFs"] += 1
        with open(numvfs_path) as f:
            before = f.read().strip()
        changed = vf_count[pf] - 1 if vf_count[pf] > 1 else vf_count[pf] + 1
        cluster.ok("apply", "-f", "-", stdin=policy("anchor-" + pf, "soak_anchor_" + pf, pf,
                                                    changed, 99))
        destroyed = False
        end = time.monotonic() + 12  # two periodic checks and a retry
        while time.monotonic() < end:
            agent.check_alive()
            with open(numvfs_path) as f:
                if f.read().strip() != before:
                    destroyed = True
            time.sleep(0.1)
        if destroyed:
            figures["VFs destroyed during outages"] += vf_count[pf]
        check("kubelet down (%s) with a pod holding %s: %s's VFs not re-created" % (
            how, held_vf, pf), not destroyed, "sriov_numvfs changed from %s" % before)
        # Back: the policy as it was, the kubelet up, the pod gone.
        cluster.ok("apply", "-f", "-", stdin=policy("anchor-" + pf, "soak_anchor_" + pf, pf,
                                                    vf_count[pf], 99))
        with open(assign + ".tmp", "w") as f:
            json.dump([], f)
        os.rename(assign + ".tmp", assign)
        try:
            os.remove(prsock)
        except OSError:
            pass
        pr_kubelet[0] = Proc(pr_argv, os.path.join(work, "pr-kubelet.err"))
        ok, detail = settle("kubelet back (%s)" % how)
        check("kubelet back (%s): converged" % how, ok, detail)

    sample_early = sample_end = None
    sampled_n = 0
    try:
        check("fake kubelet ready", kubelet_proc.wait_for(
            lambda e: isinstance(e, dict) and e.get("event") == "ready", 30) is not None)
        cluster.ok("apply", "-f", os.path.join(src, "crds"))
        cluster.ok("apply", "-f", os.path.join(src, "test/kube/namespace.yaml"))
        cluster.ok("label", "node", NODE, LABEL + "=true")
        # Anchors keep every churned PF owned, so no churn step releases a PF (a release
        # resets the VF count, which a generated tree never completes).
        for pf in CHURN_PFS:
            cluster.ok("apply", "-f", "-", stdin=policy("anchor-" + pf, "soak_anchor_" + pf,
                                                        pf, vf_count[pf], 99))
        agent.start()
        ok, detail = settle("start")
        check("anchors applied: NodeState == plan, pools served", ok, detail)

        # Phase 1: everything, including kill -9s; the agent that survives it is sampled.
        first = max(10, args.seconds // 2)
        fault_phase(first, kills=True)
        count("kill -9 + restart")
        agent.kill9()  # the last incarnation starts here
        canonical()
        ok, detail = settle("canonical before")
        check("last agent converged in the canonical configuration", ok, detail)
        restart_kubelet()
        ok, detail = settle("kubelet restart before")
        check("every pool re-registered after a kubelet restart", ok, detail)
        sample_early = agent.sample()
        sampled_n = agent.n

        # Phase 2: faults and churn without kills, on the sampled process.
        fault_phase(args.seconds - first, kills=False)
        ok, detail = settle("after faults")
        check("after the faults: NodeState spec == plan of the server's policies, "
              "Succeeded, kubelet pools == the plan's groups", ok, detail)
        print("policies at the end of the churn: %s" % sorted(
            i["metadata"]["name"] for i in (cluster.get_json(
                "sriovnetworknodepolicies", "-n", NS) or {"items": []})["items"]), flush=True)

        canonical()
        ok, detail = settle("canonical after")
        check("canonical configuration again converged", ok, detail)
        restart_kubelet()
        ok, detail = settle("kubelet restart after")
        check("every pool re-registered after a kubelet restart, again", ok, detail)
        sample_end = agent.sample()

        agent.check_alive()
        same = sample_early is not None and sample_end is not None and agent.n == sampled_n
        check("the last agent lived from the first sample to the second", same,
              "incarnation %d at the first sample, %d now" % (sampled_n, agent.n))
        if same:
            rss0, fds0 = sample_early
            rss1, fds1 = sample_end
            bound = rss0 + max(rss0 // 5, 2048)
            print("agent pid %d: VmRSS %d kB -> %d kB (bound %d kB), fds %d %s -> %d %s" % (
                agent.p.pid, rss0, rss1, bound, len(fds0), fd_kinds(fds0), len(fds1),
                fd_kinds(fds1)), flush=True)
            if sanitized(args.agent):
                print("RSS not checked: an ASan build's allocator keeps freed memory in its "
                      "quarantine", flush=True)
            else:
                check("RSS did not grow beyond max(+20 %%, +2 MB) (%d -> %d kB)" % (rss0, rss1),
                      rss1 <= bound, "early %d kB, end %d kB" % (rss0, rss1))
            # Idle API connections are kept by libcurl's connection cache, how many depends on
            # how many requests overlapped; lib/kube/http.c caps them (MAX_CONNECTIONS 16).
            api0, rest0 = split_api(fds0, cluster.port)
            api1, rest1 = split_api(fds1, cluster.port)
            check("no file descriptor leaked apart from API connections (%d -> %d)" % (
                len(rest0), len(rest1)), len(rest1) <= len(rest0),
                "early %s\nend %s" % (describe(rest0), describe(rest1)))
            check("API server connections within the client's cap of 16 (%d -> %d)" % (
                len(api0), len(api1)), len(api1) <= 16, describe(api1))

        if switch("SOAK_POISON"):
            poison_round()
        else:
            print("poison-policy round skipped (SOAK_POISON=0)", flush=True)
        if switch("SOAK_KUBELET_DOWN"):
            for how in ("socket removed", "process gone, socket left"):
                kubelet_down_round(how)
        else:
            print("kubelet-down round skipped (SOAK_KUBELET_DOWN=0)", flush=True)

        agent.check_alive()
        agent.note_peak()
        agent.p.send_signal(signal.SIGTERM)
        try:
            rc = agent.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            agent.p.kill()
            rc = agent.p.wait()
        check("SIGTERM exits 0", rc == 0, "exit %s" % rc)
    except Exception:
        check("the soak driver ran to the end", False, traceback.format_exc())
    finally:
        if agent.p and agent.p.poll() is None:
            agent.p.kill()
            agent.p.wait()
        kubelet_proc.stop()
        pr_kubelet[0].stop()
        try:
            stats = cluster.stats()
        except Exception:
            stats = None
        cluster.stop()

    check("the agent never exited on its own (only the kill -9s)", not agent.unexpected_exits,
          "incarnation/exit code: %s" % agent.unexpected_exits)
    check("no apply child outlived a kill -9 of its agent", not agent.orphans,
          "surviving pids %s" % agent.orphans)
    reports = []
    for path in agent.logs:
        with open(path, errors="replace") as f:
            for line in f:
                if "AddressSanitizer" in line or "runtime error" in line or \
                        "LeakSanitizer" in line:
                    reports.append("%s: %s" % (os.path.basename(path), line.strip()))
    check("no sanitizer report in %d agent logs" % len(agent.logs), not reports,
          "\n".join(reports[:10]))

    limit = manifest_memory_limit_kib(src)
    if sanitized(args.agent):
        print("peak RSS not checked: an ASan build's shadow memory is not the product's",
              flush=True)
    elif limit:
        check("peak RSS of every agent process (%d KiB) below the DaemonSet limit (%d KiB)" % (
            agent.peak_kib, limit), 0 < agent.peak_kib < limit, "peak %d KiB" % agent.peak_kib)
    figures["policies/objects tried"] = figures["poison objects tried"] + sum(
        n for what, n in tally.items() if what.startswith("kubectl apply"))
    figures["peak RSS (VmHWM) KiB"] = agent.peak_kib
    figures["DaemonSet memory limit KiB"] = limit
    check("VFs destroyed while the kubelet was down: 0",
          figures["VFs destroyed during outages"] == 0, str(figures))
    print("soak figures: " + ", ".join("%s %s" % kv for kv in figures.items()), flush=True)
    print("soak actions: " + ", ".join("%s %d" % kv for kv in sorted(tally.items())))
    if stats:
        print("api server stats: " + json.dumps(stats)[:600])
    print("%d passed, %d failed (seed %d)" % (len(PASSES), len(FAILURES), seed))
    if FAILURES:
        print("FAILED: " + "; ".join(FAILURES) + " (logs in %s)" % work)
        return 1
    if args.keep:
        print("work directory kept: %s" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
