#!/usr/bin/env python3
"""A small fake kube-apiserver for tests (Python standard library only).

Enough of the Kubernetes REST API for the real kubectl (apply/get/get --watch/label/delete/
replace/wait) and for sriov-agent's informers: discovery, an OpenAPI v3 stub, CRDs that add
routes, list/watch with resourceVersion, bookmarks, timeoutSeconds and selectors, 410 Expired
for resource versions older than the kept history, merge patches on objects and /status, and
core/v1 events. Objects of CRDs are validated against the CRD's openAPIV3Schema (types,
enums, ranges, patterns, lengths, maxItems/maxProperties, required fields, defaults) as a
structural schema: unknown fields are pruned with a Warning header (fieldValidation=Warn, the
default) or refused with 400 under fieldValidation=Strict; strategic-merge patches of custom
resources are 415. With --rbac the agent's token is held to the stored RBAC objects (a list or
watch with fieldSelector metadata.name=X is a request for X, so resourceNames can grant it, as
on a real server). The built-in kinds of manifests/ (ServiceAccount, ConfigMap, Pod,
DaemonSet, Role/ClusterRole and their bindings) are stored as given, without validation.
ConfigMaps (and DeleteOptions) are also accepted as application/vnd.kubernetes.protobuf, the
way helm's typed client writes its release records (HELM_DRIVER=configmap), so that helm
install/upgrade/rollback/uninstall work (test/operator-journey); answers are JSON.

Fault switches (for tests), POST /_fake/faults with a JSON object, any subset of the list
below. errors_500, conflicts and reject_token only hit requests that carry a bearer token (the
agent's), so an anonymous kubectl can drive the test meanwhile:
  close_watches: true        end every open watch stream now (without the final chunk)
  expire_watches: N          the next N watches that name a resourceVersion get 410 Expired
  expire_lists: N            the next N lists that name a resourceVersion other than 0 get
                             410 Expired (a server without watch cache, its history compacted)
  compact: true              forget the history: any older resourceVersion (and any list
                             continue token) is now expired
  errors_500: N              the next N API requests get 500 InternalError
  slow_ms: MS                delay every API reply by MS milliseconds (0 turns it off)
  garble_events: N           the next N watch events are sent as broken JSON
  truncate_events: N         the next N watch events are cut in half and the stream closed
  huge_events: N             the next N watch events are padded past 17 MiB
  reject_token: true|false   answer 401 Unauthorized to every request that carries a bearer
                             token while true (anonymous kubectl keeps working)
  token: "T"                 from now on require bearer token T (rotation tests)
  conflicts: N               the next N PATCH/PUT requests get 409 Conflict
  refuse_ms: MS              for MS milliseconds hang up on every API request without an
                             answer (a restarting server); combine with close_watches
  endless_continue: true     every list page carries a continue token (a hostile server)
  silence_watches: true      the open watch streams go silent (nothing sent, not even
                             bookmarks) without closing; later watches are served normally
  trickle_watches: S         as silence_watches, but each stream still sends a blank line
                             every S seconds (a proxy's keep-alive with nothing behind it)
  slow_events_bps: N         while not 0, every watch event is sent in 1 KiB chunks at N bytes
                             a second (a large object over a slow link)
  prune_unknown: true|false  prune fields a CRD's structural schema does not declare (default
                             true, like a real server; a Warning header names each)
  watch_errors: N            the next N watches (-1: every watch) get one ERROR event with
                             code watch_error_code (default 500) in their 200 stream, then end
  throttle: N                the next N requests (-1: all) get 429 with Retry-After:
                             retry_after_s (default 1), as API Priority and Fairness does;
                             with throttle_path: "P" only requests whose path (and query)
                             contains P count, with throttle_method: "M" only that method
  clear_requests: true       empty the request log (below)
  watch_timeout_scale: F     watches that start from now on end after their timeoutSeconds
                             divided by F (compressed idle windows in fleet benches)
Lists with resourceVersion=0 are served as from the watch cache (whole, limit ignored; stat
lists_cached), and so are lists with resourceVersion=N and no limit ("not older than N", as
client-go relists after a 410; N beyond the newest version is 504 "Too large resource
version", as when a server restarted with a younger store); others are consistent reads
(paged; stat lists_consistent); continue together with resourceVersion is 400, as on a real
server.
GET /_fake/requests is the request log: every API request (refused ones too) as
[seconds since the server started, method, path and query, refused, error status or null,
the Authorization header or null], and "now" on that clock;
"watching" in the stats is the number of watch streams open now.
GET /_fake/faults shows the switches and counters; GET /_fake/stats shows request counts, and
writes (POST/PUT/PATCH/DELETE) per resource ("writes") and per client bearer token
("writes_by_client") and per object named in the path ("writes_by_object": "resource
ns/name"); all requests per client token too ("requests_by_client"). DELETE honours
DeleteOptions.preconditions (resourceVersion, uid: 409 when the object changed).

Finalizers as the real server: DELETE of an object with metadata.finalizers only sets
deletionTimestamp (once); the update that removes the last finalizer deletes it. Leases
(coordination.k8s.io/v1) are built in, for leader election.

Start: fake_apiserver.py [--port 0] [--node NAME]... [--token T [--anonymous]]
                         [--rbac NS:SERVICEACCOUNT [--rbac-token PREFIX=NS:SA]...]
                         [--kubeconfig-out PATH]
                         [--tls-cert F --tls-key F [--client-ca F]]
With port 0 the chosen port is printed as "PORT <n>" on stdout.
"""

import argparse
import base64
import bisect
import copy
import json
import re
import ssl
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HISTORY_LIMIT = 2000
BOOKMARK_INTERVAL = 2.0


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, retry_after=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details
        self.retry_after = retry_after

    def status(self):
        s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            s["details"] = self.details
        return s


def protobuf_fields(data):
    """(field number, value) of a protobuf message: ints for varints, bytes otherwise."""
    i, out = 0, []

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            b = data[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
    while i < len(data):
        tag = varint()
        wire = tag & 7
        if wire == 0:
            out.append((tag >> 3, varint()))
        elif wire == 2:
            n = varint()
            out.append((tag >> 3, data[i:i + n]))
            i += n
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ApiError(400, "BadRequest", f"protobuf wire type {wire} not understood")
    return out


def protobuf_object(data):
    """A ConfigMap or Secret (or DeleteOptions) sent as application/vnd.kubernetes.protobuf
    (Helm's release records: helm's typed client sends core kinds so), as the JSON object.
    Only the fields those records use: metadata name, namespace, resourceVersion, labels,
    annotations, finalizers; data (and a Secret's type)."""
    if not data.startswith(b"k8s\x00"):
        raise ApiError(400, "BadRequest", "protobuf body without the k8s envelope")
    env = dict(protobuf_fields(data[4:]))
    tm = dict(protobuf_fields(env.get(1, b"")))
    api_version, kind = tm.get(1, b"").decode(), tm.get(2, b"").decode()
    if kind == "DeleteOptions":  # Helm's delete of its release records
        policy = [v.decode() for n, v in protobuf_fields(env.get(2, b"")) if n == 4]
        return {"kind": kind, "apiVersion": api_version,
                **({"propagationPolicy": policy[-1]} if policy else {})}
    if kind not in ("ConfigMap", "Secret"):
        raise ApiError(415, "UnsupportedMediaType",
                       f"this fake decodes protobuf only for ConfigMaps and Secrets, not {kind}")

    def string_map(entries):
        m = {}
        for e in entries:
            kv = dict(protobuf_fields(e))
            m[kv.get(1, b"").decode()] = kv.get(2, b"")
        return m
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {}}
    meta_fields = ()
    fields = protobuf_fields(env.get(2, b""))
    for num, val in fields:
        if num == 1:
            meta_fields = protobuf_fields(val)
    meta = obj["metadata"]
    labels = [v for n, v in meta_fields if n == 11]
    annotations = [v for n, v in meta_fields if n == 12]
    for num, key in ((1, "name"), (3, "namespace"), (6, "resourceVersion"), (5, "uid")):
        val = [v for n, v in meta_fields if n == num]
        if val:
            meta[key] = val[-1].decode()
    if labels:
        meta["labels"] = {k: v.decode() for k, v in string_map(labels).items()}
    if annotations:
        meta["annotations"] = {k: v.decode() for k, v in string_map(annotations).items()}
    finalizers = [v.decode() for n, v in meta_fields if n == 14]
    if finalizers:
        meta["finalizers"] = finalizers
    data_field = 2
    entries = [v for n, v in fields if n == data_field]
    if kind == "ConfigMap":
        if entries:
            obj["data"] = {k: v.decode() for k, v in string_map(entries).items()}
    else:
        if entries:
            obj["data"] = {k: base64.b64encode(v).decode() for k, v in string_map(entries).items()}
        typ = [v for n, v in fields if n == 3]
        if typ:
            obj["type"] = typ[-1].decode()
    return obj


