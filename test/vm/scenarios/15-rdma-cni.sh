# vm-profile: no-iommu
# vm-needs: cni
# The `sriov` CNI plugin and RDMA devices on a real kernel: a Soft-RoCE (rxe) device over an igb
# VF's netdev is that VF's RDMA device. In shared RDMA mode (the boot state) nothing moves: ADD
# and DEL are unchanged and rxe0 stays in the node's namespace. In exclusive mode ADD would
# move rxe0 into the pod's namespace, which the kernel refuses for rxe (EOPNOTSUPP: no
# disassociate_ucontext): ADD fails with an error naming the device, the driver and the mode,
# and is undone (the VF back in the host with its name, MAC, MTU and PF-side settings, no
# record, rxe0 still in the node's namespace). A VF without an RDMA device is attached and
# released as before in exclusive mode; the failed ADD took the node-wide lock for RDMA moves.
# The guest is left in shared mode. The move of a
# device that can move (mlx5) is proven on the message level only (unit/test-rdma-netns).

STATE=/var/lib/cni/sriov
IPAM_DIR=/run/cni-ipam
KDIR=/var/lib/kubelet/device-plugins
PRSOCK=/var/lib/kubelet/pod-resources/kubelet.sock
KL_OUT=/tmp/kubelet.out
R_NET=openshift.io/sriov_highnet
PF=$(netdev_of "$IGB_PF")
PARAM=/sys/module/ib_core/parameters/netns_mode

setup_cni_wrapper
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "    --- agent log tail"; tail -n 20 /tmp/agent.log | sed "s/^/    | /"; fi' EXIT

netconf() {
    printf '{"cniVersion":"1.0.0","name":"rdma-net","type":"sriov","deviceID":"%s","vlan":%s,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.57.0.0/24"}]],"dataDir":"%s"}}\n' \
        "$2" "$3" "$IPAM_DIR" >"$1"
}
# the VFs and what the plugin keeps: PF's VF lines, netdev names/MACs/MTUs, records, RDMA devs
host_state() {
    $IPR link show dev "$PF" | grep -E '^ +vf ' | tr -s ' '
    for i in 0 1; do
        vf=$(vf_pci "$IGB_PF" $i)
        n=$(netdev_of "$vf")
        echo "vf$i ${n:-none} $([ -n "$n" ] && cat "/sys/class/net/$n/address" "/sys/class/net/$n/mtu" | tr '\n' ' ')"
    done
    # the plugin's records (host-local keeps its lock and last_reserved_ip after a DEL)
    find "$STATE" -type f ! -name '*.lock' 2>/dev/null | sort
    find "$IPAM_DIR" -type f ! -name lock ! -name 'last_reserved_ip*' 2>/dev/null | sort
    ls /sys/class/infiniband
}
clear_namespaces() { for ns in $($IPR netns list 2>/dev/null | cut -d' ' -f1); do $IPR netns del "$ns"; done; }

for ns in $($IPR netns list 2>/dev/null | cut -d' ' -f1); do $IPR netns del "$ns"; done
check "ib_core is loaded ($PARAM)" test -r $PARAM
expect_eq "the kernel starts in shared mode" "$(cat $PARAM)" Y
start_cni_node
VF0N=$(netdev_of "$VF0")
rdma link add rxe0 type rxe netdev "$VF0N" || fail "setup: rdma link add rxe0 over $VF0N"
wait_for "rxe0 exists over VF0's netdev $VF0N" 10 test -e /sys/class/infiniband/rxe0
netconf /tmp/rdma0.json "$VF0" 100
netconf /tmp/rdma1.json "$VF1" 101

