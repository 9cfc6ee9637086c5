#!/usr/bin/env python3
"""End-to-end check of `sriov-agent discover` on generated sysfs trees.

Usage: check-discover.py [EMULATOR...] SRIOV_AGENT_BINARY (an emulator for a cross build)
Generates trees with gen-sysfs.py, runs the agent with -o json and -o text and compares the
output with the generator's manifest: every SR-IOV network PF and VF with the status field
names, NVMe ignored, per-device errors for garbled trees, exit 1 for a missing sysfs root.
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "gen-sysfs.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def generate(tmp, name, *args):
    root = os.path.join(tmp, name)
    out = subprocess.run([sys.executable, GEN, "--out", root, "--manifest", *args],
                         check=True, capture_output=True, text=True).stdout
    return root, json.loads(out)


def discover(agent, root, fmt="json"):
    p = subprocess.run([*agent, "discover", "--sysfs-root", root, "-o", fmt],
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check_tree(agent, root, manifest):
    rc, out, err = discover(agent, root)
    check(rc == 0, "%s: exit %d (%s)" % (root, rc, err.strip()))
    status = json.loads(out)
    by_addr = {i["pciAddress"]: i for i in status["interfaces"]}
    expected = [p for p in manifest["pfs"] if p["model"] not in ("nvme", "virtio")]
    check(len(status["interfaces"]) == len(expected),
          "%d interfaces reported, %d expected" % (len(status["interfaces"]), len(expected)))
    for pf in expected:
        got = by_addr.get(pf["pciAddress"])
        check(got is not None, "PF %s missing" % pf["pciAddress"])
        if not got:
            continue
        for key in ("name", "mac", "driver", "vendor", "deviceID", "mtu", "numVfs", "totalvfs",
                    "linkType", "linkSpeed", "linkAdminState", "numaNode", "iommuGroup", "Vfs"):
            check(key in got, "PF %s lacks %s" % (pf["pciAddress"], key))
        check(got.get("name") == pf["ifname"], "PF %s name %r" % (pf["pciAddress"], got.get("name")))
        check(got.get("numVfs") == pf["numVfs"], "PF %s numVfs" % pf["pciAddress"])
        check(got.get("totalvfs") == pf["totalVfs"], "PF %s totalvfs" % pf["pciAddress"])
        check(got.get("numaNode") == pf["numa"], "PF %s numaNode" % pf["pciAddress"])
        check(got.get("iommuGroup") == pf["iommuGroup"], "PF %s iommuGroup" % pf["pciAddress"])
        check([v["pciAddress"] for v in got.get("Vfs", [])] ==
              [v["pciAddress"] for v in pf["vfs"]], "PF %s VF addresses" % pf["pciAddress"])
        for vf, vm in zip(got.get("Vfs", []), pf["vfs"]):
            check(vf.get("vfID") == vm["index"], "VF %s vfID" % vm["pciAddress"])
            check(vf.get("name") == vm["ifname"], "VF %s name" % vm["pciAddress"])
            check(vf.get("driver") == vm["driver"], "VF %s driver" % vm["pciAddress"])
            names = [r["name"] for r in vf.get("rdmaDevices", [])]
            check(names == [r["name"] for r in vm["rdma"]], "VF %s rdmaDevices" % vm["pciAddress"])
            for r, rm in zip(vf.get("rdmaDevices", []), vm["rdma"]):
                check("/dev/infiniband/" + rm["uverbs"] in r["charDevices"],
                      "VF %s uverbs" % vm["pciAddress"])
            check("error" not in vf, "VF %s error %r" % (vm["pciAddress"], vf.get("error")))
        check("error" not in got, "PF %s error %r" % (pf["pciAddress"], got.get("error")))

    rc, text, _ = discover(agent, root, "text")
    check(rc == 0, "text output exit %d" % rc)
    for pf in expected:
        check(any(line.startswith(pf["pciAddress"]) for line in text.splitlines()),
              "text table lacks PF row %s" % pf["pciAddress"])
        for vf in pf["vfs"]:
            check(any(line.startswith("  " + vf["pciAddress"]) for line in text.splitlines()),
                  "text table lacks VF row %s" % vf["pciAddress"])


def main():
    agent = sys.argv[1:-1] + [os.path.abspath(sys.argv[-1])]
    # tmpfs when there is one: creating trees on a disk-backed /tmp is slow on a busy machine
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="sriov-check-discover-", dir=base) as tmp:
        for profile in ("seed", "mixed"):
            root, manifest = generate(tmp, profile, "--profile", profile)
            check_tree(agent, root, manifest)

        root, _ = generate(tmp, "garbled", "--garble", "numvfs-nonnumeric:ens2f0",
                           "--garble", "orphan-vf:ens1f0")
        rc, out, _ = discover(agent, root)
        check(rc == 0, "garbled tree: exit %d" % rc)
        ifs = {i["pciAddress"]: i for i in json.loads(out)["interfaces"]}
        check(len(ifs) == 4, "garbled tree: %d PFs reported" % len(ifs))
        ice = [i for i in ifs.values() if i.get("name") == "ens2f0"][0]
        check("sriov_numvfs" in ice.get("error", ""), "ens2f0 error: %r" % ice.get("error"))
        check("numVfs" not in ice, "ens2f0 numVfs reported from garbage")
        cx = [i for i in ifs.values() if i.get("name") == "ens1f0"][0]
        check("physfn" in cx["Vfs"][1].get("error", ""), "VF 1 error: %r" % cx["Vfs"][1])
        check("error" not in cx["Vfs"][0], "VF 0 has an error")
        rc, text, _ = discover(agent, root, "text")
        check("error: sriov_numvfs" in text, "text output lacks the PF error")

        rc, _, err = discover(agent, os.path.join(tmp, "does-not-exist"))
        check(rc == 1 and "does-not-exist" in err, "missing root: exit %d, %r" % (rc, err))
        p = subprocess.run([*agent, "discover", "-o", "yaml"], capture_output=True, text=True)
        check(p.returncode == 1 and "yaml" in p.stderr, "bad -o accepted")

    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("check-discover: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
