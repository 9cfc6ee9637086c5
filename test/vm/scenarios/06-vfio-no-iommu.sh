# vm-profile: no-iommu
# Scenario 6: without an IOMMU, binding a VF to vfio-pci fails with a message that says what
# to do (intel_iommu=on), and the VF stays on igbvf, usable.

pf=$(netdev_of $IGB_PF)
setup_link_up "$pf"
run_ok "set-numvfs 2 works without an IOMMU" "$AGENT" debug set-numvfs $IGB_PF 2
vf=$(vf_pci $IGB_PF 1)
wait_for "VF 1 ($vf) has its igbvf netdev" 20 has_netdev "$vf"
check "VF 1 has no IOMMU group" test ! -e "$(pci_dir "$vf")/iommu_group"

run_fails "bind VF 1 to vfio-pci fails" "$AGENT" debug bind "$vf" vfio-pci
err_has "the error tells to enable the IOMMU (intel_iommu=on)" 'intel_iommu=on'
expect_eq "VF 1 is still bound to igbvf" "$(driver_of "$vf")" igbvf
wait_for "VF 1 still has its netdev" 20 has_netdev "$vf"
vfnet=$(netdev_of "$vf")
check "driver_override is not left set" test "$(cat "$(pci_dir "$vf")/driver_override")" = "(null)"

run_ok "VF 1 is usable: set-mtu $vfnet 1400" "$AGENT" debug set-mtu "$vfnet" 1400
expect_eq "$vfnet MTU is 1400" "$(cat /sys/class/net/"$vfnet"/mtu)" 1400
run_ok "VF 1 is usable: link-up $vfnet" "$AGENT" debug link-up "$vfnet"
check "$vfnet is administratively up" is_up "$vfnet"
run_ok "VF 1 is usable: vf-set mac" "$AGENT" debug vf-set "$pf" 1 mac 02:00:00:00:00:66
$IPR link show dev "$pf" >"$OUT"
out_has "iproute2: VF 1 MAC 02:00:00:00:00:66" 'vf 1 .*link/ether 02:00:00:00:00:66'
