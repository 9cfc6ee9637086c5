# vm-profile: iommu
# Scenario 8: a policy selects the PF by an alternative interface name, as upstream does since
# late 2025 (systemd-udevd gives names such as enp59s0f0np0 as altnames on current distros).
# The altname is added with `ip link property add`; discovery reads it over rtnetlink
# (IFLA_PROP_LIST / IFLA_ALT_IFNAME) and `plan` on the live node selects the igb PF by it.

pf=$(netdev_of $IGB_PF)
ALT=sriov-lab-uplink0
export ALT IGB_PF

run_ok "ip link property add dev $pf altname $ALT" $IPR link property add dev "$pf" altname "$ALT"
run_ok "the kernel resolves the altname" $IPR -o link show dev "$ALT"
out_has "it is $pf" "$pf"

run_ok "discover -o json" "$AGENT" discover -o json
jq_checks "discover lists $ALT in altNames of $IGB_PF" \
    '.interfaces[] | select(.pciAddress == $ENV.IGB_PF) | .altNames | index($ENV.ALT) != null'

cat >/tmp/altname-policy.yaml <<POLICY
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata: {name: by-altname, namespace: sriov-network-operator}
spec:
  resourceName: byaltname
  nodeSelector: {lab: "true"}
  numVfs: 2
  nicSelector: {pfNames: ["$ALT#0-1"]}
POLICY
run_ok "plan selects the PF by its altname" \
    "$AGENT" plan --policies /tmp/altname-policy.yaml --node-labels lab=true -o json
jq_checks \
    "the policy is applied" '.policies[0].status == "applied"' \
    "desired: the igb PF with 2 VFs in group byaltname" \
    '.desired.interfaces | length == 1 and .[0].pciAddress == $ENV.IGB_PF and .[0].numVfs == 2
     and .[0].vfGroups[0].resourceName == "byaltname" and .[0].vfGroups[0].vfRange == "0-1"' \
    "the plan creates the 2 VFs" \
    '[.actions[] | select(.action == "set-num-vfs" and .pf == $ENV.IGB_PF and .value == 2)] | length == 1'

run_ok "remove the altname" $IPR link property del dev "$pf" altname "$ALT"
run_ok "plan again" "$AGENT" plan --policies /tmp/altname-policy.yaml --node-labels lab=true -o json
jq_checks "without the altname nothing is selected" '.policies[0].status == "not-selected"'
