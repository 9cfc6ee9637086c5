# vm-profile: systemd
# The unit as `cmake --install` ships it, under Debian's systemd (252, PID 1) with its journal:
# start with a standalone policy (Type=notify: `systemctl start` returns after READY=1, VFs
# already there), status with the STATUS= text, VFs bound (igbvf and vfio-pci through the
# sandbox: ProtectKernelTunables with /sys/bus/pci and /sys/devices writable, DevicePolicy=closed,
# CAP_NET_ADMIN only), RDMA through the sandbox, each journalctl recipe of docs/operations.md, reload, stop
# (VFs stay), the watchdog restarting a SIGSTOPped agent, and --rdma-mode and --dra-resources
# writing through the sandbox (modprobe.d, plugins_registry, the DRA driver's plugins/ directory,
# the CDI directory) with nothing else of /etc or /var/lib/kubelet writable.

PF=$IGB_PF
U=sriov-agent

# wait_journal DESC SECONDS REGEX [MATCHES...]: polls `journalctl -u sriov-agent MATCHES` until a
# message matches REGEX; on failure the unit's journal tail is the step's output
wait_journal() {
    desc=$1 secs=$2 re=$3
    shift 3
    tries=$((secs * 2))
    until journalctl -u $U -o cat "$@" 2>/dev/null | grep -Eq -- "$re"; do
        tries=$((tries - 1))
        if [ "$tries" -le 0 ]; then
            journalctl -u $U --no-pager -o short-monotonic | tail -n 60 >"$OUT"
            fail "$desc" "no journal line /$re/ ($*) after ${secs}s"
        fi
        sleep 0.5
    done
    ok "$desc"
}

# systemctl_ok DESC ARGS...: systemctl must succeed; on failure the unit's status and journal
# tail become the step's output
systemctl_ok() {
    desc=$1
    shift
    STEP_TIMEOUT=150 run_ok "$desc" sh -c "systemctl $* || { rc=\$?; systemctl status --no-pager $U; journalctl -u $U --no-pager -o short-monotonic | tail -n 40; exit \$rc; }"
}

check "systemd is PID 1" grep -qx systemd /proc/1/comm
run_ok "systemctl cat $U (installed by cmake --install)" systemctl cat $U
out_has "ExecStart is the installed binary" '^ExecStart=/usr/sbin/sriov-agent run'
out_has "the unit is the sandboxed one" '^DevicePolicy=closed'
PFNET=$(netdev_of "$PF")
expect_eq "the igb PF has a netdev" "$([ -n "$PFNET" ] && echo yes)" yes

# The seed's policy for igb, narrowed to VFs 0-1, and a vfio-pci policy for VFs 2-3
# (test/vm/e2e/policies), in the unit's default --policy-dir.
mkdir -p /etc/sriov-agent/policies
cat >/etc/sriov-agent/policies/highnet.yaml <<EOF
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: highnet-sriov-policy
  namespace: sriov-network-operator
spec:
  resourceName: sriov_highnet
  nodeSelector:
    highnet-node: "true"
  priority: 90
  mtu: 1500
  numVfs: 4
  nicSelector:
    vendor: "8086"
    pfNames: ["$PFNET#0-1"]
  deviceType: netdevice
EOF
cat >/etc/sriov-agent/policies/vfio.yaml <<EOF
apiVersion: sriovnetwork.openshift.io/v1
kind: SriovNetworkNodePolicy
metadata:
  name: highnet-vfio-policy
  namespace: sriov-network-operator
spec:
  resourceName: sriov_highnet_vfio
  nodeSelector:
    highnet-node: "true"
  priority: 10
  numVfs: 4
  nicSelector:
    vendor: "8086"
    pfNames: ["$PFNET#2-3"]
  deviceType: vfio-pci
EOF
# docs/install.md "Install on a host with systemd": the configuration file the unit reads
mkdir -p /etc/default
# (--log-level=debug: the RDMA check below reads a debug line)
echo 'SRIOV_AGENT_ARGS="--policy-dir=/etc/sriov-agent/policies --node-labels=highnet-node=true --log-level=debug"' \
    >/etc/default/sriov-agent

