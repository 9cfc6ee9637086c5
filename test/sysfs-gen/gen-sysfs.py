#!/usr/bin/env python3
"""Generates realistic sysfs trees for sriov-agent tests and benchmarks.

The tree is laid out the way the kernel lays it out, so code under test reads it exactly as it
reads /sys: real device directories under devices/pci0000:XX/<bridge>/<function>/, with
bus/pci/devices, bus/pci/drivers, class/net, class/infiniband*, kernel/iommu_groups as symlinks
pointing into devices/. See README.md next to this file for the CLI and the profiles.

Python 3 standard library only.
"""

import argparse
import json
import os
import shutil
import sys

# ---------------------------------------------------------------------------------------------
# NIC models: what each PF and its VFs look like in sysfs.

MODELS = {
    "cx6": dict(
        vendor=0x15B3, device=0x101B, vf_device=0x101C, subsys_vendor=0x15B3,
        subsys_device=0x0007, vf_subsys_device=0x0007, cls=0x020000, driver="mlx5_core",
        vf_driver="mlx5_core", totalvfs=16, offset=2, stride=1, speed=100000, net_type=1,
        rdma=True, link_layer="Ethernet", net=True),
    "cx6-ib": dict(
        vendor=0x15B3, device=0x101B, vf_device=0x101C, subsys_vendor=0x15B3,
        subsys_device=0x0008, vf_subsys_device=0x0008, cls=0x020700, driver="mlx5_core",
        vf_driver="mlx5_core", totalvfs=16, offset=2, stride=1, speed=200000, net_type=32,
        rdma=True, link_layer="InfiniBand", net=True),
    "e810": dict(
        vendor=0x8086, device=0x159B, vf_device=0x1889, subsys_vendor=0x8086,
        subsys_device=0x0003, vf_subsys_device=0x0000, cls=0x020000, driver="ice",
        vf_driver="iavf", totalvfs=128, offset=16, stride=1, speed=25000, net_type=1,
        rdma=False, link_layer="Ethernet", net=True),
    "igb": dict(
        vendor=0x8086, device=0x10C9, vf_device=0x10CA, subsys_vendor=0x8086,
        subsys_device=0xA03C, vf_subsys_device=0xA03C, cls=0x020000, driver="igb",
        vf_driver="igbvf", totalvfs=7, offset=128, stride=2, speed=1000, net_type=1,
        rdma=False, link_layer="Ethernet", net=True),
    # Intel I350 (onboard 1G management port): SR-IOV capable, not in upstream's
    # supported-nic-ids list.
    "i350": dict(
        vendor=0x8086, device=0x1521, vf_device=0x1520, subsys_vendor=0x8086,
        subsys_device=0x0001, vf_subsys_device=0x0001, cls=0x020000, driver="igb",
        vf_driver="igbvf", totalvfs=7, offset=128, stride=4, speed=1000, net_type=1,
        rdma=False, link_layer="Ethernet", net=True),
    # Intel XXV710 (i40e), the NIC of upstream's webhook test node state.
    "xxv710": dict(
        vendor=0x8086, device=0x158B, vf_device=0x154C, subsys_vendor=0x8086,
        subsys_device=0x0001, vf_subsys_device=0x0000, cls=0x020000, driver="i40e",
        vf_driver="iavf", totalvfs=64, offset=16, stride=1, speed=25000, net_type=1,
        rdma=False, link_layer="Ethernet", net=True),
    # QEMU's emulated NVMe controller with SR-IOV: a PF that is not a network function.
    "nvme": dict(
        vendor=0x1B36, device=0x0010, vf_device=0x0010, subsys_vendor=0x1AF4,
        subsys_device=0x1100, vf_subsys_device=0x1100, cls=0x010802, driver="nvme",
        vf_driver="nvme", totalvfs=8, offset=1, stride=1, speed=0, net_type=0,
        rdma=False, link_layer="", net=False),
    # A ConnectX-6 whose SR-IOV is off in firmware: a network function with RDMA and no
    # sriov_* files (not a PF; the whole-card RDMA plugin still serves it).
    "cx6-nosriov": dict(
        vendor=0x15B3, device=0x101B, vf_device=0, subsys_vendor=0x15B3,
        subsys_device=0x0007, vf_subsys_device=0, cls=0x020000, driver="mlx5_core",
        vf_driver="", totalvfs=0, offset=0, stride=0, speed=100000, net_type=1,
        rdma=True, link_layer="Ethernet", net=True, sriov=False),
    # A ConnectX-6 VF passed through to a VM: the guest sees a VF device ID with RDMA, no
    # sriov_* files and no physfn.
    "cx6-vf": dict(
        vendor=0x15B3, device=0x101C, vf_device=0, subsys_vendor=0x15B3,
        subsys_device=0x0007, vf_subsys_device=0, cls=0x020000, driver="mlx5_core",
        vf_driver="", totalvfs=0, offset=0, stride=0, speed=100000, net_type=1,
        rdma=True, link_layer="Ethernet", net=True, sriov=False),
    # ConnectX-7 (Ethernet): the NIC of NVIDIA's Grace servers (GH200, GB200 trays).
    "cx7": dict(
        vendor=0x15B3, device=0x1021, vf_device=0x101E, subsys_vendor=0x15B3,
        subsys_device=0x0041, vf_subsys_device=0x0041, cls=0x020000, driver="mlx5_core",
        vf_driver="mlx5_core", totalvfs=16, offset=2, stride=1, speed=400000, net_type=1,
        rdma=True, link_layer="Ethernet", net=True),
    # ConnectX-7 on InfiniBand (the compute fabric of a GB200 NVL72 rack).
    "cx7-ib": dict(
        vendor=0x15B3, device=0x1021, vf_device=0x101E, subsys_vendor=0x15B3,
        subsys_device=0x0042, vf_subsys_device=0x0042, cls=0x020700, driver="mlx5_core",
        vf_driver="mlx5_core", totalvfs=16, offset=2, stride=1, speed=400000, net_type=32,
        rdma=True, link_layer="InfiniBand", net=True),
    # A Hopper/Blackwell GPU beside the NICs (3D controller, nvidia driver): no netdev, no
    # SR-IOV, must not be reported.
    "gpu": dict(
        vendor=0x10DE, device=0x2342, vf_device=0, subsys_vendor=0x10DE, subsys_device=0x16EB,
        vf_subsys_device=0, cls=0x030200, driver="nvidia", vf_driver="", totalvfs=0,
        offset=0, stride=0, speed=0, net_type=0, rdma=False, link_layer="", net=False,
        sriov=False),
    # A network function without SR-IOV (virtio-net): not a PF, must not be reported.
    "virtio": dict(
        vendor=0x1AF4, device=0x1041, vf_device=0, subsys_vendor=0x1AF4, subsys_device=0x1100,
        vf_subsys_device=0, cls=0x020000, driver="virtio-pci", vf_driver="", totalvfs=0,
        offset=0, stride=0, speed=-1, net_type=1, rdma=False, link_layer="", net=True,
        sriov=False),
}

