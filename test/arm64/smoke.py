#!/usr/bin/env python3
"""Smoke test of the arm64 programs of the image, run under qemu-aarch64.

What a user of an arm64 node would check first: the programs are arm64 ELF files (and name the
loader of the arm64 toolchain); `sriov-agent version` prints the version; `discover` on a
generated Grace server tree lists its ConnectX PFs; the CNI plugin answers VERSION, as `sriov`
and as `ib-sriov`; and the plugin copy the image ships (sriov-bundled, whose loader and
libraries are those of /opt/cni/bin/.sriov-agent) runs with nothing but that directory: its
loader and the libraries it loads are linked into an otherwise empty root, the way the
DaemonSet's install-cni puts them on a node, so a library the bundle lacks fails the test.

Usage: smoke.py SRCDIR VERSION QEMU --build BUILDDIR SYSROOT
       smoke.py SRCDIR VERSION QEMU --rootfs ROOTFS
--build: the build's programs (those scripts/build-image puts in the image), with the sysroot's
libraries; --rootfs: an unpacked arm64 image, the programs and libraries it holds, and its
busybox shell (the liveness probe's) too.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

SRC, VERSION, QEMU, MODE = sys.argv[1:5]
if MODE == "--build" and len(sys.argv) == 7:
    BUILD, SYSROOT = sys.argv[5:7]
    agent, plugin = os.path.join(BUILD, "sriov-agent"), os.path.join(BUILD, "sriov")
    bundled = os.path.join(BUILD, "sriov-bundled")
    plugin_root = SYSROOT  # the plain plugin takes the sysroot's libraries
elif MODE == "--rootfs" and len(sys.argv) == 6:
    SYSROOT = sys.argv[5]  # the image's root is the emulator's prefix
    agent = os.path.join(SYSROOT, "usr/sbin/sriov-agent")
    plugin = bundled = os.path.join(SYSROOT, "opt/cni/bin/sriov")
    plugin_root = SYSROOT
    # a container runtime resolves the image's absolute links (the loader's
    # /usr/lib/ld-linux-aarch64.so.1 -> /usr/lib/aarch64-linux-gnu/...) inside its root;
    # qemu-aarch64 -L resolves them on this machine: make them relative in this unpacked copy
    for d, _, files in os.walk(SYSROOT):
        for f in files:
            link = os.path.join(d, f)
            target = os.readlink(link) if os.path.islink(link) else ""
            if target.startswith("/"):
                os.unlink(link)
                os.symlink(os.path.relpath(SYSROOT + target, d), link)
else:
    sys.exit(__doc__)
GEN = os.path.join(SRC, "test/sysfs-gen/gen-sysfs.py")
BUNDLE = "/opt/cni/bin/.sriov-agent"
EM_AARCH64 = 183
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(prefix, argv, env=None, argv0=None, stdin=""):
    cmd = [QEMU, "-L", prefix] + (["-0", argv0] if argv0 else []) + argv
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, input=stdin,
                          env=dict(os.environ, **(env or {})))


def elf_info(path):
    """(e_machine, PT_INTERP) of a 64-bit little-endian ELF file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None, None
    machine = struct.unpack_from("<H", data, 18)[0]
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    interp = None
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data,
                                                                 phoff + i * phentsize)
        if p_type == 3:  # PT_INTERP
            interp = data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()
    return machine, interp


for prog in dict.fromkeys((agent, plugin, bundled)):
    machine, interp = elf_info(prog)
    check(machine == EM_AARCH64, "%s is an aarch64 program (e_machine %s)" % (prog, machine))
    want_dir = BUNDLE if prog == bundled else "/lib"
    check(interp is not None and os.path.dirname(interp) == want_dir and
          os.path.basename(interp).startswith("ld-linux-aarch64"),
          "%s: loader %s, want %s/ld-linux-aarch64.so.N" % (prog, interp, want_dir))

r = run(SYSROOT, [agent, "version"])
check(r.returncode == 0 and r.stdout.strip() == "sriov-agent " + VERSION,
      "sriov-agent version: %r (exit %d), want 'sriov-agent %s'" %
      (r.stdout.strip(), r.returncode, VERSION))

