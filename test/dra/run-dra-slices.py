#!/usr/bin/env python3
"""ResourceSlices of this node: the agent in cluster mode with --dra-resources, real kubectl
against the fake API server (resource.k8s.io/v1 validated, the agent's token held to
manifests/20-rbac.yaml), the device-plugin fake kubelet and the fake DRA kubelet.

1. The seed policy's 8 VFs are published in one slice of pool worker-1 for driver
   sriovnetwork.k8snetworkplumbingwg.io; every device's pcieRoot and pciBusID equal what the
   generated sysfs says (read here with realpath, not through the agent), and the other
   attributes name the PF, VF index, resource and type.
2. Resyncs without a device change write nothing (same resourceVersion).
2b. A pod still holding a VF of the resource through the device plugin (the kubelet's
   PodResources says so, as after moving the resource to DRA with pods running): that VF
   leaves the slice until the pod ends, then comes back.
3. A VF rebound to vfio-pci leaves the pool: 7 devices, pool generation + 1.
4. A restarted agent, while a device-plugin pod holds a VF, finds the slices current and
   writes nothing: it publishes only once the kubelet said which VFs pods hold, so no slice
   written at any moment (every write seen through a watch) offers the held VF.
5. Restarted without --dra-resources it removes them.
6. The resource moved to DRA again while that pod holds the VF: the first slice already
   leaves it out (every write watched).
Exit 1 on any failure.
"""
import json
import os
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import (  # noqa: E402
    Agent, Proc, bind_vfio, check, dra_node_setup, ev, finish, pcie_root, wait, write_json)
import fakecluster as ct  # noqa: E402


DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"
RESOURCE = "openshift.io/sriov_highnet"


def dev_name(pci):
    return pci.replace(":", "-").replace(".", "-")


class SliceWrites:
    """Every ResourceSlice write from now on, as a watch at the fake API server sees it (the
    final state alone would hide a slice that offered a VF for a moment)."""

    def __init__(self, port):
        url = "http://127.0.0.1:%d/apis/resource.k8s.io/v1/resourceslices" % port
        with urllib.request.urlopen(url, timeout=10) as r:
            rv = json.load(r)["metadata"]["resourceVersion"]
        self.events = self.reading = []
        self.stream = urllib.request.urlopen(url + "?watch=1&resourceVersion=" + rv, timeout=300)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            for line in self.stream:
                if line.strip():
                    e = json.loads(line)
                    if self.reading is not None:
                        self.reading.append((e["type"], e["object"]))
        except (OSError, ValueError):
            pass

    def offering(self, name):
        """The writes whose slice offers device `name`."""
        return [(t, o["metadata"]["name"], o["metadata"]["resourceVersion"])
                for t, o in list(self.events) if t in ("ADDED", "MODIFIED") and
                any(d.get("name") == name for d in o.get("spec", {}).get("devices", []))]

    def stop(self):
        # What was seen until now is kept; the stream is left to the daemon thread (closing
        # it here would block on the reader's buffer lock).
        self.events = list(self.events)
        self.reading = None


