#!/usr/bin/env python3
"""SIGTERM with `--stop-mode auto` (the default): the agent asks systemd and logind on the system
bus whether the node is shutting down, and reports its devices Unhealthy first only if it is.

A private dbus-daemon stands in for the system bus (DBUS_SYSTEM_BUS_ADDRESS, which sd-bus
honours), test/agent/fake-logind.c for systemd-logind and systemd's manager on it; the agent
runs standalone on a generated seed node with the grpc-go fake kubelet. What an operator would
check, for each SIGTERM: what the kubelet's ListAndWatch stream got before it ended (every
device Unhealthy, or still Healthy), the journal's `stop:` line, and that the agent exited 0:
1. logind prepares a shutdown (PreparingForShutdown true, after its PrepareForShutdown(true)
   signal; systemd still running): a shutdown.
2. systemd is stopping the system (SystemState "stopping"), no logind on the bus: a shutdown.
3. A shutdown announced and cancelled again (PrepareForShutdown(false)), systemd running: a
   restart; devices stay Healthy until the stream ends.
4. No system bus at all (a DaemonSet pod): taken for a restart, as documented.
5. A bus on which neither answers, and one whose logind hangs: taken for a restart, and the
   SIGTERM is not held up by the hung daemon (the questions share a 300 ms bound).
Exit 1 on any failure.
"""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import Agent, Proc, check, ev, finish, standalone_node  # noqa: E402

SEED_RESOURCE = "openshift.io/sriov_highnet"

