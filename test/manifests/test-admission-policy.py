#!/usr/bin/env python3
"""The ValidatingAdmissionPolicy of manifests/25-admission-policy.yaml, evaluated by a real CEL
evaluator (npm @bufbuild/cel, through eval-admission-policy.mjs) on the admission requests the
API server would hand it: an agent writing its own node's NodeState and ResourceSlices passes;
the same account writing another node's, a slice of another driver or of no node, moving a slice
from another node, or with a token that names no node is refused with a message naming the node;
the kubelet and administrators are not affected. Also: the policy covers every write verb RBAC
grants the agent on those resources, and the Helm chart's copy is the same policy with the
release's namespace.

Usage: test-admission-policy.py SRCDIR CEL_MODULE_DIR [HELM]"""
import copy
import json
import os
import subprocess
import sys
import tempfile

import yaml

SRC, CEL_DIR = sys.argv[1:3]
HELM = sys.argv[3] if len(sys.argv) > 3 else ""
MANIFESTS = os.path.join(SRC, "manifests")
EVAL = os.path.join(SRC, "test", "manifests", "eval-admission-policy.mjs")
AGENT = "system:serviceaccount:sriov-network-operator:sriov-agent"
DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"
NODE_NAME = "authentication.kubernetes.io/node-name"
failures = []


def check(cond, what):
    print("ok:" if cond else "FAIL:", what)
    if not cond:
        failures.append(what)


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def evaluate(policy, requests):
    r = subprocess.run(["node", EVAL, CEL_DIR], input=json.dumps(
        {"policy": policy, "requests": requests}), capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"eval-admission-policy.mjs failed: {r.stderr.strip()[-2000:]}")
    return [json.loads(line) for line in r.stdout.splitlines()]


def user(username=None, node="node-a", extra=None):
    username = username or AGENT
    u = {"username": username, "groups": ["system:serviceaccounts", "system:authenticated"]}
    if extra is not None:
        u["extra"] = extra
    elif node is not None:
        u["extra"] = {NODE_NAME: [node], "authentication.kubernetes.io/pod-name": ["sriov-agent-x"]}
    return u


user_as = user


def nodestate(name):
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodeState",
            "metadata": {"name": name, "namespace": "sriov-network-operator"},
            "spec": {}, "status": {"syncStatus": "Succeeded"}}


def slice_(node, driver=DRIVER, name=None):
    spec = {"driver": driver, "pool": {"name": node or "all", "generation": 1,
                                       "resourceSliceCount": 1}, "devices": []}
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name or f"{node}-{driver}-x"}, "spec": spec}


def request(op, obj=None, old=None, u=None, sub="", agent=None):
    o = obj or old
    res = ({"group": "sriovnetwork.openshift.io", "version": "v1",
            "resource": "sriovnetworknodestates"} if o["kind"] == "SriovNetworkNodeState" else
           {"group": "resource.k8s.io", "version": "v1", "resource": "resourceslices"})
    req = {"uid": "1", "kind": {"group": res["group"], "version": "v1", "kind": o["kind"]},
           "resource": res, "operation": op, "name": o["metadata"]["name"],
           "userInfo": u or user(username=agent)}
    if sub:
        req["subResource"] = sub
    if "namespace" in o["metadata"]:
        req["namespace"] = o["metadata"]["namespace"]
    return {"request": req, "object": copy.deepcopy(obj), "oldObject": copy.deepcopy(old)}


request_as = request


def policy_and_binding(docs):
    pol = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicy"]
    bind = [d for d in docs if d["kind"] == "ValidatingAdmissionPolicyBinding"]
    return (pol[0] if len(pol) == 1 else None), (bind[0] if len(bind) == 1 else None)


