#!/usr/bin/env python3
"""GPU and NIC under one PCIe root, with this test playing the scheduler.

Beside the agent's ResourceSlice (VFs of ens1f0 under one root, VFs of ens2f0 under another,
as the generated node's sysfs says), a stand-in GPU driver publishes a slice with two GPUs:
gpu-0 under a root with no VF of ours, gpu-1 under the root of ens2f0. A claim asks for one
GPU and one VF with `constraints: [{matchAttribute: resource.kubernetes.io/pcieRoot}]`.

The scheduler's part here is a small implementation of that one rule (no CEL, no other
constraint): candidates in slice order per request, the first combination whose published
pcieRoot attributes are equal wins, and the allocation is written to the claim's /status with
kubectl. It must skip gpu-0 and the ens1f0 VFs (which come first) and take gpu-1 with a VF of
ens2f0; the fake DRA kubelet then prepares the claim and the CDI spec hands out that VF.
Exit 1 on any failure.
"""
import itertools
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import (  # noqa: E402
    Agent, Proc, check, dra_node_setup, ev, finish, pcie_root, wait)
import fakecluster as ct  # noqa: E402


DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"
GPU_DRIVER = "gpu.example.com"
ROOT = "resource.kubernetes.io/pcieRoot"


def attr(device, name):
    v = device.get("attributes", {}).get(name, {})
    return v.get("string", v.get("int", v.get("bool", v.get("version"))))


def match_attribute(requests, candidates, attribute):
    """The first choice of one device per request (in order) whose `attribute` is equal."""
    for combo in itertools.product(*(candidates[r] for r in requests)):
        values = {attr(d, attribute) for _, d in combo}
        if len(values) == 1 and None not in values:
            return dict(zip(requests, combo))
    return None


