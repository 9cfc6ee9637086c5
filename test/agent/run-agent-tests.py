#!/usr/bin/env python3
"""The standalone daemon end to end: `sriov-agent run --policy-dir` on a generated seed node,
with the grpc-go fake kubelet as the peer.

What a user would check: the seed policy's pool reaches the kubelet with the node's VFs and
topology, Allocate answers, a new policy file becomes a new resource and its removal removes
it, a broken policy file is reported and changes nothing, a change that would re-create VFs
that a pod holds is held back until the pod lets go, SIGTERM reports devices Unhealthy and
removes the sockets, and a restart with unchanged policies writes nothing to the node (a
stray file and a truncated state record of another PF freeze only that PF). Hardening: a
released PF gets its original VF count back, the record is written before the first change,
a second agent on the same state dir refuses to run, and neither SIGTERM nor kill -9 during
a VF-count change leaves the PF at 0 VFs or an orphaned apply process.
Expectations come from the generator's manifest. Exit 1 on any failure.
"""
import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import (Agent, Proc, check, ev, finish, policy, read_attr,  # noqa: E402
                     standalone_node, write_json)

SEED_RESOURCE = "openshift.io/sriov_highnet"
E810_RESOURCE = "openshift.io/sriov_e810"


def tree_digest(root):
    """Contents of every regular file and every link target: proves what was written."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames
                                        if os.path.islink(os.path.join(dirpath, d))]):
            p = os.path.join(dirpath, name)
            h.update(p.encode())
            if os.path.islink(p):
                h.update(os.readlink(p).encode())
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def remove_virtfn_links(sysfs, pci):
    d = os.path.join(sysfs, "bus/pci/devices", pci)
    for name in os.listdir(d):
        if name.startswith("virtfn"):
            os.remove(os.path.join(d, name))


def apply_children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def last_devices(kubelet, resource, pred, timeout):
    return kubelet.wait_for(lambda e: ev("devices", resource)(e) and pred(e["devices"] or []),
                            timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="agent-test-")
    paths, manifest = standalone_node(work, args.gen_sysfs)
    sysfs, kdir, pdir, state, devinfo, prsock, assign = (
        paths[k] for k in ("sysfs", "kdir", "pdir", "state", "devinfo", "prsock", "assign"))
    pfs = {pf["ifname"]: pf for pf in manifest["pfs"] if pf.get("ifname")}
    cx, ice = pfs["ens1f0"], pfs["ens2f0"]
    cx_vfs = sorted(v["pciAddress"] for v in cx["vfs"])

    kubelet = Proc([args.fake_kubelet, "--dir", kdir, "--podresources", prsock,
                    "--assignments", assign], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    agent_args = ["--policy-dir", pdir, "--node-labels", "highnet-node=true",
                  "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--devinfo-dir", devinfo,
                  "--state-dir", state, "--pod-resources-socket", prsock,
                  "--resync-interval", "1", "--vf-timeout", "1", "--log-level", "debug",
                  # SIGTERM as on a node shutdown (devices Unhealthy first); a restart's
                  # SIGTERM is run-lifecycle-tests.py's
                  "--stop-mode", "shutdown"]
    before = tree_digest(sysfs)
    agent = Agent(args.agent, agent_args, os.path.join(work, "agent.log"))
    try:
        # 1. The seed policy's pool reaches the kubelet with every VF of ens1f0.
        reg = kubelet.wait_for(ev("register", SEED_RESOURCE), 10)
        check("seed pool registered with the kubelet", reg is not None,
              "no Register for %s" % SEED_RESOURCE)
        devs = last_devices(kubelet, SEED_RESOURCE, lambda d: len(d) == len(cx_vfs), 10)
        ids = sorted(d["id"] for d in (devs or {}).get("devices") or [])
        check("8 VFs of ens1f0 advertised", ids == cx_vfs, "%s vs %s" % (ids, cx_vfs))
        check("all Healthy with NUMA topology",
              devs is not None and all(d["health"] == "Healthy" and d["numa"] == [cx["numa"]]
                                       for d in devs["devices"]), str(devs))
        check("a node that already matches gets no writes", tree_digest(sysfs) == before,
              "sysfs tree changed")
        with open("/proc/%d/maps" % agent.p.pid) as f:
            maps = f.read().splitlines()
        curl = sorted({l.split()[-1] for l in maps if "libcurl" in l or "libssl" in l})
        check("standalone: libcurl and its TLS chain are not loaded (~5 MB RSS)", not curl,
              " ".join(curl))
        mhd = sorted({l.split()[-1] for l in maps if "libmicrohttpd" in l or "libgnutls" in l})
        check("no --metrics-listen: libmicrohttpd and GnuTLS are not loaded", not mhd,
              " ".join(mhd))
        record = os.path.join(state, cx["pciAddress"] + ".json")
        end = time.monotonic() + 5
        while time.monotonic() < end and not os.path.exists(record):
            time.sleep(0.1)
        with open(record) if os.path.exists(record) else open(os.devnull) as f:
            text = f.read()
        check("the agent records that it manages ens1f0 (with its original MTU)",
              '"originalMtu"' in text and "sriov_highnet" in text, record)

        # 2. Allocate: env with the PCI address, RDMA char devices of that VF.
        kubelet.send({"cmd": "allocate", "resource": SEED_RESOURCE, "containers": [[cx_vfs[0]]]})
        resp = kubelet.wait_for(ev("allocate", SEED_RESOURCE), 10) or {}
        envs = ((resp.get("responses") or [{}])[0]).get("envs") or {}
        check("Allocate env PCIDEVICE_OPENSHIFT_IO_SRIOV_HIGHNET",
              envs.get("PCIDEVICE_OPENSHIFT_IO_SRIOV_HIGHNET") == cx_vfs[0], str(envs))
        paths = [d["host_path"] for d in ((resp.get("responses") or [{}])[0]).get("devices") or []]
        check("Allocate gives the VF's uverbs and rdma_cm",
              "/dev/infiniband/rdma_cm" in paths and any("uverbs" in p for p in paths), str(paths))

        # 3. A new policy file becomes a new resource, without restarting anything.
        write_json(os.path.join(pdir, "e810.json"),
                   policy("e810", "sriov_e810", ["ens2f0"], ice["numVfs"]))
        reg = kubelet.wait_for(ev("register", E810_RESOURCE), 5)
        check("new policy file -> new resource registered", reg is not None, "no Register")
        devs = last_devices(kubelet, E810_RESOURCE, lambda d: len(d) == ice["numVfs"], 5)
        check("its VFs advertised", devs is not None, "no device list with %d VFs" % ice["numVfs"])

        # 4. A broken policy file is reported (file and field) and changes nothing.
        with open(os.path.join(pdir, "broken.yaml"), "w") as f:
            f.write("apiVersion: sriovnetwork.openshift.io/v1\nkind: SriovNetworkNodePolicy\n"
                    "metadata: {name: broken, namespace: sriov-network-operator}\n"
                    "spec: {resourceName: x, nodeSelector: {highnet-node: 'true'}, numVfs: "
                    "'many', nicSelector: {pfNames: ['../x']}}\n")
        write_json(os.path.join(pdir, "forge.json"), policy(
            "forge", "sriov_forge", ["ens9\nsriov-agent[notice]: PF=0000:3b:00.0 PF released by "
                                     "admin"], 1))
        check("broken policy reported with its file and field",
              agent.wait_log("broken.yaml", 5) and "numVfs" in agent.text(),
              agent.text()[-800:])
        time.sleep(1.5)
        check("and nothing written to the node", tree_digest(sysfs) == before, "tree changed")
        check("a newline in a policy value forges no log line",
              "\nsriov-agent[notice]: PF=0000:3b:00.0 PF released" not in agent.text() and
              "ens9\\nsriov-agent" in agent.text(), agent.text()[-800:])
        os.remove(os.path.join(pdir, "broken.yaml"))
        os.remove(os.path.join(pdir, "forge.json"))

        # 5. Disruption guard: growing ens2f0 4 -> 6 re-creates its VFs; a pod holds one.
        held_vf = sorted(v["pciAddress"] for v in ice["vfs"])[0]
        write_json(assign, [{"pod": "train-1", "namespace": "ml", "container": "c",
                             "resource": E810_RESOURCE, "ids": [held_vf]}])
        mark = len(agent.text())
        write_json(os.path.join(pdir, "e810.json"),
                   policy("e810", "sriov_e810", ["ens2f0"], ice["numVfs"] + 2))
        check("change held back while a pod uses a VF",
              agent.wait_log("held back", 5) and held_vf in agent.text()[mark:],
              agent.text()[mark:][-800:])
        time.sleep(2.5)  # two periodic checks
        check("held: sriov_numvfs untouched",
              read_attr(sysfs, ice["pciAddress"], "sriov_numvfs") == str(ice["numVfs"]),
              read_attr(sysfs, ice["pciAddress"], "sriov_numvfs"))
        write_json(assign, [])
        end = time.monotonic() + 8
        while time.monotonic() < end and \
                read_attr(sysfs, ice["pciAddress"], "sriov_numvfs") == str(ice["numVfs"]):
            time.sleep(0.1)
        # The generated tree has no kernel behind it: the agent writes 0 first (non-zero to
        # non-zero) and the old VFs never go away. The write is the proof that the guard let
        # go; the timeout that follows is a PF failure.
        check("released once the pod is gone: 0 written to sriov_numvfs first",
              read_attr(sysfs, ice["pciAddress"], "sriov_numvfs") == "0",
              read_attr(sysfs, ice["pciAddress"], "sriov_numvfs"))
        # The reconcile now waits (--vf-timeout) for VFs that never go. A change meanwhile is
        # not lost: it runs once this reconcile has ended, as does the retry of the failed PF
        # (the reconcile's completion callback in agent/daemon.c schedules both).
        mark = len(agent.text())
        with open(os.path.join(pdir, "notes.txt"), "w") as f:
            f.write("not a policy; its write is a change in the watched directory\n")
        check("a change during a reconcile starts another one after it",
              agent.wait_log("reconcile scheduled: changes during the last reconcile", 5, mark),
              agent.text()[mark:][-800:])
        check("a failed PF is retried with backoff",
              agent.wait_log("1 PF(s) failed; retrying in 1 s", 5, mark),
              agent.text()[mark:][-800:])
        os.remove(os.path.join(pdir, "notes.txt"))
        devs = last_devices(kubelet, E810_RESOURCE, lambda d: len(d) == 0, 10)
        check("a PF whose VF count is not reached advertises nothing", devs is not None,
              "E810 devices still advertised")
        check("the failure names the PF and says how to look",
              agent.wait_log("PF %s" % ice["pciAddress"], 5), agent.text()[-800:])

        # 6. Removing the policy file removes the resource (its socket goes away).
        os.remove(os.path.join(pdir, "e810.json"))
        sock = os.path.join(kdir, "openshift.io_sriov_e810.sock")
        end = time.monotonic() + 5
        while time.monotonic() < end and os.path.exists(sock):
            time.sleep(0.1)
        check("policy removed -> resource socket removed", not os.path.exists(sock), sock)
        # ens2f0 had its 4 VFs before the e810 policy adopted it: released, it gets them back.
        end = time.monotonic() + 8
        while time.monotonic() < end and \
                read_attr(sysfs, ice["pciAddress"], "sriov_numvfs") != str(ice["numVfs"]):
            time.sleep(0.1)
        check("adopted then released: the PF's original VF count is restored",
              read_attr(sysfs, ice["pciAddress"], "sriov_numvfs") == str(ice["numVfs"]),
              read_attr(sysfs, ice["pciAddress"], "sriov_numvfs"))
        end = time.monotonic() + 5
        while time.monotonic() < end and \
                os.path.exists(os.path.join(state, ice["pciAddress"] + ".json")):
            time.sleep(0.1)
        check("and it is no longer ours (its record removed)",
              not os.path.exists(os.path.join(state, ice["pciAddress"] + ".json")),
              agent.text()[-800:])

        # 7. SIGTERM (--stop-mode shutdown): devices reported Unhealthy first, sockets removed, VFs kept.
        vfs_before = read_attr(sysfs, cx["pciAddress"], "sriov_numvfs")
        mark = len(kubelet.seen)
        rc = agent.stop()
        check("SIGTERM exits 0", rc == 0, "exit %s" % rc)
        unhealthy = any(ev("devices", SEED_RESOURCE)(e) and e["devices"] and
                        all(d["health"] == "Unhealthy" for d in e["devices"])
                        for e in kubelet.seen[mark:]) or \
            last_devices(kubelet, SEED_RESOURCE,
                         lambda d: d and all(x["health"] == "Unhealthy" for x in d), 3)
        check("shutdown reports every device Unhealthy first", bool(unhealthy), "no such list")
        check("sockets removed on shutdown",
              not os.path.exists(os.path.join(kdir, "openshift.io_sriov_highnet.sock")), kdir)
        check("VFs kept on shutdown",
              read_attr(sysfs, cx["pciAddress"], "sriov_numvfs") == vfs_before, vfs_before)

        # 8. Restart with unchanged policies: the pool comes back, nothing is written. A stray
        #    file and a truncated record of another PF (eno1) in the state dir freeze only
        #    that PF: reported with the file, the seed pool still served.
        snapshot = tree_digest(sysfs)
        bad_record = os.path.join(state, pfs["eno1"]["pciAddress"] + ".json")
        with open(os.path.join(state, "notes.json"), "w") as f:
            f.write("operator notes, not a record {")
        with open(bad_record, "w") as f:
            f.write('{"pciAddress": "%s", "originalMtu": 15' % pfs["eno1"]["pciAddress"])
        agent = Agent(args.agent, agent_args, os.path.join(work, "agent2.log"))
        reg = kubelet.wait_for(ev("register", SEED_RESOURCE), 10)
        devs = last_devices(kubelet, SEED_RESOURCE, lambda d: len(d) == len(cx_vfs), 10)
        check("restart: pool back", reg is not None and devs is not None, "not re-advertised")
        check("a truncated record is reported with its PF and file",
              agent.wait_log(bad_record, 5) and "PF left as it is" in agent.text(),
              agent.text()[-800:])
        check("a stray non-record file is not reported", "notes.json" not in agent.text(),
              agent.text()[-800:])
        time.sleep(1.5)
        check("restart: zero host writes", tree_digest(sysfs) == snapshot, "tree changed")
        check("the bad record is left for the operator", open(bad_record).read().endswith("15"),
              bad_record)
        agent.stop()
        os.remove(bad_record)
        os.remove(os.path.join(state, "notes.json"))

        # 9. A VF-count change the kernel never completes (a generated tree): the apply waits
        #    in its own process, so the kubelet still gets answers and SIGTERM still works.
        slow_args = [a if a != "1" or agent_args[i - 1] != "--vf-timeout" else "60"
                     for i, a in enumerate(agent_args)]
        agent = Agent(args.agent, slow_args, os.path.join(work, "agent3.log"))
        kubelet.wait_for(ev("register", SEED_RESOURCE), 10)
        igb = pfs["eno1"]
        write_json(os.path.join(pdir, "igb.json"),
                   policy("igb", "sriov_igb", ["eno1"], igb["numVfs"] + 1))
        check("apply started (0 written to eno1's sriov_numvfs)", agent.wait_log(
            "PF=%s writing 0 to sriov_numvfs" % igb["pciAddress"], 10), agent.text()[-600:])
        igb_record = os.path.join(state, igb["pciAddress"] + ".json")
        try:
            with open(igb_record) as f:
                intent = json.load(f)
        except (OSError, ValueError) as e:
            intent = {"error": str(e)}
        check("the record (with the originals) is written before the first change, not after",
              intent.get("originalNumVfs") == igb["numVfs"], str(intent))
        t0 = time.monotonic()
        kubelet.send({"cmd": "allocate", "resource": SEED_RESOURCE, "containers": [[cx_vfs[1]]]})
        resp = kubelet.wait_for(ev("allocate", SEED_RESOURCE), 30) or {}
        check("Allocate answered while the apply waits on the kernel",
              resp.get("code") == "OK" and time.monotonic() - t0 < 10,
              "%s after %.1f s" % (resp.get("code"), time.monotonic() - t0))
        # A second agent on the same state dir waits for the lock (--vf-timeout + 2 s), then
        # gives up with a clear error instead of fighting the first over the PFs.
        second = Agent(args.agent, agent_args, os.path.join(work, "agent4.log"))
        try:
            rc2 = second.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            rc2 = None
        second.stop(signal.SIGKILL)
        check("a second agent on the same state dir refuses to run", rc2 not in (None, 0) and
              "still locked" in second.text(), "exit %s: %s" % (rc2, second.text()[-400:]))

        # SIGTERM while the apply process is between "write 0" and "write N" (the old VFs do
        # not go away on a generated tree): Unhealthy at once, and the PF is not left at 0.
        mark = len(kubelet.seen)
        t0 = time.monotonic()
        agent.p.send_signal(signal.SIGTERM)
        # "At once": while the apply still waits (--vf-timeout 60), not after it; the 10 s
        # deadline leaves room for a slow machine and is no speed target.
        unhealthy = last_devices(kubelet, SEED_RESOURCE,
                                 lambda d: d and all(x["health"] == "Unhealthy" for x in d), 10)
        print("  SIGTERM to Unhealthy: %.1f s" % (time.monotonic() - t0))
        check("SIGTERM during an apply reports Unhealthy at once",
              unhealthy is not None and any(e is unhealthy for e in kubelet.seen[mark:]),
              "%.1f s" % (time.monotonic() - t0))
        check("meanwhile eno1 is still between 0 and N",
              read_attr(sysfs, igb["pciAddress"], "sriov_numvfs") == "0",
              read_attr(sysfs, igb["pciAddress"], "sriov_numvfs"))
        remove_virtfn_links(sysfs, igb["pciAddress"])  # the "kernel" removes the old VFs
        try:
            rc = agent.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        check("then the daemon stops, exit 0", rc == 0, "exit %s" % rc)
        check("SIGTERM never leaves a PF at 0 VFs between 'write 0' and 'write N'",
              read_attr(sysfs, igb["pciAddress"], "sriov_numvfs") == str(igb["numVfs"] + 1),
              read_attr(sysfs, igb["pciAddress"], "sriov_numvfs"))

        # 10. kill -9 of the agent during the same window: its apply process gets SIGTERM
        #     (PR_SET_PDEATHSIG), still writes N first, and does not outlive it any longer.
        agent = Agent(args.agent, slow_args, os.path.join(work, "agent5.log"))
        kubelet.wait_for(ev("register", SEED_RESOURCE), 10)
        write_json(os.path.join(pdir, "e810.json"),
                   policy("e810", "sriov_e810", ["ens2f0"], ice["numVfs"] + 2))
        check("apply started on ens2f0", agent.wait_log(
            "PF=%s writing 0 to sriov_numvfs" % ice["pciAddress"], 10), agent.text()[-600:])
        children = apply_children(agent.p.pid)
        agent.p.kill()
        agent.p.wait()
        remove_virtfn_links(sysfs, ice["pciAddress"])
        end = time.monotonic() + 5
        while time.monotonic() < end and any(os.path.exists("/proc/%d" % c) for c in children):
            time.sleep(0.1)
        check("the apply process of a killed agent ends (after writing N)", children and
              not any(os.path.exists("/proc/%d" % c) for c in children), str(children))
        check("and ens2f0 is at N, not 0",
              read_attr(sysfs, ice["pciAddress"], "sriov_numvfs") == str(ice["numVfs"] + 2),
              read_attr(sysfs, ice["pciAddress"], "sriov_numvfs"))
    finally:
        agent.stop(signal.SIGKILL)
        kubelet.stop()

    return finish(work, remove=False)


if __name__ == "__main__":
    sys.exit(main())
