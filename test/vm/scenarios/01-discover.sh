# Scenario 1: `sriov-agent discover` finds the igb PF (8086:10c9, totalvfs 7) with the facts
# the kernel shows in sysfs, and ignores the NVMe SR-IOV PF even while it has VFs.

nvme=$(find_pci 1b36 0010) || fail "setup: the NVMe SR-IOV PF is missing"
# VFs on the NVMe PF too, so that "ignored" covers a PF with live VFs; autoprobe off or the
# nvme driver grabs (and fails on) each VF
echo 0 >"$(pci_dir "$nvme")/sriov_drivers_autoprobe" || fail "setup: NVMe autoprobe off"
echo 2 >"$(pci_dir "$nvme")/sriov_numvfs" || fail "setup: 2 VFs on the NVMe PF"
nvme_vf=$(vf_pci "$nvme" 0)
pf=$(netdev_of $IGB_PF)
mac=$(cat /sys/class/net/"$pf"/address)
group=$(iommu_group_of $IGB_PF)

export IGB_PF PF_NET="$pf" PF_MAC="$mac" PF_GROUP="$group"
run_ok "discover -o json" "$AGENT" discover -o json
jq_checks \
    "output is one object with an interfaces array" '.interfaces | type == "array"' \
    "exactly one interface: the igb PF" '.interfaces | length == 1' \
    "igb PF at $IGB_PF" '.interfaces[0].pciAddress == $ENV.IGB_PF' \
    "vendor 8086, deviceID 10c9" '.interfaces[0] | .vendor == "8086" and .deviceID == "10c9"' \
    "totalvfs 7, numVfs 0, no VFs" '.interfaces[0] | .totalvfs == 7 and .numVfs == 0 and (.Vfs | length) == 0' \
    "driver igb" '.interfaces[0].driver == "igb"' \
    "netdev name $pf" '.interfaces[0].name == $ENV.PF_NET' \
    "MAC $mac" '.interfaces[0].mac == $ENV.PF_MAC' \
    "MTU 1500" '.interfaces[0].mtu == 1500' \
    "link type ETH" '.interfaces[0].linkType | ascii_downcase == "eth"' \
    "IOMMU group $group" '.interfaces[0].iommuGroup == ($ENV.PF_GROUP | tonumber)'
out_lacks "the NVMe PF $nvme is not reported" "$nvme"
out_lacks "the NVMe VF $nvme_vf is not reported" "$nvme_vf"
out_lacks "nothing with the NVMe vendor 1b36" '"1b36"'

run_ok "discover -o text" "$AGENT" discover -o text
out_has "text output names the igb PF" "$IGB_PF"
out_lacks "text output does not name the NVMe PF" "$nvme"

echo 0 >"$(pci_dir "$nvme")/sriov_numvfs"
