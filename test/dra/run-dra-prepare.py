#!/usr/bin/env python3
"""NodePrepareResources/NodeUnprepareResources from the agent: cluster mode with
--dra-resources, real kubectl playing the user and the scheduler (it writes the claim's
allocation to /status), the fake DRA kubelet calling the driver.

1. A claim allocated one of the node's VFs: the answer names the device, the pool (the node)
   and the CDI device ID; the CDI spec in --cdi-root gives the VF's RDMA char devices and the
   PCIDEVICE_* variable the device plugin gives. Prepared twice: the same answer.
2. A claim allocated on another node's pool, and one naming a device this node does not
   have: an error in that claim's entry, not a failed call.
3. The agent restarted and the claim deleted from the API: Prepare still answers from the
   record (no API read needed), and writes the CDI spec again if it went.
4. Unprepare removes the CDI spec; twice is fine; a later Prepare must read the (deleted)
   claim and says it is not found.
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
ENV = "PCIDEVICE_OPENSHIFT_IO_SRIOV_HIGHNET"


def dev_name(pci):
    return pci.replace(":", "-").replace(".", "-")


def main():
    args, src, work, (sysfs, root, state, cdi, kdir), manifest = \
        dra_node_setup("dra-prepare-", [("--api", "v1")])
    cx = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")
    vf = cx["vfs"][0]

    cluster = ct.Cluster(src, work, args.kubectl)
    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    dra = Proc([args.fake_dra_kubelet, "--root", root, "--api", args.api],
               os.path.join(work, "dra-kubelet.err"))
    dra.wait_for(ev("ready"), 10)
    agent = None

    def agent_run():
        return Agent(args.agent, ["--node-name", ct.NODE, "--kubeconfig",
                                  cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                                  "--kubelet-dir", kdir, "--kubelet-root", root,
                                  "--cdi-root", cdi, "--state-dir", state,
                                  "--devinfo-dir", os.path.join(work, "devinfo"),
                                  "--pod-resources-socket", "none", "--vf-timeout", "1",
                                  "--dra-resources", "sriov_highnet",
                                  "--log-level", "debug"], os.path.join(work, "agent.log"))

    def claim(name, pool, device):
        obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": name, "namespace": ct.NS},
               "spec": {"devices": {"requests": [
                   {"name": "nic", "exactly": {"deviceClassName": "sriov-vf"}}]}}}
        cluster.ok("apply", "-f", "-", stdin=json.dumps(obj))
        status = {"status": {"allocation": {"devices": {"results": [
            {"request": "nic", "driver": DRIVER, "pool": pool, "device": device}]}}}}
        cluster.ok("patch", "resourceclaim", name, "-n", ct.NS, "--subresource=status",
                   "--type=merge", "-p", json.dumps(status))
        rc, out = cluster.run("get", "resourceclaim", name, "-n", ct.NS, "-o", "json")
        return {"namespace": ct.NS, "name": name, "uid": json.loads(out)["metadata"]["uid"]}

    def prepare(*claims):
        dra.send({"cmd": "prepare", "driver": DRIVER, "claims": list(claims)})
        return dra.wait_for(ev("prepare"), 15) or {}

    def entry(ans, c):
        return (ans.get("claims") or {}).get(c["uid"]) or {}

    try:
        cluster.seed()
        cluster.ok("apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "sriov-vf"}, "spec": {"selectors": [{"cel": {
                "expression": "device.driver == '%s'" % DRIVER}}]}}))
        agent = agent_run()
        check("driver registered", dra.wait_for(
            lambda e: ev("register")(e) and e.get("code") == "OK", 20) is not None)
        rc, _ = cluster.run("get", "resourceslices")
        check("slice published", wait(lambda: "sriov-agent-0" in cluster.run(
            "get", "resourceslices")[1], 30), cluster.run("get", "resourceslices")[1])

        # 1. One VF.
        good = claim("gpu-nic", ct.NODE, dev_name(vf["pciAddress"]))
        cdi_id = "%s/vf=%s-%s" % (DRIVER, good["uid"], dev_name(vf["pciAddress"]))
        want = [{"requests": ["nic"], "pool": ct.NODE, "device": dev_name(vf["pciAddress"]),
                 "cdi": [cdi_id]}]
        ans = prepare(good)
        check("prepare over %s: call OK" % args.api, ans.get("code") == "OK", json.dumps(ans))
        check("prepare: device, pool and CDI ID", entry(ans, good).get("devices") == want and
              not entry(ans, good).get("error"), json.dumps(entry(ans, good)))
        spec_path = os.path.join(cdi, "%s-%s.json" % (DRIVER, good["uid"]))
        spec = json.load(open(spec_path)) if os.path.exists(spec_path) else {}
        devs = spec.get("devices") or [{}]
        edits = devs[0].get("containerEdits", {})
        hosts = sorted(n["hostPath"] for n in edits.get("deviceNodes", []))
        want_hosts = sorted(["/dev/infiniband/" + vf["rdma"][0][k]
                             for k in ("uverbs", "umad", "issm")] + ["/dev/infiniband/rdma_cm"])
        check("CDI spec: version, kind, device name", spec.get("cdiVersion") == "0.6.0" and
              spec.get("kind") == DRIVER + "/vf" and
              devs[0].get("name") == "%s-%s" % (good["uid"], dev_name(vf["pciAddress"])),
              json.dumps(spec)[:400])
        check("CDI spec: the VF's RDMA char devices", hosts == want_hosts,
              "%s != %s" % (hosts, want_hosts))
        check("CDI spec: %s=<the VF>" % ENV,
              "%s=%s" % (ENV, vf["pciAddress"]) in edits.get("env", []), json.dumps(edits))
        ans2 = prepare(good)
        check("prepare twice: the same answer", entry(ans2, good) == entry(ans, good),
              json.dumps(ans2))

        # 2. Not ours.
        other = claim("elsewhere", "worker-2", dev_name(vf["pciAddress"]))
        unknown = claim("unknown", ct.NODE, "0000-99-00-1")
        ans = prepare(other, unknown)
        check("another node's pool: error in its entry",
              ans.get("code") == "OK" and "not on this node" in entry(ans, other).get("error", ""),
              json.dumps(ans))
        check("a device this node does not have: error in its entry",
              "0000-99-00-1" in entry(ans, unknown).get("error", "") and
              not entry(ans, unknown).get("devices"), json.dumps(ans))

        # 3. Restart, claim gone from the API, CDI spec gone: the record answers.
        agent.stop()
        cluster.ok("delete", "resourceclaim", "gpu-nic", "-n", ct.NS)
        os.remove(spec_path)
        agent = agent_run()
        check("driver registered again", dra.wait_for(
            lambda e: ev("register")(e) and e.get("code") == "OK", 20) is not None)
        ans = prepare(good)
        check("after a restart: the recorded answer", entry(ans, good).get("devices") == want,
              json.dumps(ans))
        check("after a restart: the CDI spec written again", os.path.exists(spec_path))

        # 4. Unprepare.
        for attempt in (1, 2):
            dra.send({"cmd": "unprepare", "driver": DRIVER, "claims": [good]})
            ans = dra.wait_for(ev("unprepare"), 10) or {}
            check("unprepare #%d: no error" % attempt, ans.get("code") == "OK" and
                  (ans.get("claims") or {}).get(good["uid"], {}).get("error") == "",
                  json.dumps(ans))
        check("unprepare removed the CDI spec", not os.path.exists(spec_path))
        ans = prepare(good)
        check("prepare after unprepare reads the claim again: not found",
              "not found" in entry(ans, good).get("error", ""), json.dumps(ans))
    finally:
        if agent:
            agent.stop()
        kubelet.quit()
        dra.quit()
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
