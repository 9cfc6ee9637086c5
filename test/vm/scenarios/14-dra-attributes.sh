# vm-profile: iommu
# Scenario 14: the DRA attributes of the igb VFs on a real kernel. `plan --dra-resources` shows
# the ResourceSlices the agent would publish; each VF's resource.kubernetes.io/pcieRoot and
# pciBusID must equal what this script reads from sysfs itself (the first directory under
# /sys/devices of the VF's resolved path, and the virtfnN link's target).

pf=$(netdev_of $IGB_PF)
setup_numvfs $IGB_PF 2
VF0=$(vf_pci $IGB_PF 0)
VF1=$(vf_pci $IGB_PF 1)
wait_for "VF 0 netdev exists" 20 has_netdev "$VF0"
wait_for "VF 1 netdev exists" 20 has_netdev "$VF1"
root_of() { readlink -f "$(pci_dir "$1")" | sed -e 's|^/sys/devices/||' -e 's|/.*||'; }
ROOT0=$(root_of "$VF0")
ROOT1=$(root_of "$VF1")
export VF0 VF1 ROOT0 ROOT1
case $ROOT0 in pci*) ok "sysfs: VF 0 hangs under host bridge $ROOT0" ;;
*) fail "sysfs: VF 0's root" "got '$ROOT0' from $(readlink -f "$(pci_dir "$VF0")")" ;; esac

cat >/tmp/dra-policy.yaml <<POLICY
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata: {name: lab-dra, namespace: sriov-network-operator}
spec:
  resourceName: labdra
  nodeSelector: {lab: "true"}
  numVfs: 2
  nicSelector: {pfNames: ["$pf"]}
POLICY
run_ok "plan --dra-resources labdra" \
    "$AGENT" plan --policies /tmp/dra-policy.yaml --node-labels lab=true --node-name lab \
    --dra-resources labdra -o json
jq_checks \
    "one slice of pool lab with both VFs" \
    '.resourceSlices | length == 1 and .[0].spec.pool.name == "lab" and
     (.[0].spec.devices | length == 2)' \
    "VF 0: pcieRoot and pciBusID as sysfs says" \
    '.resourceSlices[0].spec.devices[] | select(.attributes["resource.kubernetes.io/pciBusID"].string == $ENV.VF0)
     | .attributes["resource.kubernetes.io/pcieRoot"].string == $ENV.ROOT0' \
    "VF 1: pcieRoot and pciBusID as sysfs says" \
    '.resourceSlices[0].spec.devices[] | select(.attributes["resource.kubernetes.io/pciBusID"].string == $ENV.VF1)
     | .attributes["resource.kubernetes.io/pcieRoot"].string == $ENV.ROOT1' \
    "VF 1: its index on the PF" \
    '.resourceSlices[0].spec.devices[] | select(.attributes["resource.kubernetes.io/pciBusID"].string == $ENV.VF1)
     | .attributes["sriovnetwork.k8snetworkplumbingwg.io/vfID"].int == 1'