with tempfile.TemporaryDirectory() as tmp:
    root = os.path.join(tmp, "sys")
    gen = subprocess.run([sys.executable, GEN, "--out", root, "--profile", "grace",
                          "--manifest"], capture_output=True, text=True, check=True)
    want = sorted(p["pciAddress"] for p in json.loads(gen.stdout)["pfs"] if p["ifname"])
    r = run(SYSROOT, [agent, "discover", "--sysfs-root", root, "-o", "json"])
    got = []
    if r.returncode == 0:
        got = sorted(i["pciAddress"] for i in json.loads(r.stdout)["interfaces"])
    check(got == want, "discover on the grace tree: %s (exit %d, %s), want %s" %
          (got, r.returncode, r.stderr.strip(), want))

    def cni_version(prefix, prog, argv0=None):
        r = run(prefix, [prog], env={"CNI_COMMAND": "VERSION"}, argv0=argv0, stdin="{}")
        try:
            return r.returncode, json.loads(r.stdout), r.stderr
        except json.JSONDecodeError:
            return r.returncode, None, r.stderr + r.stdout

    for name in ("sriov", "ib-sriov"):
        rc, out, err = cni_version(plugin_root, plugin,
                                   argv0=os.path.join(os.path.dirname(plugin), name))
        check(rc == 0 and out and "1.1.0" in out.get("supportedVersions", []),
              "%s VERSION: exit %d, %s %s" % (name, rc, out, err.strip()))

    # the bundle: an empty root holding only BUNDLE, filled with links to the loader and each
    # library the loader lists for the bundled copy (as scripts/build-image does), or with the
    # files the image's BUNDLE links to (as the DaemonSet's install-cni copies them)
    loader = os.path.join(SYSROOT, elf_info(agent)[1].lstrip("/"))
    node = os.path.join(tmp, "node")
    bundle_dir = node + BUNDLE
    os.makedirs(bundle_dir)
    listed = ""
    if MODE == "--build":
        r = run(SYSROOT, [loader, "--list", bundled])
        check(r.returncode == 0, "%s --list sriov-bundled: %s" % (loader, r.stderr.strip()))
        listed = r.stdout
        os.symlink(os.path.realpath(loader), os.path.join(bundle_dir, os.path.basename(
            elf_info(bundled)[1])))
    libs = 0
    image_bundle = os.path.join(SYSROOT, BUNDLE.lstrip("/"))
    for name in sorted(os.listdir(image_bundle)) if MODE == "--rootfs" else []:
        link = os.path.join(image_bundle, name)
        # the image's links are relative to their place in the image
        os.symlink(os.path.realpath(link), os.path.join(bundle_dir, name))
        libs += 1
    for line in listed.splitlines():
        if "=> /" in line:
            path = line.split("=> ", 1)[1].split(" (", 1)[0]
            if os.path.basename(path) == os.path.basename(loader):
                continue  # the loader itself (linked above)
            if not path.startswith(SYSROOT + "/"):
                path = os.path.join(SYSROOT, path.lstrip("/"))
            os.symlink(os.path.realpath(path), os.path.join(bundle_dir, os.path.basename(path)))
            libs += 1
    check(libs >= 3, "the loader lists the bundled plugin's libraries (%d)" % libs)
    rc, out, err = cni_version(node, bundled)
    check(rc == 0 and out and "1.1.0" in out.get("supportedVersions", []),
          "sriov-bundled VERSION with only %s: exit %d, %s %s" % (BUNDLE, rc, out, err.strip()))

    if MODE == "--rootfs":
        # the liveness probe's shell and the init container's tools: busybox, the image's
        r = run(SYSROOT, [os.path.join(SYSROOT, "usr/bin/busybox"), "sh", "-c",
                          "echo probe; ls /opt/cni/bin"])
        check(r.returncode == 0 and r.stdout.split()[:1] == ["probe"] and "sriov" in r.stdout,
              "the image's busybox sh: exit %d, %r %s" % (r.returncode, r.stdout,
                                                          r.stderr.strip()))

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("arm64 smoke: version, discover, CNI VERSION (plain and bundled) all fine")
