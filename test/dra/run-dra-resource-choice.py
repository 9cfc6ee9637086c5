#!/usr/bin/env python3
"""Per resource, device plugin or DRA: `sriov-agent run --policy-dir` on a generated seed node
with both kubelet doubles (the device-plugin fake kubelet and the fake DRA kubelet).

1. --dra-resources highnet_dra: the kubelet's device manager gets openshift.io/ice_dp and never
   openshift.io/highnet_dra; the DRA kubelet registers the driver.
2. DRAResourceHealth (v1alpha1, v1beta1 and v1 streams: kubelets 1.34/1.35 open v1alpha1,
   1.36 v1beta1): every VF of the DRA resource HEALTHY; the PF's link down: UNHEALTHY with a
   reason, on every stream; the link up again: HEALTHY again on every one.
3. The agent restarted without --dra-resources (the resource moves back): the device plugin
   serves both resources, and the DRA driver is gone from plugins_registry.
Exit 1 on any failure.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import Proc, check, ev, finish, policy  # noqa: E402

DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--fake-dra-kubelet", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="dra-choice-")
    sysfs, root, pdir, state, devinfo = (
        os.path.join(work, d) for d in ("sys", "kubelet", "policies", "state", "devinfo"))
    kdir = os.path.join(root, "device-plugins")
    for d in (kdir, pdir):
        os.makedirs(d)
    manifest = json.loads(subprocess.check_output(
        [sys.executable, args.gen_sysfs, "--out", sysfs, "--profile", "seed", "--manifest"]))
    nvfs = {pf.get("ifname"): len(pf["vfs"]) for pf in manifest["pfs"] if pf.get("ifname")}
    for name, res, pf in (("highnet", "highnet_dra", "ens1f0"), ("ice", "ice_dp", "ens2f0")):
        with open(os.path.join(pdir, name + ".json"), "w") as f:
            json.dump(policy(name, res, [pf], nvfs[pf]), f)

    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    check("device-plugin kubelet ready", kubelet.wait_for(ev("ready"), 10) is not None)
    dra = Proc([args.fake_dra_kubelet, "--root", root, "--api", "v1"],
               os.path.join(work, "dra-kubelet.err"))
    check("DRA kubelet ready", dra.wait_for(ev("ready"), 10) is not None)

    def run_agent(n, extra):
        return subprocess.Popen(
            [args.agent, "run", "--policy-dir", pdir, "--node-labels", "highnet-node=true",
             "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--kubelet-root", root,
             "--node-name", "worker-1", "--resync-interval", "1",
             "--devinfo-dir", devinfo, "--state-dir", state, "--pod-resources-socket", "none",
             "--log-level", "debug"] + extra,
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "agent-%d.log" % n), "w"))

    def stop(agent):
        agent.send_signal(signal.SIGTERM)
        try:
            agent.wait(timeout=15)
        except subprocess.TimeoutExpired:
            agent.kill()
            agent.wait()

    agent = run_agent(1, ["--dra-resources", "highnet_dra"])
    try:
        reg = dra.wait_for(ev("register"), 15)
        check("DRA driver registered", reg is not None and reg.get("code") == "OK" and
              reg.get("driver") == DRIVER, json.dumps(reg))
        check("device plugin serves the other resource",
              kubelet.wait_for(ev("register", "openshift.io/ice_dp"), 15) is not None)
        kubelet.wait_for(lambda e: False, 2.0)  # a settled reconcile would have registered it
        dp_regs = [e for e in kubelet.seen if ev("register", "openshift.io/highnet_dra")(e)]
        check("the DRA resource is not offered through the device plugin", dp_regs == [],
              json.dumps(dp_regs))
        check("no device-plugin socket for the DRA resource",
              not os.path.exists(os.path.join(kdir, "openshift.io_highnet_dra.sock")),
              str(os.listdir(kdir)))
        # 2. Health.
        n = nvfs["ens1f0"]
        for version in ("v1alpha1", "v1beta1", "v1"):
            dra.send({"cmd": "watch-health", "driver": DRIVER, "version": version})
            opened = dra.wait_for(ev("watch-health"), 5) or {}
            check("NodeWatchResources %s opened" % version, opened.get("code") == "OK",
                  json.dumps(opened))
            h = dra.wait_for(lambda e: ev("health")(e) and e.get("version") == version, 5) or {}
            devs = h.get("devices") or []
            check("%s: the %d VFs of the DRA resource HEALTHY, pool worker-1, timeout 60 s"
                  % (version, n), len(devs) == n and
                  all(d["health"] == "HEALTHY" and d["pool"] == "worker-1" and
                      d["timeout"] == 60 for d in devs), json.dumps(h)[:400])
        pf_dir = os.path.realpath(os.path.join(
            sysfs, "bus/pci/devices",
            next(pf["pciAddress"] for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")))
        with open(os.path.join(pf_dir, "net", "ens1f0", "operstate"), "w") as f:
            f.write("down\n")
        down = {}

        def unhealthy(e):  # both streams' messages come in any order
            if ev("health")(e) and any(d["health"] == "UNHEALTHY" for d in e.get("devices") or []):
                down[e["version"]] = e
            return len(down) == 3

        dra.wait_for(unhealthy, 10)
        for version in ("v1alpha1", "v1beta1", "v1"):
            h = down.get(version) or {}
            devs = h.get("devices") or []
            check("%s: PF link down -> every VF UNHEALTHY with the reason" % version,
                  len(devs) == n and all(d["health"] == "UNHEALTHY" and "link" in d["message"]
                                         for d in devs), json.dumps(h)[:400])

        # ... and HEALTHY again once the link is back, on both streams.
        with open(os.path.join(pf_dir, "net", "ens1f0", "operstate"), "w") as f:
            f.write("up\n")
        up = {}

        def healthy_again(e):
            devs = e.get("devices") or [] if ev("health")(e) else []
            if len(devs) == n and all(d["health"] == "HEALTHY" for d in devs):
                up[e["version"]] = e
            return len(up) == 3

        dra.wait_for(healthy_again, 10)
        for version in ("v1alpha1", "v1beta1", "v1"):
            check("%s: PF link up again -> every VF HEALTHY" % version, version in up,
                  json.dumps(down.get(version))[:300])

        stop(agent)
        check("DRA driver deregistered when the agent stops",
              dra.wait_for(lambda e: ev("deregister")(e) and e.get("driver") == DRIVER, 5) is not None)

        agent = run_agent(2, [])
        check("without --dra-resources the device plugin serves it again",
              kubelet.wait_for(ev("register", "openshift.io/highnet_dra"), 15) is not None)
        devs = kubelet.wait_for(lambda e: ev("devices", "openshift.io/highnet_dra")(e) and
                                len(e.get("devices") or []) == nvfs["ens1f0"], 10)
        check("with all its VFs", devs is not None)
        check("and no DRA registration socket",
              not os.listdir(os.path.join(root, "plugins_registry")),
              str(os.listdir(os.path.join(root, "plugins_registry"))))
    finally:
        stop(agent)
        kubelet.send({"cmd": "quit"})
        kubelet.stop()
        dra.send({"cmd": "quit"})
        dra.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