# PF specs: (model, ifname, numvfs, totalvfs or None, numa)
PROFILES = {
    "none": [],
    "seed": [
        ("cx6", "ens1f0", 8, None, 0),
        ("cx6", "ens1f1", 0, None, 0),
        ("e810", "ens2f0", 4, None, 1),
        ("igb", "eno1", 2, None, 0),
        ("nvme", "nvme0", 2, None, 1),
    ],
}
PROFILES["mixed"] = PROFILES["seed"] + [
    ("e810", "ens2f1", 0, None, 1),
    ("cx6-ib", "ibs3f0", 4, None, 2),
    ("virtio", "enp0s3", 0, None, 0),
]
# An arm64 Grace server, GB200-tray-like: two Grace sockets (NUMA nodes 0 and 1), each with its
# own PCIe root complexes, one per device, named by PCI domain (segment) rather than by bus:
# 0000:01:00.0, 0002:01:00.0, ... each below its root port DDDD:00:00.0 in devices/pciDDDD:00.
# GPUs sit beside the ConnectX NICs in root complexes of their own; their memory is NUMA nodes
# of its own after the CPUs' (PROFILE_NUMA), as on Grace Hopper/Blackwell, which is why a NIC's
# numa_node is its socket and never its GPU's memory node. The specs' sixth field is the domain.
PROFILES["grace"] = [
    ("cx7", "enP2p1s0f0np0", 4, None, 0, 0x0002),
    ("cx7-ib", "ibp1s0", 4, None, 0, 0x0000),
    ("gpu", "gpu0", 0, None, 0, 0x0009),
    ("cx7", "enP8p1s0f0np0", 4, None, 1, 0x0008),
    ("cx7-ib", "ibP6p1s0", 0, None, 1, 0x0006),
    ("gpu", "gpu1", 0, None, 1, 0x0019),
]
# NUMA nodes written to devices/system/node (other profiles write none): (node, cpulist); an
# empty cpulist is a memory-only node. Grace: CPUs in 0 and 1, then each GPU's memory nodes
# (GH200 exposes 8 per GPU for MIG partitions, only the first with memory online).
PROFILE_NUMA = {"grace": [(0, "0-71"), (1, "72-143")] + [(n, "") for n in range(2, 18)]}
# Soft-RoCE devices per profile: (rdma name, netdev it is tied to through `parent`)
PROFILE_RXE = {"none": [], "seed": [("rxe0", "eno1")], "mixed": [("rxe0", "eno1")],
               "grace": []}

