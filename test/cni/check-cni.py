#!/usr/bin/env python3
"""The sriov CNI plugin binary on this host (no SR-IOV here): everything that is decided before
the first netlink request, on a generated sysfs tree (test/sysfs-gen). Bad input gets a CNI
error JSON and exit 1 and leaves the records directory as it was; DEL without a record and DEL
of an upstream-written record without a namespace succeed; VERSION/STATUS/GC; the binary links
only libnl-3 and jansson. As root, DEL of a VF netdev (a veth, in private namespaces) that carries
its host name as an altname, and DEL refused because its host name or one of its altnames is taken
in the host (the error names which). The real-kernel half is the lab scenario test/vm/scenarios/07-cni.sh.

    check-cni.py PLUGIN"""
import contextlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "sysfs-gen", "gen-sysfs.py")
FAILURES = []


def check(desc, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + desc + ("" if cond else f"\n     {detail}"))
    if not cond:
        FAILURES.append(desc)


def snapshot(d):
    out = {}
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            if not f.endswith(".lock"):
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, d)] = fh.read()
    return out


class Plugin:
    def __init__(self, binary, sysfs, state):
        self.binary, self.sysfs, self.state = binary, sysfs, state

    def run(self, command, stdin="", netns="/proc/self/ns/net", ifname="net1", cid="ctr1",
            args=None, extra_env=None):
        env = {"PATH": "/usr/bin:/bin", "CNI_COMMAND": command, "CNI_CONTAINERID": cid,
               "CNI_IFNAME": ifname, "CNI_PATH": "/nonexistent",
               "SRIOV_CNI_STATE_DIR": self.state, "SRIOV_CNI_SYSFS_ROOT": self.sysfs}
        if netns is not None:
            env["CNI_NETNS"] = netns
        if args:
            env["CNI_ARGS"] = args
        env.update(extra_env or {})
        p = subprocess.run([self.binary], input=stdin.encode(), env=env, capture_output=True,
                           timeout=30)
        try:
            out = json.loads(p.stdout) if p.stdout.strip() else None
        except ValueError:
            out = {"unparsable": p.stdout.decode(errors="replace")}
        return p.returncode, out, p.stderr.decode(errors="replace")


def conf(device, **extra):
    c = {"cniVersion": "1.0.0", "name": "highnet", "type": "sriov", "deviceID": device}
    c.update(extra)
    return json.dumps(c)


def refused(plugin, desc, stdin, code, want, **kw):
    before = snapshot(plugin.state)
    rc, out, err = plugin.run("ADD", stdin, **kw)
    ok = rc == 1 and isinstance(out, dict) and out.get("code") == code and want in out.get("msg", "")
    check(f"{desc}: exit 1, code {code}, message names it", ok, f"rc={rc} out={out} err={err}")
    check(f"{desc}: records unchanged", snapshot(plugin.state) == before)


def ip(*args, ns_pid=None):
    cmd = (["nsenter", "-t", str(ns_pid), "-n"] if ns_pid else []) + ["ip"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True)


@contextlib.contextmanager
def vf_in_pod(binary, vf_index, altnames=()):
    """In a private network namespace standing in for the host (see main): a VF netdev (a veth
    here) already moved into a pod's namespace as net1, carrying `altnames` ("{host}" stands for
    its host name), and the records an ADD wrote for it (the PF side untouched: this host has no
    such PF). Yields (plugin, pod pid, pod netns path, the VF's PCI address, its host name), or
    None when this kernel has no alternative names."""
    with tempfile.TemporaryDirectory() as tmp:
        sysfs, state = os.path.join(tmp, "sys"), os.path.join(tmp, "state")
        man = json.loads(subprocess.run([sys.executable, GEN, "--out", sysfs, "--manifest"],
                                        check=True, capture_output=True).stdout)
        pf = man["pfs"][0]
        vf = pf["vfs"][vf_index]["pciAddress"]
        host_name = pf["vfs"][vf_index]["ifname"]
        os.makedirs(os.path.join(state, "pci"))
        pod = subprocess.Popen(["unshare", "-n", "sleep", "60"])
        try:
            netns = f"/proc/{pod.pid}/ns/net"
            for _ in range(100):  # until sleep runs in its own namespace
                if os.readlink(netns) != os.readlink("/proc/self/ns/net"):
                    break
                subprocess.run(["sleep", "0.01"])
            ip("link", "add", host_name, "type", "veth", "peer", "name", f"peer{vf_index}")
            ip("link", "set", host_name, "netns", str(pod.pid), "name", "net1")
            for a in altnames:
                if ip("link", "property", "add", "dev", "net1", "altname",
                      a.format(host=host_name), ns_pid=pod.pid).returncode != 0:
                    yield None
                    return
            record = {"cniVersion": "1.0.0", "name": "highnet", "type": "sriov",
                      "OrigVfState": {"HostIFName": host_name, "SpoofChk": False,
                                      "Trust": False, "AdminMAC": "", "EffectiveMAC": "",
                                      "Vlan": 0, "VlanQoS": 0, "VlanProto": 33024,
                                      "MinTxRate": 0, "MaxTxRate": 0, "LinkState": 0,
                                      "MTU": 0},
                      "Master": pf["ifname"], "MAC": "", "deviceID": vf, "VFID": vf_index,
                      "runtimeConfig": {}}
            with open(os.path.join(state, "alt-net1"), "w") as f:
                json.dump(record, f)
            with open(os.path.join(state, "pci", vf), "w") as f:
                f.write(netns)
            yield Plugin(binary, sysfs, state), pod.pid, netns, vf, host_name
        finally:
            pod.kill()
            pod.wait()