# shared: nothing moves
$IPR netns add rpod1 || fail "setup: netns rpod1"
host_state >/tmp/before
run_ok "shared mode: ADD of VF0 (rxe0 over its netdev)" /tmp/cni.sh ADD /run/netns/rpod1 net1 r1 /tmp/rdma0.json
jq_ok "shared mode: the result names net1 in the pod" '.interfaces[0].name == "net1"'
check "shared mode: the VF's netdev is in the pod" $IPR -n rpod1 link show net1
check "shared mode: the record has no RDMA device to move back" sh -c "! grep -q RdmaNetState $STATE/r1-net1"
run_ok "shared mode: DEL" /tmp/cni.sh DEL /run/netns/rpod1 net1 r1 /tmp/rdma0.json
host_state | grep -v '^rxe0$' >/tmp/after
grep -v '^rxe0$' /tmp/before >/tmp/before.norxe
cmp -s /tmp/before.norxe /tmp/after || { echo "    --- what changed"; diff /tmp/before.norxe /tmp/after | sed 's/^/    | /'; }
check "shared mode: after DEL the VFs, PF-side settings and records are as before" cmp -s /tmp/before.norxe /tmp/after
clear_namespaces

# exclusive (no other namespace exists now)
run_ok "exclusive mode set" "$AGENT" debug rdma-mode exclusive
expect_eq "ib_core says exclusive (N)" "$(cat $PARAM)" N
[ -e /sys/class/infiniband/rxe0 ] || rdma link add rxe0 type rxe netdev "$(netdev_of "$VF0")" ||
    fail "setup: rxe0 again over VF0's netdev"
wait_for "rxe0 exists" 10 test -e /sys/class/infiniband/rxe0
$IPR netns add rpod2 || fail "setup: netns rpod2"
host_state >/tmp/before
run_fails "exclusive mode: ADD of VF0 (rxe0 cannot move)" /tmp/cni.sh ADD /run/netns/rpod2 net1 r2 /tmp/rdma0.json
jq_ok "exclusive mode: a CNI error JSON" '(.code | type) == "number" and (.msg | length) > 0'
out_has "the error names the RDMA device, its driver and the mode" 'rxe0 \(driver rxe\).*exclusive RDMA mode'
host_state >/tmp/after
cmp -s /tmp/before /tmp/after || { echo "    --- what changed"; diff /tmp/before /tmp/after | sed 's/^/    | /'; }
check "exclusive mode: ADD undone (VF0 in the host with its name, MAC, MTU, VLAN; no record; rxe0 in the node)" cmp -s /tmp/before /tmp/after
check "exclusive mode: nothing left in the pod" sh -c "! $IPR -n rpod2 link show net1"
# the move ran under the node-wide lock for re-binds and RDMA moves (a flock, gone with the
# plugin's process); and the kernel lists the device's uverbs where the plugin's check
# after a move reads it (class/infiniband_verbs/uverbsN/ibdev)
check "exclusive mode: the ADD took the node-wide RDMA move lock" \
    test -f $STATE/pci/vf_lock/rdma-moves.lock
check "rxe0's uverbs device names it in class/infiniband_verbs" \
    sh -c "grep -qx rxe0 /sys/class/infiniband_verbs/uverbs*/ibdev"

run_ok "exclusive mode: ADD of VF1 (no RDMA device)" /tmp/cni.sh ADD /run/netns/rpod2 net1 r3 /tmp/rdma1.json
check "exclusive mode: VF1's netdev is in the pod" $IPR -n rpod2 link show net1
run_ok "exclusive mode: DEL of VF1" /tmp/cni.sh DEL /run/netns/rpod2 net1 r3 /tmp/rdma1.json
host_state >/tmp/after
cmp -s /tmp/before /tmp/after || { echo "    --- what changed"; diff /tmp/before /tmp/after | sed 's/^/    | /'; }
check "exclusive mode: after DEL of VF1 all is as before" cmp -s /tmp/before /tmp/after

# back to the boot state for later scenarios
rdma link delete rxe0 2>/dev/null
clear_namespaces
run_ok "shared mode again" "$AGENT" debug rdma-mode shared
expect_eq "ib_core says shared (Y)" "$(cat $PARAM)" Y
kill "$AGENT_PID" 2>/dev/null
wait "$AGENT_PID" 2>/dev/null
exec 7>&-