GARBLE_KINDS = {
    "numvfs-nonnumeric": "the PF's sriov_numvfs holds text that is not a number",
    "dangling-driver": "the PF's driver link points to a driver directory that does not exist",
    "dangling-virtfn": "the PF's virtfn0 link points to a VF directory that does not exist",
    "missing-files": "the PF lacks device, numa_node and sriov_numvfs; its netdev lacks mtu",
    "orphan-vf": "VF 1's physfn link dangles (its PF vanished mid-scan)",
    "hostile-names": "ibdev/parent files and a netdev directory carry names like ../x",
}


class Tree:
    """Writes files and relative symlinks under one root."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.made = set()  # directories known to exist: saves a stat per file written

    def path(self, rel):
        return os.path.join(self.root, rel)

    def _makedirs(self, p):
        if p not in self.made:
            os.makedirs(p, exist_ok=True)
            self.made.add(p)

    def mkdir(self, rel):
        self._makedirs(self.path(rel))

    def write(self, rel, value):
        p = self.path(rel)
        self._makedirs(os.path.dirname(p))
        with open(p, "w") as f:
            f.write("%s\n" % value if value is not None else "")

    def link(self, rel, target_rel):
        """Symlink rel -> target_rel, written relative like the kernel's links."""
        p = self.path(rel)
        self._makedirs(os.path.dirname(p))
        target = os.path.relpath(self.path(target_rel), os.path.dirname(p))
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(target, p)

    def remove(self, rel):
        p = self.path(rel)
        if os.path.lexists(p):
            os.unlink(p)


class Counters:
    def __init__(self):
        self.ifindex = 2  # 1 is lo
        self.iommu_group = 10
        self.mlx5 = 0
        self.uverbs = 0
        self.umad = 0
        self.mac = 0
        self.noiommu = False


def pci_addr(rid, domain=0):
    return "%04x:%02x:%02x.%d" % (domain, rid >> 8, (rid >> 3) & 0x1F, rid & 7)


