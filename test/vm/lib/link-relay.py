#!/usr/bin/env python3
"""Pulls and plugs the guest's emulated cable when a scenario asks (Python standard library).

Follows a boot's console log; for each line `@@vm host-set-link ID on|off` it sends
`set_link ID on|off` to QEMU's human monitor on a unix socket (what a cable pull does to the
emulated NIC: the guest driver sees the link go down), and for `@@vm host-flap ID N MS` it
toggles the link N times, MS milliseconds apart, ending in the state it started from (on).
It stops at `@@vm done` or when QEMU (--pid) is gone. The guest sees the result in its own
sysfs (carrier), so no answer travels back.
"""
import argparse
import os
import socket
import time


def monitor(path, command):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    s.sendall(command.encode() + b"\n")
    time.sleep(0.05)  # the HMP prompt and echo are not needed
    s.close()


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--monitor", required=True)
    ap.add_argument("--pid", type=int, required=True)
    args = ap.parse_args()
    with open(args.log, "rb") as log:
        pending = b""
        while True:
            chunk = log.read()
            if not chunk:
                if not alive(args.pid):
                    return 0
                time.sleep(0.02)
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace").strip()
                words = line.split()
                if line.startswith("@@vm done"):
                    return 0
                if len(words) == 4 and words[:2] == ["@@vm", "host-set-link"]:
                    monitor(args.monitor, "set_link %s %s" % (words[2], words[3]))
                elif len(words) == 5 and words[:2] == ["@@vm", "host-flap"]:
                    for i in range(int(words[3])):
                        monitor(args.monitor, "set_link %s %s" % (words[2],
                                                                   "off" if i % 2 == 0 else "on"))
                        time.sleep(int(words[4]) / 1000)
                    monitor(args.monitor, "set_link %s on" % words[2])


if __name__ == "__main__":
    raise SystemExit(main())
