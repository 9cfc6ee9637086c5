# vm-profile: e2e
# The seed's two modes end to end on a real kernel: real kubectl drives the fake API server on
# the host (through the guestfwd address), one `sriov-agent run` in cluster mode (the
# DaemonSet's arguments) serves mode 1, whole-card RDMA from the seed's rdma-devices ConfigMap
# over a Soft-RoCE device on the igb PF, and mode 2, the seed's SR-IOV policy configuring the
# PF's VFs; the grpc-go fake kubelet watches the device-plugin sockets and reports the node's
# resources to the API server (`kubectl describe node`, the seed's own check). Every step
# also goes into a transcript (what an operator would see) that is printed at the end between
# "@@vm transcript-begin/end" lines; scripts/demo shows it. See test/vm/README.md.

E2E=/vm/e2e
KDIR=/var/lib/kubelet/device-plugins
PRSOCK=/var/lib/kubelet/pod-resources/kubelet.sock
STATE_DIR=/var/lib/sriov-agent
KL_OUT=/tmp/kubelet.out
AGENT_LOG=/tmp/agent.log
TRANSCRIPT=/tmp/transcript
NS=sriov-network-operator
R_NET=openshift.io/sriov_highnet
R_VFIO=openshift.io/sriov_highnet_vfio
R_HCA=rdma/rdma_hca
# shellcheck disable=SC2034
STEP_TIMEOUT=60 # read by lib.sh's _run (kubectl steps)
export HOME=/root KUBECONFIG=/root/.kube/config
: >"$TRANSCRIPT"

API=$(cmdline_value sriovvm.api)
NODE=$(cmdline_value sriovvm.node)
TOKEN=$(cmdline_value sriovvm.token)

# --- transcript ------------------------------------------------------------------------
say() { printf '%s\n' "$*" >>"$TRANSCRIPT"; }
header() { printf '\n======== %s\n' "$*" >>"$TRANSCRIPT"; }
show_out() { cat "$OUT" "$ERR" >>"$TRANSCRIPT"; }
dump_transcript() {
    rc=$?
    if [ "$rc" -ne 0 ]; then
        header "FAILED (exit $rc): the fake kubelet's last events and the agent's log"
        tail -n 15 "$KL_OUT" >>"$TRANSCRIPT"
        sed 's/^/  | /' "$AGENT_LOG" | tail -n 60 >>"$TRANSCRIPT"
    fi
    echo "@@vm transcript-begin"
    cat "$TRANSCRIPT"
    echo "@@vm transcript-end"
}
trap dump_transcript EXIT

# kc DESC ARGS...: a kubectl step, shown in the transcript with its output
kc() {
    desc=$1
    shift
    say "\$ kubectl $*"
    _run kubectl "$@"
    rc=$?
    show_out
    [ "$rc" -eq 0 ] || fail "$desc" "kubectl $* exited $rc"
    ok "$desc"
}

# policy NAME [PFNAMES [ISRDMA]]: a policy template with the igb PF's netdev filled in
policy() {
    sed -e "s/@PFNAMES@/${2:-$PF}/" -e "s/@PF@/$PF/" -e "s/@ISRDMA@/${3:-false}/" \
        "$E2E/policies/$1.yaml.in" >"/tmp/$1.yaml"
    echo "/tmp/$1.yaml"
}

sync_status() {
    kubectl get sriovnetworknodestates "$NODE" -n "$NS" -o 'jsonpath={.status.syncStatus}' 2>/dev/null
}
status_is() { [ "$(sync_status)" = "$1" ]; }

# --- the fake kubelet's view -------------------------------------------------------------
kl_last_devices() { grep '"event":"devices"' "$KL_OUT" | grep -F "\"resource\":\"$1\"" | tail -1; }
kl_ids() { kl_last_devices "$1" | grep -o '"id":"[^"]*"' | cut -d'"' -f4 | sort | tr '\n' ' '; }
kl_healthy() { kl_last_devices "$1" | grep -o '"health":"Healthy"' | wc -l; }
kl_registers() { grep '"event":"register"' "$KL_OUT" | grep -cF "\"resource\":\"$1\""; }
# pool_is RESOURCE "PCI..." : the kubelet's latest list for RESOURCE is exactly these VFs, healthy
pool_is() {
    [ "$(kl_ids "$1")" = "$(printf '%s\n' $2 | sort | tr '\n' ' ')" ] &&
        [ "$(kl_healthy "$1")" -eq "$(printf '%s\n' $2 | grep -c .)" ]
}
kl_cmd() { echo "$1" >&7; }
show_pools() {
    say "kubelet (fake) sees:"
    for r in "$@"; do
        say "  $r: $(kl_healthy "$r") healthy device(s): $(kl_ids "$r")"
    done
}

