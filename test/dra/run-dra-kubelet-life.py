#!/usr/bin/env python3
"""ResourceSlices across a kubelet's life: the agent in cluster mode with --dra-resources, real
kubectl against the fake API server, and the fake DRA kubelet doing to slices what the
kubelet's DRA manager does (wipe of the node's slices at its start; wipe of a gone driver's
slices --wiping-delay after its socket went away).

1. No DRA kubelet yet: the agent publishes nothing (the scheduler would otherwise place pods on
   VFs whose driver no kubelet calls), however many resyncs pass.
2. The kubelet starts and registers the driver: the 8 VFs are published.
3. The kubelet restarts: it wipes the node's slices and registers the driver again; the slices
   come back (time printed for bench/; the only bound is a hang deadline).
4. A slice deleted by hand comes back (the agent lists its slices every few seconds).
5. The agent stops: the kubelet wipes the driver's slices after its delay, and the agent is not
   there to fight it; a restarted agent registers and publishes again.
Exit 1 on any failure.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import (  # noqa: E402
    Agent, Proc, check, dra_node_setup, ev, finish, wait, write_json)
import fakecluster as ct  # noqa: E402

DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"


def main():
    args, src, work, (sysfs, root, state, _, kdir), manifest = dra_node_setup("dra-kubelet-life-")
    cx = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")
    n_vfs = len(cx["vfs"])

    cluster = ct.Cluster(src, work, args.kubectl)
    prsock, assign = os.path.join(work, "pod-resources.sock"), os.path.join(work, "assign.json")
    write_json(assign, [])
    kubelet = Proc([args.fake_kubelet, "--dir", kdir, "--podresources", prsock,
                    "--assignments", assign], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    dra = None
    agent = None

    def start_dra():
        p = Proc([args.fake_dra_kubelet, "--root", root,
                  "--apiserver", "http://127.0.0.1:%d" % cluster.port, "--node", ct.NODE,
                  "--wiping-delay", "1s"], os.path.join(work, "dra-kubelet.err"))
        check("fake DRA kubelet ready", p.wait_for(ev("ready"), 10) is not None)
        return p

    def agent_run():
        return Agent(args.agent, ["--node-name", ct.NODE, "--kubeconfig",
                                  cluster.agent_kubeconfig, "--sysfs-root", sysfs,
                                  "--kubelet-dir", kdir, "--kubelet-root", root,
                                  "--state-dir", state,
                                  "--devinfo-dir", os.path.join(work, "devinfo"),
                                  "--pod-resources-socket", prsock, "--vf-timeout", "1",
                                  "--resync-interval", "1", "--log-level", "debug",
                                  "--dra-resources", "sriov_highnet"],
                     os.path.join(work, "agent.log"))

    def ours():
        rc, out = cluster.run("get", "resourceslices", "-o", "json")
        items = json.loads(out)["items"] if rc == 0 else []
        return [s for s in items if s["spec"].get("nodeName") == ct.NODE and
                s["spec"].get("driver") == DRIVER]

    def n_devices():
        return sum(len(s["spec"].get("devices", [])) for s in ours())

    def published():
        return n_devices() == n_vfs or None

    try:
        cluster.seed()
        # 1. No DRA kubelet: nothing published.
        agent = agent_run()
        check("agent serves the DRA driver",
              agent.wait_log("DRA driver serving", 20), agent.text()[-400:])
        check("agent knows which VFs pods hold (nothing else holds publication back)",
              agent.wait_log("the kubelet says device-plugin pods hold", 20),
              agent.text()[-600:])
        time.sleep(5)  # several resyncs and slice checks
        check("no DRA kubelet registered the driver: no ResourceSlice published",
              ours() == [], json.dumps(ours())[:400])

        # 2. The kubelet comes: registered, then published.
        dra = start_dra()
        reg = dra.wait_for(ev("register"), 15) or {}
        check("kubelet registered the driver", reg.get("code") == "OK", json.dumps(reg))
        check("after the registration the %d VFs are published" % n_vfs,
              wait(published, 30), json.dumps(ours())[:400])

        # 3. Kubelet restart: wiped at its start, registered again, published again.
        dra.send({"cmd": "restart"})
        wiped = dra.wait_for(lambda e: ev("wipe")(e) and e.get("why") == "kubelet start", 10)
        t0 = time.monotonic()
        check("restarted kubelet wiped the node's slices",
              wiped is not None and wiped.get("code") == "OK" and wiped.get("deleted", 0) >= 1,
              json.dumps(wiped))
        check("...and registered the driver again",
              (dra.wait_for(ev("register"), 15) or {}).get("code") == "OK")
        back = wait(published, 30)
        check("slices back after the kubelet's restart", back, json.dumps(ours())[:400])
        print("slices back %.1f s after the kubelet's wipe" % (time.monotonic() - t0))
        gens = [s["spec"]["pool"]["generation"] for s in ours()]
        check("pool generation is at least 1", gens and min(gens) >= 1, str(gens))

        # 4. Deleted by hand: put right.
        name = ours()[0]["metadata"]["name"] if ours() else "none"
        t0 = time.monotonic()
        rc, out = cluster.run("delete", "resourceslice", name)
        check("(slice %s deleted)" % name, rc == 0, out)
        check("a slice deleted by hand comes back", wait(published, 30),
              json.dumps(ours())[:400])
        print("slice back %.1f s after its deletion" % (time.monotonic() - t0))

        # 5. The agent stops: the kubelet wipes after its delay; nothing fights it.
        agent.stop()
        agent = None
        dra.wait_for(ev("deregister"), 10)
        wiped = dra.wait_for(lambda e: ev("wipe")(e) and e.get("why") == "driver gone", 15)
        check("kubelet wiped the gone driver's slices after its delay",
              wiped is not None and wiped.get("code") == "OK", json.dumps(wiped))
        check("no slice left", wait(lambda: ours() == [], 10), json.dumps(ours())[:300])
        agent = agent_run()
        check("restarted agent registered and published again",
              wait(published, 40), json.dumps(ours())[:400])
    finally:
        if agent:
            agent.stop()
        kubelet.quit()
        if dra:
            dra.quit()
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
