#!/usr/bin/env python3
"""The fake API server's resource.k8s.io/v1 kinds are as strict as the real server for what
the agent writes and the tests read: real kubectl creates a valid DeviceClass, ResourceClaim
and ResourceSlice and is refused (422, naming the field) for a device name that is not a DNS
label, more than 128 devices in a slice, an attribute with two values, a slice without a
pool; the agent's token (manifests/20-rbac.yaml) may list/create slices and get claims but not
create claims or delete DeviceClasses. Exit 1 on any failure."""
import argparse
import json
import os
import shutil
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from testlib import check, finish  # noqa: E402
import fakecluster as ct  # noqa: E402


DRIVER = "sriovnetwork.k8snetworkplumbingwg.io"


def slice_obj(name, devices, **spec_extra):
    spec = {"driver": DRIVER, "nodeName": ct.NODE,
            "pool": {"name": ct.NODE, "generation": 1, "resourceSliceCount": 1},
            "devices": devices}
    spec.update(spec_extra)
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name}, "spec": spec}


def dev(name, **attrs):
    return {"name": name, "attributes": attrs or {"resource.kubernetes.io/pciBusID":
                                                  {"string": "0000:3b:01.0"}}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl")
    args = ap.parse_args()
    src = os.environ.get("SRCDIR", os.path.join(HERE, "..", ".."))
    work = tempfile.mkdtemp(prefix="fake-api-dra-")
    cluster = ct.Cluster(src, work, args.kubectl)
    try:
        cluster.apply("test/kube/namespace.yaml", "manifests/10-serviceaccount.yaml",
                      "manifests/20-rbac.yaml")
        cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
               "metadata": {"name": "sriov-vf"},
               "spec": {"selectors": [{"cel": {"expression":
                                               "device.driver == '%s'" % DRIVER}}]}}
        cluster.ok("apply", "-f", "-", stdin=json.dumps(cls))
        claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "gpu-nic", "namespace": ct.NS},
                 "spec": {"devices": {"requests": [
                     {"name": "nic", "exactly": {"deviceClassName": "sriov-vf"}}],
                     "constraints": [{"requests": ["nic"],
                                      "matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}
        cluster.ok("apply", "-f", "-", stdin=json.dumps(claim))
        cluster.ok("apply", "-f", "-", stdin=json.dumps(slice_obj("ok", [dev("0000-3b-01-0")])))
        examples = os.path.join(src, "manifests/examples/dra")
        rc, out = cluster.run("apply", "-f", examples)
        check("kubectl apply -f manifests/examples/dra/ (DeviceClass, ResourceClaimTemplate, "
              "Pod)", rc == 0 and "resourceclaimtemplate" in out and "pod/" in out, out[-400:])
        rc, out = cluster.run("get", "resourceclaimtemplate", "gpus-and-vf", "-o", "json")
        tmpl = json.loads(out) if rc == 0 else {}
        devices = tmpl.get("spec", {}).get("spec", {}).get("devices", {})
        check("the example claim: 8 GPUs and one VF under one pcieRoot",
              [r["exactly"].get("count", 1) for r in devices.get("requests", [])] == [8, 1] and
              devices.get("constraints") == [{"requests": ["gpus", "vf"],
                                               "matchAttribute":
                                                   "resource.kubernetes.io/pcieRoot"}],
              json.dumps(devices)[:400])
        rc, out = cluster.run("get", "resourceslices,deviceclasses")
        check("kubectl get resourceslices,deviceclasses", rc == 0 and "ok" in out and
              "sriov-vf" in out, out)

        bad = [
            ("device name not a DNS label", slice_obj("b1", [dev("0000:3b:01.0")]),
             "spec.devices[0].name"),
            ("129 devices", slice_obj("b2", [dev("d%d" % i) for i in range(129)]),
             "spec.devices"),
            ("attribute with two values", slice_obj("b3", [dev(
                "d0", **{"resource.kubernetes.io/pcieRoot": {"string": "pci0000:3a",
                                                              "int": 1}})]),
             "spec.devices[0].attributes"),
            ("attribute name not a qualified name", slice_obj("b4", [dev(
                "d0", **{"bad name!": {"string": "x"}})]), "bad name!"),
            ("string attribute over 64 characters", slice_obj("b5", [dev(
                "d0", **{"x.io/long": {"string": "a" * 65}})]), "x.io/long"),
        ]
        no_pool = slice_obj("b6", [dev("d0")])
        del no_pool["spec"]["pool"]
        bad.append(("slice without a pool", no_pool, "spec.pool"))
        for what, obj, field in bad:
            rc, out = cluster.run("create", "-f", "-", stdin=json.dumps(obj))
            check("refused: " + what, rc != 0 and field in out and
                  any(w in out for w in ("Invalid", "Required", "Too many", "Too long")),
                  out[-300:])

        def as_agent(method, path, body=None):
            req = urllib.request.Request(
                "http://127.0.0.1:%d%s" % (cluster.port, path), method=method,
                data=json.dumps(body).encode() if body is not None else None,
                headers={"Authorization": "Bearer agent-token",
                         "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    return r.status
            except urllib.error.HTTPError as e:
                return e.code

        base = "/apis/resource.k8s.io/v1"
        check("agent may list slices", as_agent("GET", base + "/resourceslices") == 200)
        check("agent may create a slice",
              as_agent("POST", base + "/resourceslices", slice_obj("mine", [dev("d0")])) == 201)
        check("agent may get a claim",
              as_agent("GET", base + "/namespaces/%s/resourceclaims/gpu-nic" % ct.NS) == 200)
        check("agent may not create claims",
              as_agent("POST", base + "/namespaces/%s/resourceclaims" % ct.NS, claim) == 403)
        check("agent may not delete DeviceClasses",
              as_agent("DELETE", base + "/deviceclasses/sriov-vf") == 403)
        check("agent may not list claims",
              as_agent("GET", base + "/resourceclaims") == 403)
    finally:
        cluster.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
