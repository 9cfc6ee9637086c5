"""Shared helpers for the Python integration drivers: checks that print PASS/FAIL, and child
processes whose stdout lines (JSON or text) are queued for waiting with a deadline."""
import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import tempfile
import time

FAILURES = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail), flush=True)
    if not ok:
        FAILURES.append(name)
    return ok


class Proc:
    """A child whose stdout lines are queued (parsed as JSON when they are JSON)."""

    def __init__(self, argv, stderr_path):
        self.err = open(stderr_path, "w")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True, bufsize=1)
        self.q = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            line = line.strip()
            try:
                self.q.put(json.loads(line))
            except ValueError:
                self.q.put(line)
        self.q.put(None)

    def send(self, obj):
        self.p.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        self.p.stdin.flush()

    def wait_for(self, pred, timeout=5.0):
        """First queued item matching pred (items before it are kept in self.seen)."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return None
            try:
                item = self.q.get(timeout=left)
            except queue.Empty:
                return None
            if item is None:
                return None
            self.seen.append(item)
            if pred(item):
                return item

    def quit(self):
        """{"cmd": "quit"} (what the fake kubelets take), then stop()."""
        self.send({"cmd": "quit"})
        self.stop()

    def stop(self):
        if self.p.poll() is None:
            try:
                self.p.stdin.close()
            except OSError:
                pass
            try:
                self.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.err.close()


def wait(pred, timeout, step=0.2):
    """pred()'s first true value, polled every step seconds; its last value after timeout."""
    end = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() >= end:
            return value
        time.sleep(step)


def finish(work, remove=True):
    """A driver's exit status: 1 after naming the failed checks (logs kept in work), else 0
    (work removed when remove)."""
    if FAILURES:
        print("FAILED: " + ", ".join(FAILURES) + " (logs in %s)" % work)
        return 1
    if remove:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def ev(kind, resource=None):
    return lambda e: isinstance(e, dict) and e.get("event") == kind and \
        (resource is None or e.get("resource") == resource)


def policy(name, resource, pf_names, num_vfs, **extra):
    """A SriovNetworkNodePolicy for the seed node (highnet-node=true), priority 50."""
    spec = {"resourceName": resource, "nodeSelector": {"highnet-node": "true"},
            "numVfs": num_vfs, "nicSelector": {"pfNames": pf_names}, "priority": 50}
    spec.update(extra)
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
            "metadata": {"name": name, "namespace": "sriov-network-operator"}, "spec": spec}


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f)
    os.rename(tmp, path)  # one inotify event for a complete file, as kubectl-like tools do


def standalone_node(work, gen_sysfs):
    """The standalone daemon's node under work: a generated seed sysfs tree, empty kubelet and
    policy directories (the seed policy in the latter), an empty pod assignment list. Returns
    the paths (sysfs, kdir, pdir, state, devinfo, prsock, assign) and the generator's
    manifest."""
    paths = {d: os.path.join(work, name) for d, name in (
        ("sysfs", "sys"), ("kdir", "device-plugins"), ("pdir", "policies"), ("state", "state"),
        ("devinfo", "devinfo"), ("prsock", "pod-resources.sock"), ("assign", "assign.json"))}
    for d in ("kdir", "pdir"):
        os.makedirs(paths[d])
    write_json(paths["assign"], [])
    manifest = json.loads(subprocess.check_output(
        ["python3", gen_sysfs, "--out", paths["sysfs"], "--profile", "seed", "--manifest"]))
    seed = os.path.join(os.environ.get("SRCDIR", "."), "test/fixtures/policies",
                        "highnet-sriov-policy.yaml")
    with open(seed) as src, \
            open(os.path.join(paths["pdir"], "highnet-sriov-policy.yaml"), "w") as dst:
        dst.write(src.read())
    return paths, manifest


