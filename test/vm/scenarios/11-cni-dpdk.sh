# vm-profile: iommu
# vm-needs: cni
# The `sriov` CNI plugin with a VF on vfio-pci (DPDK mode), which needs the IOMMU boot: the agent
# makes 4 VFs, VFs 0-2 netdevice and VF 3 vfio-pci (a second, higher-priority policy); ADD of
# VF 3 sets its MAC and VLAN on the PF, runs IPAM, moves nothing and answers with the admin MAC;
# CHECK; DEL restores the PF's view of VF 3; both pools stay whole throughout.

STATE=/var/lib/cni/sriov
IPAM_DIR=/run/cni-ipam
KDIR=/var/lib/kubelet/device-plugins
PRSOCK=/var/lib/kubelet/pod-resources/kubelet.sock
KL_OUT=/tmp/kubelet.out
R_NET=openshift.io/sriov_highnet
R_VFIO=openshift.io/sriov_highnet_vfio
PF=$(netdev_of "$IGB_PF")

setup_cni_wrapper
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "    --- agent log tail"; tail -n 20 /tmp/agent.log | sed "s/^/    | /"; fi' EXIT

cni_node_policy "$PF#0-2"
cat >>/tmp/policies/highnet.yaml <<EOF2
---
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata: {name: highnet-vfio-policy, namespace: sriov-network-operator}
spec:
  resourceName: sriov_highnet_vfio
  nodeSelector: {highnet-node: "true"}
  priority: 10
  numVfs: 4
  nicSelector: {vendor: "8086", pfNames: ["$PF#3-3"]}
  deviceType: vfio-pci
EOF2
start_agent_with_kubelet
export VF3
wait_for "VF 3 on vfio-pci (DPDK policy)" 90 driver_is "$VF3" vfio-pci
wait_for "kubelet: $R_NET = VFs 0-2, healthy" 90 pool_is "$R_NET" "$VF0 $VF1 $VF2"
wait_for "kubelet: $R_VFIO = VF 3, healthy" 60 pool_is "$R_VFIO" "$VF3"

$IPR netns add podD || fail "setup: netns podD"
NSD=/run/netns/podD
PFVF3_BEFORE=$(pf_vf_line 3)
printf '{"cniVersion":"1.0.0","name":"highnet-dpdk","type":"sriov","deviceID":"%s","mac":"02:00:00:00:0d:01","vlan":200,"ipam":{"type":"host-local","ranges":[[{"subnet":"10.57.0.0/24"}]],"dataDir":"%s"}}\n' \
    "$VF3" "$IPAM_DIR" >/tmp/d.json
run_ok "ADD pod D with VF 3 (vfio-pci: DPDK mode)" /tmp/cni.sh ADD "$NSD" net1 ctr-d /tmp/d.json
jq_checks \
    "DPDK result: interface net1 with the admin MAC, sandbox" '.interfaces[0] | .name == "net1" and .mac == "02:00:00:00:0d:01" and .sandbox == "/run/netns/podD"' \
    "DPDK result: the IPAM address" '.ips[0].address == "10.57.0.2/24"' \
    "DPDK result: the PF's MTU, as upstream reports it" ".interfaces[0].mtu == $(cat "/sys/class/net/$PF/mtu")"
check "VF 3 still on vfio-pci, nothing moved into pod D" sh -c "test \"$(driver_of "$VF3")\" = vfio-pci && ! $IPR -n podD link show dev net1 2>/dev/null"
run_ok "PF view of VF 3" $IPR link show dev "$PF"
out_has "PF: VF 3 has the MAC and vlan 200" 'vf 3 .*link/ether 02:00:00:00:0d:01.*vlan 200'
run_ok "cache record of the DPDK attachment" cat "$STATE/ctr-d-net1"
jq_ok "cache record: no host interface name (DPDK), VFID 3" '.OrigVfState.HostIFName == "" and .VFID == 3 and .deviceID == $ENV.VF3'
run_ok "CHECK pod D (DPDK)" /tmp/cni.sh CHECK "$NSD" net1 ctr-d /tmp/d.json
printf '{"cniVersion":"1.0.0","name":"n","type":"sriov","deviceID":"%s"}\n' "$VF3" >/tmp/d2.json
$IPR netns add podE || fail "setup: netns podE"
run_fails "VF 3 again for another pod: refused" /tmp/cni.sh ADD /run/netns/podE net1 ctr-e /tmp/d2.json
out_has "refusal names the holder" 'already allocated.*podD'
run_ok "DEL pod D (DPDK)" /tmp/cni.sh DEL "$NSD" net1 ctr-d /tmp/d.json
expect_eq "PF: VF 3's settings as before ADD" "$(pf_vf_line 3)" "$PFVF3_BEFORE"
check "records of pod D gone, IP released" sh -c "test ! -e $STATE/ctr-d-net1 && test ! -e $STATE/pci/$VF3 && test ! -e $IPAM_DIR/highnet-dpdk/10.57.0.2"
check "VF 3 still on vfio-pci" driver_is "$VF3" vfio-pci
sleep 4
check "kubelet: $R_VFIO still VF 3, healthy (after resyncs)" pool_is "$R_VFIO" "$VF3"
check "kubelet: $R_NET still VFs 0-2, healthy" pool_is "$R_NET" "$VF0 $VF1 $VF2"

kill "$AGENT_PID" 2>/dev/null
wait "$AGENT_PID" 2>/dev/null
exec 7>&-
