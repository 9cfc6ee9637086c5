# Scenario 4: MTU and VF attributes through the agent's netlink code: PF MTU 9000 and a VF
# MTU; VF MAC, trust, spoofchk and VLAN; VF link state is "not supported" on igb and does not
# stop the other attributes. Each result is checked with iproute2 (independent of the agent)
# and with the agent's own vf-list. devlink (igb has none) must answer "not supported".

pf=$(netdev_of $IGB_PF)
run_ok "link-up $pf" "$AGENT" debug link-up "$pf"
check "$pf is administratively up" is_up "$pf"

run_ok "set-mtu $pf 9000" "$AGENT" debug set-mtu "$pf" 9000
expect_eq "$pf MTU is 9000" "$(cat /sys/class/net/"$pf"/mtu)" 9000
run_fails "set-mtu $pf 70000 is refused" "$AGENT" debug set-mtu "$pf" 70000
expect_eq "$pf MTU is still 9000" "$(cat /sys/class/net/"$pf"/mtu)" 9000

setup_numvfs $IGB_PF 2
vf0=$(vf_pci $IGB_PF 0)
wait_for "VF 0 netdev exists" 20 has_netdev "$vf0"
vfnet=$(netdev_of "$vf0")
run_ok "set-mtu $vfnet 4000 (VF)" "$AGENT" debug set-mtu "$vfnet" 4000
expect_eq "$vfnet MTU is 4000" "$(cat /sys/class/net/"$vfnet"/mtu)" 4000

run_ok "vf-set VF 0 mac/trust/spoofchk/vlan" "$AGENT" debug vf-set "$pf" 0 \
    mac 02:00:00:00:00:11 trust on spoofchk off vlan 10
$IPR link show dev "$pf" >"$OUT"
out_has "iproute2: VF 0 MAC 02:00:00:00:00:11" 'vf 0 .*link/ether 02:00:00:00:00:11'
out_has "iproute2: VF 0 vlan 10" 'vf 0 .*vlan 10'
out_has "iproute2: VF 0 spoof checking off" 'vf 0 .*spoof checking off'
out_has "iproute2: VF 0 trust on" 'vf 0 .*trust on'
out_has "iproute2: VF 1 untouched (spoof checking on)" 'vf 1 .*spoof checking on'

run_ok "discover -o json" "$AGENT" discover -o json
export VF0_PCI="$vf0"
jq_checks "discovery reports VF 0's VLAN 10 (read from the kernel)" \
    '[.interfaces[0].Vfs[] | select(.pciAddress == $ENV.VF0_PCI)][0].Vlan == 10' \
    "discovery reports the PF MTU 9000" '.interfaces[0].mtu == 9000' \
    "discovery reports VF 0's MTU 4000" \
    '[.interfaces[0].Vfs[] | select(.pciAddress == $ENV.VF0_PCI)][0].mtu == 4000'

run_ok "vf-list $pf" "$AGENT" debug vf-list "$pf"
out_has "vf-list shows VF 0's settings" \
    '^vf 0 mac 02:00:00:00:00:11 vlan 10 trust on spoofchk off link-state [a-z]+$'
out_has "vf-list shows VF 1" '^vf 1 mac [0-9a-f:]{17} vlan 0 trust off spoofchk on'
expect_eq "vf-list has one line per VF" "$(grep -c '^vf ' "$OUT")" 2

run_ok "vf-set VF 1 mac + link-state enable: only the link state is unsupported" \
    "$AGENT" debug vf-set "$pf" 1 mac 02:00:00:00:00:22 link-state enable
out_has "it reports link-state as not supported" 'link-state: not supported'
$IPR link show dev "$pf" >"$OUT"
out_has "iproute2: VF 1 MAC 02:00:00:00:00:22 applied despite link-state" 'vf 1 .*link/ether 02:00:00:00:00:22'

run_ok "vf-set VF 0 vlan 0 spoofchk on trust off" "$AGENT" debug vf-set "$pf" 0 vlan 0 spoofchk on trust off
$IPR link show dev "$pf" >"$OUT"
out_lacks "iproute2: VF 0 has no VLAN" 'vf 0 .*vlan [1-9]'
out_has "iproute2: VF 0 spoof checking on" 'vf 0 .*spoof checking on'
out_has "iproute2: VF 0 trust off" 'vf 0 .*trust off'

run_fails "vf-set on VF 5 (only 2 exist) is refused" "$AGENT" debug vf-set "$pf" 5 mac 02:00:00:00:00:55
run_fails "vf-set with a malformed MAC is refused" "$AGENT" debug vf-set "$pf" 0 mac 02:00:00:00:00
run_fails "vf-set with VLAN 4096 (out of 802.1Q range) is refused" "$AGENT" debug vf-set "$pf" 0 vlan 4096
run_fails "set-mtu on a missing interface is refused" "$AGENT" debug set-mtu nosuchif0 1500

# igb does not register with devlink: the kernel's devlink family answers, the device is unknown
run_ok "devlink query of the igb PF answers cleanly" "$AGENT" debug devlink $IGB_PF
out_has "eswitch mode is reported as not supported" '^eswitch-mode: not supported'