# --- start: returns once READY=1 was sent, i.e. after the first reconcile
systemctl_ok "systemctl start $U" start $U
run_ok "systemctl is-active" systemctl is-active $U
out_has "active" '^active$'
run_ok "systemctl status" systemctl status --no-pager --lines=0 $U
out_has "status: active (running)" 'Active: active \(running\)'
out_has "status: the STATUS= text" 'Status: "1 PF\(s\) configured, 0 failed, 0 held back"'
MAINPID=$(systemctl show -p MainPID --value $U)
expect_eq "4 VFs already there when start returned" "$(numvfs_of "$PF")" 4
VF0=$(vf_pci "$PF" 0)
VF1=$(vf_pci "$PF" 1)
VF2=$(vf_pci "$PF" 2)
VF3=$(vf_pci "$PF" 3)
expect_eq "VF 0 on igbvf" "$(driver_of "$VF0")" igbvf
expect_eq "VF 1 on igbvf" "$(driver_of "$VF1")" igbvf
expect_eq "VF 2 on vfio-pci (driver_override, unbind, drivers_probe through the sandbox)" \
    "$(driver_of "$VF2")" vfio-pci
expect_eq "VF 3 on vfio-pci" "$(driver_of "$VF3")" vfio-pci
check "/dev/vfio/<group of VF 2> exists" test -c "/dev/vfio/$(iommu_group_of "$VF2")"
check "device-plugin sockets in /var/lib/kubelet/device-plugins (ReadWritePaths)" \
    test -S /var/lib/kubelet/device-plugins/openshift.io_sriov_highnet.sock -a \
    -S /var/lib/kubelet/device-plugins/openshift.io_sriov_highnet_vfio.sock
check "the device-info directory (RuntimeDirectory; files are written at Allocate)" \
    test -d /run/k8s.cni.cncf.io/devinfo/dp
check "its PF records (StateDirectory)" test -s "/var/lib/sriov-agent/$PF.json"

# --- the journal, as docs/operations.md "Logs" promises
run_ok "journalctl -u $U" journalctl -u $U --no-pager -o cat
out_has "journalctl -u: the VF-count change" "writing 4 to sriov_numvfs"
out_has "journalctl -u: the vfio binding" "vfio-pci"
run_ok "journalctl -u $U -p warning" journalctl -u $U --no-pager -p warning -o cat
out_lacks "-p warning: no info lines" "writing 4 to sriov_numvfs|binding to"
run_ok "journalctl -u $U PF=$PF (-o json)" sh -c "journalctl -u $U PF=$PF -o json | jq -s ."
PF_ADDR=$PF
export PF_ADDR VF0 VF2
jq_checks "PF=: lines, every one about that PF" 'length > 2 and all(.[]; .PF == $ENV.PF_ADDR)' \
    "PF=: set-num-vfs among them" 'any(.[]; .ACTION == "set-num-vfs")' \
    "PF=: -o json shows VF= on the VF lines" 'any(.[]; .VF == $ENV.VF2)'
run_ok "journalctl -u $U POLICY=highnet-vfio-policy" \
    sh -c "journalctl -u $U POLICY=highnet-vfio-policy -o json | jq -s ."
jq_checks "POLICY=: lines, every one of that policy" \
    'length > 0 and all(.[]; .POLICY == "highnet-vfio-policy")'
run_ok "journalctl -u $U ACTION=set-num-vfs" \
    sh -c "journalctl -u $U ACTION=set-num-vfs -o json | jq -s ."
jq_checks "ACTION=set-num-vfs: the VF-count change" \
    'length > 0 and all(.[]; .ACTION == "set-num-vfs" and .PF == $ENV.PF_ADDR)'