class Resource:
    """One REST resource (e.g. nodes, or sriovnetworknodepolicies.sriovnetwork.openshift.io)."""

    def __init__(self, group, version, plural, singular, kind, namespaced, status=False,
                 short=None, schema=None):
        self.group, self.version, self.plural, self.singular = group, version, plural, singular
        self.kind, self.namespaced, self.status, self.short = kind, namespaced, status, short or []
        self.schema = schema
        self.builtin = schema is None
        self.printer_columns = None

    @property
    def gv(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gr(self):
        return f"{self.plural}.{self.group}" if self.group else self.plural


BUILTINS = [
    Resource("", "v1", "namespaces", "namespace", "Namespace", False, status=True, short=["ns"]),
    Resource("", "v1", "nodes", "node", "Node", False, status=True, short=["no"]),
    Resource("", "v1", "events", "event", "Event", True, short=["ev"]),
    Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
             "customresourcedefinition", "CustomResourceDefinition", False, status=True,
             short=["crd", "crds"]),
    # Kinds of manifests/ (the agent's install set and examples): stored as given, no
    # controllers behind them (a DaemonSet starts no pods, a Pod never runs).
    Resource("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True, short=["sa"]),
    Resource("", "v1", "configmaps", "configmap", "ConfigMap", True, short=["cm"]),
    Resource("", "v1", "pods", "pod", "Pod", True, status=True, short=["po"]),
    Resource("apps", "v1", "daemonsets", "daemonset", "DaemonSet", True, status=True,
             short=["ds"]),
    Resource("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", True),
    Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding",
             True),
    Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole",
             False),
    Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding",
             "ClusterRoleBinding", False),
    # Dynamic Resource Allocation (resource.k8s.io/v1, GA in 1.34), validated like the real
    # server's rules for what the agent writes and reads (see DRA_SCHEMAS).
    Resource("resource.k8s.io", "v1", "resourceslices", "resourceslice", "ResourceSlice", False,
             schema="DRA"),
    Resource("resource.k8s.io", "v1", "resourceclaims", "resourceclaim", "ResourceClaim", True,
             status=True, schema="DRA"),
    Resource("resource.k8s.io", "v1", "deviceclasses", "deviceclass", "DeviceClass", False,
             schema="DRA"),
    Resource("resource.k8s.io", "v1", "resourceclaimtemplates", "resourceclaimtemplate",
             "ResourceClaimTemplate", True, schema="DRA"),
    # Leader election (the agents' NAD renderer): stored as given, optimistic concurrency
    # through resourceVersion on PUT like every object here.
    Resource("coordination.k8s.io", "v1", "leases", "lease", "Lease", True),
    # The NAD controller's Deployment and API Priority and Fairness objects of manifests/:
    # stored as given.
    Resource("apps", "v1", "deployments", "deployment", "Deployment", True, status=True,
             short=["deploy"]),
    Resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "flowschema", "FlowSchema",
             False, status=True),
    Resource("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
             "prioritylevelconfiguration", "PriorityLevelConfiguration", False, status=True),
    # The agents' own-node admission policy (manifests/25-admission-policy.yaml): stored as
    # given; test/manifests/test-admission-policy.py evaluates its CEL.
    Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies",
             "validatingadmissionpolicy", "ValidatingAdmissionPolicy", False),
    Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
             "validatingadmissionpolicybinding", "ValidatingAdmissionPolicyBinding", False),
]


# ---------------------------------------------------------------- schema validation

# resource.k8s.io/v1, written from the API reference's validation rules (pkg/apis/resource/
# validation): names are DNS labels/subdomains, a slice holds at most 128 devices, a device at
# most 32 attributes, each attribute exactly one of bool/int/string (<= 64 chars)/version, keys
# are (optionally domain-qualified) C identifiers, and a slice names its node (nodeName) here.
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_ATTRIBUTE = {"type": "object", "minProperties": 1, "maxProperties": 1, "properties": {
    "bool": {"type": "boolean"}, "int": {"type": "integer"},
    "string": {"type": "string", "maxLength": 64}, "version": {"type": "string",
                                                               "maxLength": 64}}}
_DEVICE = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string", "maxLength": 63, "pattern": _DNS_LABEL},
    "attributes": {"type": "object", "maxProperties": 32, "additionalProperties": _ATTRIBUTE,
                   "propertyNames": {"pattern": r"^([a-z0-9.-]{1,63}/)?[A-Za-z][A-Za-z0-9_]{0,31}$"}},
    "capacity": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
_SELECTORS = {"type": "array", "maxItems": 32, "items": {"type": "object", "properties": {
    "cel": {"type": "object", "required": ["expression"], "properties": {
        "expression": {"type": "string", "maxLength": 10240}}}}}}
_REQUEST = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string", "maxLength": 63, "pattern": _DNS_LABEL},
    "exactly": {"type": "object", "required": ["deviceClassName"], "properties": {
        "deviceClassName": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN},
        "selectors": _SELECTORS,
        "allocationMode": {"type": "string", "enum": ["ExactCount", "All"]},
        "count": {"type": "integer", "minimum": 1},
        "adminAccess": {"type": "boolean"},
        "tolerations": {"type": "array", "items": {"type": "object",
                                                   "x-kubernetes-preserve-unknown-fields": True}}}},
    "firstAvailable": {"type": "array", "items": {"type": "object",
                                                  "x-kubernetes-preserve-unknown-fields": True}}}}
_RESULT = {"type": "object", "required": ["request", "driver", "pool", "device"], "properties": {
    "request": {"type": "string"}, "driver": {"type": "string", "pattern": _DNS_SUBDOMAIN},
    "pool": {"type": "string"}, "device": {"type": "string", "pattern": _DNS_LABEL},
    "adminAccess": {"type": "boolean"},
    "tolerations": {"type": "array", "items": {"type": "object",
                                               "x-kubernetes-preserve-unknown-fields": True}},
    "shareID": {"type": "string"}}}
