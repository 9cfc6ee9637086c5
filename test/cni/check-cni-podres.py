#!/usr/bin/env python3
"""The sriov CNI plugin's PodResources check, against the fake kubelet (test/fake-kubelet, a
grpc-go PodResources server) on a generated sysfs tree: where CNI_ARGS names the pod
(K8S_POD_NAMESPACE, K8S_POD_NAME), ADD goes on only when the kubelet lists the VF's PCI address
among that pod's devices; a VF the kubelet gave to another pod, or to none, is refused with a
CNI error naming the pod, the deviceID and the resource, and nothing is changed. Without an
answer (no socket, nothing listening, a kubelet that does not answer in time) only the pool
check applies, within a bounded time, and one line on stderr says so. A kubelet that refuses
(its PodResources rate limit, 100/s burst 10, under a flood of other callers) is no such case:
another tenant's VF is never attached, the ADD fails naming the reason. The node's allow-any-VF
file turns the check off; a CNI_ARGS without both keys does not ask the kubelet.

A request that passes the checks is seen reaching the next step: CNI_NETNS is the plugin's own
namespace here, refused right after the checks ("the plugin's own network namespace").

    check-cni-podres.py PLUGIN FAKE_KUBELET"""
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("check_cni", os.path.join(HERE, "check-cni.py"))
cc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cc)
check, conf, snapshot = cc.check, cc.conf, cc.snapshot

PASSED_CHECKS = "the plugin's own network namespace"  # the step right after the checks
POD = "IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-a;K8S_POD_NAME=pod-1;" \
      "K8S_POD_INFRA_CONTAINER_ID=ctr1"


class FakeKubelet:
    """The fake kubelet serving PodResources List on sock from the assignments file."""

    def __init__(self, binary, tmp, sock, assignments, delay=None, extra=()):
        self.events = []
        kdir = os.path.join(tmp, "kubelet-" + os.path.basename(sock))
        os.makedirs(kdir, exist_ok=True)
        cmd = [binary, "--dir", kdir, "--podresources", sock, "--assignments", assignments]
        if delay:
            cmd += ["--podresources-delay", delay]
        cmd += list(extra)
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(20):
            raise RuntimeError("fake kubelet not ready in 20 s")

    def _read(self):
        for line in self.p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            self.events.append(ev)
            if ev.get("event") == "ready":
                self.ready.set()

    def lists(self, want=None):
        """List calls seen so far; the events come through a pipe and a thread: waits up to
        2 s for want, or 0.2 s when asked for the count alone."""
        deadline = time.monotonic() + (2 if want is not None else 0.2)
        while True:
            n = sum(1 for e in list(self.events) if e.get("event") == "podresources-list")
            if n == want or time.monotonic() >= deadline:
                return n
            time.sleep(0.02)

    def count(self, event):
        return sum(1 for e in list(self.events) if e.get("event") == event)

    def send(self, cmd):
        self.p.stdin.write(json.dumps(cmd) + "\n")
        self.p.stdin.flush()

    def stop(self):
        try:
            self.p.stdin.write('{"cmd":"quit"}\n')
            self.p.stdin.close()
            self.p.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()


def assign(path, entries):
    with open(path, "w") as f:
        json.dump([{"pod": p, "namespace": ns, "container": "c", "resource": res, "ids": ids}
                   for ns, p, res, ids in entries], f)


def passes(plugin, desc, stdin, args, env=None):
    """ADD gets past the pool and PodResources checks (and stops at the next step here)."""
    rc, out, err = plugin.run("ADD", stdin, args=args, extra_env=env)
    ok = rc == 1 and isinstance(out, dict) and PASSED_CHECKS in out.get("msg", "")
    check(f"{desc}: ADD goes past the checks", ok, f"rc={rc} out={out} err={err}")
    return err


def refused(plugin, desc, stdin, args, wants, env=None):
    before = snapshot(plugin.state)
    rc, out, err = plugin.run("ADD", stdin, args=args, extra_env=env)
    msg = (out or {}).get("msg", "") if isinstance(out, dict) else ""
    ok = rc == 1 and isinstance(out, dict) and out.get("code") == 7 and \
        all(w in msg for w in wants)
    check(f"{desc}: refused (code 7), naming {', '.join(wants)}", ok,
          f"rc={rc} out={out} err={err}")
    check(f"{desc}: records unchanged", snapshot(plugin.state) == before)