def main():
    args, src, work, (sysfs, root, state, _, kdir), manifest = dra_node_setup("dra-slices-")
    cx = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")

    cluster = ct.Cluster(src, work, args.kubectl)
    prsock, assign = os.path.join(work, "pod-resources.sock"), os.path.join(work, "assign.json")
    write_json(assign, [])
    kubelet = Proc([args.fake_kubelet, "--dir", kdir, "--podresources", prsock,
                    "--assignments", assign], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    dra = Proc([args.fake_dra_kubelet, "--root", root], os.path.join(work, "dra-kubelet.err"))
    dra.wait_for(ev("ready"), 10)
    agent = None

    def agent_run(*extra):
        return Agent(args.agent, ["--node-name", ct.NODE, "--kubeconfig",
                                  cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                                  "--kubelet-dir", kdir, "--kubelet-root", root,
                                  "--state-dir", state,
                                  "--devinfo-dir", os.path.join(work, "devinfo"),
                                  "--pod-resources-socket", prsock, "--vf-timeout", "1",
                                  "--resync-interval", "1", "--log-level", "debug"] +
                     list(extra), os.path.join(work, "agent.log"))

    def slices():
        rc, out = cluster.run("get", "resourceslices", "-o", "json")
        return json.loads(out)["items"] if rc == 0 else None

    def ours():
        return [s for s in slices() or [] if s["spec"].get("nodeName") == ct.NODE and
                s["spec"].get("driver") == DRIVER]

    def devices(items):
        return {d["name"]: d for s in items for d in s["spec"].get("devices", [])}

    try:
        cluster.seed()
        forbidden_before = cluster.stats().get("forbidden", 0)
        agent = agent_run("--dra-resources", "sriov_highnet")

        # 1. Published.
        items = wait(lambda: [s for s in ours() if len(s["spec"].get("devices", [])) ==
                              len(cx["vfs"])], 30)
        check("one slice with the 8 VFs", items is not None and len(items) == 1,
              json.dumps(slices())[:600])
        items = items or []
        spec = items[0]["spec"] if items else {}
        check("pool per node, generation >= 1, one slice",
              spec.get("pool", {}).get("name") == ct.NODE and
              spec["pool"].get("generation", 0) >= 1 and
              spec["pool"].get("resourceSliceCount") == 1, json.dumps(spec.get("pool")))
        devs = devices(items)
        bad = []
        for index, vf in enumerate(cx["vfs"]):
            pci = vf["pciAddress"]
            d = devs.get(pci.replace(":", "-").replace(".", "-"))
            a = (d or {}).get("attributes", {})
            want = {"resource.kubernetes.io/pcieRoot": pcie_root(sysfs, pci),
                    "resource.kubernetes.io/pciBusID": pci,
                    DRIVER + "/PFName": "ens1f0", DRIVER + "/pfPciAddress": cx["pciAddress"],
                    DRIVER + "/resourceName": RESOURCE, DRIVER + "/deviceType": "netdevice",
                    "k8s.cni.cncf.io/resourceName": RESOURCE, "k8s.cni.cncf.io/deviceID": pci}
            got = {k: a.get(k, {}).get("string") for k in want}
            if got != want or a.get(DRIVER + "/vfID", {}).get("int") != index:
                bad.append((pci, got, want, a.get(DRIVER + "/vfID")))
            if a.get("dra.net/numaNode", {}).get("int") != cx.get("numa"):
                bad.append((pci, "numa", a.get("dra.net/numaNode"), cx.get("numa")))
            if a.get(DRIVER + "/rdmaCapable", {}).get("bool") is not True:
                bad.append((pci, "rdmaCapable", a.get(DRIVER + "/rdmaCapable")))
        check("every VF's attributes (pcieRoot and pciBusID as sysfs says)", bad == [],
              json.dumps(bad)[:800])
        check("pcieRoot is a host bridge under /sys/devices",
              all(pcie_root(sysfs, v["pciAddress"]).startswith("pci") for v in cx["vfs"]))
        rc, out = cluster.run("get", "resourceslices")
        check("kubectl get resourceslices lists it", rc == 0 and items and
              items[0]["metadata"]["name"] in out, out[-300:])

        # 2. Written on change only.
        rv = items[0]["metadata"]["resourceVersion"] if items else None
        since = len(agent.text())
        time.sleep(3.5)  # three resyncs
        now = ours()
        check("resyncs without a change write nothing",
              len(now) == 1 and now[0]["metadata"]["resourceVersion"] == rv,
              json.dumps([s["metadata"] for s in now]))
        check("...and the journal has no publication", "published, pool generation" not in
              agent.text()[since:], agent.text()[since:][-400:])

        # 2b. A VF still held by a device-plugin pod stays out until the pod ends.
        held = cx["vfs"][6]["pciAddress"]
        write_json(assign, [{"pod": "old-train", "namespace": "ml", "container": "c",
                             "resource": RESOURCE, "ids": [held]}])
        items = wait(lambda: [s for s in ours() if dev_name(held) not in devices([s])], 15) or []
        check("a VF a device-plugin pod holds leaves the slice", len(items) == 1 and
              len(devices(items)) == len(cx["vfs"]) - 1, json.dumps(items)[:300])
        write_json(assign, [])
        items = wait(lambda: [s for s in ours() if dev_name(held) in devices([s])], 15) or []
        check("...and comes back when the pod ended", len(items) == 1 and
              len(devices(items)) == len(cx["vfs"]), json.dumps(items)[:300])
        spec = items[0]["spec"] if items else spec

        # 3. A device goes: generation bumped.
        gen = spec.get("pool", {}).get("generation", 0)
        gone = cx["vfs"][7]["pciAddress"]
        bind_vfio(sysfs, gone)
        # The agent also rebinds the VF to its policy's driver (an apply round) before the
        # pools are updated: allow for a slow, shared machine.
        items = wait(lambda: [s for s in ours() if len(s["spec"].get("devices", [])) == 7],
                     60) or []
        check("a VF rebound to vfio-pci leaves the slice", len(items) == 1 and
              gone.replace(":", "-").replace(".", "-") not in devices(items),
              json.dumps(items)[:400])
        check("pool generation bumped", items and
              items[0]["spec"]["pool"]["generation"] == gen + 1,
              json.dumps(items[0]["spec"]["pool"] if items else None))
        rv = items[0]["metadata"]["resourceVersion"] if items else None

        # 4. Agent restart while a device-plugin pod holds a VF: nothing written, and above
        # all no slice offering that VF, not even for a moment before the kubelet answered.
        write_json(assign, [{"pod": "old-train", "namespace": "ml", "container": "c",
                             "resource": RESOURCE, "ids": [held]}])
        items = wait(lambda: [s for s in ours() if dev_name(held) not in devices([s])], 15) or []
        check("(the running agent left the held VF out)", len(items) == 1,
              json.dumps(items)[:300])
        rv = items[0]["metadata"]["resourceVersion"] if items else None
        agent.stop()
        writes = SliceWrites(cluster.port)
        since = len(agent.text())
        agent = agent_run("--dra-resources", "sriov_highnet")
        check("restarted agent serves the DRA driver again",
              agent.wait_log("registered with the kubelet", 20, since), agent.text()[-400:])
        check("...and publishes once the kubelet said which VFs pods hold",
              agent.wait_log("the kubelet says device-plugin pods hold 1 device", 20, since),
              agent.text()[since:][-600:])
        time.sleep(2.5)
        writes.stop()
        check("no slice written after the restart ever offered the held VF",
              writes.offering(dev_name(held)) == [], json.dumps(writes.offering(dev_name(held))))
        now = ours()
        check("restarted agent leaves current slices alone",
              len(now) == 1 and now[0]["metadata"]["resourceVersion"] == rv,
              json.dumps([s["metadata"] for s in now]))
        check("RBAC: the agent was never refused",
              cluster.stats().get("forbidden", 0) == forbidden_before,
              "%s forbidden" % cluster.stats().get("forbidden"))

        # 5. DRA off: removed.
        agent.stop()
        agent = agent_run()
        check("without --dra-resources the slices are removed",
              wait(lambda: slices() is not None and ours() == [], 20), json.dumps(ours())[:300])

        # 6. The resource moved to DRA while the pod still holds its VF: the first slice
        # published already leaves it out.
        agent.stop()
        writes = SliceWrites(cluster.port)
        since = len(agent.text())
        agent = agent_run("--dra-resources", "sriov_highnet")
        items = wait(lambda: ours() or None, 30) or []
        time.sleep(1.5)
        writes.stop()
        check("moved to DRA: slices published without the held VF",
              len(items) == 1 and dev_name(held) not in devices(items) and
              len(devices(items)) == len(cx["vfs"]) - 2, json.dumps(items)[:400])
        check("...and no slice written meanwhile ever offered it",
              writes.offering(dev_name(held)) == [] and writes.events != [],
              json.dumps(writes.offering(dev_name(held))) + " of %d" % len(writes.events))
    finally:
        if agent:
            agent.stop()
        kubelet.quit()
        dra.quit()
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
