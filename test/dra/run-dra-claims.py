#!/usr/bin/env python3
"""What a DRA claim gets beyond its devices: the agent in cluster mode with --dra-resources for
the seed's sriov_highnet (8 RDMA VFs on ens1f0) and a resource whose policy resourceName has 52
characters (4 VFs on ens2f0), real kubectl playing the user and the scheduler, the fake DRA
kubelet calling the driver.

1. Limits: the long resource's resourceName attribute ("openshift.io/<52>", 65 characters) is
   over resource.k8s.io/v1's 64. It is left out alone, named with the field and the limit in
   the journal, a Warning Event and the NodeState; sriov_highnet's 8 VFs are published.
2. Two claims of sriov_highnet, one VF each, in one container: the environment the container
   gets from both CDI devices names both VFs (SRIOVNETWORK_VF_DEVICE_<device>).
3. Opaque VfConfig: ifName (something the agent cannot do) fails that claim with an error
   naming the field; addVhostMount gives /dev/vhost-net and /dev/net/tun.
4. The prepared claim's status.devices has a Ready condition for our device (the agent granted
   update on resourceclaims/status, the rule docs/dra.md gives).
5. The claim record the CNI plugin reads holds the claim's namespace and the pods in its
   status.reservedFor.
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
LONG = "sriov_a_resource_name_of_fifty_two_characters_long_x"
VFCONFIG = "sriovnetwork.k8snetworkplumbingwg.io/v1alpha1"
# The rule the agent needs for status.devices (docs/dra.md), granted here on top of
# manifests/20-rbac.yaml.
STATUS_RBAC = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
     "metadata": {"name": "sriov-agent-claim-status"},
     "rules": [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims/status"],
                "verbs": ["update"]}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "sriov-agent-claim-status"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                 "name": "sriov-agent-claim-status"},
     "subjects": [{"kind": "ServiceAccount", "name": "sriov-agent", "namespace": ct.NS}]},
]


def dev_name(pci):
    return pci.replace(":", "-").replace(".", "-")


def container_env(specs):
    """The environment of a container given every device of these CDI specs, in order: a later
    value of a name replaces an earlier one, as the runtime applies them."""
    env = {}
    for spec in specs:
        for d in spec.get("devices", []):
            for kv in d.get("containerEdits", {}).get("env", []):
                k, _, v = kv.partition("=")
                env[k] = v
    return env


def main():
    args, src, work, (sysfs, root, state, cdi, kdir), manifest = dra_node_setup("dra-claims-")
    cx = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")
    vf0, vf1, vf2 = cx["vfs"][0], cx["vfs"][1], cx["vfs"][2]

    cluster = ct.Cluster(src, work, args.kubectl)
    kubelet = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    dra = Proc([args.fake_dra_kubelet, "--root", root], os.path.join(work, "dra-kubelet.err"))
    dra.wait_for(ev("ready"), 10)
    agent = None

    def claim(name, device, config=None, pods=()):
        obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": name, "namespace": ct.NS},
               "spec": {"devices": {"requests": [
                   {"name": "nic", "exactly": {"deviceClassName": "sriov-vf"}}]}}}
        cluster.ok("apply", "-f", "-", stdin=json.dumps(obj))
        alloc = {"results": [{"request": "nic", "driver": DRIVER, "pool": ct.NODE,
                              "device": device}]}
        if config:
            alloc["config"] = [{"source": "FromClaim", "requests": ["nic"],
                                "opaque": {"driver": DRIVER, "parameters": dict(
                                    {"apiVersion": VFCONFIG, "kind": "VfConfig"}, **config)}}]
        status = {"status": {"allocation": {"devices": alloc},
                             "reservedFor": [{"resource": "pods", "name": p, "uid": "uid-" + p}
                                             for p in pods]}}
        cluster.ok("patch", "resourceclaim", name, "-n", ct.NS, "--subresource=status",
                   "--type=merge", "-p", json.dumps(status))
        rc, out = cluster.run("get", "resourceclaim", name, "-n", ct.NS, "-o", "json")
        return {"namespace": ct.NS, "name": name, "uid": json.loads(out)["metadata"]["uid"]}

    def prepare(*claims):
        dra.send({"cmd": "prepare", "driver": DRIVER, "claims": list(claims)})
        return dra.wait_for(ev("prepare"), 15) or {}

    def entry(ans, c):
        return (ans.get("claims") or {}).get(c["uid"]) or {}

    def cdi_spec(c):
        path = os.path.join(cdi, "%s-%s.json" % (DRIVER, c["uid"]))
        return json.load(open(path)) if os.path.exists(path) else {}

    def ours():
        rc, out = cluster.run("get", "resourceslices", "-o", "json")
        items = json.loads(out)["items"] if rc == 0 else []
        return [s for s in items if s["spec"].get("nodeName") == ct.NODE and
                s["spec"].get("driver") == DRIVER]

    try:
        cluster.seed()
        cluster.ok("apply", "-f", "-", stdin=ct.policy_yaml("long", LONG, "ens2f0", 4))
        for obj in STATUS_RBAC + [{
                "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "sriov-vf"}, "spec": {"selectors": [{"cel": {
                    "expression": "device.driver == '%s'" % DRIVER}}]}}]:
            cluster.ok("apply", "-f", "-", stdin=json.dumps(obj))
        agent = Agent(args.agent, ["--node-name", ct.NODE, "--kubeconfig",
                                   cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                                   "--kubelet-dir", kdir, "--kubelet-root", root,
                                   "--cdi-root", cdi, "--state-dir", state,
                                   "--devinfo-dir", os.path.join(work, "devinfo"),
                                   "--pod-resources-socket", "none", "--vf-timeout", "1",
                                   "--resync-interval", "2",
                                   "--dra-resources", "sriov_highnet," + LONG,
                                   "--log-level", "debug"], os.path.join(work, "agent.log"))
        check("driver registered", dra.wait_for(
            lambda e: ev("register")(e) and e.get("code") == "OK", 20) is not None)

        # 1. One resource over the limits does not take the other's slice with it.
        def highnet_published():
            devs = [d for s in ours() for d in s["spec"].get("devices", [])]
            return devs if len(devs) == len(cx["vfs"]) else None
        devs = wait(highnet_published, 60) or []
        check("sriov_highnet's %d VFs published despite the long resource" % len(cx["vfs"]),
              len(devs) == len(cx["vfs"]) and all(
                  d["attributes"][DRIVER + "/resourceName"]["string"] ==
                  "openshift.io/sriov_highnet" for d in devs), json.dumps(ours())[:400])
        check("journal names the resource, the attribute and the limit",
              agent.wait_log("openshift.io/" + LONG, 20) and
              "resourceName" in agent.text() and "allows 64" in agent.text(),
              agent.text()[-600:])

        def rejected_in_nodestate():
            ns = cluster.nodestate() or {}
            extra = json.loads(ns.get("metadata", {}).get("annotations", {}).get(
                "sriovnetwork.openshift.io/status-extra", "{}") or "{}")
            node = extra.get("node") or extra
            rej = node.get("draRejectedResources") if isinstance(node, dict) else None
            return rej or None
        rej = wait(rejected_in_nodestate, 30) or []
        check("NodeState names the rejected resource and the limit",
              any(r.get("resourceName") == "openshift.io/" + LONG and "64" in r.get("reason", "")
                  for r in rej), json.dumps(rej)[:400])

        def rejected_event():
            rc, out = cluster.run("get", "events", "-n", ct.NS, "-o", "json")
            items = json.loads(out).get("items", []) if rc == 0 else []
            return [e for e in items if e.get("reason") == "DRAResourceRejected"] or None
        evs = wait(rejected_event, 30) or []
        check("a Warning Event DRAResourceRejected names it",
              evs and LONG in evs[0].get("message", "") and evs[0].get("type") == "Warning",
              json.dumps(evs)[:400])

        # 2. Two claims of one resource in one container.
        c1 = claim("nic-a", dev_name(vf0["pciAddress"]), pods=("pod-a",))
        c2 = claim("nic-b", dev_name(vf1["pciAddress"]), pods=("pod-a",))
        ans = prepare(c1, c2)
        check("two claims prepared", all(entry(ans, c).get("devices") and
                                         not entry(ans, c).get("error") for c in (c1, c2)),
              json.dumps(ans))
        env = container_env([cdi_spec(c1), cdi_spec(c2)])
        for vf in (vf0, vf1):
            key = "SRIOVNETWORK_VF_DEVICE_" + dev_name(vf["pciAddress"]).replace("-", "_")
            check("a container with both claims sees %s as %s" % (vf["pciAddress"], key),
                  env.get(key) == vf["pciAddress"], json.dumps(env)[:600])
        rdma = dev_name(vf1["pciAddress"]).replace("-", "_")
        check("...and each VF's RDMA device by name",
              env.get("SRIOVNETWORK_%s_RDMA_DEVICE" % rdma) == vf1["rdma"][0]["name"],
              json.dumps(env)[:600])

        # 3. Opaque VfConfig.
        c3 = claim("nic-ifname", dev_name(vf2["pciAddress"]), config={"ifName": "net1"})
        ans = prepare(c3)
        err = entry(ans, c3).get("error") or ""
        check("VfConfig ifName: the claim fails, the error names the field",
              "ifName" in err and not entry(ans, c3).get("devices"), json.dumps(ans))
        check("...and no CDI spec was written for it", cdi_spec(c3) == {})
        c4 = claim("nic-strict", dev_name(vf2["pciAddress"]), config={"ifname": "net1"})
        err = entry(prepare(c4), c4).get("error") or ""
        check("VfConfig decoded strictly: an unknown field is named", "ifname" in err, err)
        c5 = claim("nic-vhost", dev_name(vf2["pciAddress"]), config={"addVhostMount": True})
        ans = prepare(c5)
        nodes = [n["path"] for d in cdi_spec(c5).get("devices", [])
                 for n in d.get("containerEdits", {}).get("deviceNodes", [])]
        check("VfConfig addVhostMount: /dev/vhost-net and /dev/net/tun",
              not entry(ans, c5).get("error") and "/dev/vhost-net" in nodes and
              "/dev/net/tun" in nodes, json.dumps(ans) + " " + str(nodes))

        # 4. status.devices.
        def status_devices():
            rc, out = cluster.run("get", "resourceclaim", "nic-a", "-n", ct.NS, "-o", "json")
            devs = json.loads(out).get("status", {}).get("devices") if rc == 0 else None
            return devs or None
        sdevs = wait(status_devices, 20) or []
        mine = [d for d in sdevs if d.get("driver") == DRIVER and d.get("pool") == ct.NODE and
                d.get("device") == dev_name(vf0["pciAddress"])]
        check("claim status.devices: our device with condition Ready=True",
              len(mine) == 1 and any(c.get("type") == "Ready" and c.get("status") == "True"
                                     for c in mine[0].get("conditions", [])),
              json.dumps(sdevs))

        # 5. The record the CNI plugin reads.
        path = os.path.join(state, "dra", "%s-%s.json" % (DRIVER, c1["uid"]))
        rec = json.load(open(path)) if os.path.exists(path) else {}
        check("claim record: namespace and the reserved pods",
              rec.get("namespace") == ct.NS and rec.get("name") == "nic-a" and
              [p.get("name") for p in rec.get("reservedFor", [])] == ["pod-a"],
              json.dumps({k: v for k, v in rec.items() if k != "cdi"}))
    finally:
        if agent:
            agent.stop()
        kubelet.quit()
        dra.quit()
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
