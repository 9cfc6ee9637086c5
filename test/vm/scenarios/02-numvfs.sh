# Scenario 2: the VF count through `sriov-agent debug set-numvfs`: create 4, grow to 6 (the
# kernel refuses 4 -> 6 directly, so this proves the 0-first rule), shrink to 0;
# asking for 8 (> totalvfs 7) fails with a clear message and leaves the PF as it was.
# Checked in sysfs (sriov_numvfs, virtfnN links, bound drivers) and through discovery.

vf_netdevs_ready() {
    i=0
    while [ "$i" -lt "$1" ]; do
        has_netdev "$(vf_pci $IGB_PF $i)" || return 1
        i=$((i + 1))
    done
}

run_ok "set-numvfs 4" "$AGENT" debug set-numvfs $IGB_PF 4
out_has "it says ok" '^ok'
expect_eq "sriov_numvfs is 4" "$(numvfs_of $IGB_PF)" 4
expect_eq "4 virtfn links" "$(count_virtfn $IGB_PF)" 4
for i in 0 1 2 3; do
    vf=$(vf_pci $IGB_PF $i)
    expect_eq "VF $i ($vf) is bound to igbvf" "$(driver_of "$vf")" igbvf
    expect_eq "VF $i links back to its PF" "$(basename "$(readlink "$(pci_dir "$vf")/physfn")")" $IGB_PF
done
wait_for "the 4 VF netdevs exist" 20 vf_netdevs_ready 4

run_ok "discover sees 4 VFs" "$AGENT" discover -o json
set --
for i in 0 1 2 3; do
    vf=$(vf_pci $IGB_PF $i)
    export "VF_PCI_$i=$vf" "VF_NET_$i=$(netdev_of "$vf")"
    set -- "$@" "VF $i: vfID $i at $vf, igbvf, 8086:10ca, netdev $(netdev_of "$vf")" \
        "[.interfaces[0].Vfs[] | select(.vfID == $i)] | length == 1 and .[0].pciAddress == \$ENV.VF_PCI_$i
         and .[0].driver == \"igbvf\" and .[0].vendor == \"8086\" and .[0].deviceID == \"10ca\"
         and .[0].name == \$ENV.VF_NET_$i"
done
jq_checks "numVfs 4 and 4 VF entries" '.interfaces[0] | .numVfs == 4 and (.Vfs | length) == 4' "$@"

run_ok "set-numvfs 6 (grow: 0 first)" "$AGENT" debug set-numvfs $IGB_PF 6
expect_eq "sriov_numvfs is 6" "$(numvfs_of $IGB_PF)" 6
expect_eq "6 virtfn links" "$(count_virtfn $IGB_PF)" 6

run_ok "set-numvfs 6 again (nothing to do)" "$AGENT" debug set-numvfs $IGB_PF 6
expect_eq "sriov_numvfs still 6" "$(numvfs_of $IGB_PF)" 6

vf0_before=$(vf_pci $IGB_PF 0)
run_fails "set-numvfs 8 is refused" "$AGENT" debug set-numvfs $IGB_PF 8
err_has "the error names the totalvfs limit" 'totalvfs|total vfs'
err_has "the error gives the limit 7" '(^|[^0-9.:])7([^0-9.:]|$)'
expect_eq "sriov_numvfs is still 6" "$(numvfs_of $IGB_PF)" 6
expect_eq "6 virtfn links still" "$(count_virtfn $IGB_PF)" 6
expect_eq "VF 0 is still the same function" "$(vf_pci $IGB_PF 0)" "$vf0_before"
expect_eq "VF 0 is still bound to igbvf" "$(driver_of "$vf0_before")" igbvf

run_ok "set-numvfs 0" "$AGENT" debug set-numvfs $IGB_PF 0
expect_eq "sriov_numvfs is 0" "$(numvfs_of $IGB_PF)" 0
expect_eq "no virtfn links" "$(count_virtfn $IGB_PF)" 0

run_fails "set-numvfs on a function that is not a PF is refused" "$AGENT" debug set-numvfs 0000:00:00.0 2