# --- host state, read from sysfs ---------------------------------------------------------
# a line per VF: index, PCI address, driver, netdev ifindex (new after a VF re-creation), MTU
host_snapshot() {
    echo "numvfs $(numvfs_of "$IGB_PF") pf-mtu $(cat "/sys/class/net/$PF/mtu")"
    i=0
    while [ -e "$(pci_dir "$IGB_PF")/virtfn$i" ]; do
        vf=$(vf_pci "$IGB_PF" $i)
        n=$(netdev_of "$vf")
        if [ -n "$n" ]; then
            echo "vf$i $vf $(driver_of "$vf") ifindex $(cat "/sys/class/net/$n/ifindex") mtu $(cat "/sys/class/net/$n/mtu")"
        else
            echo "vf$i $vf $(driver_of "$vf")"
        fi
        i=$((i + 1))
    done
}

# predicates for wait_for (evaluated on every try)
vfs_are() { [ "$(count_virtfn "$IGB_PF")" = "$1" ] && [ "$(numvfs_of "$IGB_PF")" = "$1" ]; }
drivers_are() {
    want=$1
    shift
    for vf in "$@"; do
        [ "$(driver_of "$vf")" = "$want" ] || return 1
    done
}
registered_again() { [ "$(kl_registers "$1")" -gt "$2" ]; }
# the plugin of RESOURCE is gone (its ListAndWatch stream ended) or advertises nothing healthy
pool_withdrawn() {
    case $(grep -F "\"resource\":\"$1\"" "$KL_OUT" | grep -E '"event":"(devices|watch-end)"' | tail -1) in
        *'"event":"watch-end"'*) return 0 ;;
    esac
    [ "$(kl_healthy "$1")" -eq 0 ]
}

# What the user waited for, from `kubectl label node` to the kubelet's list with the 4 VFs (the
# fake kubelet's event time, guest clock), split into the kernel's part (the agent's log: the
# sriov_numvfs write and the VF driver probes) and the rest, the agent's overhead (including
# kubectl, the API server round trips and TCG's slowness); kubectl's own time beside it.
# The start and kubectl's end are marks in the fake kubelet's own event stream (any command is
# answered with an event carrying its "t"), on the listing's clock in milliseconds: the guest's
# `date +%s%N` gave whole seconds there: up to 1 s of error in earlier figures.
kl_time_mark() { kl_cmd "{\"cmd\":\"mark\",\"resource\":\"$1\"}"; }
kl_time_mark_t() { grep '"event":"mark"' "$KL_OUT" | grep -F "\"resource\":\"$1\"" | tail -1 | grep -o '"t":[0-9]*' | cut -d: -f2; }
user_wait_figure() {
    t_listed=$(kl_last_devices "$R_NET" | grep -o '"t":[0-9]*' | cut -d: -f2)
    kernel=$(grep -o 'kernel: [0-9]* ms' "$AGENT_LOG" | tail -1 | grep -o '[0-9]*')
    t_label=$(kl_time_mark_t label-start)
    t_label_done=$(kl_time_mark_t label-done)
    [ -n "$t_listed" ] && [ -n "$kernel" ] && [ -n "$t_label" ] && [ -n "$t_label_done" ] || return 0
    total=$((t_listed - t_label))
    kc_ms=$((t_label_done - t_label))
    # The PATCH's answer, from kubectl's klog line ("I1201 18:30:01.123456 ...", the guest's UTC
    # wall clock, as the marks): from then on the label is the API server's and everything
    # until the listing is the agent's (and the kernel's).
    t_patched=
    # kubectl <= 1.30 writes "] PATCH <url> 200 OK in N milliseconds", later ones a structured
    # "Response" verb="PATCH" url=... status="200 OK" line.
    hms=$(grep -E '(\] PATCH |verb="PATCH").*/nodes/.*200 OK' /tmp/label.klog | tail -1 | awk '{print $2}')
    if [ -n "$hms" ]; then
        day_ms=$(echo "$hms" | awk -F'[:.]' '{ printf "%d", ($1 * 3600 + $2 * 60 + $3) * 1000 + int($4 / 1000) }')
        t_patched=$((t_label - t_label % 86400000 + day_ms))
        # a wrong guess (another time zone, midnight) lands outside kubectl's run: drop it
        { [ "$t_patched" -ge "$t_label" ] && [ "$t_patched" -le "$t_label_done" ]; } || t_patched=
    fi
    if [ -n "$t_patched" ]; then
        after=$((t_listed - t_patched - kernel))
        echo "@@vm figure user-wait total_ms=$total kernel_ms=$kernel agent_ms=$after" \
            "kubectl_ms=$kc_ms kubectl_to_patch_ms=$((t_patched - t_label))"
    else
        echo "@@vm figure user-wait total_ms=$total kernel_ms=$kernel kubectl_ms=$kc_ms"
        say "  (no PATCH answer within kubectl's run in its -v=6 log: the agent's part is not"
        say "  separated; the log's PATCH lines: $(grep -F PATCH /tmp/label.klog | head -2))"
    fi
    say "user wait, kubectl label -> kubelet lists the 4 VFs: $total ms (kernel $kernel ms:"
    say "  sriov_numvfs write + VF driver probes; kubectl until the API server answered the"
    say "  PATCH ${t_patched:+$((t_patched - t_label))} ms, the agent from then on ${after:-?} ms"
    say "  beside the kernel; kubectl until it exits $kc_ms ms);"
    say "  upstream drains the node and restarts the device plugin for the same change"
}

