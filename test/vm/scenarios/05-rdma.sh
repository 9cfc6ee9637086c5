# Scenario 5: RDMA discovery on a real kernel: a Soft-RoCE (rxe) device over a VF's netdev is
# reported on that VF, with its uverbs char device, and on no other function.

pf=$(netdev_of $IGB_PF)
setup_link_up "$pf"
setup_numvfs $IGB_PF 2
vf1=$(vf_pci $IGB_PF 1)
vf0=$(vf_pci $IGB_PF 0)
wait_for "VF 1 netdev exists" 20 has_netdev "$vf1"
vfnet=$(netdev_of "$vf1")
setup_link_up "$vfnet"
rdma link add rxe0 type rxe netdev "$vfnet" || fail "setup: rdma link add rxe0 over $vfnet"
wait_for "rxe0 exists" 10 test -e /sys/class/infiniband/rxe0

uverbs=
for d in /sys/class/infiniband_verbs/uverbs*; do
    [ "$(cat "$d/ibdev" 2>/dev/null)" = rxe0 ] && uverbs=$(basename "$d")
done
check "rxe0 has a uverbs device ($uverbs)" test -n "$uverbs"
wait_for "/dev/infiniband/$uverbs exists" 10 test -c "/dev/infiniband/$uverbs"

export VF1_PCI="$vf1" VF0_PCI="$vf0" UVERBS="/dev/infiniband/$uverbs"
run_ok "discover -o json" "$AGENT" discover -o json
jq_checks \
    "VF 1 ($vf1) has rdmaDevices [rxe0]" \
    '[.interfaces[0].Vfs[] | select(.pciAddress == $ENV.VF1_PCI)][0].rdmaDevices | map(.name) == ["rxe0"]' \
    "rxe0's char devices include /dev/infiniband/$uverbs" \
    '[.interfaces[0].Vfs[] | select(.pciAddress == $ENV.VF1_PCI)][0].rdmaDevices[0].charDevices | index($ENV.UVERBS) != null' \
    "VF 0 has no RDMA device" \
    '[.interfaces[0].Vfs[] | select(.pciAddress == $ENV.VF0_PCI)][0] | (.rdmaDevices // []) | length == 0' \
    "the PF has no RDMA device" '.interfaces[0] | (.rdmaDevices // []) | length == 0'

rdma link delete rxe0 || fail "cleanup: rdma link delete rxe0"
run_ok "discover after rxe0 is gone" "$AGENT" discover -o json
jq_ok "no VF has an RDMA device any more" '[.interfaces[0].Vfs[] | (.rdmaDevices // [])[]] | length == 0'