# The real system bus's configuration is stricter (who may own which name); this bus only has
# to carry the agent's questions to the test double.
BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--fake-logind", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    args = ap.parse_args()
    dbus_daemon = shutil.which("dbus-daemon")
    if not dbus_daemon:
        print("dbus-daemon not found (Debian package dbus-daemon; scripts/install-deps)")
        return 1

    work = tempfile.mkdtemp(prefix="agent-stop-mode-")
    paths, manifest = standalone_node(work, args.gen_sysfs)
    cx = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")
    n_vfs = len(cx["vfs"])
    bus_sock = os.path.join(work, "system_bus_socket")
    address = "unix:path=" + bus_sock
    with open(os.path.join(work, "bus.conf"), "w") as f:
        f.write(BUS_CONFIG % bus_sock)

    kubelet = Proc([args.fake_kubelet, "--dir", paths["kdir"], "--podresources",
                    paths["prsock"], "--assignments", paths["assign"]],
                   os.path.join(work, "kubelet.err"))
    bus = Proc([dbus_daemon, "--config-file", os.path.join(work, "bus.conf"), "--nofork",
                "--print-address=1"], os.path.join(work, "dbus-daemon.err"))
    agent_args = ["--policy-dir", paths["pdir"], "--node-labels", "highnet-node=true",
                  "--sysfs-root", paths["sysfs"], "--kubelet-dir", paths["kdir"],
                  "--devinfo-dir", paths["devinfo"], "--state-dir", paths["state"],
                  "--pod-resources-socket", paths["prsock"], "--resync-interval", "30",
                  "--vf-timeout", "1"]  # --stop-mode left at its default, auto
    doubles = []

    def fake_logind(name, *extra):
        d = Proc([args.fake_logind, "--address", address] + list(extra),
                 os.path.join(work, name + ".err"))
        doubles.append(d)
        check("%s: the test double owns its names on the bus" % name,
              d.wait_for(ev("ready"), 10) is not None, open(os.path.join(
                  work, name + ".err")).read())
        return d

    def command(d, cmd):
        d.send(cmd)
        return d.wait_for(lambda e: ev("done")(e) and e["command"] == cmd, 5) is not None

    def sigterm(name, bus_address, expect_unhealthy, expect_line):
        """Starts the agent with the system bus at bus_address, waits for its Healthy pool,
        sends SIGTERM and checks what the kubelet's stream got and the journal line."""
        env_before = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS")
        os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = bus_address
        try:
            agent = Agent(args.agent, agent_args, os.path.join(work, name + ".log"))
        finally:
            if env_before is None:
                del os.environ["DBUS_SYSTEM_BUS_ADDRESS"]
            else:
                os.environ["DBUS_SYSTEM_BUS_ADDRESS"] = env_before
        healthy = kubelet.wait_for(lambda e: ev("devices", SEED_RESOURCE)(e) and
                                   len(e["devices"] or []) == n_vfs and
                                   all(d["health"] == "Healthy" for d in e["devices"]), 15)
        check("%s: the pool is served Healthy before the SIGTERM" % name, healthy is not None,
              agent.text()[-800:])
        mark = len(kubelet.seen)
        t0 = time.monotonic()
        rc = agent.stop(signal.SIGTERM)
        took = time.monotonic() - t0
        kubelet.wait_for(ev("watch-end", SEED_RESOURCE), 5)
        lists = [e["devices"] or [] for e in kubelet.seen[mark:]
                 if ev("devices", SEED_RESOURCE)(e)]
        unhealthy = any(d and all(x["health"] == "Unhealthy" for x in d) for d in lists)
        # Not stuck on the bus (D-Bus's default call timeout is 25 s; the agent allows 0.3 s):
        # a bound well below the former, not a speed target, so a slow machine passes.
        check("%s: SIGTERM exits 0 within 9 s" % name, rc == 0 and took < 9,
              "exit %s after %.2f s" % (rc, took))
        if expect_unhealthy:
            check("%s: every device reported Unhealthy before the stream ends" % name,
                  unhealthy, "lists after SIGTERM: %s" % lists)
        else:
            check("%s: no device reported Unhealthy (they stay Healthy until the stream ends)"
                  % name, not lists or not any(x["health"] != "Healthy"
                                               for d in lists for x in d),
                  "lists after SIGTERM: %s" % lists)
        check("%s: the journal says '%s'" % (name, expect_line), expect_line in agent.text(),
              "\n".join(l for l in agent.text().splitlines() if "stop:" in l) or
              "no stop: line")
        return took

    try:
        check("fake kubelet ready", kubelet.wait_for(ev("ready"), 10) is not None, "")
        got = bus.wait_for(lambda e: isinstance(e, str) and e.startswith("unix:"), 10)
        check("private system bus up", got is not None,
              open(os.path.join(work, "dbus-daemon.err")).read())

        # 1. logind announces a shutdown and waits for delay inhibitors (the kubelet's
        #    graceful node shutdown holds one); systemd itself is still running.
        d = fake_logind("logind-shutdown", "--systemd", "running")
        check("logind-shutdown: PrepareForShutdown(true) sent", command(d, "shutdown"), "")
        sigterm("logind-shutdown", address, True,
                "stop: the node is shutting down (logind is preparing for shutdown); "
                "reporting devices Unhealthy")
        d.wait_for(lambda e: False, 0.2)  # the double's lines so far into d.seen
        asked = [e.get("property") for e in d.seen if ev("get")(e)]
        check("logind-shutdown: the agent asked SystemState, then PreparingForShutdown",
              asked == ["SystemState", "PreparingForShutdown"], str(asked))
        d.stop()

        # 2. systemd is stopping the system (the unit is stopped by the shutdown transaction),
        #    no logind on the bus.
        d = fake_logind("systemd-stopping", "--no-logind", "--systemd", "stopping")
        sigterm("systemd-stopping", address, True,
                "stop: the node is shutting down (systemd is stopping the system); "
                "reporting devices Unhealthy")
        d.stop()

        # 3. A shutdown announced, then cancelled: a restart.
        d = fake_logind("cancelled", "--systemd", "running")
        check("cancelled: PrepareForShutdown(true), then (false)",
              command(d, "shutdown") and command(d, "cancel"), "")
        sigterm("cancelled", address, False,
                "stop: a restart, the node is not shutting down (systemd is running); "
                "devices stay Healthy until the sockets close")
        d.wait_for(lambda e: False, 0.2)
        asked = [e for e in d.seen if ev("get")(e) and e["property"] == "PreparingForShutdown"]
        check("cancelled: logind was asked and said false",
              asked and asked[-1]["value"] is False, str(asked))
        d.stop()

        # 4. No system bus (a DaemonSet pod): documented as a restart.
        sigterm("no-bus", "unix:path=" + os.path.join(work, "no-such-socket"), False,
                "stop: taken for a restart (no system bus: No such file or directory)")

        # 5. A bus where nobody answers, and one whose logind hangs.
        sigterm("nobody", address, False,
                "stop: taken for a restart (neither systemd nor logind answered")
        d = fake_logind("hung")
        check("hung: the double stops answering", command(d, "hang"), "")
        took = sigterm("hung", address, False,
                       "stop: taken for a restart (neither systemd nor logind answered: "
                       "Connection timed out)")
        print("hung logind: SIGTERM to exit %.0f ms" % (took * 1000))
        d.stop()
    finally:
        for d in doubles:
            if d.p.poll() is None:
                d.p.kill()
                d.p.wait()
        for p in (bus, kubelet):
            if p.p.poll() is None:
                p.p.kill()
                p.p.wait()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
