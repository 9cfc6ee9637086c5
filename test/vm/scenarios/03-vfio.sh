# Scenario 3: `sriov-agent debug bind`: VF 1 to vfio-pci (the kernel then offers
# /dev/vfio/<group>), and back to its default driver igbvf (its netdev returns).

setup_link_up "$(netdev_of $IGB_PF)" # igbvf refuses to probe while the PF is down
setup_numvfs $IGB_PF 2
vf=$(vf_pci $IGB_PF 1)
vf0=$(vf_pci $IGB_PF 0)
wait_for "VF 1 ($vf) has its igbvf netdev" 20 has_netdev "$vf"
group=$(iommu_group_of "$vf")
check "VF 1 has its own IOMMU group ($group)" test -n "$group"

run_ok "bind VF 1 to vfio-pci" "$AGENT" debug bind "$vf" vfio-pci
out_has "it says ok" '^ok'
expect_eq "VF 1 driver link names vfio-pci" "$(driver_of "$vf")" vfio-pci
check "/dev/vfio/$group exists" test -c "/dev/vfio/$group"
check "VF 1 has no netdev while on vfio-pci" test -z "$(netdev_of "$vf")"
expect_eq "VF 0 is untouched (igbvf)" "$(driver_of "$vf0")" igbvf

run_ok "discover reports VF 1 on vfio-pci" "$AGENT" discover -o json
jq_ok "VF 1 driver vfio-pci in discovery" --arg a "$vf" \
    '[.interfaces[0].Vfs[] | select(.pciAddress == $a)][0].driver == "vfio-pci"'

run_ok "bind VF 1 to vfio-pci again (already there)" "$AGENT" debug bind "$vf" vfio-pci
expect_eq "VF 1 still on vfio-pci" "$(driver_of "$vf")" vfio-pci

run_ok "bind VF 1 back to its default driver" "$AGENT" debug bind "$vf" default
expect_eq "VF 1 driver link names igbvf" "$(driver_of "$vf")" igbvf
wait_for "VF 1 netdev is back" 20 has_netdev "$vf"
check "/dev/vfio/$group is gone" test ! -e "/dev/vfio/$group"
check "driver_override is cleared" test "$(cat "$(pci_dir "$vf")/driver_override")" = "(null)"

run_fails "binding a VF that does not exist is refused" "$AGENT" debug bind 0000:01:1f.7 vfio-pci
run_fails "an unknown driver name is refused" "$AGENT" debug bind "$vf" e1000
expect_eq "VF 1 still on igbvf after the refusals" "$(driver_of "$vf")" igbvf