def main():
    binary, fake = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.access(fake, os.X_OK):
        print(f"skip: no fake kubelet at {fake} (Go is needed to build it)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        sysfs, state = os.path.join(tmp, "sys"), os.path.join(tmp, "state")
        man = json.loads(subprocess.run([sys.executable, cc.GEN, "--out", sysfs, "--manifest"],
                                        check=True, capture_output=True).stdout)
        pf = man["pfs"][0]
        vf0, vf1, vf6 = (pf["vfs"][i]["pciAddress"] for i in (0, 1, 6))
        agent_dir = os.path.join(tmp, "agent")
        cc.write_agent_record(agent_dir, pf, [("net_a", "0-3"), ("net_b", "4-5")])
        plugin = cc.Plugin(binary, sysfs, state, agent_dir)
        os.makedirs(os.path.join(state, "pci"))
        sock, assignments = os.path.join(tmp, "pr.sock"), os.path.join(tmp, "assign.json")
        env = {"SRIOV_CNI_PODRESOURCES_SOCKET": sock}
        assign(assignments, [("tenant-a", "pod-1", "openshift.io/net_a", [vf0]),
                             ("tenant-b", "pod-2", "openshift.io/net_a", [vf1])])
        kl = FakeKubelet(fake, tmp, sock, assignments)
        try:
            n = kl.lists()
            passes(plugin, "the VF the kubelet allocated to the pod", conf(vf0), POD, env)
            check("... the kubelet was asked (PodResources List)", kl.lists(n + 1) == n + 1,
                  str(kl.events[-3:]))
            refused(plugin, "a VF the kubelet allocated to another pod", conf(vf1), POD,
                    ["pod tenant-a/pod-1", vf1, "openshift.io/net_a", "tenant-b/pod-2"], env)
            refused(plugin, "a VF of the pool the kubelet allocated to no pod",
                    conf(pf["vfs"][2]["pciAddress"]), POD,
                    ["pod tenant-a/pod-1", pf["vfs"][2]["pciAddress"], "net_a",
                     cc.os.path.basename(plugin.any_vf_file)], env)
            # a VF the agent's DRA driver prepared for a claim: the claim is its allocation (the
            # kubelet lists no device-plugin ID for it)
            vf3 = pf["vfs"][3]["pciAddress"]
            os.makedirs(os.path.join(agent_dir, "dra"))
            with open(os.path.join(agent_dir, "dra", "claim-uid-1.json"), "w") as f:
                json.dump({"devices": [{"request": "nic", "pool": "node",
                                        "device": vf3.replace(":", "-").replace(".", "-"),
                                        "cdi": "x"}], "cdi": {}}, f)
            err = passes(plugin, "a VF the agent's DRA driver prepared for a claim", conf(vf3),
                         POD, env)
            check("... stderr names the claim", "DRA claim claim-uid-1" in err, err)
            # the pod of another namespace with the same name does not hold it either
            refused(plugin, "the same pod name in another namespace", conf(vf0),
                    POD.replace("tenant-a", "tenant-c"), ["pod tenant-c/pod-1", vf0], env)
            # the pool check comes first: a VF outside the pools never reaches the kubelet
            n = kl.lists()
            rc, out, _ = plugin.run("ADD", conf(vf6), args=POD, extra_env=env)
            check("a VF outside the pools: the pool check refuses it first",
                  rc == 1 and "none of the pools" in (out or {}).get("msg", "") and
                  kl.lists() == n, str(out))
            # only both keys name a pod (07-cni passes K8S_POD_NAME alone)
            n = kl.lists()
            passes(plugin, "CNI_ARGS with K8S_POD_NAME only", conf(vf1),
                   "IgnoreUnknown=1;K8S_POD_NAME=pod-1", env)
            passes(plugin, "no CNI_ARGS", conf(vf1), None, env)
            check("... the kubelet is not asked without a pod", kl.lists() == n)
            # the node-side relax file turns this check off too
            open(plugin.any_vf_file, "w").close()
            n = kl.lists()
            passes(plugin, "with the node's allow-any-VF file, another pod's VF", conf(vf1), POD,
                   env)
            check("... the kubelet is not asked", kl.lists() == n)
            os.unlink(plugin.any_vf_file)
            # an empty name names no pod; the last of duplicate keys counts (libcni's LoadArgs)
            n = kl.lists()
            passes(plugin, "an empty K8S_POD_NAME", conf(vf1),
                   "IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-a;K8S_POD_NAME=", env)
            check("... the kubelet is not asked", kl.lists() == n)
            refused(plugin, "duplicate K8S_POD_NAME, the last another pod's", conf(vf0),
                    POD + ";K8S_POD_NAME=pod-9", ["pod tenant-a/pod-9", vf0], env)
            # a hostile pod name cannot grow past a pod's
            rc, out, _ = plugin.run("ADD", conf(vf0), args=POD.replace(
                "pod-1", "p" * 300), extra_env=env)
            check("a K8S_POD_NAME longer than a pod's: a CNI error naming it",
                  rc == 1 and "K8S_POD_NAME" in (out or {}).get("msg", ""), str(out))
        finally:
            kl.stop()

        # The kubelet's rate limit for PodResources (100/s, burst 10, for the whole node) under
        # a flood from other callers: a refusal is no answer to fall back on. Another tenant's
        # VF is never attached; the ADD fails naming why (or, when a call got through, the
        # kubelet's answer refuses it).
        limited = FakeKubelet(fake, tmp, sock, assignments,
                              extra=["--podresources-qps", "100", "--podresources-burst", "10"])
        try:
            limited.send({"cmd": "podresources-flood", "seconds": 8, "workers": 8})
            deadline = time.monotonic() + 5
            while limited.count("podresources-refused") < 50 and time.monotonic() < deadline:
                time.sleep(0.05)
            check("the flood is refused by the kubelet's limiter",
                  limited.count("podresources-refused") >= 50,
                  str(limited.count("podresources-refused")))
            outcomes = []
            for _ in range(3):
                rc, out, err = plugin.run("ADD", conf(vf1), args=POD, extra_env=env)
                outcomes.append((rc, out, err))
            let_through = [o for o in outcomes if isinstance(o[1], dict) and
                           PASSED_CHECKS in o[1].get("msg", "")]
            check("under the flood: another tenant's VF is never attached (3 ADDs)",
                  not let_through and all(o[0] == 1 for o in outcomes),
                  str([(o[0], o[1]) for o in outcomes]))
            named = all(isinstance(o[1], dict) and (
                (o[1].get("code") == 7 and "tenant-b/pod-2" in o[1].get("msg", "")) or
                (o[1].get("code") == 11 and "rate limit" in o[1].get("msg", "")))
                for o in outcomes)
            check("... each ADD fails with a CNI error naming the reason (the holder, or the "
                  "kubelet's rate limit)", named, str([o[1] for o in outcomes]))
            check("... no line says the pool check alone applied",
                  not any("pools only" in (o[2] or "") for o in outcomes),
                  str([o[2] for o in outcomes]))
            check("... records unchanged", sorted(snapshot(state)) == [], str(snapshot(state)))
        finally:
            limited.stop()

        # no socket: the pool check only, said on stderr (a stopped kubelet leaves its file)
        if os.path.exists(sock):
            os.unlink(sock)
        err = passes(plugin, "no PodResources socket", conf(vf1), POD, env)
        check("... stderr says the pool check alone applied",
              "PodResources gave no answer" in err and "pools only" in err, err)
        refused(plugin, "no PodResources socket, a VF outside the pools", conf(vf6), POD,
                ["none of the pools"], env)

        # a socket nobody accepts on (the kubelet hung): bounded time, pool check only
        hung = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        hung.bind(sock)
        hung.listen(16)
        t0 = time.monotonic()
        err = passes(plugin, "a socket that never answers", conf(vf1), POD, env)
        took = time.monotonic() - t0
        # bounded (the plugin gives the kubelet 2 s), not waiting for ever; the bound leaves
        # room for a slow machine and stays below the late kubelet's 30 s below
        check(f"... ADD ends within 20 s ({took:.1f} s)", took < 20)
        check("... stderr says no answer came in time", "in time" in err, err)
        hung.close()
        os.unlink(sock)

        # a kubelet that answers too late (grpc-go, answering after 30 s)
        slow = FakeKubelet(fake, tmp, sock, assignments, delay="30s")
        try:
            t0 = time.monotonic()
            err = passes(plugin, "a kubelet answering after 30 s", conf(vf1), POD, env)
            took = time.monotonic() - t0
            check(f"... ADD ends within 20 s, not after the answer ({took:.1f} s)", took < 20)
            check("... the kubelet was asked, stderr says no answer came",
                  slow.lists(1) == 1 and "gave no answer" in err, err)
        finally:
            slow.stop()
        check("no records left behind", sorted(snapshot(state)) == [], str(snapshot(state)))

    print(f"check-cni-podres: {len(cc.FAILURES)} failure(s)")
    return 1 if cc.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
