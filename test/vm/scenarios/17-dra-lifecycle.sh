# vm-profile: e2e
# vm-needs: cni fake-dra-kubelet
# The DRA driver through a node's life on the real kernel (issue 41): the agent in cluster mode
# with --dra-resources, the fake API server on the host (its ResourceSlices and ResourceClaims),
# the fake DRA kubelet (test/fake-dra-kubelet) playing the kubelet's DRA side, and the sriov CNI
# plugin moving the claim's VF into its pod:
#  - nothing is published before the kubelet registered the driver, the slice after it;
#  - a claim allocated to VF 0 (written on the API server as the scheduler would) is prepared:
#    the NodePrepareResources answer names the device and its CDI id, the CDI spec is written;
#  - the CNI ADD of the claim's pod moves VF 0 into the pod's netns; the ADD of a pod of another
#    namespace naming that VF is refused naming the claim, before and after, the VF staying put;
#  - the agent stopped long enough for the kubelet to wipe its slices, then started again: the
#    driver registers and publishes again with VF 0 (in the pod) still in the slice, Prepare
#    answers the same device (no re-preparation error), the VF stays in the pod;
#  - the kubelet restarted (wipes the node's slices, registers the driver again): the slices
#    are back within 5 s (figure), the claim still prepared;
#  - DEL gives the VF back to the host, Unprepare removes the CDI spec and the claim's record.
# Its own node name (not the e2e boot's lab-node) keeps it apart from 16-boot-lifecycle, which
# shares the API server and may run at the same time.

PF=$IGB_PF
PFNET=$(netdev_of "$PF")
API=$(cmdline_value sriovvm.api)
TOKEN=$(cmdline_value sriovvm.token)
NODE=dra-lab-node
NS=sriov-network-operator
DRIVER=sriovnetwork.k8snetworkplumbingwg.io
KROOT=/var/lib/kubelet
STATE=/tmp/agent-state
CDI=/run/cdi
DRA_OUT=/tmp/dra-kubelet.out
SLICES="/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3D$NODE"
CLAIMS=/apis/resource.k8s.io/v1/namespaces/tenant-a/resourceclaims
FAIL_SHOW="tail -n 25 /tmp/agent.log; echo '--- fake DRA kubelet'; tail -n 8 $DRA_OUT"

lab_control_nic
setup_link_up "$PFNET"

# api_call METHOD PATH [JSON]: one anonymous request to the fake API server (busybox nc, as
# 16-boot-lifecycle); the body of the answer in /tmp/api.body; true on a 2xx status
api_call() {
    {
        printf '%s %s HTTP/1.0\r\nHost: %s\r\n' "$1" "$2" "$API"
        case $1 in PATCH) printf 'Content-Type: application/merge-patch+json\r\n' ;; *) printf 'Content-Type: application/json\r\n' ;; esac
        printf 'Content-Length: %d\r\n\r\n%s' "${#3}" "${3:-}"
    } | nc -w 5 "${API%:*}" "${API#*:}" >/tmp/api.out 2>/dev/null
    sed '1,/^\r*$/d' /tmp/api.out >/tmp/api.body
    head -1 /tmp/api.out | grep -q ' 2[0-9][0-9] '
}
# api_ok DESC METHOD PATH [JSON]: a step; the answer is the step's output (409: already there)
api_ok() {
    desc=$1
    shift
    api_call "$@"
    cp /tmp/api.body "$OUT"
    head -1 /tmp/api.out | grep -qE ' (2[0-9][0-9]|409) ' ||
        fail "$desc" "$1 $2: $(head -1 /tmp/api.out)"
    ok "$desc"
}
# the node's slices hold both VFs / none of them (grep, not jq: each jq start costs 1-2 s)
slices_published() {
    api_call GET "$SLICES" && grep -q "\"$DEV0\"" /tmp/api.body && grep -q "\"$DEV1\"" /tmp/api.body
}
no_slices() { api_call GET "$SLICES" && ! grep -q '"0000-' /tmp/api.body; }

# the fake DRA kubelet: commands on fd 8, events (JSON lines) in $DRA_OUT
dra_count() { grep -c "\"event\":\"$1\"" "$DRA_OUT"; }
dra_more() { [ "$(dra_count "$1")" -gt "$2" ]; }
dra_last() { grep "\"event\":\"$1\"" "$DRA_OUT" | tail -1; }
registrations() { grep '"event":"register"' "$DRA_OUT" | grep -c '"code":"OK"'; }
registered_after() { [ "$(registrations)" -gt "$1" ]; }
# dra_call DESC EVENT JSON: sends the command, waits for its event, which becomes $OUT
dra_call() {
    n=$(dra_count "$2")
    echo "$3" >&8
    wait_for "$1: answered" 30 dra_more "$2" "$n"
    dra_last "$2" >"$OUT"
}

