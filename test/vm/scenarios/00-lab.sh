# The lab itself: the guest sees the devices the other scenarios rely on, and the agent runs.
# (Checks the lab, not the agent: if this fails, the other scenarios' failures mean little.)

run_ok "sriov-agent runs in the guest" "$AGENT" version
out_has "it prints a version" '[0-9]+\.[0-9]+'

check "igb PF $IGB_PF is present" test -d "$(pci_dir $IGB_PF)"
expect_eq "igb PF vendor" "$(cat "$(pci_dir $IGB_PF)/vendor")" 0x8086
expect_eq "igb PF device" "$(cat "$(pci_dir $IGB_PF)/device")" 0x10c9
expect_eq "igb PF driver" "$(driver_of $IGB_PF)" igb
expect_eq "igb PF sriov_totalvfs" "$(cat "$(pci_dir $IGB_PF)/sriov_totalvfs")" 7
check "igb PF has a netdev" has_netdev $IGB_PF
if [ "$VM_PROFILE" = iommu ]; then
    check "igb PF is in an IOMMU group" test -e "$(pci_dir $IGB_PF)/iommu_group"
    check "the NVMe SR-IOV PF is present" find_pci 1b36 0010
else
    check "no IOMMU groups without the emulated IOMMU" test ! -e "$(pci_dir $IGB_PF)/iommu_group"
fi
check "vfio-pci is loaded" test -d /sys/bus/pci/drivers/vfio-pci
check "rdma_rxe is loaded" test -d /sys/module/rdma_rxe