def main():
    args, src, work, (sysfs, root, state, cdi, kdir), manifest = dra_node_setup("dra-alloc-")
    pfs = {pf.get("ifname"): pf for pf in manifest["pfs"]}
    cx_root = pcie_root(sysfs, pfs["ens1f0"]["vfs"][0]["pciAddress"])
    ice_root = pcie_root(sysfs, pfs["ens2f0"]["vfs"][0]["pciAddress"])
    lone_root = "pci0000:00"  # no NIC of this node hangs there
    check("the node's two NICs are under two roots, neither is %s" % lone_root,
          len({cx_root, ice_root, lone_root}) == 3, "%s %s" % (cx_root, ice_root))

    cluster = ct.Cluster(src, work, args.kubectl)
    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    dra = Proc([args.fake_dra_kubelet, "--root", root], os.path.join(work, "dra-kubelet.err"))
    dra.wait_for(ev("ready"), 10)
    agent = None
    try:
        cluster.seed()
        cluster.ok("apply", "-f", "-", stdin=ct.policy_yaml(
            "ice", "sriov_ice", "ens2f0", len(pfs["ens2f0"]["vfs"])))
        for cls, drv in (("sriov-vf", DRIVER), ("gpu", GPU_DRIVER)):
            cluster.ok("apply", "-f", "-", stdin=json.dumps({
                "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": cls}, "spec": {"selectors": [{"cel": {
                    "expression": "device.driver == '%s'" % drv}}]}}))
        gpus = [{"name": "gpu-%d" % i, "attributes": {ROOT: {"string": r},
                                                      "gpu.example.com/index": {"int": i}}}
                for i, r in enumerate((lone_root, ice_root))]
        cluster.ok("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": ct.NODE + "-gpus"},
            "spec": {"driver": GPU_DRIVER, "nodeName": ct.NODE,
                     "pool": {"name": ct.NODE, "generation": 1, "resourceSliceCount": 1},
                     "devices": gpus}}))
        agent = Agent(args.agent, ["--node-name", ct.NODE, "--kubeconfig",
                                   cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                                   "--kubelet-dir", kdir, "--kubelet-root", root,
                                   "--cdi-root", cdi, "--state-dir", state,
                                   "--devinfo-dir", os.path.join(work, "devinfo"),
                                   "--pod-resources-socket", "none", "--vf-timeout", "1",
                                   "--dra-resources", "sriov_highnet,sriov_ice",
                                   "--log-level", "debug"], os.path.join(work, "agent.log"))
        check("driver registered", dra.wait_for(
            lambda e: ev("register")(e) and e.get("code") == "OK", 20) is not None)
        n_vfs = len(pfs["ens1f0"]["vfs"]) + len(pfs["ens2f0"]["vfs"])

        def slices():
            rc, out = cluster.run("get", "resourceslices", "-o", "json")
            return json.loads(out)["items"] if rc == 0 else []

        def devices(driver):
            return [(s["spec"]["pool"]["name"], d) for s in slices()
                    if s["spec"]["driver"] == driver for d in s["spec"].get("devices", [])]

        check("the agent's slice has the VFs of both NICs",
              wait(lambda: len(devices(DRIVER)) == n_vfs, 30), str(len(devices(DRIVER))))

        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "gpu-and-nic", "namespace": ct.NS},
                 "spec": {"devices": {
                     "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}},
                                  {"name": "nic", "exactly": {"deviceClassName": "sriov-vf"}}],
                     "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": ROOT}]}}}
        cluster.ok("apply", "-f", "-", stdin=json.dumps(claim))
        rc, out = cluster.run("get", "resourceclaim", "gpu-and-nic", "-n", ct.NS, "-o", "json")
        stored = json.loads(out)
        constraint = stored["spec"]["devices"]["constraints"][0]
        requests = [r["name"] for r in stored["spec"]["devices"]["requests"]]
        candidates = {"gpu": devices(GPU_DRIVER),
                      "nic": sorted(devices(DRIVER), key=lambda pd: pd[1]["name"])}
        check("ens1f0's VFs come first among the candidates",
              attr(candidates["nic"][0][1], ROOT) == cx_root)
        chosen = match_attribute(requests, candidates, constraint["matchAttribute"])
        check("matchAttribute pcieRoot: gpu-1 and a VF under its root",
              chosen is not None and chosen["gpu"][1]["name"] == "gpu-1" and
              attr(chosen["nic"][1], ROOT) == ice_root, json.dumps(chosen)[:400])
        if chosen is None:
            return finish(work)
        results = [{"request": r, "driver": GPU_DRIVER if r == "gpu" else DRIVER,
                    "pool": chosen[r][0], "device": chosen[r][1]["name"]} for r in requests]
        cluster.ok("patch", "resourceclaim", "gpu-and-nic", "-n", ct.NS, "--subresource=status",
                   "--type=merge", "-p", json.dumps({"status": {"allocation": {
                       "devices": {"results": results}}}}))

        ref = {"namespace": ct.NS, "name": "gpu-and-nic", "uid": stored["metadata"]["uid"]}
        dra.send({"cmd": "prepare", "driver": DRIVER, "claims": [ref]})
        ans = dra.wait_for(ev("prepare"), 15) or {}
        got = ((ans.get("claims") or {}).get(ref["uid"]) or {}).get("devices") or []
        nic = chosen["nic"][1]
        check("Prepare hands out only our device, the chosen VF",
              [d["device"] for d in got] == [nic["name"]] and got[0]["requests"] == ["nic"],
              json.dumps(ans))
        spec_path = os.path.join(cdi, "%s-%s.json" % (DRIVER, ref["uid"]))
        spec = json.load(open(spec_path)) if os.path.exists(spec_path) else {}
        env = (spec.get("devices") or [{}])[0].get("containerEdits", {}).get("env", [])
        pci = attr(nic, "resource.kubernetes.io/pciBusID")
        check("the CDI spec gives the VF under the GPU's root",
              "PCIDEVICE_OPENSHIFT_IO_SRIOV_ICE=%s" % pci in env and
              pcie_root(sysfs, pci) == ice_root, json.dumps(env))
    finally:
        if agent:
            agent.stop()
        kubelet.quit()
        dra.quit()
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