start_agent() {
    SRIOV_AGENT_INSECURE_HTTP_TOKEN=1 "$AGENT" run --kubeconfig /tmp/kubeconfig \
        --node-name "$NODE" --state-dir "$STATE" --kubelet-dir "$KROOT/device-plugins" \
        --kubelet-root "$KROOT" --cdi-root "$CDI" --devinfo-dir /run/devinfo \
        --pod-resources-socket none --resync-interval 2 --dra-resources sriov_dra \
        --log-level debug >>/tmp/agent.log 2>&1 &
    AGENT_PID=$!
}
agent_says() { grep -q -- "$1" /tmp/agent.log; }

# --- the cluster: CRDs (applied by the host's relay), this node, the policy, the namespaces
echo "@@vm host-api-apply crds/sriovnetwork.openshift.io_sriovnetworknodepolicies.yaml crds/sriovnetwork.openshift.io_sriovnetworknodestates.yaml crds/sriovnetwork.openshift.io_sriovnetworks.yaml crds/sriovnetwork.openshift.io_sriovibnetworks.yaml"
wait_for "the CRDs are on the API server (the relay posts them in order: the last one)" 30 \
    api_call GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/sriovibnetworks.sriovnetwork.openshift.io
for ns in $NS tenant-a tenant-b; do
    api_ok "namespace $ns" POST /api/v1/namespaces \
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"$ns\"}}"
done
api_ok "node $NODE" POST /api/v1/nodes \
    "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$NODE\",\"labels\":{\"kubernetes.io/hostname\":\"$NODE\"}}}"
api_ok "policy dra-vf: 2 netdevice VFs of $PFNET as sriov_dra" POST \
    /apis/sriovnetwork.openshift.io/v1/namespaces/$NS/sriovnetworknodepolicies \
    "{\"apiVersion\":\"sriovnetwork.openshift.io/v1\",\"kind\":\"SriovNetworkNodePolicy\",\"metadata\":{\"name\":\"dra-vf\",\"namespace\":\"$NS\"},\"spec\":{\"resourceName\":\"sriov_dra\",\"nodeSelector\":{\"kubernetes.io/hostname\":\"$NODE\"},\"priority\":50,\"numVfs\":2,\"nicSelector\":{\"vendor\":\"8086\",\"pfNames\":[\"$PFNET\"]},\"deviceType\":\"netdevice\"}}"
write_kubeconfig /tmp/kubeconfig sriov-agent
mkdir -p "$KROOT/device-plugins" "$STATE" "$CDI"

# --- the agent before any DRA kubelet: VFs made, nothing published
: >/tmp/agent.log
start_agent
wait_for "the agent made 2 VFs" 120 sh -c "[ \$(cat /sys/bus/pci/devices/$PF/sriov_numvfs) = 2 ]"
VF0=$(vf_pci "$PF" 0)
VF1=$(vf_pci "$PF" 1)
DEV0=$(echo "$VF0" | tr ':.' '--')
DEV1=$(echo "$VF1" | tr ':.' '--')
export VF0 DEV0 DEV1 DRIVER NODE # for jq's $ENV
wait_for "VF 0 has its netdev" 60 has_netdev "$VF0"
VF0NET=$(netdev_of "$VF0")
wait_for "the agent serves the DRA driver" 30 agent_says "DRA driver serving"
wait_for "the agent holds its slices back until a kubelet registers the driver" 30 \
    agent_says "not written until the kubelet"
# the reconcile that made the VFs is over (its devices known) and a resync later: still nothing
synced() {
    api_call GET /apis/sriovnetwork.openshift.io/v1/namespaces/$NS/sriovnetworknodestates/$NODE &&
        grep -q '"syncStatus": *"Succeeded"' /tmp/api.body
}
wait_for "NodeState $NODE: syncStatus Succeeded" 60 synced
sleep 2
check "no kubelet registered the driver: no ResourceSlice of $NODE" no_slices

# --- the kubelet's DRA side registers the driver: the slice is published
mkfifo /tmp/dra.in
fake-dra-kubelet --root "$KROOT" --apiserver "http://$API" --node "$NODE" --wiping-delay 2s \
    </tmp/dra.in >"$DRA_OUT" 2>/tmp/dra-kubelet.err &