def del_altname_case(binary):
    """A VF netdev in a pod's namespace that carries its host name as an altname, as
    systemd-udevd before v254 leaves a renamed link (upstream sriov-cni issue #250): the kernel
    refuses to give it that name back (EEXIST after moving it). DEL drops the altname and
    restores the name; without that it failed and left the VF in the host under the pod's
    name."""
    with vf_in_pod(binary, 1, altnames=["{host}"]) as staged:
        if staged is None:
            print("skip DEL with an altname: this kernel has no alternative names")
            return
        plugin, pod, netns, vf, host_name = staged
        check("the pod's net1 answers to its host name too (altname)",
              ip("-o", "link", "show", host_name, ns_pid=pod).returncode == 0)
        rc, out, err = plugin.run("DEL", conf(vf), cid="alt", netns=netns)
        check("DEL of a VF carrying its host name as an altname: success", rc == 0,
              f"rc={rc} out={out} err={err}")
        shown = ip("-o", "link", "show", host_name)
        check(f"the VF is back in the host as {host_name}",
              shown.returncode == 0 and f": {host_name}@" in shown.stdout, shown.stdout)
        check("its altname is gone", "altname" not in shown.stdout, shown.stdout)
        check("nothing named net1 is left in the host or the pod",
              ip("link", "show", "net1").returncode != 0 and
              ip("link", "show", "net1", ns_pid=pod).returncode != 0)


def del_name_taken_cases(binary):
    """DEL cannot give the VF back when a name is taken in the host: the error must say which
    (the kernel only answers EEXIST). Its host name taken: the kernel moves the VF, then refuses
    the name. One of its altnames taken: the kernel moves nothing."""
    with vf_in_pod(binary, 2) as staged:
        plugin, pod, netns, vf, host_name = staged
        ip("link", "add", host_name, "type", "veth", "peer", "name", "squat0")
        rc, out, err = plugin.run("DEL", conf(vf), cid="alt", netns=netns)
        msg = (out or {}).get("msg", "")
        check(f"DEL with {host_name} taken in the host: fails naming it",
              rc == 1 and msg.endswith(f"(as {host_name}): {host_name} is taken there"),
              f"rc={rc} out={out} err={err}")
    with vf_in_pod(binary, 3, altnames=["vf3alt"]) as staged:
        if staged is None:
            print("skip DEL with an altname taken: this kernel has no alternative names")
            return
        plugin, pod, netns, vf, host_name = staged
        ip("link", "add", "vf3alt", "type", "veth", "peer", "name", "squat1")
        rc, out, err = plugin.run("DEL", conf(vf), cid="alt", netns=netns)
        msg = (out or {}).get("msg", "")
        check("DEL with the VF's altname vf3alt taken in the host: fails naming it",
              rc == 1 and msg.endswith(f"(as {host_name}): its altname vf3alt is taken there"),
              f"rc={rc} out={out} err={err}")
        check("the VF stays in the pod as net1 (the kernel moved nothing)",
              ip("link", "show", "net1", ns_pid=pod).returncode == 0)


