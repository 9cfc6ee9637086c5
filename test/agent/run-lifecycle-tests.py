#!/usr/bin/env python3
"""A node's life in cluster mode: reboot with the API server unreachable, a policy deleted while
the node was down, and rolling restarts of the agent, on a generated seed node with the fake API
server (real kubectl) and the grpc-go fake kubelet.

What an operator would check:
1. Boot. After a reboot every sriov_numvfs is 0 and no kubelet runs yet; the API server fails
   every request of the agent. The agent brings back the VF counts its records say (ens1f0: 8,
   ens2f0: 2) and notifies READY=1 (NOTIFY_SOCKET, as systemd's Type=notify) only once they
   are there, within seconds and without the API server; a PF it never configured (eno1)
   stays at 0. The stand-in kubelet starts after READY=1: every pool registers within 100 ms
   of its kubelet.sock appearing, with the recorded VFs Healthy.
2. Policy deleted while down. Once the API server answers, the policy of ens2f0 that was
   deleted meanwhile is undone: ens2f0 gets back the 4 VFs it had before the agent adopted it,
   its record and its pool go; ens1f0 and eno1 are left as they are. A boot apply that hangs
   (the kernel does not create the VFs) notifies READY=1 at --ready-timeout anyway.
3. Rolling restarts. With the stand-in kubelet holding ListAndWatch streams and Allocating
   continuously, the agent is restarted 6 times (SIGTERM and SIGKILL in turn): SIGTERM of a
   restart (--stop-mode restart) reports no device Unhealthy, no Allocate sent to a live
   endpoint fails, and the longest window between the old process's stream ending and the new
   process's Healthy device list is printed (and bounded).
The sysfs tree has no kernel behind it: a thread plays the kernel's part of sriov_numvfs
(virtfnN links appear and vanish with the count written). Exit 1 on any failure.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import Proc, check, ev, finish, policy, seed_sysfs, wait  # noqa: E402

import fakecluster as cluster_tests  # noqa: E402
from fakecluster import E810_RESOURCE, NODE, NS, SEED_RESOURCE, Cluster  # noqa: E402


class FakeKernel(threading.Thread):
    """Makes a PF's virtfnN links follow what is written to its sriov_numvfs, as the kernel
    does (the links are the ones the generator made; VF devices themselves stay)."""

    def __init__(self, sysfs, pcis):
        super().__init__(daemon=True)
        self.dirs = {pci: os.path.join(sysfs, "bus/pci/devices", pci) for pci in pcis}
        self.targets = {}
        for pci, d in self.dirs.items():
            self.targets[pci] = {int(n[6:]): os.readlink(os.path.join(d, n))
                                 for n in os.listdir(d) if n.startswith("virtfn")}
        self.stop = False
        self.paused = False  # a kernel stuck creating VFs

    def sync(self, pci):
        d = self.dirs[pci]
        try:
            with open(os.path.join(d, "sriov_numvfs")) as f:
                want = int(f.read().strip() or "0")
        except (OSError, ValueError):
            return
        have = sorted(int(n[6:]) for n in os.listdir(d) if n.startswith("virtfn"))
        want_idx = [i for i in range(want) if i in self.targets[pci]]
        if have == want_idx:
            return
        for i in have:
            os.remove(os.path.join(d, "virtfn%d" % i))
        for i in want_idx:
            os.symlink(self.targets[pci][i], os.path.join(d, "virtfn%d" % i))

    def run(self):
        while not self.stop:
            for pci in ([] if self.paused else self.dirs):
                self.sync(pci)
            time.sleep(0.005)


class Notify:
    """The systemd side of sd_notify(): a datagram socket; remembers each message with the
    VF counts of the watched PFs at the moment it arrived."""

    def __init__(self, path, sysfs, pcis):
        self.path, self.sysfs, self.pcis = path, sysfs, pcis
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while True:
            data = self.sock.recv(4096).decode(errors="replace")
            counts = {pci: numvfs(self.sysfs, pci) for pci in self.pcis}
            counts["vfs"] = {pci: len([n for n in os.listdir(
                os.path.join(self.sysfs, "bus/pci/devices", pci)) if n.startswith("virtfn")])
                for pci in self.pcis}
            self.messages.append((time.monotonic(), data, counts))

    def ready(self):
        for t, data, counts in self.messages:
            if "READY=1" in data.split("\n"):
                return t, counts
        return None


def numvfs(sysfs, pci):
    with open(os.path.join(sysfs, "bus/pci/devices", pci, "sriov_numvfs")) as f:
        return f.read().strip()


def write_numvfs(sysfs, pci, n):
    with open(os.path.join(sysfs, "bus/pci/devices", pci, "sriov_numvfs"), "w") as f:
        f.write("%d\n" % n)


class Restarts:
    """The stand-in kubelet's side of rolling restarts: Allocate continuously while it holds a
    live ListAndWatch stream whose devices are Healthy (a kubelet admits pods only then). The
    calls and the signals come from one thread, so no call is in flight at the instant a
    process is killed (such a call is lost whatever the plugin does)."""

    def __init__(self, kubelet, resource, device):
        self.kubelet, self.resource, self.device = kubelet, resource, device
        self.live = False
        self.sent = self.failed = 0
        self.failures = []

    def on_event(self, e):
        if not isinstance(e, dict) or e.get("resource") != self.resource:
            return
        if e.get("event") == "devices":
            self.live = bool(e["devices"]) and all(d["health"] == "Healthy"
                                                   for d in e["devices"])
        elif e.get("event") in ("watch-end", "watch-error", "dial-error"):
            self.live = False


def first_of(events, kind):
    """The first event of each resource of that kind."""
    out = {}
    for e in events:
        if ev(kind)(e) and e["resource"] not in out:
            out[e["resource"]] = e
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    ap.add_argument("--restarts", type=int, default=6)
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(HERE, "..", ".."))

    work = tempfile.mkdtemp(prefix="agent-lifecycle-")
    sysfs, kdir, state = (os.path.join(work, d) for d in ("sys", "device-plugins", "state"))
    os.makedirs(kdir)
    manifest = seed_sysfs(src, sysfs)
    pfs = {pf["ifname"]: pf for pf in manifest["pfs"] if pf.get("ifname")}
    cx, ice, igb = pfs["ens1f0"], pfs["ens2f0"], pfs["eno1"]
    watched = [cx["pciAddress"], ice["pciAddress"], igb["pciAddress"]]
    kernel = FakeKernel(sysfs, watched)
    kernel.start()

    cluster = Cluster(src, work, args.kubectl)
    agent_log = open(os.path.join(work, "agent.log"), "a")
    procs = []

    def agent_log_text():
        with open(os.path.join(work, "agent.log")) as f:
            return f.read()

    def start_agent(extra_env=None, extra_args=()):
        env = dict(os.environ, **(extra_env or {}))
        p = subprocess.Popen(
            [args.agent, "run", "--node-name", NODE, "--kubeconfig", cluster.agent_kubeconfig,
             "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--state-dir", state,
             "--devinfo-dir", os.path.join(work, "devinfo"), "--pod-resources-socket", "none",
             "--vf-timeout", "5", "--resync-interval", "30"] + list(extra_args),
            stdout=agent_log, stderr=agent_log, env=env)
        procs.append(p)
        return p

    def start_kubelet(name):
        k = Proc([args.fake_kubelet, "--dir", kdir], os.path.join(work, name + ".err"))
        procs.append(k.p)
        return k

    kubelet = start_kubelet("kubelet-1")
    kubelet.wait_for(ev("ready"), 10)
    agent = None
    try:
        # 0. The node as it ran before the reboot: two policies applied, records written.
        cluster.seed(serviceaccount=False)
        cluster.ok("apply", "-f", "-", stdin=json.dumps(
            policy("e810", "sriov_e810", ["ens2f0"], 2)))
        agent = start_agent()
        ns = wait(cluster_tests.sync_status(cluster, "Succeeded"), 40)
        check("before the reboot: NodeState Succeeded", ns is not None,
              json.dumps(cluster.nodestate())[:400])
        check("before the reboot: ens2f0 went from 4 to 2 VFs",
              numvfs(sysfs, ice["pciAddress"]) == "2", numvfs(sysfs, ice["pciAddress"]))
        check("both PFs have a record",
              all(os.path.exists(os.path.join(state, p + ".json"))
                  for p in (cx["pciAddress"], ice["pciAddress"])), str(os.listdir(state)))
        agent.send_signal(signal.SIGTERM)
        agent.wait(10)
        kubelet.stop()

        # 1. Reboot: VFs gone, no kubelet, the API server failing every request of the agent;
        #    meanwhile the e810 policy was deleted.
        for pci in watched:
            write_numvfs(sysfs, pci, 0)
        time.sleep(0.1)
        if os.path.exists(os.path.join(kdir, "kubelet.sock")):
            os.remove(os.path.join(kdir, "kubelet.sock"))
        cluster.faults(errors_500=1000000)
        cluster.ok("delete", "sriovnetworknodepolicy", "-n", NS, "e810")
        notify = Notify(os.path.join(work, "notify.sock"), sysfs, watched)
        mark = len(agent_log_text())
        t0 = time.monotonic()
        agent = start_agent({"NOTIFY_SOCKET": notify.path})
        ready = wait(notify.ready, 20, 0.02)
        check("boot: READY=1 without the API server", ready is not None,
              agent_log_text()[mark:][-1500:])
        if ready:
            print("boot: READY=1 %.0f ms after the start, VF counts then %s" %
                  ((ready[0] - t0) * 1000, ready[1]))
            check("boot: at READY=1 the recorded VF counts are there (ens1f0 8, ens2f0 2)",
                  ready[1][cx["pciAddress"]] == "8" and ready[1][ice["pciAddress"]] == "2",
                  str(ready[1]))
            check("boot: ready within 5 s with the API server failing", ready[0] - t0 < 5,
                  "%.1f s" % (ready[0] - t0))
        check("boot: a PF the agent never configured stays as it is (eno1: 0 VFs)",
              numvfs(sysfs, igb["pciAddress"]) == "0", numvfs(sysfs, igb["pciAddress"]))
        text = agent_log_text()[mark:]
        check("boot: the journal says the recorded state was applied",
              "boot: recorded state of 2 PF(s) applied in" in text, text[-1500:])

        # The stand-in kubelet starts after READY=1: registration within 100 ms of its socket.
        kubelet = start_kubelet("kubelet-2")
        ready_ev = kubelet.wait_for(ev("ready"), 10)
        # A starting kubelet removes the plugin sockets (as the real one does): the agent serves
        # them anew and registers again; that may even come before the kubelet says "ready".
        kubelet.wait_for(lambda e: len(first_of(kubelet.seen, "register")) == 2 and
                         any(ev("devices", SEED_RESOURCE)(x) for x in kubelet.seen), 5)
        regs = first_of(kubelet.seen, "register")
        check("boot: both recorded pools register with the stand-in kubelet",
              set(regs) == {SEED_RESOURCE, E810_RESOURCE}, str(sorted(regs)))
        if ready_ev and regs:
            late = max(0, max(r["t"] for r in regs.values()) - ready_ev["t"])
            print("boot: pools registered %d ms after kubelet.sock appeared" % late)
            check("boot: registered within 100 ms of kubelet.sock", late <= 100, "%d ms" % late)
        devs = [x for x in kubelet.seen if ev("devices", SEED_RESOURCE)(x)]
        check("boot: the 8 recorded VFs of ens1f0 are Healthy",
              devs and len(devs[-1]["devices"] or []) == 8 and
              all(d["health"] == "Healthy" for d in devs[-1]["devices"]), str(devs[-1:]))

        # 2. The API server answers: the policy deleted while down is undone.
        cluster.faults(errors_500=0)
        ok = wait(lambda: numvfs(sysfs, ice["pciAddress"]) == "4" and not os.path.exists(
            os.path.join(state, ice["pciAddress"] + ".json")), 30)
        check("API back: ens2f0 reset to the 4 VFs it had before the agent, record gone", ok,
              "%s VFs, records %s" % (numvfs(sysfs, ice["pciAddress"]), os.listdir(state)))
        gone = wait(lambda: not os.path.exists(
            os.path.join(kdir, "openshift.io_sriov_e810.sock")), 10)
        check("API back: the deleted policy's pool is gone", gone, str(os.listdir(kdir)))
        ns = wait(cluster_tests.sync_status(cluster, "Succeeded"), 20)
        check("API back: NodeState Succeeded", ns is not None,
              json.dumps(cluster.nodestate())[:400])
        check("API back: ens1f0 keeps its 8 VFs, eno1 stays untouched",
              numvfs(sysfs, cx["pciAddress"]) == "8" and numvfs(sysfs, igb["pciAddress"]) == "0",
              "%s %s" % (numvfs(sysfs, cx["pciAddress"]), numvfs(sysfs, igb["pciAddress"])))

        # 2b. A boot apply that hangs (the kernel does not create the VFs) cannot hold the
        #     kubelet: READY=1 comes at --ready-timeout, the apply goes on and finishes later.
        agent.send_signal(signal.SIGTERM)
        agent.wait(10)
        kernel.paused = True
        write_numvfs(sysfs, cx["pciAddress"], 0)
        for n in os.listdir(os.path.join(sysfs, "bus/pci/devices", cx["pciAddress"])):
            if n.startswith("virtfn"):
                os.remove(os.path.join(sysfs, "bus/pci/devices", cx["pciAddress"], n))
        notify2 = Notify(os.path.join(work, "notify2.sock"), sysfs, watched)
        mark = len(agent_log_text())
        t0 = time.monotonic()
        agent = start_agent({"NOTIFY_SOCKET": notify2.path},
                            ["--ready-timeout", "1", "--vf-timeout", "30"])
        ready = wait(notify2.ready, 20, 0.05)
        check("ready timeout: READY=1 although the VFs are not there", ready is not None and
              ready[1]["vfs"][cx["pciAddress"]] == 0, str(ready))
        if ready:
            # not before the 1 s --ready-timeout; later only by the machine's slowness (the
            # upper bound only tells it from the 30 s --vf-timeout)
            print("ready timeout: READY=1 %.2f s after the start" % (ready[0] - t0))
            check("ready timeout: after about 1 s", 0.8 < ready[0] - t0 < 20,
                  "%.2f s" % (ready[0] - t0))
        check("ready timeout: the journal says why",
              "not ready after 1 s (--ready-timeout)" in agent_log_text()[mark:],
              agent_log_text()[mark:][-600:])
        kernel.paused = False
        check("ready timeout: the apply goes on and finishes",
              wait(lambda: numvfs(sysfs, cx["pciAddress"]) == "8" and kubelet.wait_for(
                  lambda e: ev("devices", SEED_RESOURCE)(e) and len(e["devices"] or []) == 8,
                  0.5), 20), agent_log_text()[mark:][-600:])

        # 3. Rolling restarts while the kubelet allocates.
        agent.send_signal(signal.SIGTERM)
        agent.wait(10)
        agent = start_agent(extra_args=["--stop-mode", "restart"])
        kubelet.wait_for(lambda e: ev("devices", SEED_RESOURCE)(e) and
                         len(e["devices"] or []) == 8, 10)
        rs = Restarts(kubelet, SEED_RESOURCE, cx["vfs"][0]["pciAddress"])
        rs.live = True
        windows, unhealthy = [], []
        for i in range(args.restarts):
            sig = signal.SIGTERM if i % 2 == 0 else signal.SIGKILL
            # Allocate for a while against the live endpoint.
            end = time.monotonic() + 0.5
            while time.monotonic() < end:
                if rs.live:
                    kubelet.send({"cmd": "allocate", "resource": SEED_RESOURCE,
                                  "containers": [[rs.device]]})
                    rs.sent += 1
                    e = kubelet.wait_for(lambda e: isinstance(e, dict) and
                                         e.get("event") in ("allocate", "devices", "watch-end"),
                                         5)
                    while e is not None and e.get("event") != "allocate":
                        rs.on_event(e)
                        e = kubelet.wait_for(lambda e: isinstance(e, dict) and
                                             e.get("event") in ("allocate", "devices",
                                                                "watch-end"), 5)
                    if e is None or e.get("code") != "OK":
                        rs.failed += 1
                        rs.failures.append(e)
                time.sleep(0.02)
            agent.send_signal(sig)
            agent.wait(10)
            agent = start_agent(extra_args=["--stop-mode", "restart"])
            end_ev = None
            got = None
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                e = kubelet.wait_for(lambda e: isinstance(e, dict) and
                                     e.get("resource") == SEED_RESOURCE, 10)
                if e is None:
                    break
                rs.on_event(e)
                if e.get("event") == "watch-end" and end_ev is None:
                    end_ev = e
                if e.get("event") == "devices" and any(d["health"] != "Healthy"
                                                       for d in e["devices"] or []):
                    unhealthy.append((sig, e))
                if e.get("event") == "devices" and end_ev is not None and rs.live:
                    got = e
                    break
            if end_ev and got:
                windows.append((sig.name, got["t"] - end_ev["t"]))
            else:
                check("restart %d (%s): the new process serves Healthy devices" % (i, sig.name),
                      False, "stream end %s, devices %s" % (end_ev, got))
        print("restarts: windows without a live endpoint (ms): %s; longest %d ms; "
              "Allocates sent %d, failed %d" %
              (", ".join("%s %d" % w for w in windows),
               max((w[1] for w in windows), default=-1), rs.sent, rs.failed))
        check("restarts: a restart's SIGTERM reports no device Unhealthy", not unhealthy,
              str(unhealthy[:2]))
        check("restarts: no Allocate sent to a live endpoint failed", rs.failed == 0,
              str(rs.failures[:3]))
        check("restarts: every window without an endpoint under 2 s",
              windows and max(w[1] for w in windows) < 2000, str(windows))
    finally:
        kernel.stop = True
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
