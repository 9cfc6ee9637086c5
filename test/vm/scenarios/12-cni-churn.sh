# vm-profile: no-iommu
# vm-needs: cni
# Pod churn on the real kernel's igb VFs: workers start and stop "pods" (network namespaces) in
# parallel across all four VFs with the `sriov` CNI plugin, as a node sees them: ADDs killed at
# random points (then DEL, twice, as the runtime cleans up), DELs delivered twice, namespaces
# removed before their DEL (whose DEL then comes late, maybe after another pod took the VF),
# and the agent restarted half-way. Checked all along: a VF is never in two pods, and a pod's
# VLAN, MAC and trust are never changed by another pod's call. At the end every VF is back in
# the host with its original name, MAC, MTU and PF-side settings, and no record is left.
# Prints the rate of ADD/DEL pairs. The count is small here (CI); for the figure of at least
# 1,000 pairs: test/vm/run --timeout 3600 --add FILE:/vm/extra/churn-pairs 12 (FILE holds the
# number).
# Then a second, shorter churn (8 pairs: the same pods, faults, restart and end checks) runs in
# the RDMA subsystem's exclusive network namespace mode, set once no pod namespace of the first
# churn is left (the kernel refuses a change with EBUSY while any other namespace exists, and
# frees deleted ones asynchronously, hence the retries); the guest is put back in shared mode at
# the end for the scenarios after this one in the same boot (15-rdma-cni expects the boot
# state). igb VFs have no RDMA device, so nothing moves: the point is that every ADD and DEL goes
# through the plugin's exclusive-mode RDMA steps (mode read, the VF's RDMA device looked for and
# found absent) on a real kernel without breaking anything. It adds about 30 s under TCG (28 s
# measured). Skipped, with a note, on a kernel without ib_core. With a file
# /vm/extra/churn-rdma-exclusive the first churn runs in exclusive mode too, set by the agent at
# start (--rdma-mode exclusive) before any pod namespace exists.

STATE=/var/lib/cni/sriov
IPAM_DIR=/run/cni-ipam
KDIR=/var/lib/kubelet/device-plugins
PRSOCK=/var/lib/kubelet/pod-resources/kubelet.sock
KL_OUT=/tmp/kubelet.out
R_NET=openshift.io/sriov_highnet
PF=$(netdev_of "$IGB_PF")
PARAM=/sys/module/ib_core/parameters/netns_mode
WORKERS=4
PAIRS=16
[ -r /vm/extra/churn-pairs ] && PAIRS=$(cat /vm/extra/churn-pairs)
EXCLUSIVE_PAIRS=8
C=/tmp/churn

setup_cni_wrapper
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "    --- agent log tail"; tail -n 20 /tmp/agent.log | sed "s/^/    | /"; head -n 20 $C/violations 2>/dev/null | sed "s/^/    | /"; fi' EXIT

RDMA_EXCLUSIVE=
[ -e /vm/extra/churn-rdma-exclusive ] && RDMA_EXCLUSIVE=1
[ -n "$RDMA_EXCLUSIVE" ] && AGENT_EXTRA_ARGS="--rdma-mode exclusive"
start_cni_node
if [ -n "$RDMA_EXCLUSIVE" ]; then
    wait_for "the agent set the RDMA netns mode to exclusive (ib_core says N)" 60 \
        sh -c "test \"\$(cat $PARAM)\" = N"
fi

# the VFs as they were: names, MACs, MTUs, the PF's view
originals() {
    for i in 0 1 2 3; do
        vf=$(vf_pci "$IGB_PF" $i)
        n=$(netdev_of "$vf")
        echo "vf$i ${n:-none} $([ -n "$n" ] && cat "/sys/class/net/$n/address" "/sys/class/net/$n/mtu" | tr '\n' ' ')$(pf_vf_line $i)"
    done
}
originals >/tmp/churn-before

# cni CMD NS CID: one plugin call, its answer in $C/$cid.out; calls over 5 s are noted
cni() {
    t0=$(cut -d' ' -f1 /proc/uptime)
    /tmp/cni.sh "$1" "/run/netns/$2" net1 "$3" "$C/$3.json" >"$C/$3.out" 2>&1
    rc=$?
    t1=$(cut -d' ' -f1 /proc/uptime)
    awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a > 5) }' &&
        echo "$1 $2 took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s: $(head -c 200 "$C/$3.out" | tr -s '\n ' '  ')" >>"$C/slow"
    return $rc
}
violation() { echo "$*" | tr -s '\n ' '  ' >>"$C/violations"; echo >>"$C/violations"; }
# rnd N: a random number below N (busybox ash may lack $RANDOM)
rnd() { echo $(( $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % $1 )); }