def fmt_mac(prefix, n):
    return "%s:%02x:%02x:%02x" % (prefix, (n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF)


def ib_hw_addr(n):
    # 20-byte IPoIB hardware address: QPN + GID
    return "00:00:10:87:fe:80:00:00:00:00:00:00:0c:42:a1:03:00:%02x:%02x:%02x" % (
        (n >> 16) & 0xFF, (n >> 8) & 0xFF, n & 0xFF)


def node_guid(n):
    return "0c42:a103:00%02x:%04x" % ((n >> 16) & 0xFF, n & 0xFFFF)


def write_netdev(t, c, fn_dir, ifname, model, up, mac_n):
    d = "%s/net/%s" % (fn_dir, ifname)
    ib = model["net_type"] == 32
    t.write(d + "/address", ib_hw_addr(mac_n) if ib else fmt_mac("0c:42:a1", mac_n))
    t.write(d + "/mtu", 2044 if ib else 1500)
    t.write(d + "/operstate", "up" if up else "down")
    t.write(d + "/flags", "0x1003" if up else "0x1002")
    t.write(d + "/speed", model["speed"] if up else -1)
    t.write(d + "/type", model["net_type"])
    t.write(d + "/ifindex", c.ifindex)
    c.ifindex += 1
    t.link("class/net/" + ifname, d)
    return d


def write_rdma(t, c, fn_dir, model, port_active):
    """ConnectX-style RDMA device under the PCI function, with its char devices."""
    name = "mlx5_%d" % c.mlx5
    c.mlx5 += 1
    d = "%s/infiniband/%s" % (fn_dir, name)
    t.write(d + "/node_guid", node_guid(c.mlx5))
    t.write(d + "/node_type", "1: CA")
    t.write(d + "/ports/1/state", "4: ACTIVE" if port_active else "1: DOWN")
    t.write(d + "/ports/1/link_layer", model["link_layer"])
    # what the metrics endpoint reads: rate (width in it), counters/, and mlx5's hw_counters/;
    # values differ per device so a test can tell them apart
    t.write(d + "/ports/1/phys_state", "5: LinkUp" if port_active else "3: Disabled")
    t.write(d + "/ports/1/rate", "100 Gb/sec (4X EDR)" if port_active else "10 Gb/sec (4X SDR)")
    for i, counter in enumerate(("port_rcv_data", "port_xmit_data", "port_rcv_packets",
                                 "port_xmit_packets", "port_rcv_errors", "port_xmit_discards")):
        t.write("%s/ports/1/counters/%s" % (d, counter), str(1000 * c.mlx5 + i))
    for i, counter in enumerate(("out_of_buffer", "rx_write_requests", "np_cnp_sent")):
        t.write("%s/ports/1/hw_counters/%s" % (d, counter), str(100 * c.mlx5 + i))
    t.link("class/infiniband/" + name, d)
    uv = "uverbs%d" % c.uverbs
    c.uverbs += 1
    t.write("%s/infiniband_verbs/%s/ibdev" % (fn_dir, uv), name)
    t.write("%s/infiniband_verbs/%s/dev" % (fn_dir, uv), "231:%d" % (192 + c.uverbs - 1))
    t.link("class/infiniband_verbs/" + uv, "%s/infiniband_verbs/%s" % (fn_dir, uv))
    n = c.umad
    c.umad += 1
    for kind in ("umad", "issm"):
        md = "%s/infiniband_mad/%s%d" % (fn_dir, kind, n)
        t.write(md + "/ibdev", name)
        t.write(md + "/port", 1)
        t.link("class/infiniband_mad/%s%d" % (kind, n), md)
    return {"name": name, "uverbs": uv, "umad": "umad%d" % n, "issm": "issm%d" % n}


def write_function(t, c, fn_dir, addr, model, is_vf, numa, driver):
    t.write(fn_dir + "/vendor", "0x%04x" % model["vendor"])
    t.write(fn_dir + "/device", "0x%04x" % (model["vf_device"] if is_vf else model["device"]))
    t.write(fn_dir + "/subsystem_vendor", "0x%04x" % model["subsys_vendor"])
    t.write(fn_dir + "/subsystem_device",
            "0x%04x" % (model["vf_subsys_device"] if is_vf else model["subsys_device"]))
    t.write(fn_dir + "/class", "0x%06x" % model["cls"])
    t.write(fn_dir + "/numa_node", numa)
    t.write(fn_dir + "/driver_override", "(null)")
    t.write(fn_dir + "/enable", 1)
    t.link("bus/pci/devices/" + addr, fn_dir)
    group = c.iommu_group
    c.iommu_group += 1
    t.link("kernel/iommu_groups/%d/devices/%s" % (group, addr), fn_dir)
    if c.noiommu:
        # vfio's no-IOMMU mode names its fake groups; the device node is /dev/vfio/noiommu-N.
        t.write("kernel/iommu_groups/%d/name" % group, "vfio-noiommu")
    t.link(fn_dir + "/iommu_group", "kernel/iommu_groups/%d" % group)
    if driver:
        t.mkdir("bus/pci/drivers/" + driver)
        t.link(fn_dir + "/driver", "bus/pci/drivers/" + driver)
        t.link("bus/pci/drivers/%s/%s" % (driver, addr), fn_dir)
    return group


def generate_pf(t, c, spec, bus, pf_index):
    """Writes one PF (function 0 on `bus`) and its VFs; returns (manifest entry, next free bus)."""
    model_name, ifname, numvfs, totalvfs, numa = spec[:5]
    # a sixth field: the PF's own PCI domain, root complex pciDDDD:00, root port DDDD:00:00.0
    domain = spec[5] if len(spec) > 5 else None
    m = MODELS[model_name]
    if totalvfs is None:
        totalvfs = m["totalvfs"]
    if not m.get("sriov", True):
        numvfs = totalvfs = 0

    bus0_next = bus
    if domain is None:
        domain, root_bus = 0, bus - 1
        port = (0x8086, 0x2030)  # an Intel Xeon root port
    else:
        bus, root_bus = 1, 0
        port = (0x10DE, 0x22B2)  # NVIDIA Grace root port
    bridge = "%04x:%02x:00.0" % (domain, root_bus)
    bridge_dir = "devices/pci%04x:%02x/%s" % (domain, root_bus, bridge)
    t.write(bridge_dir + "/class", "0x060400")
    t.write(bridge_dir + "/vendor", "0x%04x" % port[0])
    t.write(bridge_dir + "/device", "0x%04x" % port[1])
    t.link("bus/pci/devices/" + bridge, bridge_dir)

    pf_rid = bus << 8
    addr = pci_addr(pf_rid, domain)
    pf_dir = "%s/%s" % (bridge_dir, addr)
    group = write_function(t, c, pf_dir, addr, m, False, numa, m["driver"])
    entry = {"model": model_name, "pciAddress": addr, "ifname": ifname if m["net"] else None,
             "numa": numa, "iommuGroup": group, "numVfs": numvfs, "totalVfs": totalvfs,
             "driver": m["driver"], "rdma": [], "vfs": []}
    if m.get("sriov", True):
        t.write(pf_dir + "/sriov_totalvfs", totalvfs)
        t.write(pf_dir + "/sriov_numvfs", numvfs)
        t.write(pf_dir + "/sriov_offset", m["offset"])
        t.write(pf_dir + "/sriov_stride", m["stride"])
        t.write(pf_dir + "/sriov_vf_device", "%04x" % m["vf_device"])
        t.write(pf_dir + "/sriov_vf_total_msix", 0)
        t.write(pf_dir + "/sriov_drivers_autoprobe", 1)
    if m["net"]:
        c.mac += 1
        entry["mac_n"] = c.mac
        write_netdev(t, c, pf_dir, ifname, m, True, c.mac)
    if m["rdma"]:
        entry["rdma"].append(write_rdma(t, c, pf_dir, m, True))

    last_bus = bus
    for i in range(numvfs):
        rid = pf_rid + m["offset"] + m["stride"] * i
        vaddr = pci_addr(rid, domain)
        last_bus = max(last_bus, rid >> 8)
        vdir = "%s/%s" % (bridge_dir, vaddr)
        vgroup = write_function(t, c, vdir, vaddr, m, True, numa, m["vf_driver"])
        t.link(pf_dir + "/virtfn%d" % i, vdir)
        t.link(vdir + "/physfn", pf_dir)
        vf = {"index": i, "pciAddress": vaddr, "iommuGroup": vgroup, "driver": m["vf_driver"],
              "ifname": None, "rdma": []}
        if m["net"]:
            vif = "%sv%d" % (ifname, i)
            c.mac += 1
            write_netdev(t, c, vdir, vif, m, False, c.mac)
            vf["ifname"] = vif
        if m["rdma"]:
            vf["rdma"].append(write_rdma(t, c, vdir, m, False))
        entry["vfs"].append(vf)
    # the root complex the PF is under: what DRA publishes as resource.kubernetes.io/pcieRoot
    entry["pcieRoot"] = "pci%04x:%02x" % (domain, root_bus)
    if len(spec) > 5:
        return entry, bus0_next  # a domain of its own: the next PF's buses are untouched
    return entry, last_bus + 2


def write_rxe(t, c, name, netdev):
    d = "devices/virtual/infiniband/" + name
    t.write(d + "/parent", netdev)
    t.write(d + "/node_guid", "5054:00ff:fe12:3456")
    t.write(d + "/node_type", "1: CA")
    t.write(d + "/ports/1/state", "4: ACTIVE")
    t.write(d + "/ports/1/link_layer", "Ethernet")
    t.link("class/infiniband/" + name, d)
    # ib_uverbs/ib_umad parent their class devices to the IB device's parent, which rxe lacks.
    uv = "uverbs%d" % c.uverbs
    c.uverbs += 1
    t.write("devices/virtual/infiniband_verbs/%s/ibdev" % uv, name)
    t.link("class/infiniband_verbs/" + uv, "devices/virtual/infiniband_verbs/" + uv)
    return {"name": name, "parent": netdev, "uverbs": uv}


def write_common(t, rdma_cm=True):
    t.write("devices/virtual/net/lo/address", "00:00:00:00:00:00")
    t.write("devices/virtual/net/lo/mtu", 65536)
    t.write("devices/virtual/net/lo/operstate", "unknown")
    t.write("devices/virtual/net/lo/flags", "0x9")
    t.write("devices/virtual/net/lo/type", 772)
    t.write("devices/virtual/net/lo/ifindex", 1)
    t.link("class/net/lo", "devices/virtual/net/lo")
    if rdma_cm:  # rdma_ucm loaded: /dev/infiniband/rdma_cm exists
        t.write("devices/virtual/misc/rdma_cm/dev", "10:58")
        t.link("class/misc/rdma_cm", "devices/virtual/misc/rdma_cm")
    for drv in ("vfio-pci",):
        t.mkdir("bus/pci/drivers/" + drv)
    for f in ("drivers_probe", "drivers_autoprobe", "rescan"):
        t.write("bus/pci/" + f, None)
    t.mkdir("bus/pci/devices")
    t.mkdir("class/net")


def find_entry(manifest, target):
    for e in manifest["pfs"]:
        if target is None:
            if e["vfs"]:
                return e
        elif target in (e["ifname"], e["pciAddress"]):
            return e
    sys.exit("gen-sysfs: garble target %r: no such PF%s" %
             (target, "" if target else " with VFs"))


def pf_dir_of(t, e):
    return os.path.relpath(os.path.realpath(t.path("bus/pci/devices/" + e["pciAddress"])),
                           t.root)


def garble(t, manifest, kind, target):
    e = find_entry(manifest, target)
    d = pf_dir_of(t, e)
    if kind == "numvfs-nonnumeric":
        t.write(d + "/sriov_numvfs", "x3")
    elif kind == "dangling-driver":
        t.link(d + "/driver", "bus/pci/drivers/gone_driver")
    elif kind == "dangling-virtfn":
        if not e["vfs"]:
            sys.exit("gen-sysfs: dangling-virtfn needs a PF with VFs")
        vdir = pf_dir_of(t, {"pciAddress": e["vfs"][0]["pciAddress"]})
        # The VF's directory goes away, the PF's link and the bus link stay behind.
        shutil.rmtree(t.path(vdir))
    elif kind == "missing-files":
        for f in ("device", "numa_node", "sriov_numvfs"):
            t.remove(d + "/" + f)
        if e["ifname"]:
            t.remove("%s/net/%s/mtu" % (d, e["ifname"]))
    elif kind == "orphan-vf":
        if len(e["vfs"]) < 2:
            sys.exit("gen-sysfs: orphan-vf needs a PF with at least 2 VFs")
        vdir = pf_dir_of(t, {"pciAddress": e["vfs"][1]["pciAddress"]})
        t.link(vdir + "/physfn", os.path.dirname(d) + "/0000:ff:1f.7")
    elif kind == "hostile-names":
        # A netdev directory whose name is not an interface name, an ibdev naming a path, and
        # an rxe device whose parent climbs out of class/net. The function gets a second RDMA
        # device: only then are its char devices' ibdev files read (with one, they are all its).
        t.write("%s/net/bad name/address" % d, "00:11:22:33:44:55")
        for r in e["rdma"][:1]:
            t.write("%s/infiniband_verbs/%s/ibdev" % (d, r["uverbs"]), "../../../etc")
            t.write("%s/infiniband/mlx5_99/node_guid" % d, "0c42:a103:0099:0099")
            t.link("class/infiniband/mlx5_99", "%s/infiniband/mlx5_99" % d)
        t.write("devices/virtual/infiniband/rxe66/parent", "../../etc")
        t.write("devices/virtual/infiniband/rxe66/node_guid", "0000:0000:0000:0000")
        t.link("class/infiniband/rxe66", "devices/virtual/infiniband/rxe66")
    else:
        sys.exit("gen-sysfs: unknown garble kind %r (known: %s)" %
                 (kind, ", ".join(sorted(GARBLE_KINDS))))
    manifest["garbled"].append({"kind": kind, "pciAddress": e["pciAddress"],
                                "ifname": e["ifname"]})


def parse_pf(s):
    parts = s.split(":")
    if len(parts) < 3 or len(parts) > 5:
        raise argparse.ArgumentTypeError("expected MODEL:IFNAME:NUMVFS[:TOTALVFS[:NUMA]]")
    model, ifname = parts[0], parts[1]
    if model not in MODELS:
        raise argparse.ArgumentTypeError("unknown model %r (known: %s)" %
                                         (model, ", ".join(sorted(MODELS))))
    try:
        numvfs = int(parts[2])
        totalvfs = int(parts[3]) if len(parts) > 3 and parts[3] else None
        numa = int(parts[4]) if len(parts) > 4 else 0
    except ValueError:
        raise argparse.ArgumentTypeError("NUMVFS, TOTALVFS and NUMA must be numbers")
    return (model, ifname, numvfs, totalvfs, numa)


def parse_scale(s):
    dims, _, model = s.partition(":")
    try:
        pfs, vfs = (int(x) for x in dims.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError("expected PFSxVFS[:MODEL], e.g. 8x128")
    model = model or "cx6"
    if model not in MODELS:
        raise argparse.ArgumentTypeError("unknown model %r" % model)
    return [(model, "sc%dp0" % i, vfs, max(vfs, MODELS[model]["totalvfs"]), i % 2)
            for i in range(pfs)]


def main():
    ap = argparse.ArgumentParser(
        description="Generate a kernel-like sysfs tree with SR-IOV NICs.",
        epilog="garble kinds: " + "; ".join("%s: %s" % kv for kv in sorted(GARBLE_KINDS.items())))
    ap.add_argument("--out", required=True, help="root directory to create (the sysfs root)")
    ap.add_argument("--profile", choices=sorted(PROFILES), default=None,
                    help="preset node (default: seed unless --pf or --scale is given)")
    ap.add_argument("--pf", action="append", type=parse_pf, default=[],
                    metavar="MODEL:IFNAME:NUMVFS[:TOTALVFS[:NUMA]]",
                    help="add a PF (replaces a profile PF of the same IFNAME); models: " +
                    ", ".join(sorted(MODELS)))
    ap.add_argument("--scale", type=parse_scale, default=None, metavar="PFSxVFS[:MODEL]",
                    help="add PFS PFs with VFS VFs each (default model cx6), e.g. 8x128")
    ap.add_argument("--rxe", action="append", default=None, metavar="NAME:NETDEV",
                    help="add a Soft-RoCE device tied to NETDEV (profile default: rxe0:eno1)")
    ap.add_argument("--garble", action="append", default=[], metavar="KIND[:TARGET]",
                    help="damage the tree; TARGET is a PF ifname or PCI address "
                    "(default: the first PF with VFs)")
    ap.add_argument("--no-rdma-cm", action="store_true",
                    help="leave out class/misc/rdma_cm (rdma_ucm not loaded: no "
                    "/dev/infiniband/rdma_cm)")
    ap.add_argument("--noiommu", action="store_true",
                    help="IOMMU groups named vfio-noiommu (vfio no-IOMMU mode, a VM without a "
                    "virtual IOMMU)")
    ap.add_argument("--netns-vf", action="append", default=[], metavar="IFNAME:INDEX",
                    help="VF INDEX of PF IFNAME has its netdev in another network namespace "
                    "(a CNI moved it into a pod): its net/ directory is empty")
    ap.add_argument("--manifest", action="store_true",
                    help="print a JSON description of what was generated on stdout")
    args = ap.parse_args()

    profile = args.profile or ("seed" if not args.pf and not args.scale else "none")
    specs = list(PROFILES[profile])
    for pf in args.pf:
        # A replaced profile PF keeps its place, so it keeps its PCI address.
        names = [s[1] for s in specs]
        if pf[1] in names:
            i = names.index(pf[1])
            specs[i] = pf + specs[i][5:]  # a Grace PF keeps its PCI domain
        else:
            specs.append(pf)
    if args.scale:
        specs += args.scale
    rxe = PROFILE_RXE[profile] if args.rxe is None else [
        tuple(x.split(":", 1)) for x in args.rxe]

    for model_name, ifname, numvfs, totalvfs, *_ in specs:
        limit = MODELS[model_name]["totalvfs"] if totalvfs is None else totalvfs
        if model_name != "virtio" and numvfs > limit:
            sys.exit("gen-sysfs: %s: numvfs %d > totalvfs %d" % (ifname, numvfs, limit))
    for g in args.garble:
        if g.partition(":")[0] not in GARBLE_KINDS:
            sys.exit("gen-sysfs: unknown garble kind %r (known: %s)" %
                     (g, ", ".join(sorted(GARBLE_KINDS))))
    if os.path.exists(args.out) and os.listdir(args.out):
        sys.exit("gen-sysfs: %s exists and is not empty" % args.out)
    t = Tree(args.out)
    c = Counters()
    c.noiommu = args.noiommu
    write_common(t, rdma_cm=not args.no_rdma_cm)

    manifest = {"root": t.root, "profile": profile, "pfs": [], "rxe": [], "garbled": [],
                "rdmaCm": not args.no_rdma_cm, "noiommu": args.noiommu}
    bus = 0x3B
    for i, spec in enumerate(specs):
        entry, bus = generate_pf(t, c, spec, bus, i)
        entry.pop("mac_n", None)
        manifest["pfs"].append(entry)
    for node, cpulist in PROFILE_NUMA.get(profile, []):
        t.write("devices/system/node/node%d/cpulist" % node, cpulist)
    manifest["numaNodes"] = [n for n, _ in PROFILE_NUMA.get(profile, [])]
    for name, netdev in rxe:
        manifest["rxe"].append(write_rxe(t, c, name, netdev))
    for spec in args.netns_vf:
        ifname, _, index = spec.partition(":")
        pf = next((p for p in manifest["pfs"] if p["ifname"] == ifname), None)
        vf = next((v for v in (pf or {}).get("vfs", []) if str(v["index"]) == index), None)
        if not vf or not vf["ifname"]:
            sys.exit("gen-sysfs: --netns-vf %s: no such VF with a netdev" % spec)
        # The netdev left the host namespace: gone from the VF's net/ and from class/net.
        vdir = os.path.realpath(t.path("bus/pci/devices/" + vf["pciAddress"]))
        shutil.rmtree(os.path.join(vdir, "net", vf["ifname"]))
        t.remove("class/net/" + vf["ifname"])
        vf["netns"] = True
    for g in args.garble:
        kind, _, target = g.partition(":")
        garble(t, manifest, kind, target or None)

    if args.manifest:
        json.dump(manifest, sys.stdout, indent=1)
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