start_agent() {
    # The lab's API server is plain http on the host: allow the token there explicitly.
    SRIOV_AGENT_INSECURE_HTTP_TOKEN=1 \
    "$AGENT" run --kubeconfig "$KUBECONFIG.agent" --node-name "$NODE" --state-dir "$STATE_DIR" \
        --kubelet-dir "$KDIR" --pod-resources-socket "$PRSOCK" --devinfo-dir /run/devinfo \
        --resync-interval 10 >>"$AGENT_LOG" 2>&1 &
    AGENT_PID=$!
}

# --- setup: the control-plane NIC, kubeconfigs, the fake kubelet --------------------------
PF=$(netdev_of "$IGB_PF")
setup_link_up "$PF"
lab_control_nic
mkdir -p /root/.kube "$KDIR" "$(dirname "$PRSOCK")" "$STATE_DIR"
write_kubeconfig "$KUBECONFIG" admin
write_kubeconfig "$KUBECONFIG.agent" sriov-agent

mkfifo /tmp/kubelet.in
# kubelet-1.25: the plugin sockets are dialled with the socket path as :authority, as
# Kubernetes <= 1.25 does (the strictest of the fake kubelet's dial modes).
fake-kubelet --dir "$KDIR" --dial-mode kubelet-1.25 --podresources "$PRSOCK" --assignments /tmp/assignments.json \
    --api-server "http://$API" --node "$NODE" --token "$TOKEN" \
    </tmp/kubelet.in >"$KL_OUT" 2>/tmp/kubelet.err &
exec 7>/tmp/kubelet.in
wait_for "fake kubelet listens on $KDIR/kubelet.sock" 30 test -S "$KDIR/kubelet.sock"

# `kubectl describe node`: RESOURCE's "capacity allocatable" as its Capacity and Allocatable
# sections list them (empty when absent).
described() {
    kubectl describe node "$NODE" 2>/dev/null | awk -v r="$1" '
        /^Capacity:/ { s = "c"; next } /^Allocatable:/ { s = "a"; next } /^[^ ]/ { s = "" }
        s != "" && $1 == r ":" { v[s] = $2 }
        END { if (v["c"] != "" || v["a"] != "") print v["c"], v["a"] }'
}
node_lists() { [ "$(described "$1")" = "$2 $2" ]; }
# describe_node RESOURCE...: the seed's check, shown with its Capacity and Allocatable lines
# of those resources
describe_node() {
    say "\$ kubectl describe node $NODE"
    kubectl describe node "$NODE" >/tmp/describe.out 2>&1
    awk -v list=" $* " '
        /^[^ ]/ { s = ($0 ~ /^(Capacity|Allocatable):/); if (s) print; next }
        s && index(list, " " substr($1, 1, length($1) - 1) " ") { print }' \
        /tmp/describe.out >>"$TRANSCRIPT"
    say "  (...)"
}