run_ok "journalctl -u $U -o json" sh -c "journalctl -u $U -o json | jq -s ."
jq_checks "-o json: the agent's lines carry _SYSTEMD_UNIT" \
    'any(.[]; ._SYSTEMD_UNIT == "sriov-agent.service" and ._COMM == "sriov-agent")'
run_ok "journalctl -u $U -o verbose PF=$PF" journalctl -u $U --no-pager -o verbose PF=$PF
out_has "-o verbose shows the fields" "^ *PF=$PF\$"

# --- RDMA through the sandbox: a Soft-RoCE device on VF 1, the policy asks for RDMA VFs
run_ok "rdma link add rxe0 on VF 1" rdma link add rxe0 type rxe netdev "$(netdev_of "$VF1")"
sed -i 's/^  deviceType: netdevice$/  deviceType: netdevice\n  isRdma: true/' \
    /etc/sriov-agent/policies/highnet.yaml

# --- reload: SIGHUP through ExecReload (the sandbox must let /bin/kill signal the agent)
systemctl_ok "systemctl reload $U" reload $U
wait_journal "the reload is in the journal" 20 'SIGHUP: reloading configuration'
wait_journal "the re-read isRdma policy: the sriov_highnet pool changes to 1 device" 40 \
    'pool changed: 1 devices' RESOURCE=openshift.io/sriov_highnet
run_ok "journalctl -u $U RESOURCE=openshift.io/sriov_highnet (-o json)" \
    sh -c "journalctl -u $U RESOURCE=openshift.io/sriov_highnet -o json | jq -s ."
jq_checks "RESOURCE=: lines, every one of that pool" \
    'length > 0 and all(.[]; .RESOURCE == "openshift.io/sriov_highnet")' \
    "RESOURCE=: VF 0 left out, it has no RDMA device (VF= field)" \
    'any(.[]; .VF == $ENV.VF0 and (.MESSAGE | test("not advertised")))'
# DevicePolicy=closed: libibverbs lists rxe0 (sysfs and the visible /dev node) but cannot open
# it; the agent keeps the port attributes it read from sysfs. Kept closed on purpose: the agent
# only reads port state, which sysfs has too (docs/install.md "Install on a host with systemd").
run_ok "journalctl: rxe0 is found, not opened (DevicePolicy=closed)" \
    journalctl -u $U --no-pager -o cat
out_has "rxe0 does not open inside the sandbox, sysfs attributes kept" \
    "RDMA device rxe0 does not open; keeping sysfs port attributes"
expect_eq "reload kept the process" "$(systemctl show -p MainPID --value $U)" "$MAINPID"

# --- stop: VFs stay. The guest has no D-Bus, so --stop-mode auto cannot ask systemd or logind
# and takes this SIGTERM for a restart (devices not reported Unhealthy first).
systemctl_ok "systemctl stop $U" stop $U
run_fails "systemctl is-active after stop" systemctl is-active $U
expect_eq "stop left the 4 VFs" "$(numvfs_of "$PF")" 4
expect_eq "stop left VF 2 on vfio-pci" "$(driver_of "$VF2")" vfio-pci
run_ok "journalctl: the stop" journalctl -u $U --no-pager -o cat
out_has "stop: the journal says the VFs are kept" "stopping \(VFs are kept\)"
out_has "stop: taken for a restart (no system bus in the guest)" \
    "stop: taken for a restart \(no system bus"

# --- watchdog: a hung agent (SIGSTOP) is killed and restarted. The unit's WatchdogSec=3min
# (a sriov_numvfs write may block for minutes) is shortened for the lab by a drop-in.
mkdir -p /run/systemd/system/$U.service.d
printf '[Service]\nWatchdogSec=6s\nRestartSec=1s\n' >/run/systemd/system/$U.service.d/lab.conf
run_ok "daemon-reload (watchdog drop-in)" systemctl daemon-reload
systemctl_ok "systemctl start $U (again: no host change)" start $U
OLD=$(systemctl show -p MainPID --value $U)
check "the agent pings the watchdog (WATCHDOG_USEC in its environment)" \
    grep -q WATCHDOG_USEC= "/proc/$OLD/environ"
