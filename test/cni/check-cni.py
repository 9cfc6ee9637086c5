#!/usr/bin/env python3
"""The sriov CNI plugin binary on this host (no SR-IOV here): everything that is decided before
the first netlink request, on a generated sysfs tree (test/sysfs-gen). Bad input, hostile input
included (path-like deviceIDs, values of the wrong type, a CNI_NETNS that is a FIFO, a file or
the plugin's own namespace), gets a CNI error JSON and exit 1 and leaves the records directory as
it was; a deviceID outside the sriov-agent's pools is refused unless the node allows any VF;
DEL without a record, of an upstream-written record, of an unreadable record, and a late DEL of
an attachment whose VF another pod holds now succeed without touching that pod's VF; a DEL that
cannot tell whether the VF is still there fails and keeps the records; ADD reads the VF after
taking its lock; VERSION/STATUS/GC; the binary links only libnl-3, jansson and the
PodResources client's libraries (libsystemd, nghttp2, protobuf-c). As root, in
private namespaces: DEL never takes a link for the VF by its name alone (a pod that renamed its
VF and made a veth called net1 keeps both). The real-kernel half is the lab scenario
test/vm/scenarios/07-cni.sh.

    check-cni.py PLUGIN"""
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time

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
    def __init__(self, binary, sysfs, state, agent_dir=None):
        self.binary, self.sysfs, self.state = binary, sysfs, state
        self.agent_dir = agent_dir or os.path.join(state, "no-agent-records")
        self.any_vf_file = os.path.join(os.path.dirname(state), "allow-any-vf")

    def env(self, command, netns, ifname, cid, args, extra_env):
        env = {"PATH": "/usr/bin:/bin", "CNI_COMMAND": command, "CNI_CONTAINERID": cid,
               "CNI_IFNAME": ifname, "CNI_PATH": "/nonexistent",
               "SRIOV_CNI_STATE_DIR": self.state, "SRIOV_CNI_SYSFS_ROOT": self.sysfs,
               "SRIOV_CNI_AGENT_STATE_DIR": self.agent_dir,
               "SRIOV_CNI_ANY_VF_FILE": self.any_vf_file}
        if netns is not None:
            env["CNI_NETNS"] = netns
        if args:
            env["CNI_ARGS"] = args
        env.update(extra_env or {})
        return env

    @staticmethod
    def answer(rc, stdout, stderr):
        try:
            out = json.loads(stdout) if stdout.strip() else None
        except ValueError:
            out = {"unparsable": stdout.decode(errors="replace")}
        return rc, out, stderr.decode(errors="replace")

    def run(self, command, stdin="", netns="/proc/self/ns/net", ifname="net1", cid="ctr1",
            args=None, extra_env=None, timeout=30):
        """(exit status, stdout JSON, stderr); exit status None when it did not end in time."""
        env = self.env(command, netns, ifname, cid, args, extra_env)
        try:
            p = subprocess.run([self.binary], input=stdin.encode(), env=env, capture_output=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, None, f"did not end within {timeout} s"
        return self.answer(p.returncode, p.stdout, p.stderr)

    def start(self, command, stdin="", netns="/proc/self/ns/net", ifname="net1", cid="ctr1"):
        p = subprocess.Popen([self.binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE,
                             env=self.env(command, netns, ifname, cid, None, None))
        p.stdin.write(stdin.encode())
        p.stdin.close()
        return p

    def wait(self, p):
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return None, None, "did not end within 30 s"
        return self.answer(p.returncode, p.stdout.read(), p.stderr.read())


def write_agent_record(agent_dir, pf, groups):
    """The sriov-agent's record of a PF it manages (<state-dir>/<pf-pci>.json): its pools."""
    os.makedirs(agent_dir, exist_ok=True)
    record = {"pciAddress": pf["pciAddress"], "originalMtu": 1500,
              "interface": {"pciAddress": pf["pciAddress"], "name": pf["ifname"], "numVfs":
                            len(pf["vfs"]), "vfGroups": [
                                {"resourceName": name, "deviceType": "netdevice",
                                 "vfRange": rng, "policyName": "p-" + name}
                                for name, rng in groups]}}
    with open(os.path.join(agent_dir, pf["pciAddress"] + ".json"), "w") as f:
        json.dump(record, f)


@contextlib.contextmanager
def pod_namespace():
    """A live network namespace standing in for a pod's: /proc/PID/ns/net of a sleeping
    process in its own namespace; None when this user cannot make one."""
    if os.geteuid() != 0 or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        yield None
        return
    pod = subprocess.Popen(["unshare", "-n", "sleep", "120"])
    try:
        netns = f"/proc/{pod.pid}/ns/net"
        for _ in range(200):  # until sleep runs in its own namespace
            if os.readlink(netns) != os.readlink("/proc/self/ns/net"):
                break
            time.sleep(0.01)
        yield netns
    finally:
        pod.kill()
        pod.wait()


def record(pf, vf_pci, vf_index, host_name, **conf_fields):
    """A record as an ADD writes it, the VF's originals as a host without such a PF reports
    them: restoring them asks nothing of the PF (this host has no such PF)."""
    r = {"cniVersion": "1.0.0", "name": "highnet", "type": "sriov", "ipam": {}, "dns": {},
         "OrigVfState": {"HostIFName": host_name, "SpoofChk": False, "Trust": False,
                         "AdminMAC": "", "EffectiveMAC": "", "Vlan": 0, "VlanQoS": 0,
                         "VlanProto": 33024, "MinTxRate": 0, "MaxTxRate": 0, "LinkState": 0,
                         "MTU": 0},
         "Master": pf["ifname"], "MAC": "", "MTU": None, "deviceID": vf_pci, "VFID": vf_index,
         "vlan": None, "vlanQoS": None, "vlanProto": None, "min_tx_rate": None,
         "max_tx_rate": None, "runtimeConfig": {}}
    r.update(conf_fields)
    return r


def stage_attachment(state, cid, rec, vf, holder):
    """The two records of an attachment: <cid>-net1 (rec: a dict, or raw text) and VF vf's
    allocation record naming holder (None: no allocation record)."""
    os.makedirs(os.path.join(state, "pci"), exist_ok=True)
    with open(os.path.join(state, f"{cid}-net1"), "w") as f:
        f.write(rec if isinstance(rec, str) else json.dumps(rec))
    if holder is not None:
        with open(os.path.join(state, "pci", vf), "w") as f:
            f.write(holder)


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


def hostile(plugin, desc, stdin, want, **kw):
    """A value as an attacker writing the NAD (or the pod annotations behind CNI_ARGS) would:
    a CNI error naming the bad field or variable (want), nothing recorded, no crash."""
    before = snapshot(plugin.state)
    rc, out, err = plugin.run("ADD", stdin, **kw)
    ok = rc == 1 and isinstance(out, dict) and out.get("code") in (4, 6, 7) and \
        want in out.get("msg", "")
    check(f"hostile {desc}: a CNI error", ok, f"rc={rc} out={out} err={err[:300]}")
    check(f"hostile {desc}: records unchanged", snapshot(plugin.state) == before)


def ip(*args, ns_pid=None):
    cmd = (["nsenter", "-t", str(ns_pid), "-n"] if ns_pid else []) + ["ip"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True)


def del_impostor_case(binary):
    """A pod with CAP_NET_ADMIN renames its VF (eth9) and makes a veth of its own called net1.
    DEL must not take the veth for the VF: it used to move it into the host under the VF's
    name (its peer staying in the pod), leaving the VF in the pod. The VF stand-in here is a
    veth too, which no driver reports as that PCI device: DEL finds no link that is the VF, so
    it fails (and is retried) and moves nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        sysfs, state = os.path.join(tmp, "sys"), os.path.join(tmp, "state")
        man = json.loads(subprocess.run([sys.executable, GEN, "--out", sysfs, "--manifest"],
                                        check=True, capture_output=True).stdout)
        pf = man["pfs"][0]
        vf, host_name = pf["vfs"][1]["pciAddress"], pf["vfs"][1]["ifname"]
        # the VF's netdev is in the pod: the host's sysfs lists none under the device
        netdir = os.path.realpath(os.path.join(sysfs, "bus", "pci", "devices", vf, "net"))
        subprocess.run(["rm", "-rf", os.path.join(netdir, host_name)], check=True)
        with pod_namespace() as netns:
            pod = int(netns.split("/")[2])
            ip("link", "add", host_name, "type", "veth", "peer", "name", "peer1")
            ip("link", "set", host_name, "netns", str(pod), "name", "eth9")
            ip("link", "add", "net1", "type", "veth", "peer", "name", "imp1", ns_pid=pod)
            stage_attachment(state, "imp", record(pf, vf, 1, host_name), vf, netns)
            before = snapshot(state)
            rc, out, err = Plugin(binary, sysfs, state).run("DEL", conf(vf), cid="imp",
                                                            netns=netns)
            check("DEL with the VF renamed and a veth called net1 in the pod: fails, naming "
                  "the device", rc == 1 and "is that device" in (out or {}).get("msg", ""),
                  f"rc={rc} out={out} err={err}")
            check("the pod's own net1 is still in the pod",
                  ip("link", "show", "net1", ns_pid=pod).returncode == 0)
            check(f"nothing called {host_name} or net1 appeared in the host",
                  ip("link", "show", host_name).returncode != 0 and
                  ip("link", "show", "net1").returncode != 0)
            check("the records are kept for the retry", snapshot(state) == before)


def add_cases(plugin, pf, tmp):
    """ADD refusals that need a pod namespace other than the plugin's own (root)."""
    vf, vf3 = pf["vfs"][0]["pciAddress"], pf["vfs"][2]["pciAddress"]
    state = plugin.state
    with pod_namespace() as podns:
        if podns is None:
            print("skip ADD cases in a pod namespace: needs root for network namespaces")
            return
        # a VF held by a pod whose namespace is alive; its netdev is in the pod, so the host's
        # net/ is empty: still "allocated", not "no netdev"
        netdir = os.path.join(plugin.sysfs, "bus", "pci", "devices", vf, "net")
        saved = os.path.join(tmp, "saved-net")
        os.rename(os.path.realpath(netdir), saved)
        os.makedirs(os.path.realpath(netdir))
        holder = os.path.join(state, "pci", vf)
        with open(holder, "w") as f:
            f.write(podns)
        refused(plugin, "a VF another live pod holds", conf(vf), 999, "is already allocated",
                netns=podns)
        check("the holder's record is kept", open(holder).read() == podns)
        # a holder whose namespace is gone does not count (upstream's IsAllocated); the ADD
        # then fails later here (this host has no such PF), but the stale record is gone
        with open(holder, "w") as f:
            f.write(os.path.join(tmp, "gone-netns"))
        rc, out, _ = plugin.run("ADD", conf(vf), netns=podns)
        check("a stale holder's record is dropped", rc == 1 and not os.path.exists(holder),
              f"rc={rc} out={out}")
        check("nothing recorded for a failed ADD",
              not os.path.exists(os.path.join(state, "ctr1-net1")))
        os.rmdir(os.path.realpath(netdir))
        os.rename(saved, os.path.realpath(netdir))

        # the pod's namespace already has an interface of that name: refused before anything
        # is changed (the kernel would move the netdev and fail the rename)
        refused(plugin, "CNI_IFNAME taken in the pod's namespace", conf(vf3), 999,
                "interface lo already exists", ifname="lo", netns=podns)

        # everything about the VF is read under its lock: here its PF loses its netdev (a
        # firmware reset) while the ADD waits; it used to go on with the PF name read before
        lock_dir = os.path.join(state, "pci", "vf_lock")
        os.makedirs(lock_dir, exist_ok=True)
        pf_net = os.path.join(plugin.sysfs, "bus", "pci", "devices", pf["pciAddress"], "net")
        with open(os.path.join(lock_dir, vf3 + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            proc = plugin.start("ADD", conf(vf3), netns=podns)
            time.sleep(0.5)
            os.rename(os.path.join(os.path.realpath(pf_net), pf["ifname"]),
                      os.path.join(tmp, "pf-netdev"))
            fcntl.flock(lock, fcntl.LOCK_UN)
            rc, out, err = plugin.wait(proc)
        os.rename(os.path.join(tmp, "pf-netdev"),
                  os.path.join(os.path.realpath(pf_net), pf["ifname"]))
        check("ADD reads the VF after taking its lock (its PF lost its netdev meanwhile)",
              rc == 1 and "has no netdev" in (out or {}).get("msg", ""),
              f"rc={rc} out={out} err={err}")

        # a late DEL: pod A's namespace is gone, pod B holds the VF now; A's DEL may remove
        # only its own record, and must not put A's originals (VLAN) on B's VF
        vf4 = pf["vfs"][3]["pciAddress"]
        stage_attachment(state, "podA", record(pf, vf4, 3, pf["vfs"][3]["ifname"], vlan=100,
                                               vlanQoS=0, vlanProto="802.1q"), vf4, podns)
        rc, out, err = plugin.run("DEL", conf(vf4), cid="podA",
                                  netns=os.path.join(tmp, "podA-gone"))
        check("a late DEL of a VF another pod holds: success", rc == 0,
              f"rc={rc} out={out} err={err}")
        check("... it removes its own record only, and says why",
              not os.path.exists(os.path.join(state, "podA-net1")) and
              open(os.path.join(state, "pci", vf4)).read() == podns and
              "allocated to another attachment" in err, err)
        os.unlink(os.path.join(state, "pci", vf4))

        # a DEL whose CNI_NETNS is a regular file while the pod (its namespace) lives: it used
        # to pass as "a late DEL of another attachment's VF" (the path is not the holder's),
        # report success and drop the record, leaving the VF in the pod with no record for the
        # DEL with the real namespace to release it by
        plain = os.path.join(tmp, "not-a-netns-del")
        open(plain, "w").close()
        stage_attachment(state, "live", record(pf, vf4, 3, pf["vfs"][3]["ifname"]), vf4, podns)
        before = snapshot(state)
        rc, out, err = plugin.run("DEL", conf(vf4), cid="live", netns=plain)
        msg = (out or {}).get("msg", "")
        check("DEL with a CNI_NETNS that is a regular file while the pod lives: a CNI error "
              "naming CNI_NETNS", rc == 1 and (out or {}).get("code") == 4 and
              f'CNI_NETNS "{plain}" is not a network namespace' in msg and vf4 in msg and
              "not released" in msg, f"rc={rc} out={out} err={err}")
        check("... the attachment and allocation records are kept for the real DEL",
              snapshot(state) == before, f"{sorted(snapshot(state))} err={err}")
        os.unlink(os.path.join(state, "live-net1"))
        os.unlink(os.path.join(state, "pci", vf4))


def netns_cases(plugin, pf, tmp):
    """CNI_NETNS as a FIFO (an open that blocked ADD forever with the VF lock held), a regular
    file, another kind of namespace, the plugin's own namespace."""
    vf3 = pf["vfs"][2]["pciAddress"]
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    before = snapshot(plugin.state)
    rc, out, err = plugin.run("ADD", conf(vf3), netns=fifo, timeout=10)
    check("a CNI_NETNS that is a FIFO: refused at once",
          rc == 1 and "not a network namespace" in (out or {}).get("msg", ""),
          f"rc={rc} out={out} err={err}")
    check("a CNI_NETNS that is a FIFO: records unchanged", snapshot(plugin.state) == before)
    plain = os.path.join(tmp, "plain-file")
    open(plain, "w").close()
    refused(plugin, "a CNI_NETNS that is a regular file", conf(vf3), 999,
            "not a network namespace", netns=plain)
    os.makedirs(os.path.join(tmp, "nsdir"))
    refused(plugin, "a CNI_NETNS that is a directory", conf(vf3), 999, "failed to open netns",
            netns=os.path.join(tmp, "nsdir"))
    refused(plugin, "a CNI_NETNS that is a mount namespace", conf(vf3), 999,
            "not a network namespace", netns="/proc/self/ns/mnt")
    refused(plugin, "the plugin's own namespace as CNI_NETNS", conf(vf3), 4,
            "the plugin's own network namespace", netns="/proc/self/ns/net")


def pool_cases(plugin, pf, other_pf):
    """deviceID must name a VF of one of the sriov-agent's pools on this node."""
    refused(plugin, "a VF outside every pool of its PF", conf(pf["vfs"][6]["pciAddress"]), 7,
            "VF 6 of PF 0000:3b:00.0 is in none of the pools")
    refused(plugin, "a VF of a PF the agent does not manage",
            conf(other_pf["vfs"][0]["pciAddress"]), 7, "it manages no VF of that PF")
    # the node-side setting, never a NAD field: the check is off, the ADD goes on (and fails
    # later here, where no such PF exists)
    open(plugin.any_vf_file, "w").close()
    rc, out, _ = plugin.run("ADD", conf(other_pf["vfs"][0]["pciAddress"]))
    os.unlink(plugin.any_vf_file)
    check("with the node's allow-any-VF file the pool check is off",
          rc == 1 and "pools" not in (out or {}).get("msg", ""), str(out))


def pf_netdev_case(plugin, sysfs, other_pf):
    """A PF with several netdevs (multi-port, switchdev): upstream takes the first of the
    sorted names (os.ReadDir in its GetPfName), not the directory's own order."""
    pf_net = os.path.join(sysfs, "bus", "pci", "devices", other_pf["pciAddress"], "net")
    for name in ("zz9", "b1", "a0x", "pf9"):
        os.makedirs(os.path.join(os.path.realpath(pf_net), name))
    listed = os.listdir(pf_net)
    want = sorted(listed)[0]
    if listed[0] == want:
        print(f"note: {pf_net} lists {want} first already: the case cannot tell")
    with pod_namespace() as podns:
        if podns is None:
            print("skip the PF netdev name case: needs root for network namespaces")
            return
        open(plugin.any_vf_file, "w").close()  # the agent manages no VF of this PF
        rc, out, _ = plugin.run("ADD", conf(other_pf["vfs"][0]["pciAddress"]), cid="multi",
                                netns=podns)
        os.unlink(plugin.any_vf_file)
    check(f"a PF with netdevs {listed}: known by the first sorted name, {want}",
          rc == 1 and f"{want} VF 0 " in (out or {}).get("msg", ""), str(out))


def hostile_cases(plugin, vf):
    hostile(plugin, "path-like deviceID", conf("../../../../etc/passwd"), "\"deviceID\"")
    hostile(plugin, "deviceID with a path after it", conf(vf + "/../../../x"), "\"deviceID\"")
    hostile(plugin, "deviceID of 64 KiB", conf("0" * 65536), "\"deviceID\"")
    hostile(plugin, "deviceID not a string", json.dumps(
        {"cniVersion": "1.0.0", "name": "n", "type": "sriov", "deviceID": 5}), "\"deviceID\"")
    hostile(plugin, "vlan as a string", conf(vf, vlan="100"), "\"vlan\"")
    hostile(plugin, "vlan 1e300", conf(vf).replace("}", ', "vlan": 1e300}'), "\"vlan\"")
    hostile(plugin, "vlan 2^64", conf(vf).replace("}", ', "vlan": 18446744073709551616}'),
            "too big integer")
    hostile(plugin, "max_tx_rate negative", conf(vf, max_tx_rate=-1), "\"max_tx_rate\"")
    hostile(plugin, "mac not a string", conf(vf, mac=["02:00:00:00:00:01"]), "\"mac\"")
    hostile(plugin, "spoofchk not a string", conf(vf, spoofchk=True), "\"spoofchk\"")
    hostile(plugin, "ipam not an object", conf(vf, ipam="host-local"), "\"ipam\"")
    hostile(plugin, "network name with a /", conf(vf, name="../../etc"), "\"name\"")
    hostile(plugin, "network name of 300 bytes", conf(vf, name="n" * 300), "\"name\"")
    hostile(plugin, "CNI_IFNAME of 16 bytes", conf(vf), "CNI_IFNAME", ifname="a" * 16)
    hostile(plugin, "CNI_IFNAME with a /", conf(vf), "CNI_IFNAME", ifname="../x")
    hostile(plugin, "CNI_CONTAINERID with a /", conf(vf), "CNI_CONTAINERID",
            cid="../../../etc/x")
    hostile(plugin, "CNI_ARGS MAC not a MAC", conf(vf), "CNI_ARGS MAC", args="MAC=../../x")


def del_cases(plugin, pf, tmp):
    state = plugin.state
    vf2 = pf["vfs"][1]["pciAddress"]
    # DEL: no record -> success, silently
    rc, out, _ = plugin.run("DEL", conf(vf2), cid="never-added")
    check("DEL without a record: success", rc == 0 and out is None, f"rc={rc} out={out}")
    # DEL of a record upstream's plugin wrote, runtime without netns, the VFs destroyed
    # meanwhile (its address is no device any more): records released
    gone_vf = "0000:3b:0f.7"
    upstream = {"cniVersion": "0.4.0", "name": "sriov-net", "type": "sriov",
                "OrigVfState": {"HostIFName": pf["vfs"][1]["ifname"], "SpoofChk": True,
                                "Trust": False, "AdminMAC": "00:00:00:00:00:00",
                                "EffectiveMAC": "4a:0e:5c:c3:b9:1e", "Vlan": 0,
                                "VlanQoS": 0, "VlanProto": 33024, "MinTxRate": 0,
                                "MaxTxRate": 0, "LinkState": 0, "MTU": 1500},
                "Master": pf["ifname"], "MAC": "", "MTU": 1500, "vlan": None,
                "vlanQoS": None, "vlanProto": None, "deviceID": gone_vf, "VFID": 1,
                "min_tx_rate": None, "max_tx_rate": None, "runtimeConfig": {}}
    rec = os.path.join(state, "up-net1")
    stage_attachment(state, "up", upstream, gone_vf, "/var/run/netns/gone")
    rc, out, err = plugin.run("DEL", conf(gone_vf), cid="up", netns="")
    check("DEL of an upstream record without CNI_NETNS, VF gone: success, records removed",
          rc == 0 and not os.path.exists(rec) and
          not os.path.exists(os.path.join(state, "pci", gone_vf)),
          f"rc={rc} out={out} err={err}")
    rc, out, _ = plugin.run("DEL", conf(gone_vf), cid="up", netns="")
    check("a second DEL: success", rc == 0 and out is None)
    # DEL works from the record: a configuration ADD would refuse does not block it
    stage_attachment(state, "up", upstream, gone_vf, None)
    rc, out, err = plugin.run("DEL", json.dumps({"cniVersion": "1.0.0", "name": "x",
                                                 "type": "sriov", "vlan": 5000}),
                              cid="up", netns="")
    check("DEL with a config ADD would refuse (no deviceID, vlan 5000): success",
          rc == 0 and not os.path.exists(rec), f"rc={rc} out={out} err={err}")
    rc, out, _ = plugin.run("DEL", "{nope", cid="up", netns="")
    check("DEL with stdin that is not JSON: decode error", rc == 1 and out["code"] == 6, str(out))

    # a record that cannot be parsed (corrupt, or one too large to read) must not keep the
    # pod Terminating forever: DEL restores what the configuration's deviceID finds, and says
    # that the rest was not restored
    vf6 = pf["vfs"][5]["pciAddress"]
    dead = os.path.join(tmp, "dead-netns")
    for desc, text in (("corrupt", "{\"deviceID\": "), ("of 3 MiB", " " * (3 << 20) + "{}")):
        stage_attachment(state, "bad", text, vf6, dead)
        rc, out, err = plugin.run("DEL", conf(vf6), cid="bad", netns=dead)
        check(f"DEL of a {desc} record: success, records removed, saying what was not restored",
              rc == 0 and not os.path.exists(os.path.join(state, "bad-net1")) and
              not os.path.exists(os.path.join(state, "pci", vf6)) and
              "were not restored" in err, f"rc={rc} out={out} err={err}")

    # only "no such device" means the VF is gone: a CNI_NETNS that is no network namespace, or
    # a PF whose netdev is missing (a firmware reset), fail the DEL so that it is retried
    vf5 = pf["vfs"][4]["pciAddress"]
    plain = os.path.join(tmp, "not-a-netns")
    open(plain, "w").close()
    stage_attachment(state, "unsure", record(pf, vf5, 4, pf["vfs"][4]["ifname"]), vf5, plain)
    before = snapshot(state)
    rc, out, err = plugin.run("DEL", conf(vf5), cid="unsure", netns=plain)
    check("DEL with a CNI_NETNS that is not a network namespace: fails, records kept",
          rc == 1 and "not a network namespace" in (out or {}).get("msg", "") and
          snapshot(state) == before, f"rc={rc} out={out} err={err}")
    with open(os.path.join(state, "pci", vf5), "w") as f:
        f.write(dead)
    before = snapshot(state)
    pf_net = os.path.join(plugin.sysfs, "bus", "pci", "devices", pf["pciAddress"], "net")
    os.rename(os.path.join(os.path.realpath(pf_net), pf["ifname"]),
              os.path.join(tmp, "pf-netdev"))
    rc, out, err = plugin.run("DEL", conf(vf5), cid="unsure", netns=dead)
    os.rename(os.path.join(tmp, "pf-netdev"),
              os.path.join(os.path.realpath(pf_net), pf["ifname"]))
    check("DEL while the PF has no netdev: try again later (11), records kept",
          rc == 1 and (out or {}).get("code") == 11 and snapshot(state) == before,
          f"rc={rc} out={out} err={err}")
    # the pod's namespace is gone from its path but its VF has not come back to the host (the
    # kernel is still tearing the namespace down, or something holds it): DEL waits, then asks
    # to be retried; it used to drop the records, and the VF came back later under the pod's
    # interface name with nothing left to rename it
    netdir = os.path.realpath(os.path.join(plugin.sysfs, "bus", "pci", "devices", vf5, "net"))
    os.rename(os.path.join(netdir, pf["vfs"][4]["ifname"]), os.path.join(tmp, "vf5-netdev"))
    t0 = time.monotonic()
    rc, out, err = plugin.run("DEL", conf(vf5), cid="unsure", netns=dead)
    waited = time.monotonic() - t0
    os.rename(os.path.join(tmp, "vf5-netdev"), os.path.join(netdir, pf["vfs"][4]["ifname"]))
    check("DEL while the VF's netdev has not come back from a gone namespace: waits, then "
          "try again later (11), records kept",
          rc == 1 and (out or {}).get("code") == 11 and "has not come back" in out["msg"] and
          waited > 5 and snapshot(state) == before, f"rc={rc} out={out} err={err}")
    os.unlink(os.path.join(state, "unsure-net1"))
    os.unlink(os.path.join(state, "pci", vf5))


def ib_sriov_cases(binary, sysfs, state, agent_dir, vf, tmp):
    """The same binary under the name ib-sriov (as installed beside sriov) answers as upstream
    ib-sriov-cni's type: its GUID fields are read and checked before anything changes."""
    link = os.path.join(tmp, "ib-sriov")
    os.symlink(binary, link)
    ib = Plugin(link, sysfs, state, agent_dir)
    p = subprocess.run([link], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    check("started as ib-sriov it says so", p.returncode == 0 and
          "CNI ib-sriov plugin" in p.stderr, p.stderr)
    rc, out, _ = ib.run("VERSION")
    check("ib-sriov VERSION", rc == 0 and "1.0.0" in out["supportedVersions"], str(out))
    ibconf = lambda **kw: conf(vf, type="ib-sriov", **kw)  # noqa: E731
    refused(ib, "ib-sriov: runtimeConfig.infinibandGUID with wrong characters",
            ibconf(runtimeConfig={"infinibandGUID": "02:00:00:00:00:00:00:zz"}), 7,
            "runtimeConfig.infinibandGUID is \"02:00:00:00:00:00:00:zz\": not a GUID")
    refused(ib, "ib-sriov: an all-zero GUID",
            ibconf(runtimeConfig={"infinibandGUID": "00:00:00:00:00:00:00:00"}), 7, "all-zero")
    refused(ib, "ib-sriov: CNI_ARGS GUID= that is not a GUID", ibconf(), 4, "CNI_ARGS GUID",
            args="GUID=02:00")
    refused(ib, "ib-sriov: rdmaIsolation not a boolean", ibconf(rdmaIsolation="yes"), 7,
            "\"rdmaIsolation\"")
    # sriov reads CNI_ARGS GUID= as a known key (no IgnoreUnknown needed), and ignores it
    plugin = Plugin(binary, sysfs, state, agent_dir)
    rc, out, _ = plugin.run("ADD", conf(vf, vlan=4095), args="GUID=02:00:00:00:00:00:00:01")
    check("sriov: CNI_ARGS GUID= is not an unknown argument", rc == 1 and
          "\"vlan\" is 4095" in out.get("msg", ""), str(out))


def main():
    if sys.argv[1] == "--netns":
        del_impostor_case(os.path.abspath(sys.argv[2]))
        print(f"check-cni (in private namespaces): {len(FAILURES)} failure(s)")
        return 1 if FAILURES else 0
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        sysfs, state = os.path.join(tmp, "sys"), os.path.join(tmp, "state")
        man = json.loads(subprocess.run([sys.executable, GEN, "--out", sysfs, "--manifest"],
                                        check=True, capture_output=True).stdout)
        pf, other_pf = man["pfs"][0], man["pfs"][2]
        vf = pf["vfs"][0]["pciAddress"]
        agent_dir = os.path.join(tmp, "agent")
        write_agent_record(agent_dir, pf, [("net_a", "0-3"), ("net_b", "4-5")])
        plugin = Plugin(binary, sysfs, state, agent_dir)
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

        ib_sriov_cases(binary, sysfs, state, agent_dir, vf, tmp)
        pool_cases(plugin, pf, other_pf)
        pf_netdev_case(plugin, sysfs, other_pf)
        hostile_cases(plugin, vf)
        netns_cases(plugin, pf, tmp)
        add_cases(plugin, pf, tmp)
        del_cases(plugin, pf, tmp)

        rc, out, _ = plugin.run("CHECK", conf(vf, cniVersion="0.3.1"))
        check("CHECK refused for cniVersion 0.3.1", rc == 1 and out["code"] == 1, str(out))
        rc, out, _ = plugin.run("CHECK", conf(vf), cid="never-added")
        check("CHECK of an attachment that does not exist fails", rc == 1 and
              "no attachment" in out.get("msg", ""), str(out))
        leftovers = sorted(k for k in snapshot(state))
        check("no records left behind", leftovers == [], str(leftovers))

        needed = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
        # A sanitizer build adds its runtimes; they are not the plugin's choice.
        libs = sorted(l.split("[")[1].split("]")[0] for l in needed.splitlines()
                      if "NEEDED" in l and not l.split("[")[1].startswith(("libasan", "libubsan")))
        # libsystemd (sd-event), nghttp2 and protobuf-c: the kubelet's PodResources client
        check("links libnl-3, jansson, the PodResources client's libraries and libc only",
              libs == ["libc.so.6", "libjansson.so.4", "libnghttp2.so.14", "libnl-3.so.200",
                       "libprotobuf-c.so.1", "libsystemd.so.0"], str(libs))

        # the cases with links in namespaces, in a namespace of their own (root only)
        if os.geteuid() != 0 or subprocess.run(["unshare", "-n", "true"]).returncode != 0:
            print("skip DEL of a renamed VF: needs root for private network namespaces")
        else:
            p = subprocess.run(["unshare", "-n", sys.executable, os.path.abspath(__file__),
                                "--netns", binary], capture_output=True, text=True,
                               timeout=40)
            print(p.stdout + p.stderr, end="")
            check("DEL never takes a link for the VF by its name alone (own namespace)",
                  p.returncode == 0, f"rc={p.returncode}")

    print(f"check-cni: {len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