DRA_PID=$!
exec 8>/tmp/dra.in
wait_for "fake DRA kubelet ready" 30 grep -q '"event":"ready"' "$DRA_OUT"
wait_for "the kubelet registered the driver" 30 registered_after 0
wait_for "the slice of $NODE holds VFs 0 and 1 ($DEV0, $DEV1)" 30 slices_published
cp /tmp/api.body "$OUT"
jq_checks "slice: driver $DRIVER" '.items[].spec.driver == $ENV.DRIVER' \
    "slice: pool named after the node" '.items[].spec.pool.name == $ENV.NODE' \
    "slice: VF 0's pciBusID is its PCI address" \
    '[.items[].spec.devices[] | select(.name == $ENV.DEV0)][0].attributes["resource.kubernetes.io/pciBusID"].string == $ENV.VF0' \
    "slice: resource openshift.io/sriov_dra" \
    '[.items[].spec.devices[].attributes["sriovnetwork.k8snetworkplumbingwg.io/resourceName"].string] == ["openshift.io/sriov_dra", "openshift.io/sriov_dra"]'

# --- a claim allocated to VF 0, reserved for pod-a of tenant-a; prepared
api_ok "ResourceClaim tenant-a/nic-a" POST "$CLAIMS" \
    '{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"nic-a","namespace":"tenant-a"},"spec":{"devices":{"requests":[{"name":"nic","exactly":{"deviceClassName":"sriov-vf"}}]}}}'
UID_A=$(grep -o '"uid": *"[^"]*"' /tmp/api.body | head -1 | cut -d'"' -f4)
check "the claim has a uid" test -n "$UID_A"
api_ok "nic-a allocated $DEV0 of pool $NODE, reserved for pod-a" PATCH "$CLAIMS/nic-a/status" \
    "{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"nic\",\"driver\":\"$DRIVER\",\"pool\":\"$NODE\",\"device\":\"$DEV0\"}]}},\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"pod-a\",\"uid\":\"uid-pod-a\"}]}}"
CLAIM="{\"namespace\":\"tenant-a\",\"name\":\"nic-a\",\"uid\":\"$UID_A\"}"
export UID_A
PREPARED='.code == "OK" and .claims[$ENV.UID_A].error == "" and ([.claims[$ENV.UID_A].devices[] | [.device, .pool]] == [[$ENV.DEV0, $ENV.NODE]]) and .claims[$ENV.UID_A].devices[0].cdi == [$ENV.DRIVER + "/vf=" + $ENV.UID_A + "-" + $ENV.DEV0]'
dra_call "NodePrepareResources nic-a" prepare \
    "{\"cmd\":\"prepare\",\"driver\":\"$DRIVER\",\"claims\":[$CLAIM]}"
jq_ok "Prepare: nic-a gets $DEV0 with its CDI id, no error" "$PREPARED"
SPEC=$CDI/$DRIVER-$UID_A.json
check "CDI spec $SPEC written" test -s "$SPEC"
run_ok "CDI spec: VF 0's device, with its PCI address for the container" cat "$SPEC"
jq_ok "CDI spec: device $UID_A-$DEV0, VF 0's address in its environment" \
    '.kind == ($ENV.DRIVER + "/vf") and ([.devices[].name] == [$ENV.UID_A + "-" + $ENV.DEV0]) and any(.devices[0].containerEdits.env[]; endswith("=" + $ENV.VF0))'

# --- the CNI: VF 0 to the claim's pod only
setup_cni_wrapper
printf '{"cniVersion":"1.0.0","name":"dra-net","type":"sriov","deviceID":"%s"}\n' "$VF0" >/tmp/net.json
ARGS_A="IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-a;K8S_POD_NAME=pod-a;K8S_POD_UID=uid-pod-a"
ARGS_B="IgnoreUnknown=1;K8S_POD_NAMESPACE=tenant-b;K8S_POD_NAME=pod-b;K8S_POD_UID=uid-pod-b"
run_ok "netns pod-a, pod-b" sh -c "$IPR netns add pod-a && $IPR netns add pod-b"
in_pod() { $IPR -n "$1" link show dev net1 >/dev/null 2>&1; }
on_host() { [ "$(netdev_of "$VF0")" = "$VF0NET" ]; }
run_fails "ADD of pod-b (tenant-b) naming VF 0, before pod-a" \
    /tmp/cni.sh ADD /run/netns/pod-b net1 ctr-b /tmp/net.json "$ARGS_B"
out_has "...refused naming the claim tenant-a/nic-a and pod-b" "ResourceClaim tenant-a/nic-a.*tenant-b/pod-b"
check "...VF 0 stays on the host as $VF0NET" on_host
check "...nothing in pod-b" sh -c "! $IPR -n pod-b link show dev net1"
run_ok "ADD of pod-a (the claim's pod): VF 0" \
    /tmp/cni.sh ADD /run/netns/pod-a net1 ctr-a /tmp/net.json "$ARGS_A"
