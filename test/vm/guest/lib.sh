# Helpers for lab scenarios (sourced by /init before each scenario; busybox sh).
# A scenario is a list of steps; each step either passes ("@@vm step-ok") or fails the
# scenario at once ("@@vm step-fail", with the command's output and the kernel log tail).
#
# Steps that run a command (stdout -> $OUT, stderr -> $ERR, killed after $STEP_TIMEOUT s):
#   run_ok DESC CMD...        CMD must exit 0
#   run_fails DESC CMD...     CMD must fail cleanly: exit 1..125, not a crash or time-out
# Checks on the last command's output:
#   out_has / out_lacks / err_has DESC ERE     (grep -E, case-insensitive)
#   jq_ok DESC [--arg N V...] FILTER           jq -e FILTER on $OUT must be true
#   jq_checks DESC FILTER [DESC FILTER...]     the same for many filters in one jq run
# Other checks:
#   check DESC CMD...          CMD (often `test ...`) must succeed
#   expect_eq DESC ACTUAL EXPECTED
#   wait_for DESC SECONDS CMD...   polls CMD until it succeeds
# FAIL_SHOW=CMD (set or before a step): a failing step also prints the tail of CMD's output.
# Setup and inspection helpers use sysfs and iproute2 directly, never the code under test.

AGENT=${AGENT:-/usr/bin/sriov-agent}
IPR=/usr/sbin/iproute-ip # iproute2's ip (busybox ash prefers its own `ip` applet)
OUT=/tmp/step.out
ERR=/tmp/step.err
STEP_TIMEOUT=${STEP_TIMEOUT:-120}
: >"$OUT"
: >"$ERR"

_show_output() {
    if [ -s "$OUT" ]; then
        echo "    --- stdout"
        head -c 4000 "$OUT" | sed 's/^/    | /'
    fi
    if [ -s "$ERR" ]; then
        echo "    --- stderr"
        head -c 4000 "$ERR" | sed 's/^/    | /'
    fi
}

# the value of NAME=VALUE on the kernel command line (sriovvm.api, sriovvm.node, ...)
cmdline_value() {
    for word in $(cat /proc/cmdline); do
        case $word in "$1"=*) echo "${word#*=}" ;; esac
    done
}

