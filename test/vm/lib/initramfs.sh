# Builds the guest's initramfs as two concatenated newc cpio archives (the kernel unpacks
# them in order, later files replacing earlier ones):
#   base.cpio  cached: busybox, iproute2, jq, rdma-core tools and providers, kernel modules;
#   systemd.cpio  cached, only in the systemd profile's initrd (between the two others):
#              systemd as PID 1, journald, systemctl, journalctl, the units a minimal boot needs;
#   run.cpio   every run: /init, the guest helpers, the scenarios, the sriov-agent binary
#              under test with the host libraries it links, and any --add files; with
#              VM_INSTALL_BUILD set, also `cmake --install` of that build (prefix /usr).
# All files go under /usr (merged-/usr layout: /bin, /sbin, /lib, /lib64 are links), so a
# later archive never replaces one of those links with a directory.
# Sourced by test/vm/run (needs: die, note, VM_CACHE, VM_ARCH_TRIPLET, tree_loader).

# write_cpio DIR OUT: archives DIR's contents, owned by root.
write_cpio() {
    (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) >"$2.tmp" ||
        die "cpio of $1 failed"
    mv "$2.tmp" "$2"
}

# copy_with_libs STAGING LOADER LIBPATH DEST_DIR FILE...: copies each FILE into
# STAGING/DEST_DIR and every shared library it needs (as LOADER resolves them) into
# STAGING/usr/lib/<triplet>/ under its soname.
copy_with_libs() {
    local staging=$1 loader=$2 libpath=$3 destdir=$4 f soname path
    shift 4
    mkdir -p "$staging/$destdir" "$staging/usr/lib/$VM_ARCH_TRIPLET"
    for f in "$@"; do
        [ -f "$f" ] || die "missing file for the guest: $f"
        [ "$destdir" = - ] || cp -L "$f" "$staging/$destdir/"
        local listing
        if ! listing=$("$loader" ${libpath:+--library-path "$libpath"} --list "$f" 2>&1); then
            # not a dynamic executable/library (static binary, script): nothing to add
            grep -q -e 'not a dynamic executable' -e 'statically linked' <<<"$listing" && continue
            die "cannot list the libraries of $f: $listing"
        fi
        while read -r soname _ path _; do
            case $soname in */*) continue ;; esac # the loader itself: copied by the caller
            case $path in
                /*) cp -L "$path" "$staging/usr/lib/$VM_ARCH_TRIPLET/$soname" ;;
                "") ;;
                *) die "library $soname of $f not found ($path)" ;;
            esac
        done < <(grep '=>' <<<"$listing")
    done
}

build_base_cpio() {
    local out=$VM_CACHE/base.cpio key
    key="$(cat "$VM_CACHE/kernel/stamp" "$VM_CACHE/userland/stamp") $(sha1sum <"$VM_LIB_DIR/initramfs.sh")"
    if [ -e "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
        return 0
    fi
    note "building the base initramfs"
    local root=$VM_CACHE/userland/root stage=$VM_CACHE/base.staging loader libpath
    loader=$(tree_loader "$root") || die "no dynamic loader in the userland tree"
    libpath="$root/usr/lib/$VM_ARCH_TRIPLET:$root/lib/$VM_ARCH_TRIPLET"
    rm -rf "$stage"
    mkdir -p "$stage"/{usr/bin,usr/sbin,usr/lib64,usr/lib/"$VM_ARCH_TRIPLET",etc,dev,proc,sys,tmp,run,root,vm}
    ln -s usr/bin "$stage/bin"
    ln -s usr/sbin "$stage/sbin"
    ln -s usr/lib "$stage/lib"
    ln -s usr/lib64 "$stage/lib64"
    cp -L "$loader" "$stage/usr/lib/$VM_ARCH_TRIPLET/ld-linux-x86-64.so.2"
    ln -s ../lib/$VM_ARCH_TRIPLET/ld-linux-x86-64.so.2 "$stage/usr/lib64/ld-linux-x86-64.so.2"

    # busybox and its applets (it is static, so it can list them here)
    local bb=$root/bin/busybox applet
    [ -x "$bb" ] || die "busybox-static did not unpack $bb"
    cp "$bb" "$stage/usr/bin/busybox"
    for applet in $("$bb" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$stage/usr/bin/$applet"
    done

    # iproute2 (ip renamed: busybox ash would run its own ip applet first), jq, rdma-core
    local ip rdma devlink
    ip=$(find "$root" -path '*bin/ip' -type f | head -1)
    rdma=$(find "$root" -path '*bin/rdma' -type f | head -1)
    devlink=$(find "$root" -path '*bin/devlink' -type f | head -1)
    copy_with_libs "$stage" "$loader" "$libpath" usr/sbin "$rdma" "$devlink"
    copy_with_libs "$stage" "$loader" "$libpath" - "$ip"
    cp "$ip" "$stage/usr/sbin/iproute-ip"
    copy_with_libs "$stage" "$loader" "$libpath" usr/bin "$root/usr/bin/jq" \
        "$root/usr/bin/ibv_devinfo" "$root/usr/bin/ibv_rc_pingpong"
    # Soft-RoCE provider of libibverbs (loaded through /etc/libibverbs.d/rxe.driver)
    local provider
    provider=$(find "$root/usr/lib/$VM_ARCH_TRIPLET/libibverbs" -name 'librxe-rdmav*.so' | head -1)
    [ -n "$provider" ] || die "ibverbs-providers has no librxe"
    copy_with_libs "$stage" "$loader" "$libpath" "usr/lib/$VM_ARCH_TRIPLET/libibverbs" "$provider"
    mkdir -p "$stage/etc/libibverbs.d"
    cp "$root/etc/libibverbs.d/rxe.driver" "$stage/etc/libibverbs.d/"

    # kernel modules, decompressed, with the order to load them in
    mkdir -p "$stage/usr/lib/modules/vm"
    cp "$VM_CACHE"/kernel/modules/* "$stage/usr/lib/modules/vm/"

    echo "root:x:0:0:root:/root:/bin/sh" >"$stage/etc/passwd"
    echo "root:x:0:" >"$stage/etc/group"
    write_cpio "$stage" "$out"
    rm -rf "$stage"
    echo "$key" >"$out.key"
}

# build_run_cpio OUT AGENT SCENARIO_FILES... (VM_ADD_FILES: "src:dest" entries)
build_run_cpio() {
    local out=$1 agent=$2
    shift 2
    local stage=$out.staging f src dest
    rm -rf "$stage"
    mkdir -p "$stage/vm/scenarios" "$stage/usr/bin"
    cp "$VM_GUEST_DIR/init" "$stage/init"
    chmod 0755 "$stage/init"
    cp "$VM_GUEST_DIR/lib.sh" "$stage/vm/lib.sh"
    cp "$VM_GUEST_DIR/run-scenarios" "$stage/vm/run-scenarios"
    chmod 0755 "$stage/vm/run-scenarios"
    if [ -n "${VM_INSTALL_BUILD:-}" ]; then
        # the product as a host gets it: binary, unit (ExecStart rewritten), manifests
        DESTDIR=$stage cmake --install "$VM_INSTALL_BUILD" --prefix /usr >"$out.install.log" 2>&1 ||
            die "cmake --install $VM_INSTALL_BUILD failed:$(echo; tail -5 "$out.install.log")"
        rm -f "$out.install.log"
        copy_with_libs "$stage" "$(host_loader)" "" - "$stage/usr/sbin/sriov-agent"
        mkdir -p "$stage/etc/systemd/system"
        cp "$VM_GUEST_DIR"/systemd/* "$stage/etc/systemd/system/"
    fi
    for f in "$@"; do
        cp "$f" "$stage/vm/scenarios/"
    done
    # The agent runs with this host's libraries (the ones it was linked against).
    copy_with_libs "$stage" "$(host_loader)" "" usr/bin "$agent"
    # ... and libcurl and libmicrohttpd, which it dlopen()s in cluster mode
    # (lib/kube/curl-loader.c) and for the metrics endpoint (lib/httpd/mhd-loader.c), so no
    # --list of the agent names them.
    local lib
    for lib in libcurl.so.4 libmicrohttpd.so.12; do
        if [ -e "/usr/lib/$VM_ARCH_TRIPLET/$lib" ]; then
            copy_with_libs "$stage" "$(host_loader)" "" - "/usr/lib/$VM_ARCH_TRIPLET/$lib"
            cp -L "/usr/lib/$VM_ARCH_TRIPLET/$lib" "$stage/usr/lib/$VM_ARCH_TRIPLET/$lib"
        fi
    done
    for f in "${VM_ADD_FILES[@]}"; do
        src=${f%%:*}
        dest=${f#*:}
        [ "$dest" != "$f" ] || dest=/vm/extra/$(basename "$src")
        [ -e "$src" ] || die "--add: no such file: $src"
        mkdir -p "$stage$(dirname "$dest")"
        cp -L "$src" "$stage$dest"
        # a dynamic executable brings its host libraries along (a static one, like kubectl,
        # has no program interpreter and no libraries)
        if [ -f "$src" ] && [ "$(head -c 4 "$src" | od -An -c | tr -d ' \n')" = '177ELF' ] &&
            readelf -l "$src" 2>/dev/null | grep -q 'program interpreter'; then
            copy_with_libs "$stage" "$(host_loader)" "" - "$src"
        fi
    done
    write_cpio "$stage" "$out"
    rm -rf "$stage"
}

# The units a minimal boot to sriovvm.target and a Type=notify service with default
# dependencies need (their .wants/ directories are left out: nothing else of a normal boot is
# started). Referenced units that are absent (swap, tmp.mount...) are merely not found.
VM_SYSTEMD_UNITS="sysinit.target basic.target sockets.target timers.target paths.target
slices.target local-fs.target local-fs-pre.target swap.target network.target
network-pre.target network-online.target multi-user.target shutdown.target umount.target
final.target systemd-journald.service systemd-journald.socket
systemd-journald-dev-log.socket systemd-journald-audit.socket"

build_systemd_cpio() {
    local out=$VM_CACHE/systemd.cpio key
    key="$(cat "$VM_CACHE/systemd/stamp" "$VM_CACHE/userland/stamp") $(sha1sum <"$VM_LIB_DIR/initramfs.sh")"
    if [ -e "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
        return 0
    fi
    note "building the systemd initramfs part"
    local root=$VM_CACHE/systemd/root stage=$VM_CACHE/systemd.staging loader libpath u
    loader=$(tree_loader "$root") || die "no dynamic loader in the systemd tree"
    # libsystemd-shared lives in systemd's private directory (the binaries' RUNPATH)
    libpath="$root/usr/lib/$VM_ARCH_TRIPLET/systemd:$root/lib/$VM_ARCH_TRIPLET/systemd"
    libpath+=":$root/usr/lib/$VM_ARCH_TRIPLET:$root/lib/$VM_ARCH_TRIPLET"
    rm -rf "$stage"
    mkdir -p "$stage"/usr/{bin,lib/systemd/system} "$stage"/etc/systemd/system "$stage/var/tmp" \
        "$stage/var/lib" "$stage/var/log"
    chmod 1777 "$stage/var/tmp"
    ln -s ../run "$stage/var/run" # as on any Debian host: /var/run/... paths reach /run
    local sd=$root/lib/systemd
    [ -d "$sd" ] || sd=$root/usr/lib/systemd
    copy_with_libs "$stage" "$loader" "$libpath" usr/lib/systemd "$sd/systemd" "$sd/systemd-journald"
    copy_with_libs "$stage" "$loader" "$libpath" usr/bin "$root/bin/systemctl" "$root/bin/journalctl"
    for u in $VM_SYSTEMD_UNITS; do
        [ -e "$sd/system/$u" ] || die "systemd has no unit $u"
        cp "$sd/system/$u" "$stage/usr/lib/systemd/system/"
    done
    write_cpio "$stage" "$out"
    rm -rf "$stage"
    echo "$key" >"$out.key"
}

host_loader() {
    local l
    for l in /lib64/ld-linux-x86-64.so.2 "/usr/lib/$VM_ARCH_TRIPLET/ld-linux-x86-64.so.2"; do
        [ -x "$l" ] && { echo "$l"; return 0; }
    done
    die "no host dynamic loader found"
}