kill -STOP "$OLD"
wait_for "the watchdog restarts the hung agent (new MainPID, active)" 60 sh -c \
    "[ \"\$(systemctl show -p MainPID --value $U)\" != $OLD ] && [ \"\$(systemctl show -p MainPID --value $U)\" != 0 ] && systemctl is-active -q $U"
run_ok "journalctl: the watchdog timeout" journalctl -u $U --no-pager -o cat
out_has "systemd logged the watchdog timeout" "[Ww]atchdog timeout"
run_ok "systemctl show NRestarts" systemctl show -p NRestarts --value $U
out_has "one restart" '^1$'
rm -rf /run/systemd/system/$U.service.d
systemctl daemon-reload
run_ok "systemctl stop $U (end)" systemctl stop $U

# --- carrier loss from outside the guest: QEMU's monitor `set_link n0 off` (test/vm/lib/
# link-relay.py acts on the @@vm host-* lines) is a cable pull for the igb PF. The agent learns
# it from rtnetlink: its devices Unhealthy at once (checked: within 5 s) after the carrier
# drop, one journal line; back at once after the carrier's return. Latencies: carrier as polled here (20 ms) to the
# journal line (both CLOCK_MONOTONIC).
systemctl_ok "systemctl start $U (link health)" start $U
uptime_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
carrier_is() { [ "$(cat "/sys/class/net/$PFNET/carrier" 2>/dev/null)" = "$1" ]; }
# journal_ms REGEX: CLOCK_MONOTONIC ms of the unit's last journal line matching REGEX
journal_ms() {
    journalctl -u $U -o short-monotonic --no-pager | grep -E -- "$1" | tail -1 |
        sed 's/^\[ *\([0-9.]*\)\].*/\1/' | awk '{ printf "%d\n", $1 * 1000 }'
}
wait_carrier() {
    tries=500
    until carrier_is "$1"; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || fail "$2" "carrier of $PFNET still not $1 after 10 s"
        sleep 0.02
    done
    uptime_ms
}
wait_for "the PF has carrier before the pull" 30 carrier_is 1
# (the first reconcile may already have said "link down": it found the PF administratively down
# before bringing it up, and the carrier takes a moment; only the lines from here on count)
DOWN_BEFORE=$(journalctl -u $U -o cat --no-pager | grep -c "PF $PF ($PFNET): link down")
echo "@@vm host-set-link n0 off"
T_DOWN=$(wait_carrier 0 "the emulated cable is pulled (carrier 0)")
ok "the emulated cable is pulled (carrier 0)"
wait_journal "carrier loss: the PF's devices are reported Unhealthy" 10 \
    "PF $PF \($PFNET\): link down; its devices are Unhealthy"
J_DOWN=$(journal_ms "PF $PF \($PFNET\): link down; its devices are Unhealthy")
echo "@@vm figure carrier-loss-to-unhealthy $((J_DOWN - T_DOWN)) ms"
check "carrier loss -> Unhealthy within 5 s ($((J_DOWN - T_DOWN)) ms)" \
    test "$((J_DOWN - T_DOWN))" -lt 5000
echo "@@vm host-set-link n0 on"
T_UP=$(wait_carrier 1 "the cable is back (carrier 1)")
ok "the cable is back (carrier 1)"
wait_journal "recovery: the PF's devices are Healthy again" 10 \
    "PF $PF \($PFNET\) is up again; its devices are Healthy"
J_UP=$(journal_ms "PF $PF \($PFNET\) is up again")
echo "@@vm figure recovery-to-healthy $((J_UP - T_UP)) ms"
check "recovery -> Healthy within 5 s ($((J_UP - T_UP)) ms)" test "$((J_UP - T_UP))" -lt 5000
run_ok "journalctl: one line each" journalctl -u $U -o cat --no-pager
expect_eq "one 'link down' line for the pull" \
    "$(($(journalctl -u $U -o cat --no-pager | grep -c "PF $PF ($PFNET): link down") - DOWN_BEFORE))" 1
