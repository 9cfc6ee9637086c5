#!/usr/bin/env python3
"""A bad --rdma-shared-config never takes the node down (issue 15.6): `sriov-agent run
--policy-dir` on a generated seed node with the grpc-go fake kubelet.

1. Started with an invalid file: the agent keeps running, the SR-IOV pool is served, no
   whole-card pool; the error names the file, the field and the value.
2. The file is fixed in place (rename over it): the whole-card pool appears without a restart.
3. The file is broken again: the error is logged, the pool keeps the last good config.
4. SIGHUP with the file still broken: reported again, nothing else changes.
Exit 1 on any failure.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import Proc, check, ev, finish  # noqa: E402

SEED_RESOURCE = "openshift.io/sriov_highnet"
HCA_RESOURCE = "rdma/hca"


def write_text(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="rdma-config-")
    sysfs, kdir, pdir, state, devinfo, cfgdir = (
        os.path.join(work, d) for d in ("sys", "device-plugins", "policies", "state", "devinfo",
                                        "rdma"))
    for d in (kdir, pdir, cfgdir):
        os.makedirs(d)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, args.gen_sysfs, "--out", sysfs, "--profile", "seed", "--manifest"]))
    cx = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")
    with open(os.path.join(pdir, "seed.json"), "w") as f:
        json.dump({"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
                   "metadata": {"name": "seed", "namespace": "sriov-network-operator"},
                   "spec": {"resourceName": "sriov_highnet",
                            "nodeSelector": {"highnet-node": "true"}, "numVfs": len(cx["vfs"]),
                            "nicSelector": {"pfNames": ["ens1f0"]}, "isRdma": True}}, f)
    cfg = os.path.join(cfgdir, "config.json")
    good = json.dumps({"configList": [{"resourceName": "hca", "rdmaHcaMax": 2,
                                       "selectors": {"vendors": ["15b3"]}}]})
    write_text(cfg, json.dumps({"configList": [{"resourceName": "hca", "rdmaHcaMax": -5,
                                                "selectors": {"vendors": ["15b3"]}}]}))

    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    log = os.path.join(work, "agent.log")
    agent = subprocess.Popen([args.agent, "run", "--policy-dir", pdir,
                              "--node-labels", "highnet-node=true", "--sysfs-root", sysfs,
                              "--kubelet-dir", kdir, "--devinfo-dir", devinfo,
                              "--state-dir", state, "--pod-resources-socket", "none",
                              "--rdma-shared-config", cfg, "--resync-interval", "30",
                              "--log-level", "debug"],
                             stdout=subprocess.DEVNULL, stderr=open(log, "w"))

    def text():
        with open(log) as f:
            return f.read()

    def wait_log(needle, timeout, since=0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if needle in text()[since:]:
                return True
            time.sleep(0.05)
        return False

    try:
        # 1. Invalid at start.
        reg = kubelet.wait_for(ev("register", SEED_RESOURCE), 10)
        check("invalid RDMA config: the SR-IOV pool is still served", reg is not None,
              text()[-600:])
        check("invalid RDMA config: the agent keeps running", agent.poll() is None,
              "exit %s" % agent.poll())
        line = next((l for l in text().splitlines() if "RDMA shared config not used" in l), "")
        check("invalid RDMA config: error names the file, field and value",
              line.startswith("sriov-agent[err]") and cfg in line and
              "rdmaHcaMax" in line and "-5" in line, line or text()[-600:])
        check("invalid RDMA config: no whole-card pool",
              not any(ev("register", HCA_RESOURCE)(e) for e in kubelet.seen))

        # 2. Fixed in place: picked up without a restart or signal.
        write_text(cfg, good)
        reg = kubelet.wait_for(ev("register", HCA_RESOURCE), 5)
        check("fixed file: whole-card pool registered (the file is watched)", reg is not None,
              text()[-600:])
        devs = kubelet.wait_for(lambda e: ev("devices", HCA_RESOURCE)(e) and
                                len(e["devices"] or []) == 2, 5)
        check("fixed file: rdmaHcaMax 2 IDs", devs is not None)

        # 3. Broken again: last good config kept.
        mark = len(text())
        seen = len(kubelet.seen)
        write_text(cfg, "{\"configList\": [")
        check("broken again: reported", wait_log("RDMA shared config not used", 5, mark) and
              "keep the last good one" in text()[mark:], text()[mark:][-600:])
        kubelet.wait_for(lambda e: False, 1.0)
        dropped = [e for e in kubelet.seen[seen:] if ev("devices", HCA_RESOURCE)(e) and
                   len(e["devices"] or []) != 2]
        check("broken again: the whole-card pool keeps the last good config",
              dropped == [] and os.path.exists(os.path.join(kdir, "rdma_hca.sock")),
              json.dumps(dropped)[:300])

        # 4. SIGHUP: re-read, reported again, still alive.
        mark = len(text())
        agent.send_signal(signal.SIGHUP)
        check("SIGHUP with a broken file: reported again",
              wait_log("RDMA shared config not used", 5, mark), text()[mark:][-600:])
        check("still running", agent.poll() is None, "exit %s" % agent.poll())
    finally:
        if agent.poll() is None:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(timeout=10)
            except subprocess.TimeoutExpired:
                agent.kill()
        kubelet.send({"cmd": "quit"})
        kubelet.stop()

    return finish(work, remove=False)


if __name__ == "__main__":
    sys.exit(main())
