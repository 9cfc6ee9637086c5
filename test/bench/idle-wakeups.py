#!/usr/bin/env python3
"""An idle agent does not wake up between its periodic checks, and makes them as often as told.

`sriov-agent run` on a generated node with one policy and the fake kubelet, --resync-interval
30: once the pool is listed, its main thread (the event loop) must not wake up more than once in
the next 16 s (voluntary context switches from /proc/PID/status; counted, not timed). Before,
the device-plugin manager's 5 s safety check woke it 3 times in such a window. Then the same
agent with --resync-interval 1: at least CADENCE_MIN periodic checks in CADENCE_S seconds.
Before, the check's timer allowed sd-event a whole second of slack, so an otherwise idle agent
checked every 2 s (4-5 checks in such a window). Exit 1 on failure.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import FAILURES, Agent, Proc, check, ev, policy, write_json  # noqa: E402

WINDOW_S = 16
CADENCE_S, CADENCE_MIN = 8, 6


def switches(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="idle-wakeups-")
    sysfs, kdir, pdir = (os.path.join(work, d) for d in ("sys", "kubelet", "policies"))
    os.makedirs(kdir)
    os.makedirs(pdir)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, args.gen_sysfs, "--out", sysfs, "--profile", "seed", "--manifest"]))
    pf = next(p for p in manifest["pfs"] if p.get("ifname") == "ens1f0")
    write_json(os.path.join(pdir, "p.json"), policy("p", "idle", ["ens1f0"], pf["numVfs"]))
    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))

    def agent_args(interval):
        return ["--policy-dir", pdir, "--node-labels", "highnet-node=true", "--sysfs-root", sysfs,
                "--kubelet-dir", kdir, "--state-dir", os.path.join(work, "state"),
                "--devinfo-dir", os.path.join(work, "devinfo"),
                "--pod-resources-socket", os.path.join(work, "none.sock"),
                "--resync-interval", interval]

    agent = None
    try:
        kubelet.wait_for(ev("ready"), 10)
        agent = Agent(args.agent, agent_args("30"), os.path.join(work, "agent.log"))
        listed = kubelet.wait_for(lambda e: ev("devices", "openshift.io/idle")(e) and
                                  len(e["devices"] or []) == pf["numVfs"], 20)
        check("pool listed", listed is not None, "no device list")
        time.sleep(1)
        before = switches(agent.p.pid)
        time.sleep(WINDOW_S)
        woke = switches(agent.p.pid) - before
        check("idle agent woke up at most once in %d s (--resync-interval 30)" % WINDOW_S,
              woke <= 1, "%d wake-ups" % woke)
        agent.stop()
        agent = Agent(args.agent, agent_args("1") + ["--log-level", "debug"],
                      os.path.join(work, "agent-1s.log"))
        kubelet.wait_for(lambda e: ev("devices", "openshift.io/idle")(e) and
                         len(e["devices"] or []) == pf["numVfs"], 20)
        time.sleep(1)
        since = agent.text().count("periodic check")
        time.sleep(CADENCE_S)
        checks = agent.text().count("periodic check") - since
        check("--resync-interval 1: at least %d checks in %d s" % (CADENCE_MIN, CADENCE_S),
              checks >= CADENCE_MIN, "%d checks" % checks)
    finally:
        if agent:
            agent.stop()
        kubelet.send({"cmd": "quit"})
        kubelet.stop()
        if not FAILURES:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
