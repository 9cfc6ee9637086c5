#!/usr/bin/env python3
"""Writes the hand-made seeds of test/fuzz/corpus/ (the copies of test fixtures there were
made with cp). Re-run after a format change; it only overwrites its own files."""
import json
import os
import struct

here = os.path.dirname(os.path.abspath(__file__))
corpus = os.path.join(here, 'corpus')
fixtures = os.path.join(here, '..', 'fixtures')


def w(path, data):
    path = os.path.join(corpus, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# policy API objects: each item of the JSON fixture alone, plus every spec field in one object
with open(os.path.join(fixtures, 'policies', 'other', 'two-policies.json')) as f:
    lst = json.load(f)
for i, item in enumerate(lst['items']):
    w(f'policy-api/item-{i}.json', json.dumps(item))
full = {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
        "metadata": {"name": "all-fields", "namespace": "sriov-network-operator"},
        "spec": {"resourceName": "all_fields", "nodeSelector": {"a": "b", "c": ""},
                 "priority": 5, "mtu": 1500, "numVfs": 4,
                 "nicSelector": {"vendor": "15b3", "deviceID": "101b",
                                 "rootDevices": ["0000:3b:00.0"],
                                 "pfNames": ["ens1f0#1-2", "ens2f0"],
                                 "netFilter": "openstack/NetworkID:abc"},
                 "deviceType": "netdevice", "isRdma": True, "needVhostNet": True,
                 "linkType": "eth", "eSwitchMode": "legacy", "excludeTopology": False,
                 "externallyManaged": False}}
w('policy-api/all-fields.json', json.dumps(full))
w('policy-api/list.json', json.dumps(lst))
w('policy-file/all-fields.json', json.dumps(full, indent=1))
w('policy-file/anchors.yaml', 'a: &x [1, 2]\nb: *x\n---\nkind: SriovNetworkNodePolicy\n'
  'metadata: {name: "q"}\nspec: !!map {numVfs: 0x10, mtu: 0o17, priority: ~}\n')

# desired state / applied record in the documented spec names
iface = {"pciAddress": "0000:3b:00.0", "name": "ens1f0", "numVfs": 8, "mtu": 9000,
         "linkType": "eth", "eSwitchMode": "legacy", "externallyManaged": False,
         "vfGroups": [{"resourceName": "net_a", "deviceType": "netdevice", "vfRange": "0-3",
                       "policyName": "policy-a", "mtu": 9000, "isRdma": True},
                      {"resourceName": "vfio_b", "deviceType": "vfio-pci", "vfRange": "4-7",
                       "policyName": "policy-b", "vdpaType": "virtio"}]}
w('desired-state/two-groups.json', json.dumps({"interfaces": [iface]}))
w('desired-state/minimal.json',
  json.dumps({"interfaces": [{"pciAddress": "0000:5e:00.1", "numVfs": 0, "vfGroups": []}]}))
w('desired-state/empty.json', '{"interfaces":[]}')
w('applied-record/full.json', json.dumps({"pciAddress": "0000:3b:00.0", "originalMtu": 1500,
                                          "originalESwitchMode": "legacy", "interface": iface}))
w('applied-record/minimal.json', json.dumps(
    {"pciAddress": "0000:3b:00.0", "interface": {"pciAddress": "0000:3b:00.0", "numVfs": 2}}))

# RDMA shared config: the deprecated "devices" form and every selector
w('rdma-shared-config/devices.json', json.dumps(
    {"configList": [{"resourceName": "hca_a", "rdmaHcaMax": 100, "devices": ["ib0", "ib1"]}]}))
w('rdma-shared-config/all-selectors.json', json.dumps({"periodicUpdateInterval": 0, "configList": [
    {"resourceName": "r1", "resourcePrefix": "example.com", "rdmaHcaMax": 3,
     "selectors": {"vendors": ["15b3"], "deviceIDs": ["101b"], "drivers": ["mlx5_core"],
                   "ifNames": ["ens1f0"], "linkTypes": ["ether", "infiniband"]}},
    {"resourceName": "r2", "rdmaHcaMax": 0, "selectors": {}}]}))


# protobuf, hand-encoded (no protobuf module needed)
def varint(n):
    out = b''
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7f
        n >>= 7
        if not n:
            return out + bytes([b])
        out += bytes([b | 0x80])


def ld(field, payload):
    payload = payload.encode() if isinstance(payload, str) else payload
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def vi(field, n):
    return varint(field << 3) + varint(n)


def frame(msg):
    return b'\0' + struct.pack('>I', len(msg)) + msg


vfs = [f"0000:3b:01.{i}" for i in range(4)] + [f"0000:5e:01.{i}" for i in range(4)]
alloc = ld(1, ld(1, vfs[0]) + ld(1, vfs[1])) + ld(1, ld(1, vfs[4]))
pref = ld(1, b''.join(ld(1, v) for v in vfs) + ld(2, vfs[5]) + vi(3, 3))
# byte 0: handler = b % 4 (0 Allocate, 1 Preferred, 2 GetOptions, 3 PreStart), pool = b / 4 % 2
for pool in (0, 1):
    w(f'dp-requests/allocate-{pool}', bytes([0 + 4 * pool]) + alloc)
    w(f'dp-requests/preferred-{pool}', bytes([1 + 4 * pool]) + pref)
w('dp-requests/allocate-unknown', bytes([0]) + ld(1, ld(1, "0000:99:01.0")))
w('dp-requests/preferred-negative', bytes([1]) + ld(1, ld(1, vfs[0]) + vi(3, -1)))
w('dp-requests/options-empty', bytes([2]))
w('dp-requests/prestart', bytes([3]) + ld(1, vfs[0]))


# PodResources List response: pod -> container -> devices(resource, ids)
def dev(res, ids):
    return ld(2, ld(1, res) + b''.join(ld(2, i) for i in ids))


cont = ld(1, "c1") + dev("example.com/net", vfs[:2]) + dev("example.com/vfio", [vfs[4]])
pod = (ld(1, "pod-a") + ld(2, "default") + ld(3, cont) +
       ld(3, ld(1, "c2") + dev("example.com/net", [vfs[1], vfs[2]])))
w('podresources-list/two-pods', ld(1, pod) + ld(1, ld(1, "pod-b") + ld(2, "kube-system")))
w('podresources-list/empty', b'')

# gRPC framing: byte 0 picks the cap, then [n][n bytes] chunks
stream = frame(alloc) + frame(b'') + frame(pref)
chunks = b''
for i in range(0, len(stream), 7):
    c = stream[i:i + 7]
    chunks += bytes([len(c)]) + c
w('grpc-frame/three-messages-7-byte-chunks', b'\0' + chunks)
w('grpc-frame/one-chunk', b'\0' + bytes([len(frame(alloc))]) + frame(alloc))
w('grpc-frame/compressed', b'\0' + bytes([7]) + b'\1\0\0\0\2xy')
w('grpc-frame/over-cap', b'\3' + bytes([10]) + frame(b'0123456789abcdefghij')[:10])
w('grpc-frame/percent', b'\0' + b'\x05bad%2xrequest%ZZ%41%')

# sysfs attributes: byte 0 is the reader's buffer size (mod 65)
for name, text in {"int": "42\n", "neg": "-1\n", "hex": "0x15b3\n", "hex-bare": "101b",
                   "big": "2147483648\n", "link": "../../../bus/pci/drivers/mlx5_core",
                   "spaces": " 7 \n", "empty": ""}.items():
    w(f'sysfs-attr/{name}', bytes([64]) + text.encode())
w('sysfs-attr/small-buffer', bytes([3]) + b'12345\n')

# kubeconfig, in the shape the fake API server writes, with every user/cluster field form
kubeconfig = ("apiVersion: v1\nkind: Config\nclusters:\n- name: lab\n  cluster:\n"
              "    server: https://10.0.0.1:6443/\n{cluster}"
              "users:\n- name: admin\n  user:\n{user}"
              "contexts:\n- name: lab-admin\n  context:\n    cluster: lab\n    user: admin\n"
              "current-context: lab-admin\n")
w('kubeconfig/token', kubeconfig.format(cluster="", user="    token: abc\n"))
w('kubeconfig/ca-data', kubeconfig.format(
    cluster="    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n",
    user="    client-certificate-data: eA==\n    client-key-data: eQ==\n"))
w('kubeconfig/insecure-token-file', kubeconfig.format(
    cluster="    insecure-skip-tls-verify: true\n", user="    tokenFile: config\n"))
w('kubeconfig/files', kubeconfig.format(cluster="    certificate-authority: config\n",
                                       user="    client-certificate: config\n"
                                            "    client-key: ./config\n"))
w('kubeconfig/exec', kubeconfig.format(cluster="", user="    exec:\n      command: x\n"))


# watch stream: byte 0 = line cap index (+0x80: callback stops after 2 events), then chunks
def chunked(body, size):
    out = b''
    for i in range(0, len(body), size):
        c = body[i:i + size]
        out += bytes([len(c)]) + c
    return out


events = [{"type": t, "object": {"apiVersion": "sriovnetwork.openshift.io/v1",
                                 "kind": "SriovNetworkNodePolicy",
                                 "metadata": {"name": "p", "resourceVersion": str(i)},
                                 "spec": {"numVfs": 4}}}
          for i, t in enumerate(["ADDED", "MODIFIED", "DELETED", "BOOKMARK"])]
events.append({"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}})
body = b''.join(json.dumps(e).encode() + b'\n' for e in events)
w('watch-stream/five-events-13', b'\0' + chunked(body, 13))
w('watch-stream/five-events-whole', b'\0' + chunked(body, 255))
w('watch-stream/stop-after-two', b'\x80' + chunked(body, 64))
w('watch-stream/small-cap', b'\5' + chunked(body, 100))
w('watch-stream/garbage-then-ok', b'\0' + chunked(b'{"type":"NOPE"}\n' + body, 40))

# CNI configurations (fuzz-cni-conf: CNI_ARGS, NUL, configuration)
sriov_all = {"cniVersion": "1.0.0", "name": "highnet", "type": "sriov",
             "deviceID": "0000:3b:02.1", "vlan": 100, "vlanQoS": 3, "vlanProto": "802.1ad",
             "spoofchk": "off", "trust": "on", "link_state": "enable", "min_tx_rate": 10,
             "max_tx_rate": 200, "mac": "02:00:00:00:00:0C",
             "runtimeConfig": {"mac": "02:00:00:00:00:0A"},
             "ipam": {"type": "host-local", "subnet": "10.56.0.0/24"}}
w('cni-conf/all-fields.json', json.dumps(sriov_all))
w('cni-conf/args-and-conf.bin', b'IgnoreUnknown=1;K8S_POD_NAME=p;MAC=02:00:00:00:00:0b\0' +
  json.dumps({"name": "n", "deviceID": "0000:3b:02.1"}).encode())
w('cni-conf/go-keys.json', '{"CNIVERSION":"0.4.0","Name":"n","DEVICEID":"0000:3b:02.1",'
  '"VLAN":1,"vlan":2,"\\u0076lan":3,"\u017fpoofchk":"on","IPAM":{"TYPE":"static"},'
  '"runtimeConfig":{"MAC":"02:00:00:00:00:01","mac":null}}')


# nldev answers (uapi <rdma/rdma_netlink.h> values: SYS_ATTR_NETNS_MODE 66, SYS_ATTR_COPY_ON_FORK
# 93, DEV_INDEX 1, DEV_NAME 2, PORT_INDEX 3, NODE_GUID 6, DEV_PROTOCOL 67) and an RTM_NEWLINK of
# an InfiniBand PF with one VF's GUIDs; byte 0 picks the message type (fuzz-rdma-netlink.c)
def nla(t, payload):
    n = 4 + len(payload)
    return struct.pack('<HH', n, t) + payload + b'\0' * ((4 - n % 4) % 4)


w('rdma-netlink/sys-get-shared', b'\x00' + nla(66, b'\x01') + nla(93, b'\x01'))
w('rdma-netlink/get-mlx5', b'\x01' + nla(1, struct.pack('<I', 4)) + nla(2, b'mlx5_3\0') +
  nla(3, struct.pack('<I', 1)) + nla(6, struct.pack('<Q', 0x0c42a10300b8c0de)) +
  nla(67, b'ib\0'))
vf_guid = struct.pack('<IIQ', 0, 0, 0x0200000000000001)
vf_info = nla(1, nla(1, struct.pack('<I', 0) + b'\0' * 32) + nla(10, vf_guid) + nla(11, vf_guid))
w('rdma-netlink/newlink-ib-vf', b'\x02' + b'\0' * 16 + nla(22 | 0x8000, vf_info))
w('ib-guid-pool/upstream-example.json', json.dumps([
    {"pciAddress": "0000:3b:00.0",
     "guids": ["02:00:00:00:00:00:00:00", "02:00:00:00:00:00:00:01"]},
    {"pfGuid": "0c:42:a1:03:00:b8:c0:de",
     "guidsRange": {"start": "02:00:00:00:00:aa:00:02", "end": "02:00:00:00:00:aa:00:0a"}}],
    indent=1))
# refused: a GUID a VF must never get, in each of the places one is handed out from
w('ib-guid-pool/invalid-guids.json', json.dumps([
    {"pciAddress": "0000:3b:00.0",
     "guids": ["02:00:00:00:00:00:00:01", "ff:ff:ff:ff:ff:ff:ff:ff"]},
    {"pciAddress": "0000:3b:00.1",
     "guidsRange": {"start": "00:00:00:00:00:00:00:00", "end": "02:00:00:00:00:aa:00:0a"}}],
    indent=1))