# flapping: 12 changes 50 ms apart from the host, ending up
MARK=$(journalctl -u $U -o cat --no-pager | grep -c "PF $PF ($PFNET)")
echo "@@vm host-flap n0 12 50"
sleep 3
wait_for "after flapping the carrier is back" 10 carrier_is 1
FLAP_LINES=$(($(journalctl -u $U -o cat --no-pager | grep -c "PF $PF ($PFNET)") - MARK))
echo "@@vm figure flapping-journal-lines $FLAP_LINES for 12 changes"
check "flapping: at most 3 journal lines about the PF ($FLAP_LINES)" test "$FLAP_LINES" -le 3
run_ok "systemctl stop $U (link health)" systemctl stop $U

# --- boot order with the API server unreachable: a "reboot" (the VFs gone, sriov_numvfs 0),
# the agent now in cluster mode with a kubeconfig that reaches nothing, and a stand-in
# kubelet.service started in the same transaction. The unit's Before=kubelet.service and
# READY=1 after the boot apply must give the stand-in the recorded VFs and drivers.
run_ok "the reboot: 0 to sriov_numvfs" sh -c "echo 0 >/sys/bus/pci/devices/$PF/sriov_numvfs"
expect_eq "no VFs left" "$(numvfs_of "$PF")" 0
cat >/etc/sriov-agent/unreachable.kubeconfig <<EOK
apiVersion: v1
kind: Config
clusters:
- name: down
  cluster:
    server: http://127.0.0.1:9
users:
- name: agent
  user:
    token: nothing-listens
contexts:
- name: down
  context:
    cluster: down
    user: agent
current-context: down
EOK
# (/etc/default/sriov-agent, not a drop-in: the unit's EnvironmentFile= comes after its
# Environment= lines and would win)
cp /etc/default/sriov-agent /etc/default/sriov-agent.standalone
echo 'SRIOV_AGENT_ARGS="--kubeconfig=/etc/sriov-agent/unreachable.kubeconfig --log-level=debug"' \
    >/etc/default/sriov-agent
cat >/run/systemd/system/kubelet.service <<EOK
[Unit]
Description=stand-in kubelet: records what it finds when it starts
[Service]
# (doubled dollar signs reach the shell as one: systemd expands single ones itself)
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'cat /sys/bus/pci/devices/$PF/sriov_numvfs >/run/kubelet-saw; for i in 0 1 2 3; do basename "\$\$(readlink /sys/bus/pci/devices/$PF/virtfn\$\$i/driver)" >>/run/kubelet-saw; done'
EOK
run_ok "daemon-reload (cluster mode, stand-in kubelet)" systemctl daemon-reload
systemctl_ok "systemctl start $U kubelet.service (one transaction)" start $U kubelet.service
run_ok "what the stand-in kubelet found when it started" cat /run/kubelet-saw
expect_eq "the stand-in kubelet started after the recorded state was applied" \
    "$(tr '\n' ' ' </run/kubelet-saw)" "4 igbvf igbvf vfio-pci vfio-pci "
wait_journal "boot: the records were applied without the API server" 10 \
    'boot: recorded state of 1 PF\(s\) applied in'
run_ok "systemctl status (cluster mode, API unreachable)" systemctl status --no-pager --lines=0 $U
out_has "status: waiting for the API server" 'recorded state restored, waiting for the API server'
run_ok "systemctl stop $U kubelet.service" systemctl stop $U kubelet.service
mv /etc/default/sriov-agent.standalone /etc/default/sriov-agent
rm -f /run/systemd/system/kubelet.service
systemctl daemon-reload