check "VF 0 is net1 in pod-a's netns (ip -n pod-a)" in_pod pod-a
check "VF 0's netdev left the host" test -z "$(netdev_of "$VF0")"
run_fails "ADD of pod-b naming VF 0 while pod-a has it" \
    /tmp/cni.sh ADD /run/netns/pod-b net1 ctr-b /tmp/net.json "$ARGS_B"
out_has "...refused naming the claim tenant-a/nic-a" "ResourceClaim tenant-a/nic-a"
check "...VF 0 stays in pod-a" in_pod pod-a
check "...nothing in pod-b" sh -c "! $IPR -n pod-b link show dev net1"

# --- the agent away long enough for the kubelet to wipe its slices, then back
REG=$(registrations)
kill "$AGENT_PID"
wait_for "the agent stopped" 30 sh -c "! kill -0 $AGENT_PID"
wait_for "the kubelet saw the driver go and wiped its slices after its delay" 30 \
    sh -c "grep '\"event\":\"wipe\"' $DRA_OUT | grep '\"why\":\"driver gone\"' | grep -q '\"code\":\"OK\"'"
check "no slice while the agent is away" no_slices
start_agent
wait_for "the restarted agent registered the driver again" 60 registered_after "$REG"
# (VF 0's netdev is in pod-a's namespace: the restarted agent knows it is a pod's from the CNI
# plugin's record, not as a VF that is not ready)
wait_for "the restarted agent published the slice again, VF 0 (in pod-a) in it" 30 slices_published
dra_call "NodePrepareResources nic-a after the agent's restart" prepare \
    "{\"cmd\":\"prepare\",\"driver\":\"$DRIVER\",\"claims\":[$CLAIM]}"
jq_ok "Prepare after the restart: the same device and CDI id, no error" "$PREPARED"
check "the CDI spec is still there" test -s "$SPEC"
check "VF 0 still in pod-a" in_pod pod-a
check "still 2 VFs, VF 0 the same function" sh -c "[ \$(cat /sys/bus/pci/devices/$PF/sriov_numvfs) = 2 ] && [ \$(basename \$(readlink /sys/bus/pci/devices/$PF/virtfn0)) = $VF0 ]"

# --- the kubelet restarts: wipes the node's slices, registers the driver again
REG=$(registrations)
WIPES=$(dra_count wipe)
T0=$(cut -d' ' -f1 /proc/uptime)
echo '{"cmd":"restart"}' >&8
wait_for "the restarted kubelet wiped the node's slices" 10 dra_more wipe "$WIPES"
dra_last wipe >"$OUT"
jq_ok "...a DeleteCollection that deleted the slice" '.code == "OK" and .why == "kubelet start" and .deleted >= 1'
wait_for "...and registered the driver again" 20 registered_after "$REG"
wait_for "the slice is back" 20 slices_published
MS=$(awk -v a="$T0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%d", (b - a) * 1000 }')
echo "@@vm figure dra-slices-back-after-kubelet-restart ${MS} ms (restart sent -> slice listed again)"
check "slices back within 5 s of the kubelet's restart ($MS ms)" test "$MS" -lt 5000
dra_call "NodePrepareResources nic-a after the kubelet's restart" prepare \
    "{\"cmd\":\"prepare\",\"driver\":\"$DRIVER\",\"claims\":[$CLAIM]}"
jq_ok "Prepare after the kubelet's restart: still the same device, no error" "$PREPARED"
check "VF 0 still in pod-a" in_pod pod-a

# --- the pod goes: DEL, then Unprepare
run_ok "DEL of pod-a" /tmp/cni.sh DEL /run/netns/pod-a net1 ctr-a /tmp/net.json "$ARGS_A"
wait_for "VF 0 back on the host as $VF0NET" 10 on_host
check "nothing left in pod-a" sh -c "! $IPR -n pod-a link show dev net1"
dra_call "NodeUnprepareResources nic-a" unprepare \
    "{\"cmd\":\"unprepare\",\"driver\":\"$DRIVER\",\"claims\":[$CLAIM]}"
jq_ok "Unprepare: OK, no error" '.code == "OK" and .claims[$ENV.UID_A].error == ""'
check "the CDI spec is gone" test ! -e "$SPEC"
check "the claim's record is gone" test ! -e "$STATE/dra/$DRIVER-$UID_A.json"

kill "$AGENT_PID"
echo '{"cmd":"quit"}' >&8
exec 8>&-
wait "$AGENT_PID" 2>/dev/null
wait "$DRA_PID" 2>/dev/null
$IPR netns del pod-a
$IPR netns del pod-b