header "install: the CRDs, the namespace and the agent (one command line for both modes)"
say "(node $NODE, igb PF $IGB_PF = $PF; the agent runs as its DaemonSet would:"
say " sriov-agent run --node-name $NODE --kubeconfig ..., the RDMA shared config from its default"
say " ConfigMap kube-system/rdma-devices)"
run_ok "kubectl reaches the API server at $API" kubectl get nodes
kc "kubectl apply -f crds/" apply -f "$E2E/crds/"
kc "kubectl apply namespace" apply -f "$E2E/namespace.yaml"
start_agent
# the shipped example (manifests/examples/vm-lab) names the PF eth0: igb is probed before the
# control NIC, whose root port comes later on the bus
check "the igb PF is eth0, as manifests/examples/vm-lab/highnet-sriov-policy.yaml says" test "$PF" = eth0

header "mode 1: whole-card RDMA, the seed's rdma-devices ConfigMap (rdma/rdma_hca)"
say "The card: a Soft-RoCE (rxe) RDMA device on the igb PF's netdev, as a ConnectX PF has mlx5_N."
say "\$ rdma link add rxe_pf type rxe netdev $PF"
rdma link add rxe_pf type rxe netdev "$PF" || fail "setup: rdma link add rxe_pf over $PF"
wait_for "rxe_pf exists" 10 test -e /sys/class/infiniband/rxe_pf
pf_chardevs=
for class in infiniband_verbs infiniband_mad; do
    for d in /sys/class/$class/*; do
        [ "$(cat "$d/ibdev" 2>/dev/null)" = rxe_pf ] && pf_chardevs="$pf_chardevs /dev/infiniband/$(basename "$d")"
    done
done
[ -e /dev/infiniband/rdma_cm ] && pf_chardevs="$pf_chardevs /dev/infiniband/rdma_cm"
say "its char devices:$pf_chardevs"
check "rxe_pf has uverbs, umad and rdma_cm char devices (what a whole-card pool requires)" \
    sh -c "echo '$pf_chardevs' | grep -q uverbs && echo '$pf_chardevs' | grep -q umad && echo '$pf_chardevs' | grep -q rdma_cm"
vendor=$(cut -c3- "$(pci_dir "$IGB_PF")/vendor")
sed "s/\"15b3\"/\"$vendor\"/" "$E2E/examples/rdma-device-plugin-config.yaml" >/tmp/rdma-device-plugin-config.yaml
say "The seed's rdma-device-plugin-config.yaml, adapted where the lab's hardware differs: the card"
say "is an Intel igb (vendor $vendor), not a Mellanox/NVIDIA ConnectX (15b3). The whole change:"
diff -u "$E2E/examples/rdma-device-plugin-config.yaml" /tmp/rdma-device-plugin-config.yaml |
    sed -e '1s|.*|--- rdma-device-plugin-config.yaml (the seed'"'"'s)|' -e '2s|.*|+++ rdma-device-plugin-config.yaml (the lab'"'"'s)|' >>"$TRANSCRIPT"
expect_eq "the adaptation is the vendor alone" \
    "$(diff -u "$E2E/examples/rdma-device-plugin-config.yaml" /tmp/rdma-device-plugin-config.yaml | grep -Ec '^[-+]([^-+]|$)')" 2
kc "kubectl apply -f rdma-device-plugin-config.yaml (the seed's ConfigMap, vendor adapted)" \
    apply -f /tmp/rdma-device-plugin-config.yaml
# the pool's IDs are "0".."rdmaHcaMax-1", all healthy
hca_ids() { seq 0 $(($1 - 1)) | tr '\n' ' '; }
wait_for "kubelet sees $R_HCA with rdmaHcaMax (1) device" 60 pool_is "$R_HCA" "$(hca_ids 1)"
show_pools "$R_HCA"
wait_for "kubectl describe node: $R_HCA: 1 (capacity and allocatable)" 60 node_lists "$R_HCA" 1
describe_node "$R_HCA"
sed 's/"rdmaHcaMax": 1,/"rdmaHcaMax": 3,/' /tmp/rdma-device-plugin-config.yaml >/tmp/rdma-hca-3.yaml
say "Shared by up to 3 pods: rdmaHcaMax 3, applied live (no restart of anything):"
kc "kubectl apply the ConfigMap with rdmaHcaMax 3" apply -f /tmp/rdma-hca-3.yaml
wait_for "kubelet sees $R_HCA with rdmaHcaMax (3) devices, from the same agent" 60 pool_is "$R_HCA" "$(hca_ids 3)"
check "the agent was not restarted" kill -0 "$AGENT_PID"
wait_for "kubectl describe node: $R_HCA: 3" 60 node_lists "$R_HCA" 3
describe_node "$R_HCA"
check "the agent's journal names the ConfigMap in use" \
    grep -q "RDMA shared config in use: ConfigMap kube-system/rdma-devices key config.json: rdma/rdma_hca (rdmaHcaMax 3)" "$AGENT_LOG"
say "agent: $(grep -o 'RDMA shared config in use: .*' "$AGENT_LOG" | tail -1)"
say "The seed's whole-card training pod (the lab has no GPUs: its nvidia.com/gpu: 8 is not served here):"
kc "kubectl apply -f whole-card-pod.yaml" apply -f "$E2E/examples/whole-card-pod.yaml"
say "$(grep -vE '^ *#' "$E2E/examples/whole-card-pod.yaml" | grep -E 'nvidia.com/gpu|rdma/rdma_hca|IPC_LOCK|NCCL_IB_HCA' |
    awk '!seen[$0]++' | sed 's/^/  /')"
say "The kubelet admits it: Allocate for its container's $R_HCA: 1 (device \"0\")"
kl_cmd "{\"cmd\":\"allocate\",\"resource\":\"$R_HCA\",\"containers\":[[\"0\"]]}"
hca_allocated() { grep '"event":"allocate"' "$KL_OUT" | grep -qF "\"resource\":\"$R_HCA\""; }
wait_for "Allocate on $R_HCA answered" 30 hca_allocated
alloc=$(grep '"event":"allocate"' "$KL_OUT" | grep -F "\"resource\":\"$R_HCA\"" | tail -1)
expect_eq "Allocate OK" "$(echo "$alloc" | grep -o '"code":"[A-Za-z]*"')" '"code":"OK"'
for dev in $pf_chardevs; do
    check "the whole-card pod gets $dev" sh -c "echo '$alloc' | grep -q '\"host_path\":\"$dev\"'"
done
say "Allocate($R_HCA, [0]) answered:"
say "  $alloc"

header "mode 2: SR-IOV VFs, the seed's SriovNetworkNodePolicy (openshift.io/sriov_highnet)"
say "(the whole-card pool of mode 1 stays: both modes run side by side on one agent)"
header "step 1: the seed's policy (igb variant), label the node"
kc "kubectl apply the seed's policy (manifests/examples/vm-lab)" apply -f "$E2E/examples/highnet-sriov-policy.yaml"
check "no VFs before the node is labelled" test "$(numvfs_of "$IGB_PF")" = 0
kl_time_mark label-start
# -v=6: kubectl logs each request with its answer's time, so the moment the API server had
# the label is known (the PATCH line), not only when kubectl exited.
kc "kubectl label node" label node "$NODE" highnet-node=true -v=6
cp "$ERR" /tmp/label.klog
# kubectl (a Go binary under TCG in the guest) is part of the wait but not the agent's: timed
# on its own. The agent may start once the PATCH is answered, before kubectl has exited.
kl_time_mark label-done
wait_for "4 VFs exist" 120 vfs_are 4
VF0=$(vf_pci "$IGB_PF" 0) VF1=$(vf_pci "$IGB_PF" 1) VF2=$(vf_pci "$IGB_PF" 2) VF3=$(vf_pci "$IGB_PF" 3)
wait_for "kubelet sees $R_NET with the 4 VFs healthy" 90 pool_is "$R_NET" "$VF0 $VF1 $VF2 $VF3"
user_wait_figure
wait_for "NodeState syncStatus Succeeded" 60 status_is Succeeded
for vf in $VF0 $VF1 $VF2 $VF3; do
    check "VF $vf on igbvf" test "$(driver_of "$vf")" = igbvf
done
kc "kubectl get sriovnetworknodestates -o yaml" get sriovnetworknodestates -n "$NS" -o yaml
show_pools "$R_NET"
say "The seed's check for both modes:"
wait_for "kubectl describe node: $R_NET: 4 (capacity and allocatable)" 60 node_lists "$R_NET" 4
check "kubectl describe node: $R_HCA: 3 still" node_lists "$R_HCA" 3
describe_node "$R_NET" "$R_HCA"

header "step 2: a higher-priority policy takes VFs 2-3 as vfio-pci"
before=$(host_snapshot | grep -E '^vf[01] ')
# upstream's webhook rejects overlapping VF ranges on one PF, so the user narrows the seed to
# VFs 0-1 in the same apply (the agent would drop the lower-priority policy as conflicting)
mkdir -p /tmp/step2
mv "$(policy highnet-vfio-policy)" /tmp/step2/
mv "$(policy highnet-sriov-policy "$PF#0-1")" /tmp/step2/
kc "kubectl apply the vfio policy and the narrowed seed" apply -f /tmp/step2/
wait_for "VFs 2-3 on vfio-pci" 90 drivers_are vfio-pci "$VF2" "$VF3"
wait_for "kubelet: $R_VFIO = VFs 2-3" 60 pool_is "$R_VFIO" "$VF2 $VF3"
wait_for "kubelet: $R_NET = VFs 0-1" 60 pool_is "$R_NET" "$VF0 $VF1"
wait_for "NodeState syncStatus Succeeded" 60 status_is Succeeded
expect_eq "VFs 0-1 not re-created (same netdev ifindexes, driver, MTU)" \
    "$(host_snapshot | grep -E '^vf[01] ')" "$before"
check "still 4 VFs" test "$(numvfs_of "$IGB_PF")" = 4
say "host: $(host_snapshot | tr '\n' ';')"
show_pools "$R_NET" "$R_VFIO"

header "step 2b: a CNI moves VF 0's netdev into a pod; the kubelet restarts"
vf0net=$(netdev_of "$VF0")
kl_mark=$(wc -l <"$KL_OUT")
say "\$ ip netns add pod1; ip link set $vf0net netns pod1"
$IPR netns add pod1 || fail "setup: ip netns add pod1"
$IPR link set "$vf0net" netns pod1 || fail "setup: move $vf0net into pod1"
check "VF 0 has no netdev in the host namespace" test -z "$(netdev_of "$VF0")"
# the move is a link event: a reconcile follows at once; the periodic one 10 s later
sleep 12
withdrawn=$(tail -n +"$((kl_mark + 1))" "$KL_OUT" | grep '"event":"devices"' |
    grep -F "\"resource\":\"$R_NET\"" | grep -cvF "$VF0")
expect_eq "no ListAndWatch update withdrew VF 0 while its netdev is in the pod" "$withdrawn" 0
wait_for "kubelet: $R_NET = VFs 0-1 (VF 0 in the pod)" 30 pool_is "$R_NET" "$VF0 $VF1"
regs_before=$(kl_registers "$R_NET")
say "\$ restart the fake kubelet (dial mode kubelet-1.25)"
kl_cmd '{"cmd":"restart"}'
wait_for "pools registered again after the kubelet restart" 60 registered_again "$R_NET" "$regs_before"
wait_for "kubelet: $R_NET = VFs 0-1 after the restart" 60 pool_is "$R_NET" "$VF0 $VF1"
wait_for "kubelet: $R_VFIO = VFs 2-3 after the restart" 60 pool_is "$R_VFIO" "$VF2 $VF3"
say "\$ ip netns del pod1 (the pod is gone: the netdev returns to the host)"
$IPR netns del pod1 || fail "setup: ip netns del pod1"
wait_for "VF 0's netdev back in the host namespace" 30 sh -c "ls $(pci_dir "$VF0")/net | grep -q ."
wait_for "kubelet: $R_NET = VFs 0-1" 30 pool_is "$R_NET" "$VF0 $VF1"
show_pools "$R_NET" "$R_VFIO"

header "step 3: Soft-RoCE (rxe) on VF 1, the seed's isRdma: true"
vf1net=$(netdev_of "$VF1")
say "\$ rdma link add rxe0 type rxe netdev $vf1net"
rdma link add rxe0 type rxe netdev "$vf1net" || fail "setup: rdma link add rxe0 over $vf1net"
wait_for "rxe0 exists" 10 test -e /sys/class/infiniband/rxe0
uverbs=
for d in /sys/class/infiniband_verbs/uverbs*; do
    [ "$(cat "$d/ibdev" 2>/dev/null)" = rxe0 ] && uverbs=$(basename "$d")
done
check "rxe0 has a uverbs device ($uverbs)" test -n "$uverbs"
kc "kubectl apply the seed with isRdma: true" apply -f "$(policy highnet-sriov-policy "$PF#0-1" true)"
# VF 0 has no RDMA device, so the isRdma pool holds VF 1 only
wait_for "kubelet: $R_NET = VF 1 (the VF with rxe0)" 60 pool_is "$R_NET" "$VF1"
kl_cmd "{\"cmd\":\"allocate\",\"resource\":\"$R_NET\",\"containers\":[[\"$VF1\"]]}"
net_allocated() { grep '"event":"allocate"' "$KL_OUT" | grep -qF "\"resource\":\"$R_NET\""; }
wait_for "Allocate on $R_NET answered" 30 net_allocated
alloc=$(grep '"event":"allocate"' "$KL_OUT" | grep -F "\"resource\":\"$R_NET\"" | tail -1)
expect_eq "Allocate OK" "$(echo "$alloc" | grep -o '"code":"[A-Za-z]*"')" '"code":"OK"'
check "Allocate returns /dev/infiniband/$uverbs" sh -c "echo '$alloc' | grep -q '\"host_path\":\"/dev/infiniband/$uverbs\"'"
wait_for "NodeState syncStatus Succeeded" 60 status_is Succeeded
show_pools "$R_NET" "$R_VFIO"
say "Allocate($R_NET, [$VF1]) answered:"
say "  $alloc"

header "step 4: kill -9 the agent and start it again"
before=$(host_snapshot)
regs_before=$(kl_registers "$R_NET")
log_lines=$(wc -l <"$AGENT_LOG")
say "\$ kill -9 $AGENT_PID"
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
start_agent
wait_for "pools registered again" 60 registered_again "$R_NET" "$regs_before"
wait_for "kubelet: $R_NET = VF 1" 60 pool_is "$R_NET" "$VF1"
wait_for "kubelet: $R_VFIO = VFs 2-3" 60 pool_is "$R_VFIO" "$VF2 $VF3"
wait_for "NodeState syncStatus Succeeded" 60 status_is Succeeded
expect_eq "zero host changes: sriov_numvfs, drivers, ifindexes, MTUs as before" "$(host_snapshot)" "$before"
tail -n +"$((log_lines + 1))" "$AGENT_LOG" >/tmp/agent-restart.log
check "the restarted agent applied nothing (its log)" sh -c "! grep -Eq 'ACTION=|writing [0-9]+ to sriov_numvfs|binding to ' /tmp/agent-restart.log"
say "host: $(host_snapshot | tr '\n' ';')"
say "agent log after the restart:"
sed 's/^/  | /' /tmp/agent-restart.log >>"$TRANSCRIPT"

header "step 5: sriov_numvfs reset to 0 behind the agent's back"
say "\$ echo 0 > /sys/bus/pci/devices/$IGB_PF/sriov_numvfs"
echo 0 >"/sys/bus/pci/devices/$IGB_PF/sriov_numvfs" || fail "setup: reset sriov_numvfs"
wait_for "4 VFs back" 120 vfs_are 4
wait_for "VFs 2-3 on vfio-pci again" 90 drivers_are vfio-pci "$VF2" "$VF3"
wait_for "kubelet: $R_VFIO = VFs 2-3" 60 pool_is "$R_VFIO" "$VF2 $VF3"
wait_for "NodeState syncStatus Succeeded" 60 status_is Succeeded
# rxe0 went away with the old VF 1; the operator adds it again on the new VF 1's netdev and the
# agent's periodic check (--resync-interval 10) puts VF 1 back into the isRdma pool
vf1net=$(netdev_of "$VF1")
say "\$ rdma link add rxe0 type rxe netdev $vf1net"
rdma link add rxe0 type rxe netdev "$vf1net" || fail "setup: rdma link add rxe0 over $vf1net"
wait_for "kubelet: $R_NET = VF 1 again" 60 pool_is "$R_NET" "$VF1"
say "host: $(host_snapshot | tr '\n' ';')"
show_pools "$R_NET" "$R_VFIO"

header "step 6: an invalid policy, then the node label removed"
before=$(host_snapshot)
kc "kubectl apply the invalid policy" apply -f "$(policy bad-range-policy)"
events_have() { kubectl get events -n "$NS" 2>/dev/null | grep InvalidPolicy | grep -q bad-range-policy; }
wait_for "an InvalidPolicy Event names bad-range-policy" 60 events_have
kc "kubectl get events" get events -n "$NS"
sleep 2
expect_eq "nothing applied from it (host unchanged)" "$(host_snapshot)" "$before"
check "no pool for the invalid policy" sh -c "! grep -q 'sriov_bad' $KL_OUT"
kc "kubectl label node $NODE highnet-node-" label node "$NODE" highnet-node-
wait_for "the agent reset the PF it owns (sriov_numvfs 0)" 120 vfs_are 0
wait_for "kubelet: $R_NET withdrawn" 60 pool_withdrawn "$R_NET"
wait_for "kubelet: $R_VFIO withdrawn" 60 pool_withdrawn "$R_VFIO"
wait_for "NodeState syncStatus Succeeded" 60 status_is Succeeded
kc "kubectl get sriovnetworknodestates -o yaml" get sriovnetworknodestates -n "$NS" -o yaml

header "step 7: the seed's step 6: kubectl apply -f sriov-network.yaml"
say "(sriov-agent nad-controller, what the Deployment sriov-agent-nad-controller runs, holds"
say " the Lease sriov-agent-networks and renders SriovNetworks into NADs; the node agent does not)"
SRIOV_AGENT_INSECURE_HTTP_TOKEN=1 \
"$AGENT" nad-controller --kubeconfig "$KUBECONFIG.agent" --identity nad-controller-0 \
    >>"$AGENT_LOG" 2>&1 &
NADCTL_PID=$!
kc "kubectl apply Multus' NetworkAttachmentDefinition CRD (test fixture)" \
    apply -f "$E2E/network-attachment-definition-crd.yaml"
kc "kubectl apply -f sriov-network.yaml" apply -f "$E2E/examples/sriov-network.yaml"
nad_rendered() {
    kubectl get network-attachment-definitions -n default highnet-rdma-network \
        -o 'jsonpath={.metadata.annotations}' 2>/dev/null | grep -q 'openshift.io/sriov_highnet'
}
nad_config_text() {
    kubectl get network-attachment-definitions -n default highnet-rdma-network \
        -o 'jsonpath={.spec.config}' 2>/dev/null | tr -d ' \n'
}
wait_for "NAD default/highnet-rdma-network rendered (resourceName openshift.io/sriov_highnet)" 60 nad_rendered
kc "kubectl get network-attachment-definitions -n default highnet-rdma-network -o yaml" \
    get network-attachment-definitions -n default highnet-rdma-network -o yaml
cfg=$(nad_config_text)
say "its config, whitespace removed: $cfg"
case $cfg in
    *'"type":"sriov"'*'"ipam":{"type":"host-local","subnet":"192.168.100.0/24"}'*) cfg_ok=true ;;
    *) cfg_ok=false ;;
esac
check "its config: CNI type sriov, host-local IPAM on 192.168.100.0/24" $cfg_ok
network_ready() {
    [ "$(kubectl get sriovnetworks -n "$NS" highnet-rdma-network \
        -o 'jsonpath={.status.conditions[0].status}' 2>/dev/null)" = True ]
}
wait_for "SriovNetwork highnet-rdma-network Ready=True" 30 network_ready
kc "kubectl get sriovnetworks" get sriovnetworks -n "$NS"

header "agent log (stand-in for journalctl -u sriov-agent)"
sed 's/^/  | /' "$AGENT_LOG" >>"$TRANSCRIPT"
kill "$AGENT_PID" "$NADCTL_PID" 2>/dev/null
wait "$AGENT_PID" "$NADCTL_PID" 2>/dev/null
exec 7>&-