DRA_SCHEMAS = {
    "resourceslices": {"type": "object", "required": ["spec"], "properties": {"spec": {
        "type": "object", "required": ["driver", "pool", "nodeName"], "properties": {
            "driver": {"type": "string", "maxLength": 63, "pattern": _DNS_SUBDOMAIN},
            "nodeName": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN},
            "pool": {"type": "object", "required": ["name", "resourceSliceCount"], "properties": {
                "name": {"type": "string", "maxLength": 253},
                "generation": {"type": "integer", "minimum": 0},
                "resourceSliceCount": {"type": "integer", "minimum": 1}}},
            "devices": {"type": "array", "maxItems": 128, "items": _DEVICE},
            "perDeviceNodeSelection": {"type": "boolean"},
            "sharedCounters": {"type": "array", "items": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}},
    "resourceclaims": {"type": "object", "required": ["spec"], "properties": {
        "spec": {"type": "object", "properties": {"devices": {"type": "object", "properties": {
            "requests": {"type": "array", "maxItems": 32, "items": _REQUEST},
            "constraints": {"type": "array", "maxItems": 32, "items": {
                "type": "object", "properties": {
                    "requests": {"type": "array", "items": {"type": "string"}},
                    "matchAttribute": {"type": "string", "maxLength": 96}}}},
            "config": {"type": "array", "items": {"type": "object",
                                                  "x-kubernetes-preserve-unknown-fields": True}}}}}},
        "status": {"type": "object", "properties": {
            "allocation": {"type": "object", "properties": {
                "devices": {"type": "object", "properties": {
                    "results": {"type": "array", "maxItems": 32, "items": _RESULT},
                    "config": {"type": "array", "items": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
                "nodeSelector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "allocationTimestamp": {"type": "string"}}},
            "reservedFor": {"type": "array", "maxItems": 256, "items": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            "devices": {"type": "array", "items": {"type": "object",
                                                   "x-kubernetes-preserve-unknown-fields": True}}}}}},
    "resourceclaimtemplates": {"type": "object", "required": ["spec"], "properties": {
        "spec": {"type": "object", "required": ["spec"], "properties": {
            "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "spec": None}}}},
    "deviceclasses": {"type": "object", "required": ["spec"], "properties": {"spec": {
        "type": "object", "properties": {
            "selectors": _SELECTORS,
            "config": {"type": "array", "items": {"type": "object",
                                                  "x-kubernetes-preserve-unknown-fields": True}},
            "extendedResourceName": {"type": "string"}}}}},
}

DRA_SCHEMAS["resourceclaimtemplates"]["properties"]["spec"]["properties"]["spec"] = \
    DRA_SCHEMAS["resourceclaims"]["properties"]["spec"]
for _r in BUILTINS:
    if _r.schema == "DRA":
        _r.schema = DRA_SCHEMAS[_r.plural]


def validate(schema, value, path, errors, strict, apply_defaults=True, pruned=None):
    """Checks value against a structural OpenAPI v3 schema; fills defaults in place. With
    pruned (a list), fields the schema does not declare (and no x-kubernetes-preserve-unknown-
    fields keeps) are removed and their paths appended, as a real API server prunes."""
    if schema is None:
        return
    t = schema.get("type")
    if value is None:
        if not schema.get("nullable"):
            errors.append(f"{path}: Invalid value: \"null\": {path} in body must be of type {t}")
        return
    typeok = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    if t in typeok and not typeok[t](value):
        errors.append(f"{path}: Invalid value: \"{type(value).__name__}\": "
                      f"{path} in body must be of type {t}: \"{type(value).__name__}\"")
        return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(e) for e in schema["enum"])
        errors.append(f"{path}: Unsupported value: {json.dumps(value)}: "
                      f"supported values: {allowed}")
    if t in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: Invalid value: {value}: {path} in body should be "
                          f"greater than or equal to {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: Invalid value: {value}: {path} in body should be "
                          f"less than or equal to {schema['maximum']}")
    if t == "string":
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{path}: Too long: may not be more than {schema['maxLength']} bytes")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{path}: Invalid value: \"{value}\": {path} in body should match "
                          f"'{schema['pattern']}'")
    if t == "array" and "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{path}: Too many: {len(value)}: must have at most "
                      f"{schema['maxItems']} items")
    if t == "object" and "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(f"{path}: Too many: {len(value)}: must have at most "
                      f"{schema['maxProperties']} items")
    if t == "object" and "minProperties" in schema and len(value) < schema["minProperties"]:
        errors.append(f"{path}: Required value: must have at least "
                      f"{schema['minProperties']} items")
    if t == "object" and "propertyNames" in schema:  # the built-in kinds' key rules
        for k in value:
            if not re.fullmatch(schema["propertyNames"]["pattern"], k):
                errors.append(f"{path}[{k}]: Invalid value: \"{k}\": must match "
                              f"'{schema['propertyNames']['pattern']}'")
    if t == "array" and "items" in schema:
        for i, item in enumerate(value):
            validate(schema["items"], item, f"{path}[{i}]", errors, strict, apply_defaults,
                     pruned)
    if t == "object":
        props = schema.get("properties", {})
        addl = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        for req in schema.get("required", []):
            if req not in value:
                errors.append(f"{path + '.' if path else ''}{req}: Required value")
        if apply_defaults:
            for k, sub in props.items():
                if k not in value and "default" in sub:
                    value[k] = copy.deepcopy(sub["default"])
        for k, v in list(value.items()):
            sub_path = f"{path}.{k}" if path else k
            if k in props:
                validate(props[k], v, sub_path, errors, strict, apply_defaults, pruned)
            elif isinstance(addl, dict):
                validate(addl, v, sub_path, errors, strict, apply_defaults, pruned)
            elif preserve or addl is True:
                pass
            elif not props and path.endswith("metadata"):
                pass  # embedded ObjectMeta is kept as it is
            elif strict:
                errors.append(f"{sub_path}: unknown field \"{sub_path}\"")
            elif pruned is not None:
                # A structural schema prunes what it does not declare, silently but for a
                # Warning header (fieldValidation=Warn, the server's default).
                del value[k]
                pruned.append(sub_path)


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch; keys starting with '$' (strategic directives) are dropped."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    result = copy.deepcopy(target)
    for k, v in patch.items():
        if k.startswith("$"):
            continue
        if v is None:
            result.pop(k, None)
        else:
            result[k] = merge_patch(result.get(k), v)
    return result


# ---------------------------------------------------------------- selectors

def parse_label_selector(text):
    reqs = []
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        m = re.fullmatch(r"([^!=\s]+)\s*(==|=|!=)\s*(\S*)", term)
        if m:
            reqs.append((m.group(1), "!=" if m.group(2) == "!=" else "=", m.group(3)))
        elif term.startswith("!"):
            reqs.append((term[1:], "!", None))
        else:
            reqs.append((term, "exists", None))
    return reqs


def labels_match(reqs, obj):
    labels = obj.get("metadata", {}).get("labels") or {}
    for key, op, val in reqs:
        if op == "=" and labels.get(key) != val:
            return False
        if op == "!=" and labels.get(key) == val:
            return False
        if op == "!" and key in labels:
            return False
        if op == "exists" and key not in labels:
            return False
    return True


def fields_match(text, obj):
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        m = re.fullmatch(r"([^!=]+)(==|=|!=)(.*)", term)
        if not m:
            raise ApiError(400, "BadRequest", f"invalid field selector: {term}")
        cur = obj
        for part in m.group(1).split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        equal = (cur if cur is not None else "") == m.group(3)
        if (m.group(2) == "!=") == equal:
            return False
    return True


# ---------------------------------------------------------------- RBAC

def request_attributes(method, path, query):
    """(verb, group, resource, subresource, namespace, name) of a resource request, or None
    for a non-resource URL (/version, discovery, openapi), as the real authorizer sees it."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    if not rest:
        return None
    ns = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        ns, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if resource == "namespaces" and ns is None and len(rest) > 1:
        name = rest[1]
    watch = query.get("watch") in ("1", "true")
    verb = {"GET": "watch" if watch else ("get" if name else "list"), "POST": "create",
            "PUT": "update", "PATCH": "patch",
            "DELETE": "delete" if name else "deletecollection"}.get(method, method.lower())
    if verb in ("list", "watch") and name is None:
        # As the real RequestInfoFactory: a list or watch whose field selector requires
        # metadata.name to equal one value is that object's request, so RBAC resourceNames can
        # grant it; without such a selector it names no object and resourceNames cannot.
        name = selector_exact_name(query.get("fieldSelector") or "")
    return verb, group, resource, sub, ns, name


def selector_exact_name(selector):
    """The value of a metadata.name=V (or ==V) term of a field selector, else None."""
    for term in selector.split(","):
        m = re.fullmatch(r"\s*metadata\.name\s*==?\s*(.*?)\s*", term)
        if m and m.group(1):
            return m.group(1)
    return None


def rule_allows(rule, verb, group, resource, sub, name):
    res = f"{resource}/{sub}" if sub else resource
    if not any(g in ("*", group) for g in rule.get("apiGroups", [])):
        return False
    if not any(r in ("*", res) for r in rule.get("resources", [])):
        return False
    if not any(v in ("*", verb) for v in rule.get("verbs", [])):
        return False
    names = rule.get("resourceNames")
    return not names or name in names


def subject_matches(subjects, sa_ns, sa_name):
    for subj in subjects or []:
        if subj.get("kind") == "ServiceAccount" and subj.get("name") == sa_name and \
                subj.get("namespace") == sa_ns:
            return True
        if subj.get("kind") == "Group" and subj.get("name") in (
                "system:serviceaccounts", f"system:serviceaccounts:{sa_ns}"):
            return True
    return False


def rbac_allows(store, subject, attrs):
    """Whether the stored Roles/ClusterRoles and their bindings grant attrs to the service
    account subject ("NS:NAME"): whatever rules were applied (e.g. manifests/20-rbac.yaml)."""
    verb, group, resource, sub, ns, name = attrs
    sa_ns, sa_name = subject.split(":", 1)
    rg = "rbac.authorization.k8s.io"
    with store.lock:
        objs = store.objects
        def role_rules(kind, role_ns, role_name):
            plural = "roles" if kind == "Role" else "clusterroles"
            role = objs.get((rg, plural, role_ns if kind == "Role" else None, role_name))
            return (role or {}).get("rules") or []
        rules = []
        for (g, plural, bns, _n), b in objs.items():
            if g != rg or not subject_matches(b.get("subjects"), sa_ns, sa_name):
                continue
            ref = b.get("roleRef") or {}
            if plural == "clusterrolebindings":
                rules += role_rules("ClusterRole", None, ref.get("name"))
            elif plural == "rolebindings" and bns == ns:
                rules += role_rules(ref.get("kind"), bns, ref.get("name"))
    return any(rule_allows(r, verb, group, resource, sub, name) for r in rules)


# ---------------------------------------------------------------- the store

class Store:
    def __init__(self, nodes):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.conds = {}       # (group, plural, name or None) -> Condition, for watches
        self.rv = 1
        self.resources = {}   # (group, version, plural) -> Resource
        self.objects = {}     # (group, plural, ns, name) -> object
        self.history = []     # (rv, group, plural, ns, type, obj, old)
        self.history_floor = 1
        self.faults = {"expire_lists": 0,
                       "expire_watches": 0, "errors_500": 0, "slow_ms": 0, "garble_events": 0,
                       "truncate_events": 0, "huge_events": 0, "reject_token": False,
                       "conflicts": 0, "prune_unknown": True, "watch_errors": 0,
                       "watch_error_code": 500, "throttle": 0, "retry_after_s": 1,
                       "throttle_path": "", "throttle_method": "",
                       "watch_timeout_scale": 1.0,
                       "endless_continue": False, "slow_events_bps": 0}
        self.request_local = threading.local()  # per request: warnings for the reply
        self.refuse_until = 0.0
        self.close_generation = 0
        self.silence_generation = 0
        self.trickle_s = 0.0  # silenced streams send a blank line this often (0: nothing)
        self.snapshots = {}   # continue token id -> (resourceVersion, items) of a paged list
        self.stats = {"requests": 0, "watches": 0, "lists": 0, "patches": 0, "creates": 0,
                      "lists_cached": 0, "lists_consistent": 0, "gets": 0, "throttled": 0,
                      "watching": 0}
        self.started = time.monotonic()
        self.request_log = []
        for r in BUILTINS:
            self.resources[(r.group, r.version, r.plural)] = r
        ns_res = self.lookup("", "v1", "namespaces")
        for ns in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(ns_res, None, {"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": ns},
                                       "status": {"phase": "Active"}})
        node_res = self.lookup("", "v1", "nodes")
        for n in nodes:
            self.create(node_res, None, {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n,
                                                   "kubernetes.io/os": "linux"}},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]}})

    def lookup(self, group, version, plural):
        r = self.resources.get((group, version, plural))
        if r is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return r

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def record(self, res, ns, etype, obj, old=None):
        self.history.append((int(obj["metadata"]["resourceVersion"]), res.group, res.plural,
                             ns, etype, copy.deepcopy(obj), copy.deepcopy(old)))
        if len(self.history) > HISTORY_LIMIT:
            dropped = self.history.pop(0)
            self.history_floor = dropped[0]
        self.changed.notify_all()
        # Watchers wait on their resource's condition (or, with a metadata.name selector, on
        # that object's): a write wakes only the watches it may concern, not every stream of
        # a fleet of agents.
        for k in ((res.group, res.plural, None), (res.group, res.plural,
                                                  obj["metadata"].get("name"))):
            c = self.conds.get(k)
            if c is not None:
                c.notify_all()

    def cond_for(self, group, plural, name):
        c = self.conds.get((group, plural, name))
        if c is None:
            c = self.conds[(group, plural, name)] = threading.Condition(self.lock)
        return c

    def wake_all(self):
        self.changed.notify_all()
        for c in self.conds.values():
            c.notify_all()

    def key(self, res, ns, name):
        return (res.group, res.plural, ns if res.namespaced else None, name)

    def not_found(self, res, name):
        return ApiError(404, "NotFound", f"{res.gr} \"{name}\" not found",
                        {"name": name, "group": res.group, "kind": res.plural})

    def check_namespace(self, res, ns):
        if res.namespaced and ("", "namespaces", None, ns) not in self.objects:
            raise ApiError(404, "NotFound", f"namespaces \"{ns}\" not found",
                           {"name": ns, "kind": "namespaces"})

    def validate_object(self, res, obj, strict):
        if res.builtin or not res.schema:
            return
        errors = []
        body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        pruned = [] if self.faults.get("prune_unknown", True) else None
        validate(res.schema, body, "", errors, strict, pruned=pruned)
        for k in [k for k in obj if k not in ("apiVersion", "kind", "metadata")]:
            if k not in body:
                del obj[k]
        obj.update(body)
        if pruned:
            self.stats["pruned_fields"] = self.stats.get("pruned_fields", 0) + len(pruned)
            warnings = getattr(self.request_local, "warnings", None)
            if warnings is not None:
                warnings.extend(f'unknown field "{p}"' for p in pruned)
        unknown = [e for e in errors if ": unknown field " in e]
        if unknown:
            # fieldValidation=Strict: the real server fails decoding with 400, before
            # validation (a 422 would come only after a successful decode).
            fields = ", ".join(e.split(": ", 1)[1] for e in unknown)
            raise ApiError(400, "BadRequest",
                           f'{res.kind} in version "{res.version}" cannot be handled as a '
                           f"{res.kind}: strict decoding error: {fields}")
        if errors:
            name = obj.get("metadata", {}).get("name", "")
            joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
            raise ApiError(422, "Invalid",
                           f"{res.kind}.{res.group} \"{name}\" is invalid: {joined}",
                           {"name": name, "group": res.group, "kind": res.kind,
                            "causes": [{"reason": "FieldValueInvalid",
                                        "field": e.split(": ", 1)[0],
                                        "message": e.split(": ", 1)[-1]} for e in errors]})

    # -- writes ---------------------------------------------------------------

    def create(self, res, ns, obj, strict=False):
        with self.lock:
            meta = obj.setdefault("metadata", {})
            name = meta.get("name")
            if not name and meta.get("generateName"):
                name = meta["generateName"] + uuid.uuid4().hex[:5]
                meta["name"] = name
            if not name:
                raise ApiError(422, "Invalid", f"{res.kind} \"\" is invalid: metadata.name: "
                               "Required value: name or generateName is required")
            if res.namespaced:
                if meta.get("namespace") and meta["namespace"] != ns:
                    raise ApiError(400, "BadRequest", "the namespace of the provided object "
                                   "does not match the namespace sent on the request")
                self.check_namespace(res, ns)
                meta["namespace"] = ns
            else:
                meta.pop("namespace", None)
            k = self.key(res, ns, name)
            if k in self.objects:
                raise ApiError(409, "AlreadyExists", f"{res.gr} \"{name}\" already exists",
                               {"name": name, "group": res.group, "kind": res.plural})
            obj["apiVersion"], obj["kind"] = res.gv, res.kind
            if not res.builtin and res.status:
                obj.pop("status", None)
            self.validate_object(res, obj, strict)
            if res.plural == "customresourcedefinitions":
                self.crd_admit(obj)
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            meta["generation"] = 1
            meta["resourceVersion"] = self.next_rv()
            meta.pop("deletionTimestamp", None)
            self.objects[k] = obj
            self.record(res, ns, "ADDED", obj)
            if res.plural == "customresourcedefinitions":
                self.crd_install(obj)
            return copy.deepcopy(obj)

    def get(self, res, ns, name):
        with self.lock:
            obj = self.objects.get(self.key(res, ns, name))
            if obj is None:
                raise self.not_found(res, name)
            return copy.deepcopy(obj)

    def update(self, res, ns, name, new, subresource=None, strict=False, check_rv=None):
        """Stores new as the object (main resource or /status semantics)."""
        with self.lock:
            k = self.key(res, ns, name)
            old = self.objects.get(k)
            if old is None:
                raise self.not_found(res, name)
            if check_rv and check_rv != old["metadata"]["resourceVersion"]:
                raise ApiError(409, "Conflict",
                               f"Operation cannot be fulfilled on {res.gr} \"{name}\": the "
                               "object has been modified; please apply your changes to the "
                               "latest version and try again",
                               {"name": name, "group": res.group, "kind": res.plural})
            new = copy.deepcopy(new)
            if subresource == "status":
                merged = copy.deepcopy(old)
                if "status" in new:
                    merged["status"] = new["status"]
                else:
                    merged.pop("status", None)
                new = merged
            elif res.status and not res.builtin or res.plural in ("nodes", "namespaces"):
                if "status" in old:
                    new["status"] = copy.deepcopy(old["status"])
                else:
                    new.pop("status", None)
            meta = new.setdefault("metadata", {})
            for f in ("uid", "creationTimestamp", "generation", "resourceVersion", "name",
                      "namespace", "deletionTimestamp"):
                if f in old["metadata"]:
                    meta[f] = old["metadata"][f]
                else:
                    meta.pop(f, None)
            new["apiVersion"], new["kind"] = res.gv, res.kind
            self.validate_object(res, new, strict)
            if new == old:
                return copy.deepcopy(old)  # no change: no new resourceVersion, no event
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                # Finalizers: the last one removed from an object being deleted deletes it.
                meta["resourceVersion"] = self.next_rv()
                del self.objects[k]
                self.record(res, ns, "DELETED", new)
                return copy.deepcopy(new)
            outside = lambda o: {x: y for x, y in o.items() if x not in ("metadata", "status")}
            if outside(new) != outside(old):
                meta["generation"] = old["metadata"].get("generation", 1) + 1
            meta["resourceVersion"] = self.next_rv()
            self.objects[k] = new
            self.record(res, ns, "MODIFIED", new, old)
            if res.plural == "customresourcedefinitions":
                self.crd_install(new)
            return copy.deepcopy(new)

    def delete(self, res, ns, name):
        with self.lock:
            k = self.key(res, ns, name)
            cur = self.objects.get(k)
            if cur is not None and cur["metadata"].get("finalizers"):
                # Finalizers: only marked for deletion (once); whoever owns a finalizer
                # removes it, and the last removal deletes the object (see update()).
                if not cur["metadata"].get("deletionTimestamp"):
                    old = copy.deepcopy(cur)
                    cur["metadata"]["deletionTimestamp"] = now_rfc3339()
                    cur["metadata"]["resourceVersion"] = self.next_rv()
                    self.record(res, ns, "MODIFIED", cur, old)
                return copy.deepcopy(cur)
            obj = self.objects.pop(k, None)
            if obj is None:
                raise self.not_found(res, name)
            obj["metadata"]["resourceVersion"] = self.next_rv()
            self.record(res, ns, "DELETED", obj)
            if res.plural == "customresourcedefinitions":
                self.crd_uninstall(obj)
            return copy.deepcopy(obj)

    # -- CRDs -------------------------------------------------------------------

    def crd_admit(self, crd):
        spec = crd.get("spec", {})
        names = spec.get("names", {})
        expect = f"{names.get('plural')}.{spec.get('group')}"
        if crd["metadata"]["name"] != expect:
            raise ApiError(422, "Invalid", f"CustomResourceDefinition.apiextensions.k8s.io "
                           f"\"{crd['metadata']['name']}\" is invalid: metadata.name: Invalid "
                           f"value: \"{crd['metadata']['name']}\": must be spec.names.plural+"
                           f"\".\"+spec.group")

    def crd_install(self, crd):
        spec = crd["spec"]
        names = spec["names"]
        for v in spec.get("versions", []):
            if not v.get("served", True):
                continue
            schema = (v.get("schema") or {}).get("openAPIV3Schema") or {"type": "object"}
            res = Resource(spec["group"], v["name"], names["plural"],
                           names.get("singular", names["kind"].lower()), names["kind"],
                           spec.get("scope", "Namespaced") == "Namespaced",
                           status="status" in (v.get("subresources") or {}),
                           short=names.get("shortNames"), schema=schema)
            res.printer_columns = v.get("additionalPrinterColumns")
            self.resources[(res.group, res.version, res.plural)] = res
        crd["status"] = {
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": now_rfc3339()},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted",
                 "lastTransitionTime": now_rfc3339()}],
            "acceptedNames": names,
            "storedVersions": [v["name"] for v in spec.get("versions", []) if v.get("storage")]}

    def crd_uninstall(self, crd):
        spec = crd["spec"]
        group, plural = spec["group"], spec["names"]["plural"]
        for v in spec.get("versions", []):
            self.resources.pop((group, v["name"], plural), None)
        res = Resource(group, "", plural, "", spec["names"]["kind"], True)
        for k in [k for k in self.objects if k[0] == group and k[1] == plural]:
            obj = self.objects.pop(k)
            obj["metadata"]["resourceVersion"] = self.next_rv()
            self.record(res, k[2], "DELETED", obj)


# ---------------------------------------------------------------- server-side printing

def human_age(timestamp):
    """kubectl's short duration style: 42s, 5m10s, 3h, 2d."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        return "<invalid>"
    secs = max(0, int((datetime.now(timezone.utc) - then).total_seconds()))
    if secs < 120:
        return f"{secs}s"
    if secs < 600:
        return f"{secs // 60}m{secs % 60}s"
    if secs < 3 * 3600:
        return f"{secs // 60}m"
    if secs < 48 * 3600:
        return f"{secs // 3600}h"
    return f"{secs // 86400}d"


def json_path(obj, path):
    """Evaluates the simple JSONPath of CRD printer columns: .a.b, with \\. escaping dots."""
    parts = re.split(r"(?<!\\)\.(?![^\[]*\])", path.lstrip("."))
    cur = obj
    for part in parts:
        part = part.replace("\\.", ".")
        # A list filter as in `.status.conditions[?(@.type=="Ready")].status`: first match.
        m = re.fullmatch(r'(\w+)\[\?\(@\.(\w+)=="([^"]*)"\)\]', part)
        if m:
            items = cur.get(m.group(1)) if isinstance(cur, dict) else None
            cur = next((i for i in items or [] if isinstance(i, dict)
                        and i.get(m.group(2)) == m.group(3)), None)
            continue
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def table_columns(res):
    col = lambda name, typ="string", fmt="", prio=0: {
        "name": name, "type": typ, "format": fmt, "description": "", "priority": prio}
    if res.plural == "events":
        return [col("Last Seen"), col("Type"), col("Reason"), col("Object"), col("Message")]
    if res.plural == "nodes":
        return [col("Name", fmt="name"), col("Status"), col("Roles"), col("Age"),
                col("Version")]
    if res.plural == "namespaces":
        return [col("Name", fmt="name"), col("Status"), col("Age")]
    if res.builtin:
        return [col("Name", fmt="name"), col("Age")]
    cols = [col("Name", fmt="name")]
    for c in res.printer_columns or [{"name": "Age", "type": "date",
                                      "jsonPath": ".metadata.creationTimestamp"}]:
        cols.append(col(c["name"], "string" if c.get("type") == "date" else c.get("type",
                                                                               "string"),
                        prio=c.get("priority", 0)))
    return cols


def table_cells(res, obj):
    meta = obj.get("metadata", {})
    if res.plural == "events":
        inv = obj.get("involvedObject", {})
        return [human_age(obj.get("lastTimestamp") or meta.get("creationTimestamp")),
                obj.get("type", ""), obj.get("reason", ""),
                f"{inv.get('kind', '').lower()}/{inv.get('name', '')}", obj.get("message", "")]
    if res.plural == "nodes":
        return [meta.get("name"), "Ready", "<none>", human_age(meta.get("creationTimestamp")),
                "v1.32.0-fake"]
    if res.plural == "namespaces":
        return [meta.get("name"), obj.get("status", {}).get("phase", "Active"),
                human_age(meta.get("creationTimestamp"))]
    if res.builtin:
        return [meta.get("name"), human_age(meta.get("creationTimestamp"))]
    cells = [meta.get("name")]
    for c in res.printer_columns or [{"name": "Age", "type": "date",
                                      "jsonPath": ".metadata.creationTimestamp"}]:
        v = json_path(obj, c.get("jsonPath", ""))
        if c.get("type") == "date":
            v = human_age(v) if v else None
        cells.append(v)
    return cells


def to_table(res, objects, rv, include_object):
    rows = []
    for o in objects:
        if include_object == "Object":
            ref = o
        else:
            ref = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": o.get("metadata", {})}
        rows.append({"cells": table_cells(res, o), "object": ref})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": rv}, "columnDefinitions": table_columns(res),
            "rows": rows}


# ---------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake-apiserver: " + (fmt % args) + "\n")

    @property
    def store(self):
        return self.server.store

    # -- plumbing --------------------------------------------------------------

    def send_json(self, code, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        for w in (getattr(self.store.request_local, "warnings", None) or [])[:50]:
            self.send_header("Warning", '299 - "%s"' % w.replace('"', '\\"'))
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        if self.body_consumed:
            return None
        self.body_consumed = True
        n = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(n) if n else b""
        if not data:
            return None
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype == "application/vnd.kubernetes.protobuf":
            return protobuf_object(data)
        try:
            return json.loads(data)
        except ValueError as e:
            raise ApiError(400, "BadRequest", f"the body of the request was in an unknown "
                           f"format: {e}")

    def authorized(self):
        given = self.headers.get("Authorization")
        with self.store.lock:
            if self.store.faults["reject_token"] and given is not None:
                return False
        token = self.server.token
        if token is None or (given is None and self.server.anonymous):
            return True
        return given == f"Bearer {token}"

    def check_rbac(self, method, path, query):
        """With --rbac, a request with the bearer token is the service account --rbac-subject
        and gets exactly what the stored RBAC objects grant it; anything else is 403."""
        if not self.server.rbac or not self.headers.get("Authorization"):
            return
        subject = self.server.rbac
        # --rbac-token PREFIX=NS:SA: tokens starting with PREFIX are that service account
        # (a test runs two deployments with their own accounts).
        for prefix, sa in getattr(self.server, "rbac_tokens", []):
            if self.headers.get("Authorization").startswith("Bearer " + prefix):
                subject = sa
                break
        attrs = request_attributes(method, path, query)
        if attrs is None or rbac_allows(self.store, subject, attrs):
            return
        verb, group, resource, sub, ns, name = attrs
        user = "system:serviceaccount:" + subject
        where = f" in the namespace \"{ns}\"" if ns else " at the cluster scope"
        res = f"{resource}/{sub}" if sub else resource
        with self.store.lock:
            self.store.stats["forbidden"] = self.store.stats.get("forbidden", 0) + 1
        what = resource + ("." + group if group else "") + (' "%s"' % name if name else "")
        raise ApiError(403, "Forbidden",
                       '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s"%s'
                       % (what, user, verb, res, group, where),
                       {"name": name or "", "group": group, "kind": resource})

    def dispatch(self, method):
        self.body_consumed = False
        self.log_entry = None
        self.store.request_local.warnings = []
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if method in ("POST", "PUT", "PATCH", "DELETE") and not url.path.startswith("/_fake/"):
            # Writes per resource ("leases", "sriovnetworks", ...) for idle-write checks.
            parts = [p for p in url.path.split("/") if p]
            rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
            if rest[:1] == ["namespaces"] and len(rest) >= 3:
                rest = rest[2:]
            if rest:
                who = self.headers.get("Authorization") or "anonymous"
                with self.store.lock:
                    w = self.store.stats.setdefault("writes", {})
                    w[rest[0]] = w.get(rest[0], 0) + 1
                    # ... and per client (bearer token), to tell which agent wrote.
                    c = self.store.stats.setdefault("writes_by_client", {}).setdefault(who, {})
                    c[rest[0]] = c.get(rest[0], 0) + 1
                    # ... and per object ("resource ns/name"), to show one was never written.
                    if len(rest) >= 2:
                        o = self.store.stats.setdefault("writes_by_object", {})
                        okey = "%s %s/%s" % (rest[0], parts[parts.index("namespaces") + 1]
                                             if "namespaces" in parts else "", rest[1])
                        o[okey] = o.get(okey, 0) + 1
        try:
            if url.path.startswith("/_fake/"):
                return self.fake_control(method, url.path)
            with self.store.lock:
                self.store.stats["requests"] += 1
                self.log_entry = [round(time.monotonic() - self.store.started, 3), method,
                                  self.path, time.monotonic() < self.store.refuse_until, None,
                                  self.headers.get("Authorization")]
                self.store.request_log.append(self.log_entry)
                # Requests per client (bearer token): what one idle agent costs.
                rc = self.store.stats.setdefault("requests_by_client", {})
                who = self.headers.get("Authorization") or "anonymous"
                rc[who] = rc.get(who, 0) + 1
                slow = self.store.faults["slow_ms"]
                refuse = time.monotonic() < self.store.refuse_until
            if refuse:
                self.close_connection = True
                return
            if slow:
                time.sleep(slow / 1000.0)
            if not self.authorized():
                raise ApiError(401, "Unauthorized", "Unauthorized")
            self.check_rbac(method, url.path, query)
            with self.store.lock:
                if self.store.faults["errors_500"] > 0 and self.headers.get("Authorization"):
                    self.store.faults["errors_500"] -= 1
                    raise ApiError(500, "InternalError",
                                   "Internal error occurred: injected fault")
                if self.store.faults["throttle"] != 0 and self.headers.get("Authorization") \
                        and self.store.faults["throttle_path"] in self.path \
                        and self.store.faults["throttle_method"] in ("", method):
                    # API Priority and Fairness: 429 with Retry-After.
                    if self.store.faults["throttle"] > 0:
                        self.store.faults["throttle"] -= 1
                    self.store.stats["throttled"] += 1
                    raise ApiError(429, "TooManyRequests", "Too many requests, please try again "
                                   "later.", retry_after=self.store.faults["retry_after_s"])
            self.route(method, url.path, query)
        except ApiError as e:
            if self.log_entry is not None:
                self.log_entry[4] = e.code
            try:
                self.read_body()  # an unread body would be parsed as the next request
            except ApiError:
                pass
            self.send_json(e.code, e.status(), {"Retry-After": str(e.retry_after)}
                           if e.retry_after is not None else None)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = lambda self: self.dispatch("GET")
    do_POST = lambda self: self.dispatch("POST")
    do_PUT = lambda self: self.dispatch("PUT")
    do_PATCH = lambda self: self.dispatch("PATCH")
    do_DELETE = lambda self: self.dispatch("DELETE")

    def fake_control(self, method, path):
        st = self.store
        if path == "/_fake/faults" and method == "POST":
            body = self.read_body() or {}
            with st.lock:
                for k, v in body.items():
                    if k == "token":
                        self.server.token = v
                    elif k == "close_watches":
                        st.close_generation += 1
                    elif k == "silence_watches":
                        st.silence_generation += 1
                        st.trickle_s = 0.0
                    elif k == "trickle_watches":
                        st.silence_generation += 1
                        st.trickle_s = float(v)
                    elif k == "refuse_ms":
                        st.refuse_until = time.monotonic() + float(v) / 1000.0
                    elif k == "clear_requests":
                        st.request_log = []
                    elif k == "compact":
                        st.snapshots.clear()
                        st.history.clear()
                        st.history_floor = st.rv + 1
                        st.rv += 1
                    elif k in st.faults:
                        st.faults[k] = v
                    else:
                        raise ApiError(400, "BadRequest", f"unknown fault \"{k}\"")
                st.wake_all()
                return self.send_json(200, st.faults)
        if path == "/_fake/requests":
            with st.lock:
                return self.send_json(200, {"now": round(time.monotonic() - st.started, 3),
                                            "requests": list(st.request_log)})
        if path == "/_fake/faults":
            with st.lock:
                return self.send_json(200, st.faults)
        if path == "/_fake/stats":
            with st.lock:
                return self.send_json(200, dict(st.stats, resourceVersion=st.rv,
                                                history_floor=st.history_floor))
        raise ApiError(404, "NotFound", "no such fake control")

    # -- routing ------------------------------------------------------------------

    def route(self, method, path, query):
        parts = [p for p in path.split("/") if p]
        if path == "/version":
            return self.send_json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0",
                                        "platform": "linux/amd64", "goVersion": "go1.23"})
        if path in ("/healthz", "/readyz", "/livez"):
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            return self.wfile.write(data)
        if parts and parts[0] == "openapi":
            return self.openapi(parts)
        if parts == ["api"]:
            host = f"{self.server.server_address[0]}:{self.server.server_address[1]}"
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0", "serverAddress": host}]})
        if parts == ["apis"]:
            return self.send_json(200, self.group_list())
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts and parts[0] == "apis" and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        elif parts and parts[0] == "apis" and len(parts) == 2:
            return self.send_json(200, self.group_entry(parts[1]))
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            return self.send_json(200, self.resource_list(group, version))
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        with self.store.lock:
            res = self.store.lookup(group, version, rest[0])
        if res.namespaced is False and ns is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if sub is not None and not (sub == "status" and res.status):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if name is None:
            if method == "GET" and query.get("watch") in ("1", "true"):
                return self.watch(res, ns, query)
            if method == "GET":
                return self.list(res, ns, query)
            if method == "POST":
                if res.namespaced and ns is None:
                    raise ApiError(404, "NotFound", "namespace required")
                body = self.read_body()
                if not isinstance(body, dict):
                    raise ApiError(400, "BadRequest", "request body must be an object")
                strict = query.get("fieldValidation") == "Strict"
                with self.store.lock:
                    self.store.stats["creates"] += 1
                return self.send_json(201, self.store.create(res, ns, body, strict))
            if method == "DELETE":
                # DeleteCollection with label/field selectors (the kubelet wipes its node's
                # ResourceSlices this way): every match is deleted, the list of them answered.
                with self.store.lock:
                    gone = [self.store.delete(res, o["metadata"].get("namespace"),
                                              o["metadata"]["name"])
                            for k, o in list(self.store.objects.items())
                            if k[:2] == (res.group, res.plural) and
                            self.matching(res, ns, query, o)]
                return self.send_json(200, {"kind": res.kind + "List",
                                            "apiVersion": res.gv,
                                            "metadata": {"resourceVersion": str(self.store.rv)},
                                            "items": gone})
            raise ApiError(405, "MethodNotAllowed", "method not allowed")
        strict = query.get("fieldValidation") == "Strict"
        if method == "GET":
            obj = self.store.get(res, ns, name)
            if self.wants_table():
                obj = to_table(res, [obj], obj["metadata"]["resourceVersion"],
                               query.get("includeObject"))
            return self.send_json(200, obj)
        if method == "DELETE":
            opts = self.read_body()
            # DeleteOptions.preconditions, as the real server: 409 when the object changed.
            pre = (opts or {}).get("preconditions") or {} if isinstance(opts, dict) else {}
            if pre:
                with self.store.lock:
                    cur = self.store.get(res, ns, name)
                    for f in ("resourceVersion", "uid"):
                        if pre.get(f) is not None and pre[f] != cur["metadata"].get(f):
                            raise ApiError(409, "Conflict", f"Operation cannot be fulfilled "
                                           f"on {res.gr} \"{name}\": Precondition failed: "
                                           f"{f} in precondition: {pre[f]}, {f} in object "
                                           f"meta: {cur['metadata'].get(f)}",
                                           {"name": name, "group": res.group,
                                            "kind": res.plural})
                    return self.send_json(200, self.store.delete(res, ns, name))
            return self.send_json(200, self.store.delete(res, ns, name))
        if method in ("PUT", "PATCH"):
            with self.store.lock:
                if self.store.faults["conflicts"] > 0 and self.headers.get("Authorization"):
                    self.store.faults["conflicts"] -= 1
                    self.read_body()
                    raise ApiError(409, "Conflict", f"Operation cannot be fulfilled on "
                                   f"{res.gr} \"{name}\": injected conflict",
                                   {"name": name, "group": res.group, "kind": res.plural})
        if method == "PUT":
            body = self.read_body()
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "request body must be an object")
            rv = body.get("metadata", {}).get("resourceVersion")
            return self.send_json(200, self.store.update(res, ns, name, body, sub, strict, rv))
        if method == "PATCH":
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if ctype == "application/apply-patch+yaml":
                return self.server_side_apply(res, ns, name, sub, strict)
            # Custom resources have no Go struct for strategic merge: the real server
            # refuses it with 415 (only built-in kinds take it).
            if ctype not in ("application/merge-patch+json",
                             "application/strategic-merge-patch+json") or \
                    (ctype == "application/strategic-merge-patch+json" and not res.builtin):
                raise ApiError(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted "
                               "media types include: application/json-patch+json, "
                               "application/merge-patch+json, application/apply-patch+yaml")
            patch = self.read_body()
            with self.store.lock:
                self.store.stats["patches"] += 1
                cur = self.store.get(res, ns, name)
                rv = (patch or {}).get("metadata", {}).get("resourceVersion") \
                    if isinstance(patch, dict) else None
                new = merge_patch(cur, patch)
                return self.send_json(200, self.store.update(res, ns, name, new, sub, strict,
                                                             rv))
        raise ApiError(405, "MethodNotAllowed", "method not allowed")

    def server_side_apply(self, res, ns, name, sub, strict):
        """kubectl apply --server-side: create when missing, else merge the applied fields
        (field ownership is not tracked). kubectl sends the YAML body as JSON."""
        body = self.read_body()
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "apply patch must be an object")
        with self.store.lock:
            self.store.stats["patches"] += 1
            if self.store.key(res, ns, name) not in self.store.objects:
                if sub:
                    raise self.store.not_found(res, name)
                body.setdefault("metadata", {})["name"] = name
                return self.send_json(201, self.store.create(res, ns, body, strict))
            cur = self.store.get(res, ns, name)
            return self.send_json(200, self.store.update(res, ns, name, merge_patch(cur, body),
                                                         sub, strict))

    # -- discovery ------------------------------------------------------------------

    def groups(self):
        with self.store.lock:
            out = {}
            for (g, v, _p) in self.store.resources:
                if g:
                    out.setdefault(g, [])
                    if v not in out[g]:
                        out[g].append(v)
            return out

    def group_entry(self, g):
        versions = self.groups().get(g)
        if not versions:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        vs = [{"groupVersion": f"{g}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": vs,
                "preferredVersion": vs[0]}

    def group_list(self):
        return {"kind": "APIGroupList", "apiVersion": "v1",
                "groups": [self.group_entry(g) for g in sorted(self.groups())]}

    def resource_list(self, group, version):
        with self.store.lock:
            res = [r for (g, v, _p), r in self.store.resources.items()
                   if g == group and v == version]
        if not res:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                 "watch"]
        items = []
        for r in res:
            items.append({"name": r.plural, "singularName": r.singular,
                          "namespaced": r.namespaced, "kind": r.kind, "verbs": verbs,
                          "shortNames": r.short})
            if r.status:
                items.append({"name": f"{r.plural}/status", "singularName": "",
                              "namespaced": r.namespaced, "kind": r.kind,
                              "verbs": ["get", "patch", "update"]})
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version, "resources": items}

    def openapi(self, parts):
        with self.store.lock:
            gvs = sorted({(g, v) for (g, v, _p) in self.store.resources})
        if parts == ["openapi", "v3"]:
            paths = {}
            for g, v in gvs:
                key = f"apis/{g}/{v}" if g else f"api/{v}"
                paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={self.store.rv}"}
            return self.send_json(200, {"paths": paths})
        if len(parts) >= 4 and parts[:2] == ["openapi", "v3"]:
            if parts[2] == "api":
                g, v = "", parts[3]
            elif len(parts) >= 5:
                g, v = parts[3], parts[4]
            else:
                raise ApiError(404, "NotFound", "not found")
            with self.store.lock:
                res = [r for (gg, vv, _p), r in self.store.resources.items()
                       if gg == g and vv == v]
            if not res:
                raise ApiError(404, "NotFound", "not found")
            paths = {}
            for r in res:
                base = f"/apis/{g}/{v}" if g else f"/api/{v}"
                nsp = "/namespaces/{namespace}" if r.namespaced else ""
                content = {"application/merge-patch+json": {}}
                if r.builtin:
                    content["application/strategic-merge-patch+json"] = {}
                paths[f"{base}{nsp}/{r.plural}/{{name}}"] = {"patch": {
                    "x-kubernetes-group-version-kind": {"group": g, "version": v,
                                                        "kind": r.kind},
                    "parameters": [{"name": "fieldValidation", "in": "query"}],
                    "requestBody": {"content": content}}}
            return self.send_json(200, {"openapi": "3.0.0", "info": {"title": "fake",
                                                                     "version": "v1"},
                                        "paths": paths, "components": {"schemas": {}}})
        raise ApiError(404, "NotFound", "not found")

    # -- list and watch ---------------------------------------------------------------

    def matching(self, res, ns, query, obj):
        if obj is None:
            return False
        if res.namespaced and ns is not None and obj["metadata"].get("namespace") != ns:
            return False
        return (labels_match(parse_label_selector(query.get("labelSelector")), obj)
                and fields_match(query.get("fieldSelector"), obj))

    def list(self, res, ns, query):
        limit = int(query.get("limit") or 0)
        cont = query.get("continue")
        rv_param = query.get("resourceVersion")
        if cont and rv_param:
            raise ApiError(400, "BadRequest", "specifying resource version is not allowed when "
                           "using continue")
        with self.store.lock:
            self.store.stats["lists"] += 1
            # resourceVersion=0 is served from the watch cache, which (before KEP-4988) ignores
            # limit; anything else is a consistent read from etcd, paged by limit.
            if rv_param and rv_param != "0" and self.store.faults["expire_lists"] > 0:
                self.store.faults["expire_lists"] -= 1
                raise ApiError(410, "Expired", f"too old resource version: {rv_param} "
                               f"({self.store.history_floor})")
            if rv_param and rv_param != "0" and not cont and not limit:
                try:
                    wanted = int(rv_param)
                except ValueError:
                    raise ApiError(400, "BadRequest", f"invalid resource version: {rv_param}")
                if wanted > self.store.rv:
                    raise ApiError(504, "Timeout", f"Too large resource version: {wanted}, "
                                   f"current: {self.store.rv}",
                                   {"causes": [{"reason": "ResourceVersionTooLarge",
                                                "message": "Too large resource version"}],
                                    "retryAfterSeconds": 1})
                self.store.stats["lists_cached"] += 1
            elif rv_param == "0" and not cont:
                self.store.stats["lists_cached"] += 1
                limit = 0
            else:
                self.store.stats["lists_consistent"] += 1
            if cont and not self.store.faults["endless_continue"]:
                # Later pages come from the snapshot taken by the first one, like etcd.
                try:
                    snap_id, offset = json.loads(base64.b64decode(cont))
                    rv, items = self.store.snapshots[snap_id]
                except (ValueError, KeyError, TypeError):
                    raise ApiError(410, "Expired", "The provided continue parameter is too old "
                                   "to display a consistent list result. You can start a new "
                                   "list without the continue parameter.")
            else:
                offset = 0
                items = [copy.deepcopy(o) for k, o in sorted(self.store.objects.items(),
                                                              key=lambda kv: str(kv[0]))
                         if k[0] == res.group and k[1] == res.plural
                         and self.matching(res, ns, query, o)]
                rv = str(self.store.rv)
            meta = {"resourceVersion": rv}
            if self.store.faults["endless_continue"]:
                # A hostile server: every page says there is more.
                meta["continue"] = base64.b64encode(json.dumps(["endless", 0]).encode()).decode()
                return self.send_json(200, {"kind": f"{res.kind}List", "apiVersion": res.gv,
                                            "metadata": meta, "items": items[:1]})
            if limit and len(items) > offset + limit:
                snap_id = str(uuid.uuid4())
                self.store.snapshots[snap_id] = (rv, items)
                meta["continue"] = base64.b64encode(
                    json.dumps([snap_id, offset + limit]).encode()).decode()
                meta["remainingItemCount"] = len(items) - offset - limit
            items = items[offset:offset + limit] if limit else items
        if self.wants_table():
            return self.send_json(200, to_table(res, items, rv, query.get("includeObject")))
        self.send_json(200, {"kind": f"{res.kind}List", "apiVersion": res.gv,
                             "metadata": meta, "items": items})

    def wants_table(self):
        """kubectl asks for server-side printing with Accept: ...;as=Table;...; we prefer it
        whenever it is offered, like the real server."""
        return "as=Table" in (self.headers.get("Accept") or "")

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def encode_event(self, etype, obj, res=None, query=None):
        if res is not None and etype != "BOOKMARK" and self.wants_table():
            obj = to_table(res, [obj], obj["metadata"].get("resourceVersion"),
                           (query or {}).get("includeObject"))
        st = self.store
        with st.lock:
            f = st.faults
            if f["garble_events"] > 0:
                f["garble_events"] -= 1
                return b'{"type":"' + etype.encode() + b'","object":{"kind":,,garbled]\n', False
            if f["truncate_events"] > 0:
                f["truncate_events"] -= 1
                line = json.dumps({"type": etype, "object": obj}).encode()
                return line[:len(line) // 2], True
            if f["huge_events"] > 0:
                f["huge_events"] -= 1
                obj = copy.deepcopy(obj)
                obj["metadata"].setdefault("annotations", {})["fake/padding"] = \
                    "x" * (17 * 1024 * 1024)
        return json.dumps({"type": etype, "object": obj}).encode() + b"\n", False

    def watch(self, res, ns, query):
        st = self.store
        rv_text = query.get("resourceVersion", "")
        # watch_timeout_scale compresses time for fleet benches: a watch asking for 450 s
        # ends after 45 s with scale 10, so an idle hour of renewals passes in six minutes.
        with st.lock:
            scale = float(st.faults["watch_timeout_scale"])
        timeout = float(query.get("timeoutSeconds") or 1800) / scale
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        deadline = time.monotonic() + timeout
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        with st.lock:
            st.stats["watches"] += 1
            gen = st.close_generation
            silence_gen = st.silence_generation
            expire = False
            if rv_text not in ("", "0"):
                try:
                    rv = int(rv_text)
                except ValueError:
                    rv = -1
                if st.faults["expire_watches"] > 0:
                    st.faults["expire_watches"] -= 1
                    expire = True
                elif rv < st.history_floor - 1 or rv < 0:
                    expire = True
            injected = None
            if not expire and st.faults["watch_errors"] != 0 and \
                    self.headers.get("Authorization"):
                if st.faults["watch_errors"] > 0:
                    st.faults["watch_errors"] -= 1
                code = int(st.faults["watch_error_code"])
                injected = ApiError(code, {429: "TooManyRequests", 410: "Expired",
                                           500: "InternalError"}.get(code, "InternalError"),
                                    f"injected watch error {code}").status()
            if expire or injected:
                status = injected or ApiError(410, "Expired", f"too old resource version: "
                                              f"{rv_text} ({st.history_floor})").status()
                expire = True
                pending = [json.dumps({"type": "ERROR", "object": status}).encode() + b"\n"]
            else:
                pending = []
                if rv_text in ("", "0"):
                    for k, o in sorted(st.objects.items(), key=lambda kv: str(kv[0])):
                        if k[0] == res.group and k[1] == res.plural and \
                                self.matching(res, ns, query, o):
                            pending.append(("ADDED", copy.deepcopy(o)))
                    rv = st.rv
            cursor = rv
            wake = st.cond_for(res.group, res.plural,
                               selector_exact_name(query.get("fieldSelector", "")))
        if not expire:
            with st.lock:
                st.stats["watching"] += 1
        try:
            if expire:
                self.write_chunk(pending[0])
                self.wfile.write(b"0\r\n\r\n")
                return
            last_bookmark = time.monotonic()
            while True:
                for etype, obj in pending:
                    line, cut = self.encode_event(etype, obj, res, query)
                    with st.lock:
                        bps = int(st.faults["slow_events_bps"])
                    if bps > 0:
                        for i in range(0, len(line), 1024):
                            chunk = line[i:i + 1024]
                            self.write_chunk(chunk)
                            time.sleep(len(chunk) / bps)
                    else:
                        self.write_chunk(line)
                    if cut:
                        return  # abrupt close, no final chunk
                pending = []
                with st.lock:
                    last_trickle = time.monotonic()
                    while st.silence_generation != silence_gen:
                        # A dead path that TCP has not noticed: keep the connection, send
                        # nothing (no event, no bookmark) until closed, or only blank lines.
                        if st.close_generation != gen:
                            return
                        if st.trickle_s and time.monotonic() - last_trickle >= st.trickle_s:
                            last_trickle = time.monotonic()
                            self.write_chunk(b"\n")
                        wake.wait(min(0.5, st.trickle_s) if st.trickle_s else 0.5)
                    while True:
                        if st.close_generation != gen:
                            return
                        if st.silence_generation != silence_gen:
                            break  # silenced while waiting: nothing more is sent (above)
                        now = time.monotonic()
                        if now >= deadline:
                            break
                        first = bisect.bisect_right(st.history, cursor, key=lambda h: h[0])
                        for h in st.history[first:]:
                            if h[1] != res.group or h[2] != res.plural:
                                continue
                            etype, obj, old = h[4], h[5], h[6]
                            new_in = self.matching(res, ns, query, obj)
                            old_in = self.matching(res, ns, query, old) if old else None
                            if etype == "MODIFIED" and new_in and old_in is False:
                                pending.append(("ADDED", obj))
                            elif etype == "MODIFIED" and not new_in and old_in:
                                gone = copy.deepcopy(obj)
                                pending.append(("DELETED", gone))
                            elif new_in:
                                pending.append((etype, obj))
                        if st.history:
                            cursor = max(cursor, st.history[-1][0])
                        if pending:
                            break
                        if st.resources.get((res.group, res.version, res.plural)) is not res:
                            break  # the CRD went away: the real server ends such watches
                        if bookmarks and now - last_bookmark >= self.server.bookmark_interval:
                            last_bookmark = now
                            pending.append(("BOOKMARK", {
                                "kind": res.kind, "apiVersion": res.gv,
                                "metadata": {"resourceVersion": str(st.rv)}}))
                            break
                        # Woken by a write this watch may see, a fault switch, or at the
                        # latest after 2 s (a removed CRD, the next bookmark, the deadline).
                        wait = min(2.0, deadline - now)
                        if bookmarks:
                            wait = min(wait, self.server.bookmark_interval -
                                       (now - last_bookmark))
                        wake.wait(max(0.01, wait))
                if not pending and st.silence_generation == silence_gen:
                    break
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        finally:
            if not expire:
                with st.lock:
                    st.stats["watching"] -= 1


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # clients open many connections at once; 5 would drop SYNs

    def __init__(self, addr, store, token, anonymous, verbose, rbac=None):
        super().__init__(addr, Handler)
        self.store, self.token, self.verbose = store, token, verbose
        self.anonymous = anonymous
        self.rbac = rbac  # "NS:NAME" of the service account the token stands for, or None
        self.bookmark_interval = BOOKMARK_INTERVAL


def write_kubeconfig(path, server_url, token, ca_file):
    cluster = f"    server: {server_url}\n"
    if ca_file:
        with open(ca_file, "rb") as f:
            cluster += f"    certificate-authority-data: {base64.b64encode(f.read()).decode()}\n"
    user = f"    token: {token}\n" if token else "    {}\n"
    text = ("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n" + cluster +
            "users:\n- name: fake\n  user:\n" + user +
            "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n"
            "current-context: fake\n")
    with open(path, "w") as f:
        f.write(text)


def main():
    # A real API server stores objects nested thousands of levels deep in free-form fields
    # (preserve-unknown-fields); tests send such objects, so json and deepcopy must cope.
    sys.setrecursionlimit(50000)
    threading.stack_size(256 * 1024 * 1024)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--bind", default="127.0.0.1",
                    help="listen address (e.g. a test host's veth address inside a network "
                         "namespace the test made)")
    ap.add_argument("--node", action="append", default=[], help="pre-create a Node")
    ap.add_argument("--namespace", action="append", default=[],
                    help="pre-create a Namespace")
    ap.add_argument("--token", help="require this bearer token")
    ap.add_argument("--anonymous", action="store_true",
                    help="with --token: also accept requests without credentials (kubectl "
                         "sends no bearer token over plain http)")
    ap.add_argument("--kubeconfig-out", help="write a kubeconfig for this server here")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--tls-ca", help="CA to put into the written kubeconfig")
    ap.add_argument("--client-ca", help="require client certificates signed by this CA")
    ap.add_argument("--rbac", metavar="NS:SERVICEACCOUNT",
                    help="requests with the bearer token act as this service account and get "
                         "exactly what the stored Roles/ClusterRoles and bindings grant it "
                         "(apply manifests/20-rbac.yaml); others are 403")
    ap.add_argument("--rbac-token", action="append", default=[],
                    metavar="TOKEN_PREFIX=NS:SERVICEACCOUNT",
                    help="with --rbac: bearer tokens starting with TOKEN_PREFIX act as this "
                         "service account instead (repeatable)")
    ap.add_argument("--bookmark-interval", type=float, default=BOOKMARK_INTERVAL,
                    help="seconds between BOOKMARK events of an idle watch (a real server: "
                         "about 60)")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    store = Store(args.node)
    ns_res = store.lookup("", "v1", "namespaces")
    for ns in args.namespace:
        store.create(ns_res, None, {"metadata": {"name": ns}, "status": {"phase": "Active"}})
    srv = Server((args.bind, args.port), store, args.token, args.anonymous, args.verbose,
                 args.rbac)
    srv.bookmark_interval = args.bookmark_interval
    srv.rbac_tokens = [tuple(t.split("=", 1)) for t in args.rbac_token]
    scheme = "http"
    if args.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        if args.client_ca:
            ctx.load_verify_locations(args.client_ca)
            ctx.verify_mode = ssl.CERT_REQUIRED
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        scheme = "https"
    port = srv.server_address[1]
    url = f"{scheme}://{args.bind}:{port}"
    if args.kubeconfig_out:
        write_kubeconfig(args.kubeconfig_out, url, args.token, args.tls_ca)
    print(f"PORT {port}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
