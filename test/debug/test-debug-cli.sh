#!/bin/bash
# The `sriov-agent debug` contract the VM-lab scenarios rely on, checked on a temp sysfs tree
# (no kernel needed): exit codes, "ok:" lines and the errors a user sees. Kernel-facing verbs
# (set-mtu, link-up, vf-set) run in a private network namespace when root, else are skipped.
set -u
AGENT=${1:?usage: test-debug-cli.sh PATH/TO/sriov-agent}
ROOT=$(mktemp -d /tmp/sriov-test-debug-XXXXXX)
trap 'rm -rf "$ROOT"' EXIT
failures=0

check() { # check NAME WANT_RC WANT_OUTPUT_REGEX -- CMD...
        local name=$1 want_rc=$2 want=$3
        shift 4
        local out rc
        out=$("$@" 2>&1)
        rc=$?
        if [[ $rc -ne $want_rc ]] || ! grep -Eq -- "$want" <<<"$out"; then
                echo "FAIL $name: rc=$rc (want $want_rc), output:"
                sed 's/^/    /' <<<"$out"
                failures=$((failures + 1))
        else
                echo "ok   $name"
        fi
}

PF=0000:01:00.0
VF=0000:01:10.0
D=$ROOT/devices/pci0000:00
mkdir -p "$D/$PF" "$D/$VF" "$ROOT/bus/pci/drivers/igb" "$ROOT/bus/pci/drivers/igbvf"
ln -s ../../devices/pci0000:00 "$ROOT/bus/pci/devices"
echo 7 >"$D/$PF/sriov_totalvfs"
echo 1 >"$D/$PF/sriov_numvfs"
ln -s ../$VF "$D/$PF/virtfn0"
ln -s ../$PF "$D/$VF/physfn"
ln -s ../../../bus/pci/drivers/igbvf "$D/$VF/driver"
: >"$D/$VF/driver_override"

check "set-numvfs equal count: no write" 0 "^ok: $PF has 1 VFs$" -- \
        "$AGENT" debug set-numvfs --sysfs-root "$ROOT" --timeout 2 $PF 1
check "set-numvfs above totalvfs" 1 "at most 7 \(sriov_totalvfs\)" -- \
        "$AGENT" debug set-numvfs --sysfs-root "$ROOT" $PF 8
[[ $(cat "$D/$PF/sriov_numvfs") == 1 ]] || { echo "FAIL sriov_numvfs was written"; failures=$((failures + 1)); }
check "set-numvfs hostile address" 1 "invalid PCI address" -- \
        "$AGENT" debug set-numvfs --sysfs-root "$ROOT" ../../etc 1
check "set-numvfs bad count" 1 "invalid VF count" -- \
        "$AGENT" debug set-numvfs --sysfs-root "$ROOT" $PF many
check "set-numvfs bad timeout" 1 "invalid --timeout" -- \
        "$AGENT" debug set-numvfs --sysfs-root "$ROOT" --timeout 0 $PF 1
check "bind refuses a PF" 1 "refusing to change the driver of a PF" -- \
        "$AGENT" debug bind --sysfs-root "$ROOT" $PF vfio-pci
check "bind without IOMMU group" 1 \
        "VF $VF has no IOMMU group: enable the IOMMU \(intel_iommu=on / amd_iommu=on" -- \
        "$AGENT" debug bind --sysfs-root "$ROOT" $VF vfio-pci
check "bind to default when already there" 0 "^ok: $VF bound to igbvf$" -- \
        "$AGENT" debug bind --sysfs-root "$ROOT" $VF default
check "bind unknown target" 1 "use vfio-pci or default" -- \
        "$AGENT" debug bind --sysfs-root "$ROOT" $VF e1000

# Errors name the function and the file, relative to the --sysfs-root given (lib/host's device
# handle builds these paths only for the message).
check "set-numvfs missing PF names the path" 1 \
        "no such PCI device: $ROOT/bus/pci/devices/0000:09:00.0 does not exist" -- \
        "$AGENT" debug set-numvfs --sysfs-root "$ROOT" 0000:09:00.0 1
mkdir "$D/0000:02:00.0"
echo seven >"$D/0000:02:00.0/sriov_totalvfs"
check "set-numvfs garbled totalvfs names the file" 1 \
        "0000:02:00.0.*$ROOT/bus/pci/devices/0000:02:00.0/sriov_totalvfs does not hold a number" -- \
        "$AGENT" debug set-numvfs --sysfs-root "$ROOT" 0000:02:00.0 1
check "bind missing VF names the path" 1 \
        "no such PCI device: $ROOT/bus/pci/devices/0000:01:10.6 does not exist" -- \
        "$AGENT" debug bind --sysfs-root "$ROOT" 0000:01:10.6 default
mkdir -p "$ROOT/kernel/iommu_groups/7"
ln -s ../../../kernel/iommu_groups/7 "$D/$VF/iommu_group"
check "bind to a driver not loaded names its directory" 1 \
        "driver vfio-pci is not loaded \($ROOT/bus/pci/drivers/vfio-pci does not exist\)" -- \
        "$AGENT" debug bind --sysfs-root "$ROOT" $VF vfio-pci
mkdir "$ROOT/bus/pci/drivers/vfio-pci"
rm "$D/$VF/driver_override"
mkdir "$D/$VF/driver_override"
check "bind write failure names the file" 1 \
        "cannot write 'vfio-pci' to $ROOT/bus/pci/devices/$VF/driver_override" -- \
        "$AGENT" debug bind --sysfs-root "$ROOT" $VF vfio-pci
[[ $(readlink "$D/$VF/driver") == ../../../bus/pci/drivers/igbvf ]] ||
        { echo "FAIL the VF was unbound after a failed override write"; failures=$((failures + 1)); }

check "unknown verb" 1 "unknown debug verb" -- "$AGENT" debug frobnicate
check "hidden from --help" 0 "^Commands:" -- "$AGENT" --help
if "$AGENT" --help | grep -q debug; then
        echo "FAIL debug is listed in --help"
        failures=$((failures + 1))
fi
check "vf-set bad attribute" 1 "unknown attribute 'speed'" -- "$AGENT" debug vf-set lo 0 speed 10
check "vf-set VLAN 4095 (reserved)" 1 "invalid VLAN '4095'" -- "$AGENT" debug vf-set lo 0 vlan 4095
check "vf-set bad trust" 1 "trust must be on or off" -- "$AGENT" debug vf-set lo 0 trust yes
check "devlink without devlink device" 0 "eswitch-mode: (not supported|legacy|switchdev)" -- \
        "$AGENT" debug devlink 0000:fe:1f.7

if [[ $(id -u) -eq 0 ]] && unshare -n true 2>/dev/null; then
        check "set-mtu in a netns" 0 "^ok: lo mtu 9000$" -- unshare -n "$AGENT" debug set-mtu lo 9000
        check "link-up in a netns" 0 "^ok: lo up$" -- unshare -n "$AGENT" debug link-up lo
        check "set-mtu missing interface" 1 "no network interface named nosuch0" -- \
                unshare -n "$AGENT" debug set-mtu nosuch0 1500
        check "vf-set only not-supported exits 0" 0 "link-state: not supported" -- \
                unshare -n "$AGENT" debug vf-set lo 0 mac 02:00:00:00:00:01 link-state auto
        check "vf-list of a device without VFs" 0 "^ok: lo has 0 VFs$" -- \
                unshare -n "$AGENT" debug vf-list lo
else
        echo "skip kernel-facing verbs: needs root and unshare(CLONE_NEWNET)"
fi

[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
echo "all passed"
