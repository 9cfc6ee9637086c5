#!/usr/bin/env python3
"""The `sriov` CNI plugin's own time in an ADD, beside the IPAM plugin's and the kernel's.

No SR-IOV here, so the plugin runs as the integration tests run it (test/cni): on a generated
sysfs tree (test/sysfs-gen), the agent's record of the PF with its pools, a live network
namespace standing in for the pod's (root: unshare -n), and the fake kubelet (grpc-go) serving
PodResources with PODS pods of one device each, the pod named in CNI_ARGS among them. Each ADD
goes through everything the plugin does before the kernel's part: process start and dynamic
linking, configuration and CNI_ARGS parsing, the pool check, the PodResources List round trip
and its verdict, opening the pod's namespace, the VF's lock, the allocation check, the VF read
again under the lock, the name check in the pod's namespace; it ends at the PF's VF query (this
host has no such PF). SRIOV_CNI_TIMINGS=1 gives its total and netlink wall time; the plugin's
own time is total - IPAM - netlink (wall time: on a loaded machine its tail is the scheduler's);
beside it the process's CPU time (utime + stime, from exec to exit: dynamic linking included). The remaining steps of a real ADD are netlink requests (the
kernel's time), the IPAM plugin, and two small record writes and the result's JSON (the lab's
07-cni prints the whole ADD's split on igb VFs).

    cni_add.py PLUGIN FAKE_KUBELET [--runs N] [--pods N]   (prints one JSON object)"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(SRC, "test", "sysfs-gen", "gen-sysfs.py")


def timings(stderr):
    for line in stderr.splitlines():
        if line.startswith("sriov-cni timings:"):
            return {k: float(v) for k, v in (kv.split("=") for kv in line.split()[2:])
                    if k.endswith("_ms") or k.endswith("_kb")}
    return None


def measure(plugin, fake, runs=50, pods=110):
    if os.geteuid() != 0 or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        raise RuntimeError("needs root and unshare -n (a pod's network namespace)")
    work = tempfile.mkdtemp(prefix="bench-cni-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK)
                            else None)
    procs = []
    try:
        sysfs, state, agent = (os.path.join(work, d) for d in ("sys", "state", "agent"))
        man = json.loads(subprocess.run([sys.executable, GEN, "--out", sysfs, "--manifest"],
                                        check=True, capture_output=True).stdout)
        pf = man["pfs"][0]
        vf = pf["vfs"][0]["pciAddress"]
        os.makedirs(agent)
        with open(os.path.join(agent, pf["pciAddress"] + ".json"), "w") as f:
            json.dump({"pciAddress": pf["pciAddress"], "interface": {
                "pciAddress": pf["pciAddress"], "name": pf["ifname"], "numVfs": len(pf["vfs"]),
                "vfGroups": [{"resourceName": "net_a", "deviceType": "netdevice",
                              "vfRange": "0-%d" % (len(pf["vfs"]) - 1)}]}}, f)
        # a full node's pods (kubelet's default max 110), one device each; ours is the last
        assign = os.path.join(work, "assign.json")
        with open(assign, "w") as f:
            json.dump([{"pod": "pod-%d" % i, "namespace": "ns-%d" % (i % 10), "container": "c",
                        "resource": "openshift.io/net_a", "ids": ["0000:99:%02x.%d" % (i // 8, i % 8)]}
                       for i in range(pods - 1)] +
                      [{"pod": "web-1", "namespace": "tenant-a", "container": "c",
                        "resource": "openshift.io/net_a", "ids": [vf]}], f)
        sock = os.path.join(work, "pr.sock")
        kl = subprocess.Popen([fake, "--dir", os.path.join(work, "kubelet"), "--podresources",
                               sock, "--assignments", assign], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(kl)
        os.makedirs(os.path.join(work, "kubelet"), exist_ok=True)
        for line in kl.stdout:
            if '"ready"' in line:
                break
        pod = subprocess.Popen(["unshare", "-n", "sleep", "600"])
        procs.append(pod)
        netns = "/proc/%d/ns/net" % pod.pid
        for _ in range(200):
            if os.readlink(netns) != os.readlink("/proc/self/ns/net"):
                break
            time.sleep(0.01)
        conf = json.dumps({"cniVersion": "1.0.0", "name": "bench", "type": "sriov",
                           "deviceID": vf, "vlan": 100, "spoofchk": "on"})
        base = {"PATH": "/usr/bin:/bin", "CNI_COMMAND": "ADD", "CNI_CONTAINERID": "bench",
                "CNI_IFNAME": "net1", "CNI_NETNS": netns, "CNI_PATH": "/nonexistent",
                "SRIOV_CNI_STATE_DIR": state, "SRIOV_CNI_SYSFS_ROOT": sysfs,
                "SRIOV_CNI_AGENT_STATE_DIR": agent,
                "SRIOV_CNI_ANY_VF_FILE": os.path.join(work, "no-allow-any-vf"),
                "SRIOV_CNI_PODRESOURCES_SOCKET": sock, "SRIOV_CNI_TIMINGS": "1"}
        out = {}
        for label, args in (("with_podresources", "IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-a;"
                             "K8S_POD_NAME=web-1"), ("without_pod", None)):
            env = dict(base, **({"CNI_ARGS": args} if args else {}))
            own, total, wall, cpu = [], [], [], []
            for _ in range(runs):
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.monotonic()
                p = subprocess.run([plugin], input=conf.encode(), env=env, capture_output=True)
                wall.append((time.monotonic() - t0) * 1e3)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1e3)
                t = timings(p.stderr.decode())
                msg = json.loads(p.stdout or b"{}").get("msg", "")
                if not t or "cannot read its state" not in msg:
                    raise RuntimeError("the ADD did not reach the VF query: %s %s"
                                       % (msg, p.stderr.decode()[-200:]))
                total.append(t["total_ms"])
                own.append(t["total_ms"] - t["ipam_ms"] - t["netlink_ms"])
            own.sort()
            out[label] = {"runs": runs, "own_median_ms": statistics.median(own),
                          "own_p95_ms": own[int(len(own) * 0.95) - 1],
                          "total_median_ms": statistics.median(total),
                          "cpu_median_ms": statistics.median(cpu),
                          "exec_wall_median_ms": statistics.median(wall)}
        out["pods_listed"] = pods
        kl.stdin.write('{"cmd":"quit"}\n')
        kl.stdin.flush()
        return out
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("plugin")
    ap.add_argument("fake_kubelet")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--pods", type=int, default=110)
    a = ap.parse_args()
    print(json.dumps(measure(os.path.abspath(a.plugin), os.path.abspath(a.fake_kubelet),
                             a.runs, a.pods), indent=1))