def main():
    if sys.argv[1] == "--del-altname":
        del_altname_case(os.path.abspath(sys.argv[2]))
        del_name_taken_cases(os.path.abspath(sys.argv[2]))
        print(f"check-cni (DEL in private namespaces): {len(FAILURES)} failure(s)")
        return 1 if FAILURES else 0
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        sysfs, state = os.path.join(tmp, "sys"), os.path.join(tmp, "state")
        man = json.loads(subprocess.run([sys.executable, GEN, "--out", sysfs, "--manifest"],
                                        check=True, capture_output=True).stdout)
        pf = man["pfs"][0]
        vf, vf2, vf3 = (pf["vfs"][i]["pciAddress"] for i in range(3))
        plugin = Plugin(binary, sysfs, state)
        os.makedirs(os.path.join(state, "pci"))

        rc, out, _ = plugin.run("VERSION")
        check("VERSION: 0.1.0 .. 1.1.0", rc == 0 and out["supportedVersions"] ==
              ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"], str(out))
        for cmd in ("STATUS", "GC"):
            rc, out, _ = plugin.run(cmd, conf(vf, cniVersion="1.1.0"))
            check(f"{cmd} (1.1.0) accepted", rc == 0 and out is None, f"rc={rc} out={out}")

        refused(plugin, "not JSON", "{nope", 6, "not JSON")
        refused(plugin, "vlan 4095", conf(vf, vlan=4095), 7, "\"vlan\" is 4095")
        refused(plugin, "vlanQoS without vlan", conf(vf, vlanQoS=1), 7, "needs \"vlan\"")
        refused(plugin, "deviceID that does not exist", conf("0000:99:00.0"), 7,
                "0000:99:00.0: no such PCI device")
        refused(plugin, "a PF as deviceID", conf(pf["pciAddress"]), 7, "is not a VF")
        refused(plugin, "unsupported cniVersion", conf(vf, cniVersion="9.9.9"), 1,
                "incompatible CNI versions")
        refused(plugin, "no CNI_NETNS", conf(vf), 4, "CNI_NETNS", netns=None)
        refused(plugin, "bad CNI_ARGS MAC", conf(vf), 4, "CNI_ARGS MAC", args="MAC=nope")
        # libcni's LoadArgs rule, as upstream's plugin applies it
        refused(plugin, "CNI_ARGS key the plugin does not read, without IgnoreUnknown", conf(vf),
                4, "unknown argument \"K8S_POD_NAME=p\"", args="K8S_POD_NAME=p")
        refused(plugin, "CNI_ARGS pair K=V=W", conf(vf), 4, "invalid pair",
                args="IgnoreUnknown=1;A=b=c")
        refused(plugin, "config without a name", json.dumps({"cniVersion": "1.0.0",
                "type": "sriov", "deviceID": vf}), 7, "\"name\"")

        # a VF held by a pod whose namespace is alive (our own namespace stands in for it); its
        # netdev is in the pod, so the host's net/ is empty: still "allocated", not "no netdev"
        netdir = os.path.join(sysfs, "bus", "pci", "devices", vf, "net")
        for name in os.listdir(netdir):
            subprocess.run(["rm", "-rf", os.path.join(os.path.realpath(netdir), name)], check=True)
        holder = os.path.join(state, "pci", vf)
        with open(holder, "w") as f:
            f.write("/proc/self/ns/net")
        refused(plugin, "a VF another live pod holds", conf(vf), 999, "is already allocated")
        check("the holder's record is kept", open(holder).read() == "/proc/self/ns/net")
        # a holder whose namespace is gone does not count (upstream's IsAllocated); the ADD
        # then fails later here (this host has no such PF), but the stale record is gone
        with open(holder, "w") as f:
            f.write(os.path.join(tmp, "gone-netns"))
        rc, out, _ = plugin.run("ADD", conf(vf))
        check("a stale holder's record is dropped", rc == 1 and not os.path.exists(holder),
              f"rc={rc} out={out}")
        check("nothing recorded for a failed ADD", not os.path.exists(os.path.join(state, "ctr1-net1")))
        os.makedirs(os.path.join(tmp, "nsdir"))
        rc, out, _ = plugin.run("ADD", conf(vf3), netns=os.path.join(tmp, "nsdir"))
        check("a CNI_NETNS that is not a namespace is refused", rc == 1 and
              "failed to open netns" in out.get("msg", ""), str(out))

        # a PF with several netdevs (multi-port, switchdev): upstream takes the first of the
        # sorted names (os.ReadDir in its GetPfName), not the directory's own order
        pf2 = man["pfs"][2]
        pf2_net = os.path.join(sysfs, "bus", "pci", "devices", pf2["pciAddress"], "net")
        for name in ("zz9", "b1", "a0x", "pf9"):
            os.makedirs(os.path.join(os.path.realpath(pf2_net), name))
        listed = os.listdir(pf2_net)
        want = sorted(listed)[0]
        if listed[0] == want:
            print(f"note: {pf2_net} lists {want} first already: the case cannot tell")
        rc, out, _ = plugin.run("ADD", conf(pf2["vfs"][0]["pciAddress"]), cid="multi")
        check(f"a PF with netdevs {listed}: known by the first sorted name, {want}",
              rc == 1 and f"{want} VF 0 " in (out or {}).get("msg", ""), str(out))

        # the pod's namespace (ours stands in) already has an interface of that name: refused
        # before anything is changed (the kernel would move the netdev and fail the rename)
        refused(plugin, "CNI_IFNAME taken in the pod's namespace", conf(vf3), 999,
                "interface lo already exists", ifname="lo")

        # DEL: no record -> success, silently
        rc, out, _ = plugin.run("DEL", conf(vf), cid="never-added")
        check("DEL without a record: success", rc == 0 and out is None, f"rc={rc} out={out}")
        # DEL of a record upstream's plugin wrote, runtime without netns: records released
        upstream = {"cniVersion": "0.4.0", "name": "sriov-net", "type": "sriov",
                    "OrigVfState": {"HostIFName": pf["vfs"][1]["ifname"], "SpoofChk": True,
                                    "Trust": False, "AdminMAC": "00:00:00:00:00:00",
                                    "EffectiveMAC": "4a:0e:5c:c3:b9:1e", "Vlan": 0,
                                    "VlanQoS": 0, "VlanProto": 33024, "MinTxRate": 0,
                                    "MaxTxRate": 0, "LinkState": 0, "MTU": 1500},
                    "Master": pf["ifname"], "MAC": "", "MTU": 1500, "vlan": None,
                    "vlanQoS": None, "vlanProto": None, "deviceID": vf2, "VFID": 1,
                    "min_tx_rate": None, "max_tx_rate": None, "runtimeConfig": {}}
        rec = os.path.join(state, "up-net1")
        with open(rec, "w") as f:
            json.dump(upstream, f)
        with open(os.path.join(state, "pci", vf2), "w") as f:
            f.write("/var/run/netns/gone")
        rc, out, err = plugin.run("DEL", conf(vf2), cid="up", netns="")
        check("DEL of an upstream record without CNI_NETNS: success, records removed",
              rc == 0 and not os.path.exists(rec) and not os.path.exists(os.path.join(state, "pci", vf2)),
              f"rc={rc} out={out} err={err}")
        rc, out, _ = plugin.run("DEL", conf(vf2), cid="up", netns="")
        check("a second DEL: success", rc == 0 and out is None)
        # DEL works from the record: a configuration ADD would refuse does not block it
        with open(rec, "w") as f:
            json.dump(upstream, f)
        rc, out, err = plugin.run("DEL", json.dumps({"cniVersion": "1.0.0", "name": "x",
                                                     "type": "sriov", "vlan": 5000}),
                                  cid="up", netns="")
        check("DEL with a config ADD would refuse (no deviceID, vlan 5000): success",
              rc == 0 and not os.path.exists(rec), f"rc={rc} out={out} err={err}")
        rc, out, _ = plugin.run("DEL", "{nope", cid="up", netns="")
        check("DEL with stdin that is not JSON: decode error", rc == 1 and out["code"] == 6, str(out))

        rc, out, _ = plugin.run("CHECK", conf(vf, cniVersion="0.3.1"))
        check("CHECK refused for cniVersion 0.3.1", rc == 1 and out["code"] == 1, str(out))
        rc, out, _ = plugin.run("CHECK", conf(vf), cid="never-added")
        check("CHECK of an attachment that does not exist fails", rc == 1 and
              "no attachment" in out.get("msg", ""), str(out))

        needed = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
        # A sanitizer build adds its runtimes; they are not the plugin's choice.
        libs = sorted(l.split("[")[1].split("]")[0] for l in needed.splitlines()
                      if "NEEDED" in l and not l.split("[")[1].startswith(("libasan", "libubsan")))
        check("links libnl-3, jansson and libc only", libs ==
              ["libc.so.6", "libjansson.so.4", "libnl-3.so.200"], str(libs))

        # the real-netlink DEL case, in a namespace of its own (root only)
        if os.geteuid() != 0 or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
            print("skip DEL with an altname: needs root for private network namespaces")
        else:
            p = subprocess.run(["unshare", "-n", sys.executable, os.path.abspath(__file__),
                                "--del-altname", binary], capture_output=True, text=True,
                               timeout=40)
            print(p.stdout + p.stderr, end="")
            check("DEL with an altname equal to the host name, and with a name taken in the "
                  "host (own namespace)",
                  p.returncode == 0, f"rc={p.returncode}")

    print(f"check-cni: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