# pf_shows VFINDEX MAC VLAN TRUST: the PF reports the pod's settings on its VF
pf_shows() {
    line=$(pf_vf_line "$1")
    case "$line" in *"link/ether $2 "*", vlan $3,"*"trust $4"*) return 0 ;; esac
    return 1
}

# one pod's life; $1 worker, $2 iteration
pod() {
    w=$1 it=$2
    i=$(rnd 4)
    vf=$(vf_pci "$IGB_PF" $i)
    ns=p$w-$it
    vlan=$(( w * 900 + it % 900 + 1 ))
    mac=$(printf '02:00:00:%02x:%02x:%02x' "$w" $(( it / 256 % 256 )) $(( it % 256 )))
    trust=off
    [ $(rnd 2) = 0 ] && trust=on
    cid=c$w-$it
    printf '{"cniVersion":"1.0.0","name":"churn","type":"sriov","deviceID":"%s","vlan":%d,"mac":"%s","trust":"%s","ipam":{"type":"host-local","ranges":[[{"subnet":"10.58.0.0/16"}]],"dataDir":"%s"}}\n' \
        "$vf" "$vlan" "$mac" "$trust" "$IPAM_DIR" >"$C/$cid.json"
    $IPR netns add "$ns" || { violation "setup: netns $ns"; return; }
    mode=$(rnd 8)
    if [ $mode = 0 ]; then
        # an ADD killed at a random point, then the runtime's DEL (twice)
        /tmp/cni.sh ADD "/run/netns/$ns" net1 "$cid" "$C/$cid.json" >/dev/null 2>&1 &
        pid=$!
        sleep "0.$(rnd 4)$(rnd 10)"
        kill -9 $pid 2>/dev/null
        wait $pid 2>/dev/null
        echo killed >>"$C/count-killed"
        for _ in 1 2; do
            cni DEL "$ns" "$cid" || violation "DEL after a killed ADD failed ($ns, VF $i): $(cat "$C/$cid.out")"
        done
        $IPR netns del "$ns"
        return 1
    fi
    if ! cni ADD "$ns" "$cid"; then
        grep -q 'already allocated\|has no netdev\|not come back' "$C/$cid.out" ||
            violation "ADD failed ($ns, VF $i): $(cat "$C/$cid.out")"
        echo refused >>"$C/count-refused"
        head -c 300 "$C/$cid.out" | tr -s '\n ' '  ' >>"$C/refusals"
        echo >>"$C/refusals"
        $IPR netns del "$ns"
        return 1
    fi
    # a VF is never in two pods
    mkdir "$C/claims/$i" 2>/dev/null || violation "VF $i given to $ns while $(cat "$C/claims/$i/by" 2>/dev/null) holds it"
    echo "$ns" >"$C/claims/$i/by"
    pf_shows "$i" "$mac" "$vlan" "$trust" || violation "after ADD of $ns: VF $i is not vlan $vlan mac $mac trust $trust: $(pf_vf_line $i)"
    sleep "0.$(rnd 3)"
    pf_shows "$i" "$mac" "$vlan" "$trust" || violation "while $ns holds VF $i, another call changed it: $(pf_vf_line $i)"
    if [ $(rnd 4) = 0 ]; then
        # the namespace goes first (a crash, a reboot): the kernel returns the VF to the host
        # and another pod may take it before this DEL comes
        rm -rf "$C/claims/$i"
        $IPR netns del "$ns"
        sleep "0.$(rnd 10)"
        cni DEL "$ns" "$cid" || violation "late DEL failed ($ns, VF $i): $(cat "$C/$cid.out")"
        echo late >>"$C/count-late"
    else
        rm -rf "$C/claims/$i"
        cni DEL "$ns" "$cid" || violation "DEL failed ($ns, VF $i): $(cat "$C/$cid.out")"
        if [ $(rnd 3) = 0 ]; then
            cni DEL "$ns" "$cid" || violation "second DEL failed ($ns, VF $i): $(cat "$C/$cid.out")"
        fi
        $IPR -n "$ns" link show dev net1 >/dev/null 2>&1 && violation "$ns still has net1 after DEL"
        $IPR netns del "$ns"
    fi
    echo pair >>"$C/count-pairs"
}

# a worker's share of the pairs; refused and killed ADDs do not count, up to 8 tries a pair
worker() {
    it=0 done=0
    while [ $done -lt $(( PAIRS / WORKERS )) ] && [ $it -lt $(( PAIRS / WORKERS * 8 )) ]; do
        pod "$1" $it && done=$((done + 1))
        it=$((it + 1))
        [ $((it % 10)) = 0 ] && echo "    worker $1: $done pairs in $it tries [t=$(cut -d' ' -f1 /proc/uptime)]"
    done
}

rdma_mode() { case "$(cat $PARAM 2>/dev/null)" in Y) echo shared ;; N) echo exclusive ;; *) echo "none (no ib_core)" ;; esac; }
churn_namespaces() { $IPR netns list | grep -E '^p[0-9]+-[0-9]+' ; }

