#!/usr/bin/env python3
"""`sriov-agent plan --kubeconfig --node-name`: preview a migration against a live cluster.

kubectl (the real client) puts the CRDs, two policies, the node's label and the
supported-nic-ids ConfigMap into the fake API server; `plan` must read the namespace's policies,
the node's labels and the ConfigMap, plan on this node's (generated) hardware, and write
nothing: no NodeState, no Event, no change under the sysfs root.
Usage: test-plan-cluster.py SRIOV_AGENT SRCDIR KUBECTL"""
import json
import os
import subprocess
import sys
import tempfile

AGENT, SRC, KUBECTL = sys.argv[1], sys.argv[2], sys.argv[3]
NODE, NS = "worker-1", "sriov-network-operator"
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)


def policy(name, pf, num_vfs):
    return json.dumps({"apiVersion": "sriovnetwork.openshift.io/v1",
                       "kind": "SriovNetworkNodePolicy",
                       "metadata": {"name": name, "namespace": NS},
                       "spec": {"resourceName": name, "numVfs": num_vfs,
                                "nodeSelector": {"migrate": "yes"},
                                "nicSelector": {"pfNames": [pf]}}})


def main():
    with tempfile.TemporaryDirectory() as work:
        env = dict(os.environ, HOME=os.path.join(work, "home"),
                   KUBECONFIG=os.path.join(work, "kubeconfig"))
        os.makedirs(env["HOME"])
        api = subprocess.Popen(
            [sys.executable, os.path.join(SRC, "test/fake-apiserver/fake_apiserver.py"),
             "--port", "0", "--node", NODE, "--kubeconfig-out", env["KUBECONFIG"]],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            api.stdout.readline()

            def kubectl(*args, stdin=None):
                r = subprocess.run([KUBECTL, *args], env=env, input=stdin, capture_output=True,
                                   text=True, timeout=60)
                check(r.returncode == 0, "kubectl " + " ".join(args[:3]) + " " + r.stderr[-200:])
                return r.stdout

            sysfs = os.path.join(work, "sys")
            man = json.loads(subprocess.check_output(
                [sys.executable, os.path.join(SRC, "test/sysfs-gen/gen-sysfs.py"), "--out", sysfs,
                 "--pf", "xxv710:ens803f0:0", "--pf", "i350:eno1:0", "--manifest"]))
            addr = {p["ifname"]: p["pciAddress"] for p in man["pfs"]}
            kubectl("apply", "-f", os.path.join(SRC, "crds"))
            kubectl("apply", "-f", os.path.join(SRC, "test/kube/namespace.yaml"))
            kubectl("apply", "-f", "-", stdin=policy("fast", "ens803f0", 4))
            kubectl("apply", "-f", "-", stdin=policy("mgmt", "eno1", 2))
            kubectl("label", "node", NODE, "migrate=yes")

            def plan():
                r = subprocess.run([AGENT, "plan", "--kubeconfig", env["KUBECONFIG"],
                                    "--node-name", NODE, "--sysfs-root", sysfs, "-o", "json"],
                                   capture_output=True, text=True, timeout=30)
                try:
                    return r.returncode, json.loads(r.stdout), r.stderr
                except json.JSONDecodeError:
                    return r.returncode, None, r.stderr

            rc, out, err = plan()
            check(rc == 0 and out is not None, f"plan --kubeconfig exits 0 with JSON ({rc}: {err[-300:]})")
            st = {p["name"]: p for p in (out or {}).get("policies", [])}
            check(st.get("fast", {}).get("status") == "applied" and
                  "SriovNetworkNodePolicy %s/fast" % NS in st.get("fast", {}).get("reason", ""),
                  f"policy fast from the API applied, named by its object: {st.get('fast')}")
            check(st.get("mgmt", {}).get("status") == "not-selected",
                  f"I350 not in the built-in list: mgmt not-selected: {st.get('mgmt')}")
            desired = {i["pciAddress"]: i for i in (out or {}).get("desired", {}).get("interfaces", [])}
            check(desired.get(addr["ens803f0"], {}).get("numVfs") == 4,
                  f"desired: ens803f0 with 4 VFs: {desired}")

            kubectl("apply", "-f", "-", stdin=json.dumps({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "supported-nic-ids", "namespace": NS},
                "data": {"Intel_igb_I350": "8086 1521 1520"}}))
            rc, out, err = plan()
            st = {p["name"]: p for p in (out or {}).get("policies", [])}
            check(rc == 0 and st.get("mgmt", {}).get("status") == "applied",
                  f"with the supported-nic-ids ConfigMap the I350 is selected: {st.get('mgmt')}")

            kubectl("label", "node", NODE, "migrate-")
            rc, out, err = plan()
            st = {p["name"]: p for p in (out or {}).get("policies", [])}
            check(st.get("fast", {}).get("status") == "not-selected" and
                  "nodeSelector migrate=yes" in st.get("fast", {}).get("reason", ""),
                  f"the node's live labels are used: {st.get('fast')}")

            r = subprocess.run([KUBECTL, "get", "sriovnetworknodestates,events", "-A", "-o",
                                "json"], env=env, capture_output=True, text=True, timeout=60)
            items = json.loads(r.stdout).get("items", []) if r.returncode == 0 else None
            check(items == [], f"plan wrote nothing to the cluster: {r.stdout[-300:]}")
            with open(os.path.join(sysfs, "bus/pci/devices", addr["ens803f0"], "sriov_numvfs")) as f:
                check(f.read().strip() == "0", "nothing changed under the sysfs root")

            rc, out, err = subprocess.run(
                [AGENT, "plan", "--kubeconfig", env["KUBECONFIG"], "--sysfs-root", sysfs],
                capture_output=True, text=True, timeout=30).returncode, None, None
            check(rc == 1, "--kubeconfig without --node-name is refused")
        finally:
            api.kill()
            api.wait()
    if failures:
        sys.exit(1)


main()
