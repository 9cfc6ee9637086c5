#!/usr/bin/env python3
"""Policy conformance with the upstream sriov-network-operator, through `sriov-agent plan`.

Each case is written here in our own words and data, after a test (or the rule the test
exercises) of upstream's api/v1 helper tests (policy Apply / merge), pkg/webhook validate and
mutate tests, or the controller code they cover; `upstream` names it. Cases marked
`difference` assert a deliberate difference listed in docs/migration.md "Differences from the upstream
operator". The node is a generated sysfs tree shaped like upstream's webhook test node state
(two XXV710 ports ens803f0/ens803f1 with 4 of 64 VFs), plus a ConnectX-6 port and an onboard
I350 management port that is not in the supported-NIC list.
Usage: test-conformance.py SRIOV_AGENT SRCDIR [CASE-NAME-SUBSTRING]"""
import json
import os
import subprocess
import sys
import tempfile

AGENT, SRC = sys.argv[1], sys.argv[2]
ONLY = sys.argv[3] if len(sys.argv) > 3 else None
GEN = os.path.join(SRC, "test/sysfs-gen/gen-sysfs.py")
LABEL = "feature.node.kubernetes.io/network-sriov.capable"
failures = []


def policy(name, spec, priority=None):
    """One SriovNetworkNodePolicy document; spec is YAML flow text for the spec body."""
    spec = dict(spec)
    spec.setdefault("nodeSelector", {LABEL: "true"})
    if priority is not None:
        spec["priority"] = priority
    return json.dumps({"apiVersion": "sriovnetwork.openshift.io/v1",
                       "kind": "SriovNetworkNodePolicy",
                       "metadata": {"name": name, "namespace": "sriov-network-operator"},
                       "spec": spec})


