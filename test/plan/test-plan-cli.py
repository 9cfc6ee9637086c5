#!/usr/bin/env python3
"""`sriov-agent plan` on the seed policy and generated sysfs trees.

Checks what a user of the CLI sees: the desired state (one PF with 8 VFs in group
sriov_highnet), the actions, every policy's status and reason, the exit status (0 / 2 / 1),
the reset of a PF recorded in --state-dir, and that nothing under the sysfs root changed.
Usage: test-plan-cli.py SRIOV_AGENT SRCDIR"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

AGENT, SRC = sys.argv[1], sys.argv[2]
GEN = os.path.join(SRC, "test/sysfs-gen/gen-sysfs.py")
POLICIES = os.path.join(SRC, "test/fixtures/policies")
SEED = os.path.join(POLICIES, "highnet-sriov-policy.yaml")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def gen(out, *args):
    r = subprocess.run([sys.executable, GEN, "--out", out, "--manifest", *args],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def plan(*args):
    # as outside a pod: in one, `plan` with no --policies reads the live cluster
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    r = subprocess.run([AGENT, "plan", *args], capture_output=True, text=True, timeout=60,
                       env=env)
    out = None
    if "-o" in args and r.stdout.strip():
        try:
            out = json.loads(r.stdout)
        except json.JSONDecodeError as e:
            check(False, f"plan {args}: stdout is not JSON: {e}: {r.stdout[:200]}")
    return r.returncode, out, r.stdout, r.stderr


def tree_digest(root):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames + dirnames):
            p = os.path.join(dirpath, name)
            h.update(p.encode())
            if os.path.islink(p):
                h.update(os.readlink(p).encode())
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def pf_by_name(manifest, ifname):
    return next(pf for pf in manifest["pfs"] if pf["ifname"] == ifname)


with tempfile.TemporaryDirectory(prefix="sriov-plan-") as tmp:
    seed_root = os.path.join(tmp, "seed")
    manifest = gen(seed_root, "--profile", "seed")
    ens1f0 = pf_by_name(manifest, "ens1f0")["pciAddress"]
    before = tree_digest(seed_root)

    # The "Done when" of the issue: one PF, 8 VFs in group sriov_highnet, exit 0.
    rc, out, _, err = plan("--policies", SEED, "--node-labels", "highnet-node=true",
                           "--sysfs-root", seed_root, "-o", "json")
    check(rc == 0, f"seed plan exits 0 (got {rc}, stderr {err})")
    ifaces = out["desired"]["interfaces"] if out else []
    check(len(ifaces) == 1, f"one desired PF (got {len(ifaces)})")
    if ifaces:
        i = ifaces[0]
        check(i["pciAddress"] == ens1f0 and i["name"] == "ens1f0", f"PF is ens1f0: {i}")
        check(i["numVfs"] == 8 and i["mtu"] == 1500, f"numVfs 8, mtu 1500: {i}")
        check(len(i["vfGroups"]) == 1, "one VF group")
        g = i["vfGroups"][0]
        check(g["resourceName"] == "sriov_highnet" and g["vfRange"] == "0-7" and
              g["deviceType"] == "netdevice" and g["isRdma"] is True and
              g["policyName"] == "highnet-sriov-policy", f"group: {g}")
    if out:
        check(out["policies"] == [{"name": "highnet-sriov-policy", "origin": SEED,
                                   "status": "applied", "reason": out["policies"][0]["reason"]}],
              f"policy status: {out['policies']}")
        # the seed tree already has 8 VFs of MTU 1500 on ens1f0: nothing to do
        check(out["actions"] == [], f"no actions on the seed tree: {out['actions']}")

    # Text output says the same.
    rc, _, text, _ = plan("--policies", SEED, "--node-labels", "highnet-node=true",
                          "--sysfs-root", seed_root)
    check(rc == 0 and "VFs 0-7: sriov_highnet" in text and "applied" in text,
          f"text output: {text}")

    # Labels not matching: not selected, nothing desired, still exit 0.
    rc, out, _, _ = plan("--policies", SEED, "--sysfs-root", seed_root, "-o", "json")
    check(rc == 0, "unlabelled node exits 0")
    if out:
        check(out["desired"]["interfaces"] == [], "unlabelled node: nothing desired")
        check(out["policies"][0]["status"] == "not-selected" and
              "nodeSelector highnet-node=true" in out["policies"][0]["reason"],
              f"not-selected reason: {out['policies'][0]}")

    # Invalid policies beside the seed: exit 2, the valid one still planned, each reason names
    # the file, the policy and the field.
    rc, out, _, _ = plan("--policies", POLICIES, "--policies", os.path.join(POLICIES, "invalid"),
                         "--node-labels", "highnet-node=true", "--sysfs-root", seed_root,
                         "-o", "json")
    check(rc == 2, f"invalid policies exit 2 (got {rc})")
    if out:
        st = {p["name"]: p for p in out["policies"]}
        check(st["highnet-sriov-policy"]["status"] == "applied", "seed still applied")
        check(len(out["desired"]["interfaces"]) == 1, "seed still planned")
        check(st["hostile-names"]["status"] == "invalid" and
              "hostile-names.yaml: policy hostile-names: field spec.nicSelector" in
              st["hostile-names"]["reason"], f"hostile: {st['hostile-names']}")
        check(st["wrong-types"]["status"] == "invalid" and
              "field spec.numVfs: expected an integer" in st["wrong-types"]["reason"],
              f"wrong types: {st['wrong-types']}")
        malformed = [p for p in out["policies"] if p["origin"].endswith("malformed.yaml")]
        check(len(malformed) == 1 and malformed[0]["status"] == "invalid" and
              "not valid YAML/JSON: line" in malformed[0]["reason"], f"malformed: {malformed}")

    # A fresh ConnectX-6 without VFs: numvfs first, then the VF MTUs.
    fresh_root = os.path.join(tmp, "fresh")
    gen(fresh_root, "--pf", "cx6:ens1f0:0")
    rc, out, _, _ = plan("--policies", SEED, "--node-labels", "highnet-node=true",
                         "--sysfs-root", fresh_root, "-o", "json")
    check(rc == 0, "fresh tree exits 0")
    if out:
        acts = out["actions"]
        check(acts and acts[0]["action"] == "set-num-vfs" and acts[0]["value"] == 8 and
              acts[0]["pf"] == ens1f0, f"first action creates 8 VFs: {acts[:1]}")
        check(all(a["action"] == "set-vf-mtu" for a in acts[1:]) and len(acts) == 9,
              f"then 8 VF MTUs: {[a['action'] for a in acts]}")

    # A PF this agent configured before and no policy wants any more is reset; a garbled
    # record freezes its PF: reported as a problem (exit 2), never silently ignored.
    state = os.path.join(tmp, "state")
    os.mkdir(state)
    ens2f0 = pf_by_name(manifest, "ens2f0")["pciAddress"]
    with open(os.path.join(state, ens2f0 + ".json"), "w") as f:
        json.dump({"pciAddress": ens2f0, "originalMtu": 1500, "originalESwitchMode": "",
                   "interface": {"pciAddress": ens2f0, "numVfs": 4, "vfGroups": []}}, f)
    rc, out, _, _ = plan("--policies", SEED, "--node-labels", "highnet-node=true",
                         "--sysfs-root", seed_root, "--state-dir", state, "-o", "json")
    check(rc == 0, "state dir plan exits 0")
    if out:
        resets = [a for a in out["actions"] if a["pf"] == ens2f0]
        check([a["action"] for a in resets] == ["reset-pf"] and resets[0]["value"] == 0,
              f"ens2f0 reset: {resets}")
        check(all(a["pf"] in (ens1f0, ens2f0) for a in out["actions"]),
              "no other PF touched")
    with open(os.path.join(state, "0000:3b:00.1.json"), "w") as f:
        f.write("{not json")
    rc, _, text, err = plan("--policies", SEED, "--sysfs-root", seed_root, "--state-dir", state)
    check(rc == 2 and "0000:3b:00.1.json: not JSON" in text + err,
          f"garbled state: rc {rc} {text} {err}")

    # Usage errors exit 1.
    rc, _, _, err = plan("--sysfs-root", seed_root)
    check(rc == 1 and "--policies PATH is required" in err, f"missing --policies: {rc} {err}")
    rc, _, _, err = plan("--policies", os.path.join(tmp, "absent.yaml"))
    check(rc == 1, f"absent policy file exits 1 (got {rc})")
    rc, _, _, err = plan("--policies", SEED, "-o", "yaml")
    check(rc == 1, f"bad -o exits 1 (got {rc})")
    rc, _, _, err = plan("--policies", SEED, "--node-labels", "novalue")
    check(rc == 1 and "not key=value" in err, f"bad label exits 1 (got {rc}, {err})")

    # `plan` writes nothing.
    check(tree_digest(seed_root) == before, "sysfs tree unchanged by plan")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all plan CLI checks passed")
