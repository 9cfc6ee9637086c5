#!/usr/bin/env python3
"""Discovery's system calls per PCI function, counted (not timed) with `strace -f -c`.

Discovery of 1,000+ VFs is bound by sysfs system calls, so their number per function is the
load-independent figure behind bench/run's discovery time. `sriov-agent discover` runs on a
generated tree of 2 PFs x 64 VFs (netdevs only: e810; with an RDMA device and char devices on
every function: cx6) and on an empty tree; the difference divided by the 130 functions must stay
within the budget below (measured: 27.8 and 40.0; 27.8 and 43.0 before a function's RDMA
devices came from the class/infiniband walk instead of a listing of its infiniband/ each; 27.8
and 54.9 before the char devices came from one walk of their two class directories instead of
two listings and three `ibdev` reads per function; 30.4 and 58.5 before discovery stopped
reading pci.ids for names it does not show and opening <rdma>/parent under every
class/infiniband entry; 34.3 and 61.5 before VF netdevs stopped reading operstate and physfn
its dangling check). Exit 1 when it does not.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

BUDGET = {"e810": 28, "cx6": 41}
PFS, VFS = 2, 64


def count(agent, root, work):
    out = os.path.join(work, "strace.out")
    subprocess.run(["strace", "-f", "-c", "-o", out, agent, "discover", "--sysfs-root", root,
                    "-o", "json"], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        last = f.read().strip().splitlines()[-1].split()
    return int(last[3] if len(last) >= 6 else last[2])  # "100.00 secs usecs calls [errors] total"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    args = ap.parse_args()
    if not shutil.which("strace"):
        print("FAIL strace not found (scripts/install-deps installs it)")
        return 1
    work = tempfile.mkdtemp(prefix="syscall-budget-")
    failed = False
    try:
        empty = os.path.join(work, "empty")
        subprocess.check_call([sys.executable, args.gen_sysfs, "--out", empty, "--profile", "none"])
        base = count(args.agent, empty, work)
        for model, budget in BUDGET.items():
            root = os.path.join(work, model)
            subprocess.check_call([sys.executable, args.gen_sysfs, "--out", root, "--scale",
                                   "%dx%d:%s" % (PFS, VFS, model)])
            per = (count(args.agent, root, work) - base) / (PFS * (VFS + 1))
            ok = per <= budget
            failed |= not ok
            print("%s discovery of %dx%d %s: %.1f system calls per PCI function (budget %d)"
                  % ("PASS" if ok else "FAIL", PFS, VFS, model, per, budget))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