# (name, upstream source, policies, extra plan args, expectations)
# expectations: exit: code; status: {policy: (status, reason substring or None)};
# pfs: {ifname: {numVfs, mtu, groups: {resourceName: "a-b"}}} (None: PF not in desired state);
# problem: substring of a plan problem.
CASES = [
    # --- 16.1 supported-NIC list ----------------------------------------------------------
    ("supported-list/vendor-only-skips-unlisted-model",
     "pkg/webhook/validate.go validateNicModel (IsSupportedModel) + "
     "TestStaticValidateSriovNetworkNodePolicyWithValidVendorDevice",
     [policy("intel", {"resourceName": "intel", "numVfs": 4, "mtu": 9000,
                       "nicSelector": {"vendor": "8086"}})],
     [], dict(exit=0, status={"intel": ("applied", "model not supported: 0000:41:00.0 (eno1, "
                                                   "8086:1521)")},
              pfs={"ens803f0": dict(numVfs=4, mtu=9000, groups={"intel": "0-3"}),
                   "ens803f1": dict(numVfs=4, mtu=9000, groups={"intel": "0-3"}),
                   "eno1": None})),
    ("supported-list/pfname-of-unlisted-model-not-selected",
     "pkg/webhook/validate.go validateNicModel: \"vendor and device ID is not in supported list\"",
     [policy("mgmt", {"resourceName": "mgmt", "numVfs": 2, "nicSelector": {"pfNames": ["eno1"]}})],
     [], dict(exit=0, status={"mgmt": ("not-selected", "not in the supported-NIC list")},
              pfs={"eno1": None})),
    ("supported-list/extra-model-from-file",
     "deployment chart values supportedExtraNICs (['MyNIC: \"8086 1521 1520\"'])",
     [policy("mgmt", {"resourceName": "mgmt", "numVfs": 2, "nicSelector": {"pfNames": ["eno1"]}})],
     ["--supported-nics", "@extra"],
     dict(exit=0, status={"mgmt": ("applied", None)},
          pfs={"eno1": dict(numVfs=2, groups={"mgmt": "0-1"})})),
    ("supported-list/extra-model-from-configmap-object",
     "api/v1 InitNicIDMapFromConfigMap (every data value of supported-nic-ids)",
     [policy("mgmt", {"resourceName": "mgmt", "numVfs": 2, "nicSelector": {"pfNames": ["eno1"]}})],
     ["--supported-nics", "@configmap"],
     dict(exit=0, status={"mgmt": ("applied", None)},
          pfs={"eno1": dict(numVfs=2, groups={"mgmt": "0-1"})})),
    ("supported-list/opt-out",
     "TestStaticValidateSriovNetworkNodePolicyWithInvalidVendorDevMode (DEV_MODE=TRUE)",
     [policy("mgmt", {"resourceName": "mgmt", "numVfs": 2, "nicSelector": {"pfNames": ["eno1"]}}),
      policy("odd", {"resourceName": "odd", "numVfs": 2, "nicSelector": {"vendor": "8087"}})],
     ["--all-nics"],
     dict(exit=0, status={"mgmt": ("applied", None),
                          "odd": ("not-selected", "matches no PF")},
          pfs={"eno1": dict(numVfs=2, groups={"mgmt": "0-1"})})),
    ("supported-list/unsupported-vendor-invalid",
     "TestStaticValidateSriovNetworkNodePolicyWithInvalidVendor",
     [policy("p1", {"resourceName": "p1", "numVfs": 4, "nicSelector": {"vendor": "8087"}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.nicSelector.vendor")})),
    ("supported-list/unsupported-device-invalid",
     "TestStaticValidateSriovNetworkNodePolicyWithInvalidDevice",
     [policy("p1", {"resourceName": "p1", "numVfs": 4, "nicSelector": {"deviceID": "4321"}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.nicSelector.deviceID")})),
    ("supported-list/unsupported-vendor-device-pair-invalid",
     "TestStaticValidateSriovNetworkNodePolicyWithInvalidVendorDevice",
     [policy("p1", {"resourceName": "p1", "numVfs": 4,
                    "nicSelector": {"vendor": "8086", "deviceID": "1015"}})],
     [], dict(exit=2, status={"p1": ("invalid", "vendor/device pair")})),
    ("supported-list/valid-vendor-device",
     "TestStaticValidateSriovNetworkNodePolicyWithValidVendorDevice",
     [policy("p1", {"resourceName": "p1", "numVfs": 4,
                    "nicSelector": {"vendor": "8086", "deviceID": "158b"}})],
     [], dict(exit=0, status={"p1": ("applied", None)},
              pfs={"ens803f0": dict(numVfs=4), "ens803f1": dict(numVfs=4)})),
    # --- 16.2 bridge: {} -------------------------------------------------------------------
    ("bridge/empty-object-is-no-bridge",
     "api/v1 Bridge.IsEmpty (OVS == nil) as used by ApplyBridgeConfig and "
     "staticValidateSriovNetworkNodePolicy",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "bridge": {},
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=0, status={"p1": ("applied", None)},
              pfs={"ens803f1": dict(numVfs=2, groups={"p1": "0-1"})})),
    ("bridge/ovs-refused",
     "difference: TestSriovNetworkNodePolicyApplyBridgeConfig (OVS bridges not managed here)",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "eSwitchMode": "switchdev",
                    "bridge": {"ovs": {"bridge": {"datapathType": "netdev"}}},
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=0, status={"p1": ("not-selected", "spec.bridge")}, pfs={"ens803f1": None})),
    # --- 16.3 the deprecated default policy -------------------------------------------------
    ("default-policy/skipped-before-validation",
     "TestValidateSriovNetworkNodePolicyWithDefaultPolicy, TestMutateSriovNetworkNodePolicy_DefaultPolicy + controller "
     "syncAllSriovNetworkNodeStates (DefaultPolicyName skipped)",
     [json.dumps({"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
                  "metadata": {"name": "default", "namespace": "sriov-network-operator"},
                  "spec": {"numVfs": 0, "resourceName": "", "nicSelector": {},
                           "nodeSelector": {}}}),
      policy("p1", {"resourceName": "p1", "numVfs": 2, "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=0, status={"default": ("not-selected", "deprecated and skipped"),
                              "p1": ("applied", None)})),
    # --- 16.7 CRD bounds without an API server ---------------------------------------------
    ("crd-bounds/mtu-zero-invalid",
     "api/v1 sriovnetworknodepolicy_types.go Mtu +kubebuilder:validation:Minimum=1",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "mtu": 0,
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.mtu")}, pfs={"ens803f1": None})),
    ("crd-bounds/priority-above-99-invalid",
     "api/v1 sriovnetworknodepolicy_types.go Priority +kubebuilder:validation:Maximum=99",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "nicSelector": {"pfNames": ["ens803f1"]}},
             priority=100)],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.priority")})),
    ("crd-bounds/link-type-enum",
     "api/v1 sriovnetworknodepolicy_types.go LinkType +kubebuilder:validation:Enum=eth;ETH;ib;IB",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "linkType": "Ethernet",
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.linkType")})),
    # --- 16.4 externallyManaged only between pfNames of the same PF ------------------------
    ("externally-managed/pfnames-same-pf-conflict",
     "TestValidatePolicyForNodePolicyWithExternallyManageConflict",
     [policy("p1", {"resourceName": "p1", "numVfs": 4, "externallyManaged": True,
                    "nicSelector": {"pfNames": ["ens803f0#0-1"]}}),
      policy("p2", {"resourceName": "p2", "numVfs": 4,
                    "nicSelector": {"pfNames": ["ens803f0#2-3"]}})],
     [], dict(exit=2, status={"p1": ("applied", None),
                              "p2": ("conflict", "externallyManaged differs")})),
    ("externally-managed/pfnames-same-flag-no-conflict",
     "TestValidatePolicyForNodePolicyWithOutExternallyManageConflict",
     [policy("p1", {"resourceName": "p1", "numVfs": 4, "externallyManaged": True,
                    "nicSelector": {"pfNames": ["ens803f0#0-1"]}}),
      policy("p2", {"resourceName": "p2", "numVfs": 4, "externallyManaged": True,
                    "nicSelector": {"pfNames": ["ens803f0#2-3"]}})],
     [], dict(exit=0, status={"p1": ("applied", None), "p2": ("applied", None)},
              pfs={"ens803f0": dict(numVfs=4, groups={"p1": "0-1", "p2": "2-3"})})),
    ("externally-managed/vendor-selector-not-compared",
     "pkg/webhook/validate.go validatePfNames (validateExternallyManage only for equal pfNames) "
     "+ TestSriovNetworkNodePolicyApply \"one policy present same pf same priority partitioning\"",
     [policy("a-vendor", {"resourceName": "byvendor", "numVfs": 2,
                          "nicSelector": {"vendor": "8086", "deviceID": "158b",
                                          "rootDevices": ["@ens803f0"]}}),
      policy("b-external", {"resourceName": "external", "numVfs": 4, "externallyManaged": True,
                            "nicSelector": {"pfNames": ["ens803f0#2-3"]}})],
     [], dict(exit=0, status={"a-vendor": ("applied", None), "b-external": ("applied", None)},
              pfs={"ens803f0": dict(numVfs=4, externallyManaged=True,
                                    groups={"byvendor": "0-1", "external": "2-3"})})),
    # --- 16.5 equal priority: the previous policy that matched the node ---------------------
    ("merge/equal-priority-previous-node-matched",
     "controllers/sriovnetworknodepolicy_controller.go syncAllSriovNetworkNodeStates "
     "(ppp updated for every p.Selected(node)) + TestSriovNetworkNodePolicyApply "
     "\"one policy present same pf same priority\"",
     [policy("x-low", {"resourceName": "low", "numVfs": 6, "mtu": 9000,
                       "nicSelector": {"rootDevices": ["@ens803f1"]}}, priority=20),
      policy("a-elsewhere", {"resourceName": "elsewhere", "numVfs": 2,
                             "nicSelector": {"pfNames": ["ens9f9"]}}, priority=10),
      policy("b-here", {"resourceName": "here", "numVfs": 2,
                        "nicSelector": {"pfNames": ["ens803f1#0-1"]}}, priority=10)],
     [], dict(exit=0, status={"a-elsewhere": ("not-selected", "matches no PF"),
                              "b-here": ("applied", None),
                              "x-low": ("not-selected", "replaced by a higher-priority")},
              pfs={"ens803f1": dict(numVfs=6, mtu=9000, groups={"here": "0-1"})})),
    ("merge/different-priority-replaces",
     "TestSriovNetworkNodePolicyApply \"one policy present same pf different priority\"",
     [policy("p2", {"resourceName": "vfiores", "numVfs": 3, "deviceType": "vfio-pci",
                    "nicSelector": {"rootDevices": ["@ens803f1"]}}, priority=20),
      policy("p1", {"resourceName": "p1res", "numVfs": 2,
                    "nicSelector": {"pfNames": ["ens803f1"]}}, priority=10)],
     [], dict(exit=0, status={"p1": ("applied", None)},
              pfs={"ens803f1": dict(numVfs=2, groups={"p1res": "0-1"})})),
    ("merge/same-priority-partitioning",
     "TestSriovNetworkNodePolicyApply \"one policy present same pf same priority partitioning\"",
     [policy("p1", {"resourceName": "p1res", "numVfs": 5, "mtu": 1600,
                    "nicSelector": {"pfNames": ["ens803f1#0-1"]}}),
      policy("p2", {"resourceName": "p2res", "numVfs": 3, "mtu": 1500,
                    "nicSelector": {"pfNames": ["ens803f1#2-2"]}})],
     [], dict(exit=0, status={"p1": ("applied", None), "p2": ("applied", None)},
              pfs={"ens803f1": dict(numVfs=5, mtu=1600, groups={"p1res": "0-1",
                                                                "p2res": "2-2"})})),
    ("merge/overlapping-ranges-rejected",
     "TestValidatePolicyForNodePolicyWithOverlappedVfRange",
     [policy("p1", {"resourceName": "p1", "numVfs": 4, "nicSelector": {"pfNames": ["ens803f1#0-2"]}}),
      policy("p2", {"resourceName": "p2", "numVfs": 4, "nicSelector": {"pfNames": ["ens803f1#2-3"]}})],
     [], dict(exit=2, status={"p2": ("conflict", "overlap")})),
    # --- 16.6 vdpa vendor is checked on the selected interface ----------------------------
    ("vdpa/vendor-checked-on-interface",
     "TestValidatePolicyForNodeStateVirtioVdpaWithNotSupportedVendor",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "vdpaType": "virtio",
                    "eSwitchMode": "switchdev", "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.vdpaType")})),
    ("vdpa/vendorless-selector-on-nvidia-not-refused",
     "pkg/webhook/validate.go validatePolicyForNodeState (iface.Vendor != MellanoxID only)",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "vdpaType": "virtio",
                    "eSwitchMode": "switchdev", "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=0, status={"p1": ("not-selected", "eswitch")})),
    # --- webhook node-state checks -------------------------------------------------------------
    ("webhook/numvfs-above-totalvfs-intel",
     "TestValidatePolicyForNodeStateWithInvalidNumVfsPolicy",
     [policy("p1", {"resourceName": "p1", "numVfs": 65,
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "sriov_totalvfs 64")})),
    ("webhook/externally-managed-too-few-vfs",
     "TestValidatePolicyForNodeStateWithInvalidNumVfsExternallyCreated",
     [policy("p1", {"resourceName": "p1", "numVfs": 5, "externallyManaged": True,
                    "nicSelector": {"pfNames": ["ens803f0"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "has 4 VFs, policy needs 5")})),
    ("webhook/externally-managed-mtu-above-pf",
     "TestValidatePolicyForNodeStateWithExternallyManageAndDifferentMTU",
     [policy("p1", {"resourceName": "p1", "numVfs": 4, "mtu": 9000, "externallyManaged": True,
                    "nicSelector": {"pfNames": ["ens803f0"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.mtu")})),
    ("webhook/rdma-with-vfio-invalid",
     "TestStaticValidateSriovNetworkNodePolicyWithConflictIsRdmaAndDeviceType",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "isRdma": True, "deviceType": "vfio-pci",
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.isRdma")})),
    ("webhook/resource-name-with-dash",
     "TestValidateResourceName (HEAD allows '-')",
     [policy("p1", {"resourceName": "sriov-net_1", "numVfs": 2,
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=0, status={"p1": ("applied", None)})),
    ("webhook/empty-nic-selector-invalid",
     "TestStaticValidateSriovNetworkNodePolicyWithInvalidNicSelector",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "nicSelector": {}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.nicSelector")})),
    # --- other deliberate differences (docs/migration.md "Differences from the upstream operator") -------
    ("difference/netfilter-not-selected",
     "difference: TestValidatePolicyForNodeStateWithValidNetFilter (cloud networks not provided)",
     [policy("p1", {"resourceName": "p1", "numVfs": 1,
                    "nicSelector": {"netFilter": "openstack/NetworkID:0c1a2b3c"}})],
     [], dict(exit=0, status={"p1": ("not-selected", "netFilter")})),
    ("difference/vendor-hex-case-insensitive",
     "difference: pkg/webhook/validate.go validateNicModel compares vendor strings exactly",
     [policy("p1", {"resourceName": "p1", "numVfs": 2,
                    "nicSelector": {"vendor": "15B3", "pfNames": ["ens1f0"]}})],
     [], dict(exit=0, status={"p1": ("applied", None)}, pfs={"ens1f0": dict(numVfs=2)})),
    ("difference/pfname-path-characters-invalid",
     "difference: stricter than staticValidateSriovNetworkNodePolicy (pfNames are plain names)",
     [policy("p1", {"resourceName": "p1", "numVfs": 2,
                    "nicSelector": {"pfNames": ["../ens803f1"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "not a network interface name")})),
    ("difference/conflict-resolved-on-node",
     "difference: TestValidatePolicyForNodePolicyWithOverlappedVfRange rejects at admission; "
     "here the higher-priority policy wins and the other applies nothing",
     [policy("winner", {"resourceName": "winner", "numVfs": 4,
                        "nicSelector": {"pfNames": ["ens803f1#0-2"]}}, priority=10),
      policy("loser", {"resourceName": "loser", "numVfs": 4,
                       "nicSelector": {"pfNames": ["ens803f1#2-3"]}}, priority=20)],
     [], dict(exit=2, status={"winner": ("applied", None),
                              "loser": ("conflict", "it wins, this policy applies nothing")},
              pfs={"ens803f1": dict(numVfs=4, groups={"winner": "0-2"})})),
    ("webhook/externally-managed-equal-vfs",
     "TestValidatePolicyForNodeStateWithValidNumVfsExternallyCreated",
     [policy("p1", {"resourceName": "p1", "numVfs": 4, "externallyManaged": True,
                    "nicSelector": {"pfNames": ["ens803f0"]}})],
     [], dict(exit=0, status={"p1": ("applied", None)},
              pfs={"ens803f0": dict(numVfs=4, externallyManaged=True)})),
    ("webhook/externally-managed-fewer-vfs",
     "TestValidatePolicyForNodeStateWithValidLowerNumVfsExternallyCreated",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "externallyManaged": True,
                    "nicSelector": {"pfNames": ["ens803f0"]}})],
     [], dict(exit=0, status={"p1": ("applied", None)}, no_actions_on=["ens803f0"])),
    ("webhook/exclude-topology-differs-same-resource",
     "TestValidatePoliciesWithDifferentExcludeTopologyForTheSameResource",
     [policy("p1", {"resourceName": "shared", "numVfs": 2, "excludeTopology": True,
                    "nicSelector": {"pfNames": ["ens803f0"]}}),
      policy("p2", {"resourceName": "shared", "numVfs": 2, "excludeTopology": False,
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=2, status={"p1": ("applied", None),
                              "p2": ("conflict", "excludeTopology differs")})),
    ("webhook/exclude-topology-same-resource-agrees",
     "TestValidatePoliciesWithSameExcludeTopologyForTheSameResource",
     [policy("p1", {"resourceName": "shared", "numVfs": 2, "excludeTopology": True,
                    "nicSelector": {"pfNames": ["ens803f0"]}}),
      policy("p2", {"resourceName": "shared", "numVfs": 2, "excludeTopology": True,
                    "nicSelector": {"pfNames": ["ens803f1"]}})],
     [], dict(exit=0, status={"p1": ("applied", None), "p2": ("applied", None)})),
    ("webhook/same-root-device-twice",
     "TestValidatePoliciesWithDifferentNumVfForTheSameResourceAndTheSameRootDevice",
     [policy("p1", {"resourceName": "shared", "numVfs": 2,
                    "nicSelector": {"rootDevices": ["@ens803f0"]}}),
      policy("p2", {"resourceName": "shared", "numVfs": 3,
                    "nicSelector": {"rootDevices": ["@ens803f0"]}})],
     [], dict(exit=2, status={"p2": ("conflict", "rootDevice")})),
    ("webhook/switchdev-needs-eth",
     "TestStaticValidateSriovNetworkNodePolicyWithInvalidLinkTypeForSwitchdev",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "eSwitchMode": "switchdev",
                    "linkType": "ib", "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.eSwitchMode")})),
    ("webhook/vdpa-needs-switchdev",
     "TestStaticValidateSriovNetworkNodePolicyVirtioVdpaMustSpecifySwitchDev",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "vdpaType": "virtio",
                    "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "requires eSwitchMode switchdev")})),
    ("webhook/vdpa-needs-netdevice",
     "TestStaticValidateSriovNetworkNodePolicyWithConflictDeviceTypeAndVhostVdpaType",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "vdpaType": "vhost",
                    "deviceType": "vfio-pci", "eSwitchMode": "switchdev",
                    "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "requires deviceType netdevice")})),
    ("apply/bad-pf-partition",
     "TestSriovNetworkNodePolicyApply \"bad pf partition\"",
     [policy("p1", {"resourceName": "p1res", "numVfs": 2,
                    "nicSelector": {"pfNames": ["ens803f0#a-c"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "field spec.nicSelector.pfNames")},
              pfs={"ens803f0": None})),
    ("difference/no-nic-on-this-node-not-selected",
     "difference: TestValidatePolicyForNodeStateWithInvalidPfName (upstream's webhook refuses a "
     "policy that selects no NIC on any node; one node cannot know, so: not-selected)",
     [policy("p0", {"resourceName": "p0", "numVfs": 63,
                    "nicSelector": {"pfNames": ["ens803f2"]}})],
     [], dict(exit=0, status={"p0": ("not-selected", "matches no PF")})),
    # --- mutating webhook defaults --------------------------------------------------------
    ("mutate/ib-link-type-sets-rdma",
     "TestMutateSriovNetworkNodePolicy_InfiniBandNetdeviceSetsIsRdma",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "linkType": "ib",
                    "nicSelector": {"pfNames": ["ibs3f0"]}})],
     [], dict(exit=0, status={"p1": ("applied", None)},
              pfs={"ibs3f0": dict(numVfs=2, rdma={"p1": True})})),
    ("mutate/default-priority-99",
     "TestMutateSriovNetworkNodePolicy_DefaultValues (priority 99): a priority-98 policy wins",
     [policy("a-defaulted", {"resourceName": "dflt", "numVfs": 4,
                             "nicSelector": {"rootDevices": ["@ens803f1"]}}),
      policy("b-explicit", {"resourceName": "expl", "numVfs": 2,
                            "nicSelector": {"pfNames": ["ens803f1"]}}, priority=98)],
     [], dict(exit=0, status={"b-explicit": ("applied", None)},
              pfs={"ens803f1": dict(numVfs=2, groups={"expl": "0-1"})})),
    ("mutate/ib-vfio-does-not-set-rdma",
     "TestMutateSriovNetworkNodePolicy_InfiniBandVfioPciDoesNotSetIsRdma",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "linkType": "IB", "deviceType": "vfio-pci",
                    "nicSelector": {"pfNames": ["ibs3f0"]}})],
     [], dict(exit=0, status={"p1": ("applied", None)},
              pfs={"ibs3f0": dict(numVfs=2, rdma={"p1": False})})),
    ("mutate/ethernet-does-not-set-rdma",
     "TestMutateSriovNetworkNodePolicy_EthernetDoesNotSetIsRdma",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "linkType": "eth",
                    "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=0, pfs={"ens1f0": dict(numVfs=2, rdma={"p1": False})})),
    ("mutate/existing-rdma-kept",
     "TestMutateSriovNetworkNodePolicy_ExistingIsRdmaNotOverridden",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "isRdma": True,
                    "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=0, pfs={"ens1f0": dict(numVfs=2, rdma={"p1": True})})),
    ("mutate/missing-spec-does-not-crash",
     "TestMutateSriovNetworkNodePolicy_MissingSpecDoesNotPanic / _NilSpecDoesNotPanic",
     [json.dumps({"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
                  "metadata": {"name": "no-spec", "namespace": "sriov-network-operator"}}),
      json.dumps({"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
                  "metadata": {"name": "nil-spec", "namespace": "sriov-network-operator"},
                  "spec": None})],
     [], dict(exit=2, status={"no-spec": ("invalid", "spec"), "nil-spec": ("invalid", "spec")})),
    # --- 16.8 firmware settings are reported, never changed -------------------------------------
    ("firmware/link-type-mismatch-is-pf-failure",
     "difference: pkg/plugins/mellanox (upstream sets LINK_TYPE_P* in firmware and reboots)",
     [policy("p1", {"resourceName": "p1", "numVfs": 2, "linkType": "IB",
                    "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=2, problem="mlxconfig -d @ens1f0 set LINK_TYPE_P<port>=1",
              no_actions_on=["ens1f0"])),
    ("firmware/nvidia-numvfs-above-totalvfs-is-pf-failure",
     "difference: pkg/plugins/mellanox (upstream raises NUM_OF_VFS in firmware and reboots); "
     "webhook validatePolicyForNodeState checks only MlxMaxVFs (128) for NVIDIA",
     [policy("p1", {"resourceName": "p1", "numVfs": 20, "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=2, status={"p1": ("applied", None)},
              problem="set SRIOV_EN=1 NUM_OF_VFS=20", no_actions_on=["ens1f0"])),
    ("firmware/nvidia-numvfs-above-128-invalid",
     "pkg/webhook/validate.go validatePolicyForNodeState (MlxMaxVFs)",
     [policy("p1", {"resourceName": "p1", "numVfs": 129, "nicSelector": {"pfNames": ["ens1f0"]}})],
     [], dict(exit=2, status={"p1": ("invalid", "the maximum for Mellanox NICs")})),
]


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "sys")
        r = subprocess.run([sys.executable, GEN, "--out", root, "--manifest",
                            "--pf", "xxv710:ens803f0:4", "--pf", "xxv710:ens803f1:4",
                            "--pf", "cx6:ens1f0:0", "--pf", "i350:eno1:0",
                            "--pf", "cx6-ib:ibs3f0:0"],
                           capture_output=True, text=True, check=True)
        addr = {p["ifname"]: p["pciAddress"] for p in json.loads(r.stdout)["pfs"]}
        files = {"extra": os.path.join(tmp, "extra.yaml"),
                 "configmap": os.path.join(tmp, "configmap.yaml")}
        with open(files["extra"], "w") as f:
            f.write('MyNIC: "8086 1521 1520"\n')
        with open(files["configmap"], "w") as f:
            f.write("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: supported-nic-ids\n"
                    "data:\n  Intel_i40e_XXV710: \"8086 158a 154c\"\n"
                    "  Intel_I350_onboard: \"8086 1521 1520\"\n")
        for name, upstream, docs, args, want in CASES:
            if ONLY and ONLY not in name:
                continue
            text = "\n---\n".join(docs)
            for ifname, pci in addr.items():
                text = text.replace('"@' + ifname + '"', '"' + pci + '"')
            pol = os.path.join(tmp, "policies.yaml")
            with open(pol, "w") as f:
                f.write(text)
            args = [files[a[1:]] if a.startswith("@") else a for a in args]
            r = subprocess.run([AGENT, "plan", "--policies", pol, "--sysfs-root", root,
                                "--node-labels", LABEL + "=true", "-o", "json", *args],
                               capture_output=True, text=True, timeout=30)
            where = f"{name} [{upstream}]"
            try:
                out = json.loads(r.stdout)
            except json.JSONDecodeError:
                check(False, f"{where}: exit {r.returncode}, no JSON: {r.stderr.strip()[:300]}")
                continue
            if "exit" in want:
                check(r.returncode == want["exit"],
                      f"{where}: exit {r.returncode}, want {want['exit']}")
            got = {p["name"]: p for p in out["policies"]}
            for pol_name, (status, part) in want.get("status", {}).items():
                p = got.get(pol_name)
                check(p is not None and p["status"] == status and
                      (part is None or part in p["reason"]),
                      f"{where}: policy {pol_name}: {p and p['status']} \"{p and p['reason']}\", "
                      f"want {status} with \"{part}\"")
            ifaces = {i["name"]: i for i in out["desired"]["interfaces"]}
            for ifname, exp in want.get("pfs", {}).items():
                i = ifaces.get(ifname)
                if exp is None:
                    check(i is None, f"{where}: {ifname} is in the desired state: {i}")
                    continue
                if i is None:
                    check(False, f"{where}: {ifname} missing from the desired state")
                    continue
                for key in ("numVfs", "mtu", "externallyManaged"):
                    if key in exp:
                        check(i.get(key) == exp[key],
                              f"{where}: {ifname} {key} {i.get(key)}, want {exp[key]}")
                groups = {g["resourceName"]: g for g in i["vfGroups"]}
                if "groups" in exp:
                    check({k: g["vfRange"] for k, g in groups.items()} == exp["groups"],
                          f"{where}: {ifname} groups {groups}, want {exp['groups']}")
                for res, rdma in exp.get("rdma", {}).items():
                    check(groups.get(res, {}).get("isRdma") == rdma,
                          f"{where}: {ifname} group {res} isRdma, want {rdma}")
            if "problem" in want:
                part = want["problem"]
                for ifname, pci in addr.items():
                    part = part.replace("@" + ifname, pci)
                check(any(part in p["message"] for p in out["problems"]),
                      f"{where}: no problem with \"{part}\": {out['problems']}")
            for ifname in want.get("no_actions_on", []):
                acts = [a for a in out["actions"] if a["pf"] == addr[ifname]]
                check(not acts, f"{where}: {ifname} must be left alone: {acts}")
            if not any(f.startswith(where) for f in failures):
                print("ok:", name)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)


main()
