# Scenario 13: the RDMA network namespace mode (ib_core's netns_mode) on a real kernel.
# With no network namespace but the initial one: discover reports shared, and the agent started
# with --rdma-mode exclusive sets it (checked in /sys/module/ib_core/parameters, Y = shared)
# and writes `options ib_core netns_mode=0` to its modprobe directory, as the next boot would
# load shared without it; started again it changes nothing. In exclusive mode a Soft-RoCE device
# cannot move into a namespace (rxe has no disassociate_ucontext): the kernel answers EOPNOTSUPP
# and the device stays. With a namespace present the kernel refuses a change with EBUSY: the
# agent started with --rdma-mode shared removes its exclusive file (the next boot loads the
# kernel's default, shared), says a reboot is needed, and the mode stays exclusive. Once the
# namespace is gone a live switch to shared removes an exclusive file too. The guest is left in
# shared mode. (The guest is not rebooted: that the next boot loads the file is the unit test
# test-rdma-boot's, against kmod's rules.)

PARAM=/sys/module/ib_core/parameters/netns_mode
MP=/tmp/rdma-etc/modprobe.d # does not exist yet: the agent creates it
AGENT_LOG=/tmp/rdma-mode-agent.log
mkdir -p /tmp/rdma-etc /tmp/rdma-policies /tmp/rdma-state /tmp/rdma-kubelet /tmp/rdma-devinfo

# earlier scenarios' namespaces would make the kernel refuse any change
for ns in $($IPR netns list 2>/dev/null | cut -d' ' -f1); do $IPR netns del "$ns"; done
check "ib_core is loaded ($PARAM)" test -r $PARAM
expect_eq "the kernel starts in shared mode" "$(cat $PARAM)" Y

run_ok "discover -o json" "$AGENT" discover -o json
jq_ok "discover reports system.rdmaMode shared" '.system.rdmaMode == "shared"'
run_ok "debug rdma-mode (read over netlink)" "$AGENT" debug rdma-mode
out_has "netlink says shared" '^ok: rdma-mode shared$'

# start_agent MODE: a standalone agent asking for MODE; stopped once its start-up is logged
start_agent() {
    : >$AGENT_LOG
    "$AGENT" run --policy-dir /tmp/rdma-policies --node-labels lab=rdma \
        --state-dir /tmp/rdma-state --kubelet-dir /tmp/rdma-kubelet \
        --devinfo-dir /tmp/rdma-devinfo --pod-resources-socket none \
        --rdma-mode "$1" --modprobe-dir $MP --log-level debug >>$AGENT_LOG 2>&1 &
    agent_pid=$!
}
stop_agent() {
    kill "$agent_pid" 2>/dev/null
    wait "$agent_pid" 2>/dev/null
}
# (the agent's log becomes the step's output shown on a failure)
log_has() {
    cp $AGENT_LOG "$OUT"
    grep -Eq -- "$1" $AGENT_LOG
}
log_lacks() {
    cp $AGENT_LOG "$OUT"
    ! grep -Eq -- "$1" $AGENT_LOG
}

start_agent exclusive
wait_for "the agent logs both modes" 60 log_has 'mode: exclusive now, exclusive at the next boot'
stop_agent
check "it set the kernel's mode to exclusive" log_has 'RDMA network namespace mode set to exclusive'
expect_eq "ib_core says exclusive (N)" "$(cat $PARAM)" N
cp $MP/sriov-agent-rdma.conf "$OUT" 2>/dev/null || fail "the modprobe file exists" "no $MP/sriov-agent-rdma.conf"
out_has "the next boot loads exclusive too (netns_mode=0)" '^options ib_core netns_mode=0$'
check "no reboot is said to be needed" log_lacks 'needs a reboot'
before=$(stat -c %i $MP/sriov-agent-rdma.conf) # written atomically: a new inode each time
start_agent exclusive
wait_for "restarted, the agent reads both modes" 60 log_has 'mode: exclusive now, exclusive at the next boot'
stop_agent
check "restarted with the same mode: no change, no reboot notice" log_lacks 'set to exclusive|needs a reboot'
expect_eq "the modprobe file is not rewritten" "$(stat -c %i $MP/sriov-agent-rdma.conf)" "$before"
run_ok "discover -o json" "$AGENT" discover -o json
jq_ok "discover reports system.rdmaMode exclusive" '.system.rdmaMode == "exclusive"'

# Soft-RoCE over the PF's netdev, and a namespace to move it into
pf=$(netdev_of $IGB_PF)
setup_link_up "$pf"
rdma link add rxe0 type rxe netdev "$pf" || fail "setup: rdma link add rxe0 over $pf"
wait_for "rxe0 exists" 10 test -e /sys/class/infiniband/rxe0
$IPR netns add rdmapod || fail "setup: ip netns add rdmapod"
run_fails "moving rxe0 into a namespace is refused" "$AGENT" debug rdma-move rxe0 /run/netns/rdmapod
err_has "the kernel's answer: operation not supported" 'Operation not supported'
check "rxe0 is still in the node's namespace" test -e /sys/class/infiniband/rxe0
rdma link delete rxe0 || fail "cleanup: rdma link delete rxe0"

# a namespace exists: EBUSY
run_fails "debug rdma-mode shared with a namespace present" "$AGENT" debug rdma-mode shared
err_has "the kernel is busy" 'busy'
start_agent shared
wait_for "the agent says a reboot is needed" 60 log_has 'needs a reboot'
stop_agent
check "it says the next boot loads shared" log_has 'the next boot loads shared'
check "it removed the exclusive modprobe file" log_has "removed $MP/sriov-agent-rdma.conf"
check "it does not reboot: the agent exited on SIGTERM, the guest runs" test -r $PARAM
expect_eq "the mode stays exclusive (N)" "$(cat $PARAM)" N
check "no modprobe file: the next boot loads the kernel's default" test ! -e $MP/sriov-agent-rdma.conf

# an exclusive file again (the kernel keeps exclusive, the agent asks for it), then a live
# switch to shared once the namespace is gone: the file goes with it
start_agent exclusive
wait_for "the exclusive file is written again" 60 test -e $MP/sriov-agent-rdma.conf
stop_agent
$IPR netns del rdmapod
start_agent shared
wait_for "the agent logs both modes" 60 log_has 'mode: shared now, shared at the next boot'
stop_agent
check "it set the kernel's mode to shared" log_has 'RDMA network namespace mode set to shared'
expect_eq "ib_core says shared (Y)" "$(cat $PARAM)" Y
check "the live switch to shared removed the exclusive file" test ! -e $MP/sriov-agent-rdma.conf
check "no reboot is said to be needed" log_lacks 'needs a reboot'
