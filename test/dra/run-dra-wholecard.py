#!/usr/bin/env python3
"""A whole-card RDMA pool served through DRA: `sriov-agent run` in cluster mode with
--rdma-shared-config selecting one ConnectX card of the generated seed node (ens1f1, mlx5_9,
no VFs) and --dra-resources rdma_hca; real kubectl plays the user and the scheduler, the fake
DRA kubelet calls the driver, the device-plugin fake kubelet watches what is registered.

1. The device plugin never registers rdma/rdma_hca (a device is offered through one path).
2. The node's ResourceSlice holds the card as one device, named from its PCI address, with
   deviceType rdma-shared, its RDMA device, resourceName, pciBusID, and the pcieRoot and NUMA
   node the seed tree places it under; rdmaHcaMax (4) does not multiply it.
3. A claim allocated that card: Prepare answers its CDI ID; the CDI spec gives the card's
   uverbs, umad and issm char devices and rdma_cm, with mknod permission as the device plugin
   grants for whole cards, and no PCIDEVICE_* variable. Unprepare removes the spec.
Exit 1 on any failure.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import Agent, Proc, check, dra_node_setup, ev, finish, wait  # noqa: E402
import fakecluster as ct  # noqa: E402

DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"
A = DRIVER + "/"


def dev_name(pci):
    return pci.replace(":", "-").replace(".", "-")


def main():
    args, src, work, (sysfs, root, state, cdi, kdir), manifest = dra_node_setup("dra-wholecard-")
    card = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f1")
    pci = card["pciAddress"]
    # The card's PCIe root as Kubernetes' helper computes it, read from the tree independently.
    real = os.path.realpath(os.path.join(sysfs, "bus/pci/devices", pci))
    rel = os.path.relpath(real, os.path.join(os.path.realpath(sysfs), "devices"))
    want_root = rel.split(os.sep)[0]
    config = os.path.join(work, "rdma-shared.json")
    with open(config, "w") as f:
        json.dump({"configList": [{"resourceName": "rdma_hca", "resourcePrefix": "rdma",
                                   "rdmaHcaMax": 4, "selectors": {"ifNames": ["ens1f1"]}}]}, f)

    cluster = ct.Cluster(src, work, args.kubectl)
    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    dra = Proc([args.fake_dra_kubelet, "--root", root, "--api", "v1"],
               os.path.join(work, "dra-kubelet.err"))
    dra.wait_for(ev("ready"), 10)
    agent = None
    try:
        cluster.ok("apply", "-f", os.path.join(src, "crds"))
        cluster.ok("apply", "-f", os.path.join(src, "test/kube/namespace.yaml"))
        cluster.ok("apply", "-f", os.path.join(src, "manifests/10-serviceaccount.yaml"))
        cluster.ok("apply", "-f", os.path.join(src, "manifests/20-rbac.yaml"))
        agent = Agent(args.agent, ["--node-name", ct.NODE, "--kubeconfig",
                                   cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                                   "--kubelet-dir", kdir, "--kubelet-root", root,
                                   "--cdi-root", cdi, "--state-dir", state,
                                   "--devinfo-dir", os.path.join(work, "devinfo"),
                                   "--pod-resources-socket", "none", "--vf-timeout", "1",
                                   "--rdma-shared-config", config,
                                   "--dra-resources", "rdma_hca",
                                   "--log-level", "debug"], os.path.join(work, "agent.log"))
        check("driver registered", dra.wait_for(
            lambda e: ev("register")(e) and e.get("code") == "OK", 20) is not None)

        def slices():
            rc, out = cluster.run("get", "resourceslices", "-o", "json")
            return json.loads(out).get("items", []) if rc == 0 else []
        check("slice published", wait(lambda: any(s["spec"].get("devices") for s in slices()),
                                      30), json.dumps(slices())[:400])
        # 1. Not through the device plugin.
        kubelet.wait_for(lambda e: False, 2.0)
        regs = [e for e in kubelet.seen if ev("register", "rdma/rdma_hca")(e)]
        check("rdma/rdma_hca is not offered through the device plugin", regs == [],
              json.dumps(regs))
        # 2. The card as one device.
        devs = [d for s in slices() for d in s["spec"].get("devices", [])]
        check("one device for the one selected card (rdmaHcaMax does not multiply it)",
              [d["name"] for d in devs] == [dev_name(pci)], json.dumps(devs))
        attrs = devs[0]["attributes"] if devs else {}

        def attr(k):
            return next(iter((attrs.get(k) or {None: None}).values()))
        want = {"resource.kubernetes.io/pcieRoot": want_root,
                "resource.kubernetes.io/pciBusID": pci,
                "dra.net/numaNode": card["numa"],
                A + "deviceType": "rdma-shared", A + "rdmaDevice": "mlx5_9",
                A + "rdmaCapable": True, A + "ifName": "ens1f1",
                A + "resourceName": "rdma/rdma_hca",
                "k8s.cni.cncf.io/resourceName": "rdma/rdma_hca"}
        got = {k: attr(k) for k in want}
        check("the card's attributes (pcieRoot %s read from the tree)" % want_root, got == want,
              "%s != %s" % (got, want))

        # 3. Prepare and Unprepare.
        cluster.ok("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "rdma-card"}, "spec": {"selectors": [{"cel": {
                "expression": "device.driver == '%s'" % DRIVER}}]}}))
        cluster.ok("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "hca", "namespace": ct.NS},
            "spec": {"devices": {"requests": [
                {"name": "hca", "exactly": {"deviceClassName": "rdma-card"}}]}}}))
        cluster.ok("patch", "resourceclaim", "hca", "-n", ct.NS, "--subresource=status",
                   "--type=merge", "-p", json.dumps({"status": {"allocation": {"devices": {
                       "results": [{"request": "hca", "driver": DRIVER, "pool": ct.NODE,
                                    "device": dev_name(pci)}]}}}}))
        rc, out = cluster.run("get", "resourceclaim", "hca", "-n", ct.NS, "-o", "json")
        claim = {"namespace": ct.NS, "name": "hca", "uid": json.loads(out)["metadata"]["uid"]}
        dra.send({"cmd": "prepare", "driver": DRIVER, "claims": [claim]})
        ans = dra.wait_for(ev("prepare"), 15) or {}
        entry = (ans.get("claims") or {}).get(claim["uid"]) or {}
        cdi_id = "%s/vf=%s-%s" % (DRIVER, claim["uid"], dev_name(pci))
        check("prepare: the card's CDI ID", entry.get("devices") == [
            {"requests": ["hca"], "pool": ct.NODE, "device": dev_name(pci), "cdi": [cdi_id]}]
              and not entry.get("error"), json.dumps(ans))
        spec_path = os.path.join(cdi, "%s-%s.json" % (DRIVER, claim["uid"]))
        spec = json.load(open(spec_path)) if os.path.exists(spec_path) else {}
        edits = (spec.get("devices") or [{}])[0].get("containerEdits", {})
        nodes = edits.get("deviceNodes", [])
        rd = card["rdma"][0]
        want_nodes = sorted(["/dev/infiniband/" + rd[k] for k in ("uverbs", "umad", "issm")] +
                            ["/dev/infiniband/rdma_cm"])
        check("CDI spec: the card's RDMA char devices and rdma_cm",
              sorted(n["hostPath"] for n in nodes) == want_nodes, json.dumps(edits))
        check("CDI spec: mknod allowed as for whole cards (rwm)",
              nodes and all(n.get("permissions") == "rwm" for n in nodes), json.dumps(nodes))
        check("CDI spec: no PCIDEVICE_* variable",
              not any(e.startswith("PCIDEVICE_") for e in edits.get("env", [])),
              json.dumps(edits))
        dra.send({"cmd": "unprepare", "driver": DRIVER, "claims": [claim]})
        ans = dra.wait_for(ev("unprepare"), 10) or {}
        check("unprepare: no error, the CDI spec removed",
              (ans.get("claims") or {}).get(claim["uid"], {}).get("error") == "" and
              not os.path.exists(spec_path), json.dumps(ans))
    finally:
        if agent:
            agent.stop()
        kubelet.send({"cmd": "quit"})
        kubelet.stop()
        dra.send({"cmd": "quit"})
        dra.stop()
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
