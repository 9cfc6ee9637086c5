#!/usr/bin/env python3
"""Agent restarts under continuous Allocate, with a stand-in kubelet that behaves as the real one
at a stream's end: it closes the plugin's connection (pkg/kubelet/cm/devicemanager/plugin/v1beta1,
runClient -> disconnectClient), cancelling any call still on it, and the kubelet turns a failed
Allocate into a rejected pod (UnexpectedAdmissionError).

What an operator would check, on a generated seed node in standalone mode (--stop-mode restart):
1. The stand-in kubelet Allocates every 20 ms while the agent's ListAndWatch is live; the agent
   is restarted --restarts times, SIGTERM and SIGKILL in turn.
2. Each SIGTERM comes while the agent is busy (SIGSTOP/SIGCONT around it, as a node's load or the
   stop-mode question on D-Bus holds it), and an Allocate is sent right after the signal: it
   is on the connection before the agent handles SIGTERM, as the one every SIGTERM lost in the
   lab before the fix. Every such Allocate is answered: 0 failed Allocates on SIGTERM.
3. No Allocate of the continuous loop fails, and no restart's SIGTERM reports a device
   Unhealthy. The window between the old stream's end and the new process's Healthy list
   (the kubelet without a registered endpoint) is printed for each restart, and bounded only
   generously (a hang check, not a speed test).
The loop pauses around each signal (the calls and the signal would otherwise race: a call in
flight at a SIGKILL is lost whatever the plugin does, and one the kubelet writes after the
plugin's last read and before it sees the stream end is cancelled by the kubelet itself).
Exit 1 on any failure.
"""
import argparse
import os
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import Agent, Proc, check, ev, finish, standalone_node  # noqa: E402

RESOURCE = "openshift.io/sriov_highnet"


def healthy_list(e):
    return ev("devices", RESOURCE)(e) and bool(e["devices"]) and \
        all(d["health"] == "Healthy" for d in e["devices"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    ap.add_argument("--restarts", type=int, default=6)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="agent-restart-allocate-")
    paths, manifest = standalone_node(work, args.gen_sysfs)
    pfs = {pf["ifname"]: pf for pf in manifest["pfs"] if pf.get("ifname")}
    vf = sorted(v["pciAddress"] for v in pfs["ens1f0"]["vfs"])[0]
    log = os.path.join(work, "agent.log")
    agent_args = ["--policy-dir", paths["pdir"], "--node-labels", "highnet-node=true",
                  "--sysfs-root", paths["sysfs"], "--kubelet-dir", paths["kdir"],
                  "--devinfo-dir", paths["devinfo"], "--state-dir", paths["state"],
                  "--pod-resources-socket", "none", "--vf-timeout", "5",
                  "--resync-interval", "30", "--stop-mode", "restart"]

    kubelet = Proc([args.fake_kubelet, "--dir", paths["kdir"]], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    agent = Agent(args.agent, agent_args, log)
    windows, after_signal, unhealthy, loop_failures = [], [], [], []
    loop_sent = 0
    try:
        first = kubelet.wait_for(healthy_list, 20)
        check("the seed pool is live: Healthy devices in ListAndWatch", first is not None,
              str(kubelet.seen[-3:]))
        kubelet.send({"cmd": "allocate-loop", "resource": RESOURCE, "containers": [[vf]],
                      "interval_ms": 20})
        for i in range(args.restarts):
            sig = signal.SIGTERM if i % 2 == 0 else signal.SIGKILL
            time.sleep(0.4)  # the loop allocates against the live endpoint
            kubelet.send({"cmd": "loop-pause"})
            if kubelet.wait_for(ev("loop-paused"), 10) is None:
                check("restart %d: the allocate loop pauses" % i, False, str(kubelet.seen[-3:]))
                break
            if sig == signal.SIGTERM:
                # The agent is held while the signal and an Allocate arrive, so the Allocate is
                # on the connection, unread, when the agent handles SIGTERM.
                agent.p.send_signal(signal.SIGSTOP)
                agent.p.send_signal(signal.SIGTERM)
                kubelet.send({"cmd": "allocate-async", "resource": RESOURCE,
                              "containers": [[vf]], "tag": "after-signal-%d" % i})
                time.sleep(0.1)
                agent.p.send_signal(signal.SIGCONT)
            else:
                agent.p.send_signal(signal.SIGKILL)
            try:
                agent.p.wait(10)
            except Exception:  # a hung stop: the hang check below says so
                agent.p.kill()
                agent.p.wait()
            agent = Agent(args.agent, agent_args, log)
            end_ev = got = tagged = None
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and (got is None or
                                                    (sig == signal.SIGTERM and tagged is None)):
                e = kubelet.wait_for(lambda e: isinstance(e, dict), deadline - time.monotonic())
                if e is None:
                    break
                if e.get("event") == "loop-allocate":
                    loop_sent += 1
                    if e.get("code") != "OK":
                        loop_failures.append(e)
                elif e.get("event") == "allocate" and e.get("tag") == "after-signal-%d" % i:
                    tagged = e
                elif ev("watch-end", RESOURCE)(e) and end_ev is None:
                    end_ev = e
                elif ev("devices", RESOURCE)(e):
                    if any(d["health"] != "Healthy" for d in e["devices"] or []):
                        unhealthy.append((sig.name, e))
                    elif end_ev is not None and got is None:
                        got = e
            if sig == signal.SIGTERM:
                after_signal.append((i, tagged))
            if end_ev and got:
                windows.append((sig.name, got["t"] - end_ev["t"]))
            else:
                check("restart %d (%s): the new process serves Healthy devices" % (i, sig.name),
                      False, "stream end %s, devices %s" % (end_ev, got))
                break
            kubelet.send({"cmd": "loop-resume"})
        kubelet.send({"cmd": "loop-stop"})
        stopped = kubelet.wait_for(ev("loop-stopped"), 10) or {}
        for e in kubelet.seen:
            if ev("loop-allocate")(e) and e.get("code") != "OK" and e not in loop_failures:
                loop_failures.append(e)

        lost = [(i, e) for i, e in after_signal if e is None or e.get("code") != "OK"]
        print("restarts: windows without a live endpoint (ms): %s; longest %d ms" %
              (", ".join("%s %d" % w for w in windows), max((w[1] for w in windows), default=-1)))
        print("restarts: loop Allocates sent %s, failed %s; Allocates sent after a SIGTERM %d, "
              "failed %d" % (stopped.get("sent"), stopped.get("failed"), len(after_signal),
                             len(lost)))
        check("every restart done", len(windows) == args.restarts, str(windows))
        check("SIGTERM: the Allocate sent after the signal is answered, on every restart "
              "(0 failed Allocates on SIGTERM)",
              len(after_signal) == (args.restarts + 1) // 2 and not lost, str(lost[:3]))
        check("no Allocate of the continuous loop failed", stopped.get("failed") == 0 and
              not loop_failures, str(loop_failures[:3]))
        check("a restart's SIGTERM reports no device Unhealthy", not unhealthy, str(unhealthy[:2]))
        check("SIGTERM: the journal says what was answered before the streams ended",
              "Allocate(s) already sent answered, 1 ListAndWatch stream(s) ended" in agent.text(),
              agent.text()[-1500:])
        # A hang check, not a speed test: the window is the next process's start.
        check("every window without an endpoint under 5 s",
              windows and max(w[1] for w in windows) < 5000, str(windows))
    finally:
        agent.stop(signal.SIGKILL)
        kubelet.quit()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
