#!/usr/bin/env python3
"""`sriov-agent discover` and `plan` on the arm64 Grace server profile (gen-sysfs --profile grace).

A Grace server's PCIe devices sit in root complexes of their own, told apart by PCI domain
(0000:, 0002:, 0008: ...) rather than by bus, and its GPUs sit beside the ConnectX NICs. What a
user checks: discover lists the four ConnectX-7 PFs (not the GPUs) at their domain-qualified
addresses with their socket's NUMA node; plan sizes the PF a policy selects; the DRA
ResourceSlices of its VFs name the PF's root complex (resource.kubernetes.io/pcieRoot
pciDDDD:00, the key that aligns a VF with the GPU of the same root) and the NUMA node.

Usage: check-grace.py SRCDIR AGENT-COMMAND... (the agent, after an emulator when cross-built)
"""
import json
import os
import subprocess
import sys
import tempfile

SRC, AGENT = sys.argv[1], sys.argv[2:]
GEN = os.path.join(SRC, "test/sysfs-gen/gen-sysfs.py")
failures = []

POLICY = """apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: %(name)s
  namespace: sriov-network-operator
spec:
  resourceName: %(resource)s
  nodeSelector:
    gpu-node: "true"
  priority: 90
  numVfs: %(numvfs)d
  nicSelector:
    vendor: "15b3"
    pfNames: ["%(pf)s"]
  deviceType: netdevice
  isRdma: true
"""


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def agent(*args):
    r = subprocess.run([*AGENT, *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit("sriov-agent %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr))
    return json.loads(r.stdout)


with tempfile.TemporaryDirectory() as tmp:
    root = os.path.join(tmp, "sys")
    gen = subprocess.run([sys.executable, GEN, "--out", root, "--profile", "grace", "--manifest"],
                         capture_output=True, text=True, check=True)
    manifest = json.loads(gen.stdout)
    nics = {p["pciAddress"]: p for p in manifest["pfs"] if p["ifname"]}
    gpus = [p["pciAddress"] for p in manifest["pfs"] if not p["ifname"]]
    check(len(nics) == 4 and len(gpus) == 2, "the grace profile has 4 NIC PFs and 2 GPUs")
    check(len({p["pcieRoot"] for p in manifest["pfs"]}) == len(manifest["pfs"]),
          "every device of the grace profile has a root complex of its own")

    # discover: the NICs at their domain-qualified addresses, their socket's NUMA node
    found = {i["pciAddress"]: i for i in agent("discover", "--sysfs-root", root, "-o",
                                               "json")["interfaces"]}
    check(sorted(found) == sorted(nics),
          "discover lists exactly the ConnectX PFs %s, got %s" % (sorted(nics), sorted(found)))
    for gpu in gpus:
        check(gpu not in found, "discover leaves out the GPU %s" % gpu)
    for addr, pf in nics.items():
        got = found.get(addr, {})
        check(got.get("name") == pf["ifname"], "%s is %s" % (addr, pf["ifname"]))
        check(got.get("numaNode") == pf["numa"],
              "%s: numaNode %s, want the socket's %d" % (addr, got.get("numaNode"), pf["numa"]))
        vfs = [v.get("pciAddress") for v in got.get("Vfs", [])]
        check(vfs == [v["pciAddress"] for v in pf["vfs"]],
              "%s: VFs %s in the PF's domain, want %s" % (addr, vfs,
                                                          [v["pciAddress"] for v in pf["vfs"]]))

    # plan: two policies on PFs of both sockets; the VFs' slices name the PF's root complex
    by_name = {p["ifname"]: p for p in nics.values()}
    wants = [("grace-socket1", "gpu_nic_s1", 4, "enP8p1s0f0np0"),
             ("grace-socket0", "gpu_nic_s0", 2, "enP2p1s0f0np0")]
    pol_dir = os.path.join(tmp, "policies")
    os.mkdir(pol_dir)
    for name, resource, numvfs, pf in wants:
        with open(os.path.join(pol_dir, name + ".yaml"), "w") as f:
            f.write(POLICY % dict(name=name, resource=resource, numvfs=numvfs, pf=pf))
    plan = agent("plan", "--policies", pol_dir, "--sysfs-root", root, "--node-labels",
                 "gpu-node=true", "--dra-resources", ",".join(w[1] for w in wants), "-o", "json")
    desired = {i["pciAddress"]: i["numVfs"] for i in plan["desired"]["interfaces"]}
    check(desired == {by_name[pf]["pciAddress"]: n for _, _, n, pf in wants},
          "plan sizes the selected PFs: %s" % desired)
    devices = [d for s in plan["resourceSlices"] for d in s["spec"]["devices"]]
    check(len(devices) == sum(w[2] for w in wants),
          "one DRA device per planned VF, got %d" % len(devices))
    for d in devices:
        attrs = d["attributes"]
        pf_addr = attrs["sriovnetwork.k8snetworkplumbingwg.io/pfPciAddress"]["string"]
        pf = nics.get(pf_addr)
        if not pf:
            check(False, "device %s: PF %s is no planned PF" % (d["name"], pf_addr))
            continue
        root_attr = attrs.get("resource.kubernetes.io/pcieRoot", {}).get("string")
        check(root_attr == pf["pcieRoot"],
              "device %s: pcieRoot %s, want its PF's root complex %s" %
              (d["name"], root_attr, pf["pcieRoot"]))
        bus_id = attrs.get("resource.kubernetes.io/pciBusID", {}).get("string", "")
        check(bus_id[:5] == pf_addr[:5],
              "device %s: pciBusID %s in its PF's domain %s" % (d["name"], bus_id, pf_addr[:4]))
        numa = attrs.get("dra.net/numaNode", {}).get("int")
        check(numa == pf["numa"], "device %s: numaNode %s, want %d" % (d["name"], numa,
                                                                       pf["numa"]))

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("grace profile: discover and plan agree with the generated tree")