def pcie_root(sysfs, pci):
    """The PCIe root ("pci0000:3a") a device of a generated tree hangs under, from its real
    path as the kernel's sysfs gives it; None outside the tree's devices/."""
    real = os.path.realpath(os.path.join(sysfs, "bus/pci/devices", pci))
    top = os.path.realpath(sysfs) + "/devices/"
    return real[len(top):].split("/")[0] if real.startswith(top) else None


def bind_vfio(sysfs, addr):
    """A VF of a generated tree rebound to vfio-pci: its netdev and RDMA devices gone, and, as
    the kernel does, its link moved from the old driver's directory to vfio-pci's."""
    d = os.path.realpath(os.path.join(sysfs, "bus/pci/devices", addr))
    for sub in ("net", "infiniband", "infiniband_mad", "infiniband_verbs"):
        shutil.rmtree(os.path.join(d, sub), ignore_errors=True)
    old = os.path.basename(os.readlink(os.path.join(d, "driver")))
    drivers = os.path.join(sysfs, "bus/pci/drivers")
    if os.path.lexists(os.path.join(drivers, old, addr)):
        os.remove(os.path.join(drivers, old, addr))
    os.remove(os.path.join(d, "driver"))
    os.symlink("../../../../bus/pci/drivers/vfio-pci", os.path.join(d, "driver"))
    os.makedirs(os.path.join(drivers, "vfio-pci"), exist_ok=True)
    os.symlink(os.path.relpath(d, os.path.join(drivers, "vfio-pci")),
               os.path.join(drivers, "vfio-pci", addr))


def read_attr(sysfs, pci, name):
    with open(os.path.join(sysfs, "bus/pci/devices", pci, name)) as f:
        return f.read().strip()


class Agent:
    """`sriov-agent run ARGS` with its log (stderr) appended to a file."""

    def __init__(self, binary, args, log):
        self.log = log
        self.p = subprocess.Popen([binary, "run"] + args, stdout=subprocess.DEVNULL,
                                  stderr=open(log, "a"))

    def text(self):
        with open(self.log) as f:
            return f.read()

    def wait_log(self, needle, timeout, since=0):
        """Whether needle appears in the log after offset since within timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if needle in self.text()[since:]:
                return True
            time.sleep(0.05)
        return False

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def private_netns(mark):
    """True in a private network namespace with lo up: re-executes the running script
    (sys.argv) under `unshare -n` first when it can (root, unshare, ip), with the environment
    variable mark set to 1 so that the copy inside knows it is there; False when it cannot."""
    if os.environ.get(mark) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return True
    if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("ip") and \
            subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        os.environ[mark] = "1"
        os.execvp("unshare", ["unshare", "-n", sys.executable, os.path.abspath(sys.argv[0])] +
                  sys.argv[1:])
    return False


def seed_sysfs(src, out, *extra):
    """The generator's seed node (test/sysfs-gen, --profile seed and any extra arguments)
    written to out; returns its manifest."""
    return json.loads(subprocess.check_output(
        [sys.executable, os.path.join(src, "test/sysfs-gen/gen-sysfs.py"), "--out", out,
         "--profile", "seed"] + list(extra) + ["--manifest"]))


def dra_node_setup(prefix, extra_args=()):
    """What a DRA test driver (test/dra) starts from: its arguments (--agent, --fake-kubelet,
    --fake-dra-kubelet, --kubectl and extra_args as (flag, default) pairs), the source tree, a
    new work dir holding the seed node's sysfs (sys/), a kubelet root with device-plugins/
    (kubelet/) and the paths state/ and cdi/, and the seed node's manifest.
    Returns (args, src, work, (sysfs, root, state, cdi, kdir), manifest)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--fake-dra-kubelet", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    for flag, default in extra_args:
        ap.add_argument(flag, default=default)
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "..", ".."))
    work = tempfile.mkdtemp(prefix=prefix)
    sysfs, root, state, cdi = (os.path.join(work, d) for d in ("sys", "kubelet", "state", "cdi"))
    kdir = os.path.join(root, "device-plugins")
    os.makedirs(kdir)
    return args, src, work, (sysfs, root, state, cdi, kdir), seed_sysfs(src, sysfs)