def run_cases(policy, agent=AGENT, where="manifests/"):
    """Every case against `policy`, whose agents' account is `agent`."""
    own_ns, other_ns = nodestate("node-a"), nodestate("node-b")
    own_sl, other_sl = slice_("node-a"), slice_("node-b")
    on_selector = slice_("node-a")
    del on_selector["spec"]["nodeName"]
    on_selector["spec"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}

    def request(op, obj=None, old=None, u=None, sub=""):
        return request_as(op, obj, old, u, sub, agent)

    def user(username=None, node="node-a", extra=None):
        return user_as(username or agent, node, extra)
    cases = [
        # (what, request, allowed, applies)
        ("agent of node-a creates NodeState node-a", request("CREATE", own_ns), True, True),
        ("agent of node-a patches NodeState node-a", request("UPDATE", own_ns, own_ns), True, True),
        ("agent of node-a patches NodeState node-a/status",
         request("UPDATE", own_ns, own_ns, sub="status"), True, True),
        ("agent of node-a creates its ResourceSlice", request("CREATE", own_sl), True, True),
        ("agent of node-a replaces its ResourceSlice", request("UPDATE", own_sl, own_sl), True, True),
        ("agent of node-a deletes its ResourceSlice", request("DELETE", None, own_sl), True, True),
        ("agent of node-a creates NodeState node-b", request("CREATE", other_ns), False, True),
        ("agent of node-a patches NodeState node-b", request("UPDATE", other_ns, other_ns), False, True),
        ("agent of node-a patches NodeState node-b/status",
         request("UPDATE", other_ns, other_ns, sub="status"), False, True),
        ("agent of node-a deletes NodeState node-b", request("DELETE", None, other_ns), False, True),
        ("agent of node-a creates node-b's ResourceSlice", request("CREATE", other_sl), False, True),
        ("agent of node-a replaces node-b's ResourceSlice", request("UPDATE", other_sl, other_sl),
         False, True),
        ("agent of node-a moves node-b's ResourceSlice to node-a",
         request("UPDATE", slice_("node-a", name=other_sl["metadata"]["name"]), other_sl), False, True),
        ("agent of node-a deletes node-b's ResourceSlice", request("DELETE", None, other_sl), False, True),
        ("agent of node-a creates a slice for all nodes", request("CREATE", slice_(None)), False, True),
        ("agent of node-a creates a slice on a node selector naming node-a",
         request("CREATE", on_selector), False, True),
        ("agent of node-a moves its ResourceSlice to node-b",
         request("UPDATE", slice_("node-b", name=own_sl["metadata"]["name"]), own_sl), False, True),
        ("agent of node-a creates a slice of another driver on node-a",
         request("CREATE", slice_("node-a", driver="gpu.example.com")), False, True),
        ("a token naming no node (legacy Secret token) writes NodeState node-a",
         request("CREATE", own_ns, u=user(node=None)), False, True),
        ("a token naming no node writes a ResourceSlice",
         request("CREATE", own_sl, u=user(extra={})), False, True),
        ("a token naming two nodes writes NodeState node-a",
         request("CREATE", own_ns, u=user(extra={NODE_NAME: ["node-a", "node-b"]})), False, True),
        ("a token naming an empty node writes a NodeState named ''",
         request("CREATE", nodestate(""), u=user(extra={NODE_NAME: [""]})), False, True),
        ("the kubelet of node-b deletes node-a's slices (its own wipe: not the policy's business)",
         request("DELETE", None, own_sl, u={"username": "system:node:node-b",
                                           "groups": ["system:nodes"]}), True, False),
        ("an administrator edits NodeState node-b",
         request("UPDATE", other_ns, other_ns, u={"username": "admin",
                                                 "groups": ["system:masters"]}), True, False),
        ("another ServiceAccount of the namespace is not matched",
         request("CREATE", other_ns, u=user(
             username=agent.rsplit(":", 1)[0] + ":other")), True, False),
        ("the same account name in another namespace is not matched",
         request("CREATE", other_ns, u=user(
             username="system:serviceaccount:elsewhere:sriov-agent")), True, False),
    ]
    got = evaluate(policy, [c[1] for c in cases])
    for (what, _, allowed, applies), g in zip(cases, got):
        verdict = "allowed" if allowed else "refused"
        check(g["allowed"] == allowed and g["applies"] == applies,
              f"{where}: {what}: {verdict} ({'applies' if applies else 'not matched'}); got {g}")
        if g["applies"] and not allowed and "token" not in what:
            check("node-a" in g["message"] and "evaluation error" not in g["message"],
                  f"{where}: {what}: the message names the requester's node ({g['message']!r})")
    return got


