#!/usr/bin/env python3
"""The standalone daemon on a node whose inotify instances are used up.

`sriov-agent run --policy-dir` runs in a private user namespace whose
max_inotify_instances (/proc/sys/user, per user namespace) is 0, so every inotify_init1()
fails with EMFILE as on a node where other daemons took the user's 128 instances. What a user
would check: the agent keeps running, says once in its log that it polls instead, still
registers its pool with the (grpc-go fake) kubelet, still notices a kubelet restart and
registers again, and still picks up a new policy file. Skipped (77) where unprivileged user
namespaces are not available. Exit 1 on any failure.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import Proc, check, ev, finish, policy, standalone_node, write_json  # noqa: E402

SEED_RESOURCE = "openshift.io/sriov_highnet"
E810_RESOURCE = "openshift.io/sriov_e810"
# Runs "$0 run ARGS" with no inotify instance left to take.
NO_INOTIFY = 'echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" run "$@"'


def userns_works():
    try:
        out = subprocess.run(["unshare", "-U", "-r", "sh", "-c", NO_INOTIFY.replace(
            'exec "$0" run "$@"', 'python3 -c "import ctypes, sys; '
            'sys.exit(ctypes.CDLL(None).inotify_init1(0) >= 0)"')],
            capture_output=True, timeout=10)
        return out.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    args = ap.parse_args()
    if not userns_works():
        print("SKIP: no user namespace in which inotify instances can be limited")
        return 77

    work = tempfile.mkdtemp(prefix="agent-inotify-")
    paths, manifest = standalone_node(work, args.gen_sysfs)
    sysfs, kdir, pdir, state, devinfo, prsock, assign = (
        paths[k] for k in ("sysfs", "kdir", "pdir", "state", "devinfo", "prsock", "assign"))
    ice = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens2f0")

    kubelet = Proc([args.fake_kubelet, "--dir", kdir, "--podresources", prsock,
                    "--assignments", assign], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    log = os.path.join(work, "agent.log")
    agent = subprocess.Popen(
        ["unshare", "-U", "-r", "sh", "-c", NO_INOTIFY, args.agent,
         "--policy-dir", pdir, "--node-labels", "highnet-node=true", "--sysfs-root", sysfs,
         "--kubelet-dir", kdir, "--devinfo-dir", devinfo, "--state-dir", state,
         "--pod-resources-socket", prsock, "--resync-interval", "30", "--vf-timeout", "1"],
        stdout=subprocess.DEVNULL, stderr=open(log, "w"))

    def text():
        with open(log) as f:
            return f.read()

    try:
        reg = kubelet.wait_for(ev("register", SEED_RESOURCE), 15)
        check("without inotify the seed pool still reaches the kubelet", reg is not None,
              text()[-800:])
        check("the agent keeps running", agent.poll() is None, text()[-800:])
        said = text()
        check("it says once that it polls the kubelet directory",
              said.count("cannot watch %s with inotify" % kdir) == 1, said[-800:])
        check("and once that it polls the policy directory",
              said.count("cannot watch %s with inotify" % pdir) == 1, said[-800:])

        # A kubelet restart (sockets deleted, kubelet.sock re-created) is noticed by polling.
        mark = len(kubelet.seen)
        kubelet.send({"cmd": "restart"})
        kubelet.wait_for(ev("restart"), 5)
        t0 = time.monotonic()
        # a hang deadline with room for a slow machine (the time is printed below)
        reg = kubelet.wait_for(ev("register", SEED_RESOURCE), 20)
        check("a kubelet restart is noticed: the pool registers again",
              reg is not None and any(e is reg for e in kubelet.seen[mark:]),
              "no Register after the restart")
        if reg is not None:
            print("re-registered %.1f s after the restart" % (time.monotonic() - t0))

        # A new policy file is noticed by polling too (within the 2 s poll and a reconcile).
        write_json(os.path.join(pdir, "e810.json"),
                   policy("e810", "sriov_e810", ["ens2f0"], ice["numVfs"]))
        reg = kubelet.wait_for(ev("register", E810_RESOURCE), 10)
        check("a new policy file is noticed: its resource registered", reg is not None,
              text()[-800:])
        check("the agent is still running", agent.poll() is None, text()[-800:])
    finally:
        if agent.poll() is None:
            agent.terminate()
            try:
                agent.wait(timeout=10)
            except subprocess.TimeoutExpired:
                agent.kill()
                agent.wait()
        kubelet.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