# --- --rdma-mode and --dra-resources through the sandbox (docs/install.md "Install on a host
# with systemd" offers both): ProtectSystem=strict leaves /etc, /var/lib and /run read-only, so
# the unit must open exactly the modprobe.d directory, the kubelet's plugins_registry, the DRA
# driver's directory under plugins/ and the CDI directory (and, for every start, the CNI
# plugin's lock directory under /var/lib/cni/sriov: the journal of the whole scenario, at debug
# level, must have no "Read-only file system"). As on a host without a kubelet (and
# without those directories yet) the unit must create them before its sandbox is set up.
PARAM=/sys/module/ib_core/parameters/netns_mode
DRA_DRIVER=sriovnetwork.k8snetworkplumbingwg.io
for ns in $($IPR netns list 2>/dev/null | cut -d' ' -f1); do $IPR netns del "$ns"; done
check "ib_core is loaded ($PARAM)" test -r $PARAM
expect_eq "the kernel starts in shared mode" "$(cat $PARAM)" Y
rm -rf /var/lib/kubelet/plugins_registry /var/lib/kubelet/plugins /run/cdi /etc/modprobe.d
cp /etc/default/sriov-agent /etc/default/sriov-agent.standalone
echo 'SRIOV_AGENT_ARGS="--policy-dir=/etc/sriov-agent/policies --node-labels=highnet-node=true --rdma-mode=exclusive --dra-resources=sriov_highnet_vfio"' \
    >/etc/default/sriov-agent
systemctl_ok "systemctl start $U (--rdma-mode exclusive, --dra-resources)" start $U
wait_journal "rdma-mode: the journal says both modes" 30 \
    'mode: exclusive now, exclusive at the next boot'
expect_eq "ib_core is exclusive (N) under the sandbox" "$(cat $PARAM)" N
run_ok "the next boot's mode in /etc/modprobe.d (ReadWritePaths)" \
    cat /etc/modprobe.d/sriov-agent-rdma.conf
out_has "options ib_core netns_mode=0" '^options ib_core netns_mode=0$'
wait_for "DRA: the registration socket in /var/lib/kubelet/plugins_registry" 30 \
    test -S /var/lib/kubelet/plugins_registry/$DRA_DRIVER-reg.sock
check "DRA: the service socket in /var/lib/kubelet/plugins/$DRA_DRIVER" \
    test -S /var/lib/kubelet/plugins/$DRA_DRIVER/dra.sock
MAINPID=$(systemctl show -p MainPID --value $U)
# CDI specs are written when the kubelet prepares a claim (no kubelet here): the agent's own
# mount namespace shows whether it could.
check "DRA: /run/cdi is writable inside the agent's sandbox" \
    nsenter -t "$MAINPID" -m sh -c 'touch /run/cdi/.probe && rm /run/cdi/.probe'
run_fails "the rest of /etc stays read-only inside the sandbox" \
    nsenter -t "$MAINPID" -m touch /etc/sriov-agent-probe
run_fails "the rest of /var/lib/kubelet stays read-only inside the sandbox" \
    nsenter -t "$MAINPID" -m touch /var/lib/kubelet/plugins/probe
run_ok "journalctl: no read-only file system errors" journalctl -u $U --no-pager -o cat
out_lacks "no EROFS in the journal" "Read-only file system"
systemctl_ok "systemctl stop $U (rdma-mode, DRA)" stop $U
# back to shared (live switch, no namespace exists): the agent removes its exclusive file
echo 'SRIOV_AGENT_ARGS="--policy-dir=/etc/sriov-agent/policies --node-labels=highnet-node=true --rdma-mode=shared"' \
    >/etc/default/sriov-agent
systemctl_ok "systemctl start $U (--rdma-mode shared)" start $U
wait_journal "rdma-mode: shared now and at the next boot" 30 \
    'mode: shared now, shared at the next boot'
expect_eq "ib_core is shared again (Y)" "$(cat $PARAM)" Y
check "the exclusive file is gone from /etc/modprobe.d" \
    test ! -e /etc/modprobe.d/sriov-agent-rdma.conf
systemctl_ok "systemctl stop $U (end of rdma-mode)" stop $U
mv /etc/default/sriov-agent.standalone /etc/default/sriov-agent