# The e2e boot's control NIC (virtio-net): its name in CTL, an address beside the fake API
# server's ($API, from sriovvm.api), up.
lab_control_nic() {
    CTL=
    for n in /sys/class/net/*; do
        [ "$(basename "$(readlink "$n/device/driver" 2>/dev/null)")" = virtio_net ] && CTL=$(basename "$n")
    done
    check "virtio-net control NIC present" test -n "$CTL"
    $IPR addr add "${API%.*}.15/24" dev "$CTL" || fail "setup: address on $CTL"
    setup_link_up "$CTL"
}

# write_kubeconfig FILE USER: a kubeconfig for the fake API server ($API, plain http) with the
# lab's bearer token ($TOKEN)
write_kubeconfig() {
    cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: lab, cluster: {server: "http://$API"}}]
users: [{name: $2, user: {token: "$TOKEN"}}]
contexts: [{name: lab, context: {cluster: lab, user: $2}}]
current-context: lab
EOF
}

# Where the agent's processes wait in the kernel, for a step that hangs (the apply process in a
# sysfs write, a lock): state, wchan and kernel stack of every sriov-agent process. (Not the
# PF's sriov_numvfs: reading it waits for the device lock a hung write holds.)
agent_stacks() {
    for p in /proc/[0-9]*; do
        [ "$(cat "$p/comm" 2>/dev/null)" = sriov-agent ] || continue
        echo "pid ${p#/proc/} $(grep '^State:' "$p/status" 2>/dev/null) wchan $(cat "$p/wchan" 2>/dev/null)"
        head -n 12 "$p/stack" 2>/dev/null
    done
}

# the guest uptime at the end of each step shows where a slow scenario spends its time
ok() { echo "@@vm step-ok $VM_SCENARIO: $1 [t=$(cut -d' ' -f1 /proc/uptime)]"; }

fail() {
    echo "@@vm step-fail $VM_SCENARIO: $1"
    shift
    for line in "$@"; do
        echo "    $line"
    done
    _show_output
    echo "    --- kernel log tail"
    dmesg | tail -n 15 | sed 's/^/    | /'
    # a scenario names what else tells why (e.g. the agent's journal)
    if [ -n "${FAIL_SHOW:-}" ]; then
        echo "    --- $FAIL_SHOW (tail)"
        sh -c "$FAIL_SHOW" 2>&1 | tail -n 30 | sed 's/^/    | /'
    fi
    exit 1
}

_run() {
    timeout "$STEP_TIMEOUT" "$@" >"$OUT" 2>"$ERR"
}

run_ok() {
    desc=$1
    shift
    _run "$@"
    rc=$?
    [ "$rc" -eq 0 ] || fail "$desc" "command: $*" "exit status $rc, expected 0"
    ok "$desc"
}

run_fails() {
    desc=$1
    shift
    _run "$@"
    rc=$?
    # a refusal is a clean error exit: a crash, a time-out or a missing program is not one
    case $rc in
        0) fail "$desc" "command: $*" "exit status 0, expected a failure" ;;
        124 | 143) fail "$desc" "command: $*" "timed out after ${STEP_TIMEOUT}s" ;;
        126 | 127) fail "$desc" "command: $*" "could not be run (exit $rc)" ;;
    esac
    [ "$rc" -lt 128 ] || fail "$desc" "command: $*" "killed by signal $((rc - 128))"
    ok "$desc (exit $rc)"
}

out_has() {
    grep -Eiq -- "$2" "$OUT" || fail "$1" "stdout does not match /$2/"
    ok "$1"
}

out_lacks() {
    if grep -Eiq -- "$2" "$OUT"; then
        fail "$1" "stdout matches /$2/: $(grep -Ei -- "$2" "$OUT" | head -3)"
    fi
    ok "$1"
}

err_has() {
    grep -Eiq -- "$2" "$ERR" || fail "$1" "stderr does not match /$2/"
    ok "$1"
}

jq_ok() {
    desc=$1
    shift
    if ! result=$(jq -e "$@" "$OUT" 2>&1); then
        fail "$desc" "jq filter is not true: $*" "jq says: $(echo "$result" | head -c 300)"
    fi
    ok "$desc"
}

# jq_checks DESC FILTER [DESC FILTER...]: several checks on $OUT in ONE jq run (each jq start
# costs 1-2 s under TCG). Values come in through exported variables: $ENV.NAME in a filter.
# Each FILTER must give true (all its outputs true); an error counts as false.
jq_checks() {
    program='['
    n=0
    for arg in "$@"; do
        n=$((n + 1))
        [ $((n % 2)) -eq 0 ] || continue
        program="$program(try ([$arg] | length > 0 and all(. == true)) catch false),"
    done
    program="${program%,}] | .[]"
    if ! jq -r "$program" "$OUT" >/tmp/jq.results 2>/tmp/jq.err; then
        fail "$1" "jq could not evaluate the checks: $(head -c 300 /tmp/jq.err)"
    fi
    exec 3</tmp/jq.results
    while [ $# -ge 2 ]; do
        read -r result <&3
        [ "$result" = true ] || fail "$1" "jq filter is not true: $2"
        ok "$1"
        shift 2
    done
    exec 3<&-
}

check() {
    desc=$1
    shift
    "$@" >/dev/null 2>&1 || fail "$desc" "check failed: $*"
    ok "$desc"
}

expect_eq() {
    [ "$2" = "$3" ] || fail "$1" "got '$2', expected '$3'"
    ok "$1"
}

wait_for() {
    desc=$1
    secs=$2
    shift 2
    tries=$((secs * 5))
    while ! "$@" >/dev/null 2>&1; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || fail "$desc" "still not true after ${secs}s: $*"
        sleep 0.2
    done
    ok "$desc"
}

# --- sysfs inspection (independent of the agent) ---

pci_dir() { echo "/sys/bus/pci/devices/$1"; }

# netdev_of PCI: the device's network interface name, empty when it has none
netdev_of() { ls "$(pci_dir "$1")/net" 2>/dev/null | head -1; }

has_netdev() { [ -n "$(netdev_of "$1")" ]; }

# driver_of PCI: name of the bound driver, "none" when unbound
driver_of() {
    if [ -e "$(pci_dir "$1")/driver" ]; then
        basename "$(readlink "$(pci_dir "$1")/driver")"
    else
        echo none
    fi
}

# is_up IFNAME: the interface is administratively up (IFF_UP in its flags)
is_up() { [ $(($(cat "/sys/class/net/$1/flags") & 1)) -ne 0 ]; }

iommu_group_of() { basename "$(readlink "$(pci_dir "$1")/iommu_group")"; }

numvfs_of() { cat "$(pci_dir "$1")/sriov_numvfs"; }

# vf_pci PF N: PCI address of the PF's VF N (from its virtfnN link)
vf_pci() { basename "$(readlink "$(pci_dir "$1")/virtfn$2")"; }

count_virtfn() { ls -d "$(pci_dir "$1")"/virtfn* 2>/dev/null | wc -l; }

# find_pci VENDOR DEVICE: first PCI function with these ids (hex without 0x)
find_pci() {
    for d in /sys/bus/pci/devices/*; do
        if [ "$(cat "$d/vendor")" = "0x$1" ] && [ "$(cat "$d/device")" = "0x$2" ]; then
            basename "$d"
            return 0
        fi
    done
    return 1
}

# The igb PF (82576, 8086:10c9): found by its ids, its bus number depends on the other devices.
IGB_PF=$(find_pci 8086 10c9) || IGB_PF=igb-pf-not-found

# --- setup through sysfs/iproute2, for state that is not under test ---

setup_numvfs() {
    echo 0 >"$(pci_dir "$1")/sriov_numvfs" || fail "setup: numvfs of $1 to 0"
    if [ "$2" -gt 0 ]; then
        echo "$2" >"$(pci_dir "$1")/sriov_numvfs" || fail "setup: numvfs of $1 to $2"
    fi
}

setup_link_up() { $IPR link set dev "$1" up || fail "setup: link up $1"; }

# lab_reset: puts the igb PF back to its boot state before each scenario.
lab_reset() {
    for dev in /sys/class/infiniband/*; do
        [ -e "$dev" ] && rdma link delete "$(basename "$dev")" 2>/dev/null
    done
    if [ -e "$(pci_dir $IGB_PF)/sriov_numvfs" ] && [ "$(numvfs_of $IGB_PF)" != 0 ]; then
        echo 0 >"$(pci_dir $IGB_PF)/sriov_numvfs"
    fi
    pf=$(netdev_of $IGB_PF)
    [ -z "$pf" ] || $IPR link set dev "$pf" mtu 1500 2>/dev/null
    return 0
}

# --- the sriov CNI plugin next to the agent and the fake kubelet (07-cni, 11-cni-dpdk) ---
# These read the scenario's KDIR, PRSOCK, KL_OUT (the fake kubelet's stdout) and PF (the igb
# PF's netdev); policies go to /tmp/policies before start_agent_with_kubelet.

# /tmp/cni.sh CMD NETNS IFNAME CONTAINERID CONFFILE [CNI_ARGS]: one plugin call as a runtime
# makes it; the plugin checks deviceIDs against the pools of the agent's records, which
# start_agent_with_kubelet keeps in /tmp/agent-state
setup_cni_wrapper() {
    cat >/tmp/cni.sh <<'SH'
#!/bin/sh
CNI_COMMAND=$1 CNI_NETNS=$2 CNI_IFNAME=$3 CNI_CONTAINERID=$4 CNI_ARGS=${6:-} \
    SRIOV_CNI_AGENT_STATE_DIR=/tmp/agent-state \
    CNI_PATH=/usr/lib/cni:/opt/cni/bin exec /opt/cni/bin/sriov <"$5"
SH
    chmod +x /tmp/cni.sh
}

has_carrier() { [ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ]; }

# cni_node_policy PFNAMES: the PF up, the directories of start_agent_with_kubelet, and the
# seed-like netdevice policy (4 VFs, sriov_highnet, priority 90) for nicSelector pfNames
# PFNAMES ("$PF", or "$PF#0-2" for some of its VFs) in /tmp/policies/highnet.yaml; a scenario
# may append more policies (`---` documents) before starting the agent.
cni_node_policy() {
    setup_link_up "$PF"
    mkdir -p /tmp/policies "$KDIR" "$(dirname "$PRSOCK")" /tmp/agent-state
    cat >/tmp/policies/highnet.yaml <<EOF2
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata: {name: highnet-sriov-policy, namespace: sriov-network-operator}
spec:
  resourceName: sriov_highnet
  nodeSelector: {highnet-node: "true"}
  priority: 90
  mtu: 1500
  numVfs: 4
  nicSelector: {vendor: "8086", pfNames: ["$1"]}
  deviceType: netdevice
EOF2
}

# The CNI scenarios' node: cni_node_policy for all of $PF's VFs (VFs 0-3 as sriov_highnet),
# the agent and the fake kubelet, the pool whole; then each VF's netdev up and down once: igbvf
# may probe a VF while the PF is still resetting from the VF-count change ("PF still in reset
# state"), and such a VF has no carrier until the driver resets it, which it does when taken
# down (a real NIC's VFs come up after the PF).
start_cni_node() {
    cni_node_policy "$PF"
    start_agent_with_kubelet
    wait_for "kubelet: $R_NET = VFs 0-3, healthy" 90 pool_is "$R_NET" "$VF0 $VF1 $VF2 $VF3"
    wait_for "PF $PF has carrier (VF rates need the link speed)" 30 has_carrier "$PF"
    for vf in "$VF0" "$VF1" "$VF2" "$VF3"; do
        n=$(netdev_of "$vf")
        $IPR link set dev "$n" up && $IPR link set dev "$n" down || fail "setup: reset VF netdev $n"
    done
}

kl_last_devices() { grep '"event":"devices"' "$KL_OUT" | grep -F "\"resource\":\"$1\"" | tail -1; }
kl_ids() { kl_last_devices "$1" | grep -o '"id":"[^"]*"' | cut -d'"' -f4 | sort | tr '\n' ' '; }
kl_healthy() { kl_last_devices "$1" | grep -o '"health":"Healthy"' | wc -l; }
# pool_is RESOURCE "PCI...": the kubelet's last list for RESOURCE is exactly these, all healthy
pool_is() {
    [ "$(kl_ids "$1")" = "$(printf '%s\n' $2 | sort | tr '\n' ' ')" ] &&
        [ "$(kl_healthy "$1")" -eq "$(printf '%s\n' $2 | grep -c .)" ]
}
driver_is() { [ "$(driver_of "$1")" = "$2" ]; }
vfs_are() { [ "$(count_virtfn "$IGB_PF")" = "$1" ]; }
# the PF's line for VF N (`ip link show PF`: "vf N link/ether ..., vlan ..., spoofchk ...")
pf_vf_line() { $IPR link show dev "$PF" | grep -E "^ +vf $1 " | tr -s ' '; }

# The fake kubelet (commands on fd 7) and `sriov-agent run` (standalone, /tmp/policies, log in
# /tmp/agent.log, pid in AGENT_PID, more flags in AGENT_EXTRA_ARGS); waits for the agent's 4 VFs
# and sets VF0..VF3.
start_agent_with_kubelet() {
    echo '[]' >/tmp/assignments.json
    mkfifo /tmp/kubelet.in
    fake-kubelet --dir "$KDIR" --podresources "$PRSOCK" --assignments /tmp/assignments.json \
        </tmp/kubelet.in >"$KL_OUT" 2>/tmp/kubelet.err &
    exec 7>/tmp/kubelet.in
    wait_for "fake kubelet listens" 30 test -S "$KDIR/kubelet.sock"
    "$AGENT" run --policy-dir /tmp/policies --node-labels highnet-node=true --node-name lab-node \
        --state-dir /tmp/agent-state --kubelet-dir "$KDIR" --pod-resources-socket "$PRSOCK" \
        --devinfo-dir /run/devinfo --resync-interval 3 $AGENT_EXTRA_ARGS >/tmp/agent.log 2>&1 &
    AGENT_PID=$!
    wait_for "the agent made 4 VFs" 120 vfs_are 4
    VF0=$(vf_pci "$IGB_PF" 0)
    VF1=$(vf_pci "$IGB_PF" 1)
    VF2=$(vf_pci "$IGB_PF" 2)
    VF3=$(vf_pci "$IGB_PF" 3)
}