# churn NAME PAIRS: PAIRS pairs by the workers with the agent restarted half-way, the figure
# printed as NAME, then the end checks: no violation, every VF home as before, no record, no
# namespace, the pool whole
churn() {
    PAIRS=$2
    rm -rf "$C"
    mkdir -p "$C/claims"
    : >"$C/violations"
    cp /tmp/churn-before "$C/before"
    start=$(cut -d' ' -f1 /proc/uptime)
    w=0
    pids=
    while [ $w -lt $WORKERS ]; do
        worker $w &
        pids="$pids $!"
        w=$((w + 1))
    done
    # the agent restarted half-way (what a DaemonSet rollout does): pods keep their VFs
    sleep 5
    kill "$AGENT_PID" 2>/dev/null
    wait "$AGENT_PID" 2>/dev/null
    "$AGENT" run --policy-dir /tmp/policies --node-labels highnet-node=true --node-name lab-node \
        --state-dir /tmp/agent-state --kubelet-dir "$KDIR" --pod-resources-socket "$PRSOCK" \
        --devinfo-dir /run/devinfo --resync-interval 3 $AGENT_EXTRA_ARGS >>/tmp/agent.log 2>&1 &
    AGENT_PID=$!
    for p in $pids; do wait "$p"; done
    end=$(cut -d' ' -f1 /proc/uptime)

    n() { [ -e "$C/count-$1" ] && wc -l <"$C/count-$1" || echo 0; }
    pairs=$(n pairs)
    rate=$(awk -v p="$pairs" -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", p / (e - s) }')
    echo "@@vm figure $1 $pairs ADD/DEL pairs in $(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", e - s }') s ($rate pairs/s) with $WORKERS workers on 4 VFs; $(n killed) ADDs killed, $(n late) late DELs, $(n refused) ADDs refused (VF held); violations: $(wc -l <"$C/violations"); RDMA netns mode: $(rdma_mode)"
    echo "    slow calls (over 5 s): $([ -e $C/slow ] && wc -l <$C/slow || echo 0)"
    head -n 5 "$C/slow" 2>/dev/null | cut -c1-250 | sed 's/^/    | /'
    echo "    refusals (first 3):"
    head -n 3 "$C/refusals" 2>/dev/null | cut -c1-200 | sed 's/^/    | /'
    check "$1: no invariant violated (a VF in two pods, a pod's VLAN/MAC/trust changed by another)" test ! -s "$C/violations"
    check "$1: at least half of the pods got their VF ($pairs of $PAIRS)" test "$pairs" -ge $(( PAIRS / 2 ))
    wait_for "$1: every VF back in the host" 20 sh -c "for i in 0 1 2 3; do test -n \"\$(ls /sys/bus/pci/devices/\$(basename \$(readlink /sys/bus/pci/devices/$IGB_PF/virtfn\$i))/net 2>/dev/null)\" || exit 1; done"
    originals >"$C/after"
    cmp -s "$C/before" "$C/after" || { echo "    --- VFs before / after"; diff "$C/before" "$C/after" | sed 's/^/    | /'; }
    check "$1: every VF with its original name, MAC, MTU and PF-side settings" cmp -s "$C/before" "$C/after"
    check "$1: no records left" test -z "$(find "$STATE" -type f ! -name '*.lock' 2>/dev/null)"
    check "$1: no pod namespace of the churn left" test -z "$(churn_namespaces)"
    wait_for "kubelet: $R_NET = VFs 0-3, healthy, after $1" 30 pool_is "$R_NET" "$VF0 $VF1 $VF2 $VF3"
}

churn cni-churn "$PAIRS"

if [ ! -r $PARAM ]; then
    echo "    no ib_core in this kernel ($PARAM): the churn in exclusive RDMA mode is skipped"
else
    # Any named namespace left here (an earlier scenario's pod) makes the kernel refuse: say which.
    check "no network namespace left by an earlier scenario (the kernel refuses the mode change)" \
        test -z "$($IPR netns list)"
    wait_for "exclusive RDMA mode set (no pod namespace left; freed asynchronously)" 15 \
        "$AGENT" debug rdma-mode exclusive
    expect_eq "ib_core says exclusive (N)" "$(cat $PARAM)" N
    churn cni-churn-exclusive "$EXCLUSIVE_PAIRS"
    expect_eq "still in exclusive RDMA mode after the churns" "$(cat $PARAM)" N
fi
kill "$AGENT_PID" 2>/dev/null
wait "$AGENT_PID" 2>/dev/null
if [ -r $PARAM ]; then
    run_ok "the guest back in shared RDMA mode (the boot state) for later scenarios" "$AGENT" debug rdma-mode shared
    expect_eq "ib_core says shared (Y)" "$(cat $PARAM)" Y
fi
exec 7>&-