def check_rbac_covered(rbac_docs, spec, where):
    """Every write verb RBAC grants the agent on NodeStates and ResourceSlices reaches the
    policy: a verb it does not match would be one a node's token can use on any node."""
    verbs_to_ops = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE",
                    "delete": "DELETE", "deletecollection": "DELETE", "*": "*"}
    granted = set()
    for d in rbac_docs:
        if d["kind"] not in ("Role", "ClusterRole"):
            continue
        for rule in d.get("rules", []):
            for res in rule.get("resources", []):
                if res == "*" or res.split("/")[0] in ("sriovnetworknodestates", "resourceslices"):
                    granted |= {(res, verbs_to_ops[v]) for v in rule["verbs"] if v in verbs_to_ops}
    covered = {(r, op) for rule in spec["matchConstraints"]["resourceRules"]
               for r in rule["resources"] for op in rule["operations"]}
    check(granted and granted <= covered,
          f"{where}: every write RBAC grants on NodeStates and ResourceSlices is matched "
          f"(granted {sorted(granted)}, not matched {sorted(granted - covered)})")


def check_binding(policy, binding, where):
    check(binding is not None and binding["spec"]["policyName"] == policy["metadata"]["name"] and
          binding["spec"]["validationActions"] == ["Deny"] and
          "paramRef" not in binding["spec"] and "matchResources" not in binding["spec"],
          f"{where}: the binding applies the policy cluster-wide with Deny")


def main():
    path = os.path.join(MANIFESTS, "25-admission-policy.yaml")
    policy, binding = policy_and_binding(load(path))
    check(policy is not None and binding is not None,
          "25-admission-policy.yaml: one ValidatingAdmissionPolicy and one binding")
    if not policy:
        return
    spec = policy["spec"]
    check(policy["apiVersion"] == "admissionregistration.k8s.io/v1" and
          spec["failurePolicy"] == "Fail",
          "admissionregistration.k8s.io/v1, failurePolicy Fail (an evaluation error refuses)")
    check_binding(policy, binding, "manifests/")

    check_rbac_covered(load(os.path.join(MANIFESTS, "20-rbac.yaml")), spec, "manifests/")

    run_cases(policy)

    # A broken expression must refuse, not pass: the evaluator is not a rubber stamp.
    broken = copy.deepcopy(policy)
    broken["spec"]["validations"][1]["expression"] = "variables.target.metadata.nmae == ''"
    g = evaluate(broken, [request("CREATE", nodestate("node-a"))])[0]
    check(not g["allowed"] and "evaluation error" in g["message"],
          f"an expression that cannot be evaluated refuses the request ({g})")

    if HELM:
        with tempfile.TemporaryDirectory() as tmp:
            chart = os.path.join(MANIFESTS, "helm", "sriov-agent")
            env = dict(os.environ, HELM_CACHE_HOME=tmp, HELM_CONFIG_HOME=tmp, HELM_DATA_HOME=tmp)
            out = subprocess.run([HELM, "template", "x", chart, "--set", "namespace=net-agents",
                                  "--show-only", "templates/25-admission-policy.yaml",
                                  "--show-only", "templates/20-rbac.yaml"],
                                 capture_output=True, text=True, env=env, timeout=120)
            check(out.returncode == 0, f"helm template the policy ({out.stderr.strip()[-300:]})")
            docs = [d for d in yaml.safe_load_all(out.stdout) if d]
            hp, hb = policy_and_binding(docs)
            cond = hp and hp["spec"]["matchConditions"][0]["expression"]
            check(hp is not None and hb is not None and
                  "'system:serviceaccount:net-agents:sriov-agent'" in cond,
                  f"the chart's policy matches the release namespace's account ({cond!r})")
            if hp:
                check(hp["apiVersion"] == "admissionregistration.k8s.io/v1" and
                      hp["spec"]["failurePolicy"] == "Fail",
                      "chart: admissionregistration.k8s.io/v1, failurePolicy Fail")
                check_binding(hp, hb, "chart")
                check_rbac_covered(docs, hp["spec"], "chart")
                # the same requests, from the release namespace's account
                run_cases(hp, agent="system:serviceaccount:net-agents:sriov-agent", where="chart")
            off = subprocess.run([HELM, "template", "x", chart, "--set",
                                  "ownNodeAdmissionPolicy=false"],
                                 capture_output=True, text=True, env=env, timeout=120)
            check(off.returncode == 0 and "ValidatingAdmissionPolicy" not in off.stdout,
                  "ownNodeAdmissionPolicy=false leaves the policy out (clusters before 1.30)")


main()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
