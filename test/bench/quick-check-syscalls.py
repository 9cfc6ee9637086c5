#!/usr/bin/env python3
"""The periodic quick check's system calls per VF, counted (not timed) with strace.

An idle agent pays for the quick check on every periodic check, so its system calls per VF are
the load-independent figure behind bench/run's CPU per periodic check. `sriov-agent run` on a
generated tree of 2 PFs x 64 VFs (cx6, one policy), --resync-interval 1 and the debug log to
stderr; strace follows it for a few checks and the calls between two of its "nothing changed
(quick check" lines are one check (the median of those windows, so a full reconcile in one of
them does not count). Budget below: measured 3.48 per VF; 4.37 before the VFs' drivers came from
one listing of each driver's directory instead of a readlinkat per VF. Exit 1 when over.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import FAILURES, Agent, Proc, check, ev, policy, write_json  # noqa: E402

BUDGET_PER_VF = 3.6
PFS, VFS = 2, 64
WINDOWS = 4
QUICK = "nothing changed (quick check"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    args = ap.parse_args()
    if not shutil.which("strace"):
        print("FAIL strace not found (scripts/install-deps installs it)")
        return 1
    work = tempfile.mkdtemp(prefix="quick-check-syscalls-")
    sysfs, kdir, pdir = (os.path.join(work, d) for d in ("sys", "kubelet", "policies"))
    os.makedirs(kdir)
    os.makedirs(pdir)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, args.gen_sysfs, "--out", sysfs, "--scale", "%dx%d:cx6" % (PFS, VFS),
         "--manifest"]))
    pf = next(p for p in manifest["pfs"] if p.get("numVfs") == VFS)
    write_json(os.path.join(pdir, "p.json"), policy("p", "quick", [pf["ifname"]], VFS))
    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    agent = tracer = None
    trace = os.path.join(work, "trace")
    try:
        kubelet.wait_for(ev("ready"), 10)
        agent = Agent(args.agent, [
            "--policy-dir", pdir, "--node-labels", "highnet-node=true", "--sysfs-root", sysfs,
            "--kubelet-dir", kdir, "--state-dir", os.path.join(work, "state"),
            "--devinfo-dir", os.path.join(work, "devinfo"),
            "--pod-resources-socket", os.path.join(work, "none.sock"),
            "--resync-interval", "1", "--log-level", "debug"], os.path.join(work, "agent.log"))
        check("the agent converged and made a quick check", agent.wait_log(QUICK, 30),
              agent.text()[-600:])
        if FAILURES:
            return 1
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-s", "256", "-e", "signal=none",
                                   "-o", trace, "-p", str(agent.p.pid)], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if os.path.exists(trace) and open(trace, errors="replace").read().count(
                    QUICK) > WINDOWS:
                break
        tracer.terminate()
        tracer.wait(timeout=10)
        tracer = None
        calls = []
        count = 0
        started = False
        for line in open(trace, errors="replace"):
            if "resumed>" in line:
                continue  # the second half of a call strace split between threads
            count += 1
            if line.split(None, 1)[-1].startswith("write(") and QUICK in line:
                if started:
                    calls.append(count)
                started, count = True, 0
        check("%d quick checks traced" % WINDOWS, len(calls) >= WINDOWS, str(calls))
        if calls:
            per_vf = statistics.median(calls) / (PFS * VFS)
            check("quick check: %.2f system calls per VF (median of %d checks: %s; budget %.1f)"
                  % (per_vf, len(calls), calls, BUDGET_PER_VF), per_vf <= BUDGET_PER_VF,
                  "over budget")
    finally:
        if tracer:
            tracer.kill()
        if agent:
            agent.stop()
        kubelet.send({"cmd": "quit"})
        kubelet.stop()
        if not FAILURES:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
