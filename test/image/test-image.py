#!/usr/bin/env python3
"""The OCI image built by scripts/build-image, checked as a cluster operator would.

Usage: test-image.py SRCDIR BUILDDIR

Builds the image from BUILDDIR (a temp archive), then checks:
  - the archive is an OCI image with one layer and no base image (no distribution files, only
    the expected top-level directories), reproducible (a second build has the same digest);
  - labels: version = `sriov-agent version`, revision = git HEAD, source and licenses set;
    ENTRYPOINT /usr/sbin/sriov-agent; the default name is the DaemonSet's image;
  - every ELF file's libraries resolve inside the image through the image's own loader (the
    agent, the mlx5 libibverbs provider, the CNI plugin when built);
  - inside the image (podman --runtime runc where it works, else chroot into the unpacked
    rootfs, said in the output): `sriov-agent version`, `--help`, `discover -o json` of a
    generated sysfs tree with vendor names from the image's pci.ids.gz, the DaemonSet's
    liveness probe (alive with no state; not alive once it owns a PF without a socket);
  - the DaemonSet's agent container under podman with the DaemonSet's securityContext (only
    CAP_NET_ADMIN, read-only root, no new privileges, uid 0) and mounts (temp dirs; /dev
    read-only): applies the seed policy (standalone, --dry-run, generated sysfs) with no error
    and stops with status 0 on SIGTERM (skipped, and said, where podman does not run);
  - the CNI plugin (only when BUILDDIR/sriov was built; otherwise said and skipped):
    `CNI_COMMAND=VERSION /opt/cni/bin/sriov` answers inside the image, and the DaemonSet's
    install-cni init container command installs it into a host dir;
  - the uncompressed size is printed (bench/run prints it beside upstream's images).
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

import yaml

SRC, BUILD = sys.argv[1:3]
AGENT = os.path.join(BUILD, "sriov-agent")
CNI = os.path.join(BUILD, "sriov")
SCRIPT = os.path.join(SRC, "scripts", "build-image")
DAEMONSET = os.path.join(SRC, "manifests", "30-daemonset.yaml")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)
    return cond


def run(argv, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(argv, **kw)


def build(out):
    r = run([SCRIPT, "--build-dir", BUILD, "--output", out], timeout=300)
    print(r.stdout + r.stderr)
    if not check(r.returncode == 0, f"scripts/build-image exits 0 (got {r.returncode})"):
        sys.exit(1)
    return dict(re.findall(r"^(\w+):\s+(\S+)", r.stdout, re.M)), r.stdout


def read_oci(archive):
    """index, manifest, config and the layer's members of an oci-archive."""
    with tarfile.open(archive) as t:
        def blob(digest):
            algo, hexd = digest.split(":")
            data = t.extractfile(f"blobs/{algo}/{hexd}").read()
            check(hashlib.sha256(data).hexdigest() == hexd, f"blob {digest[:19]} matches its digest")
            return data
        layout = json.loads(t.extractfile("oci-layout").read())
        index = json.loads(t.extractfile("index.json").read())
        manifest = json.loads(blob(index["manifests"][0]["digest"]))
        config = json.loads(blob(manifest["config"]["digest"]))
        layers = []
        for layer in manifest["layers"]:
            with tarfile.open(fileobj=__import__("io").BytesIO(blob(layer["digest"]))) as lt:
                layers.append([(m.name.lstrip("./"), m) for m in lt.getmembers()])
        return layout, index, manifest, config, layers


cleanups = []


def daemonset_pod_under_podman(pod, podman, image, tmp, sysroot):
    """The agent container as the kubelet would run it: the DaemonSet's securityContext
    translated to podman (capabilities, read-only root without podman's extra tmpfs, no new
    privileges, uid 0, host network, default seccomp), its volumes as temp dirs (/dev the
    host's, read-only), its args with $(VAR) expanded; only standalone policies, a generated
    sysfs and --dry-run added so nothing of this machine changes. It must apply the seed
    policy with no error and stop cleanly on SIGTERM: anything the agent needs beyond what
    the pod grants (a write outside its mounts, a capability) shows here."""
    import signal
    import time
    c = next(c for c in pod["containers"] if c["name"] == "sriov-agent")
    sc = c["securityContext"]
    flags = ["--network", "host" if pod.get("hostNetwork") else "none",
             "--user", str(sc["runAsUser"]), "--ulimit", "nofile=1024:1024",
             "--ulimit", "nproc=1024:1024", "--sig-proxy=true"]
    if sc.get("readOnlyRootFilesystem"):
        flags += ["--read-only", "--read-only-tmpfs=false"]  # the kubelet adds no tmpfs
    if sc.get("allowPrivilegeEscalation") is False:
        flags += ["--security-opt", "no-new-privileges"]
    if sc.get("privileged"):
        flags += ["--privileged"]
    for cap in sc["capabilities"].get("drop", []):
        flags += ["--cap-drop", cap.lower()]
    for cap in sc["capabilities"].get("add", []):
        flags += ["--cap-add", cap]
    host_paths = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    pod_dir = os.path.join(tmp, "pod")
    for m in c["volumeMounts"]:
        if m["name"] not in host_paths:
            continue  # the optional RDMA ConfigMap: absent
        if host_paths[m["name"]] == "/dev":
            src = "/dev"
        else:
            src = os.path.join(pod_dir, m["name"])
            os.makedirs(src, exist_ok=True)
        flags += ["-v", f"{src}:{m['mountPath']}:{'ro' if m.get('readOnly') else 'rw'}"]
    policies = os.path.join(tmp, "policies")
    os.makedirs(policies)
    shutil.copy(os.path.join(SRC, "manifests", "examples", "highnet-sriov-policy.yaml"), policies)
    flags += ["-v", f"{policies}:/policies:ro", "-v", f"{sysroot}:/gen:ro"]
    env = {"NODE_NAME": "node1", "POD_NAMESPACE": "sriov-network-operator"}
    env.update({e["name"]: e["value"] for e in c["env"] if "value" in e})
    for k, v in env.items():
        flags += ["--env", f"{k}={v}"]
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in c["args"]]
    args += ["--policy-dir=/policies", "--node-labels=highnet-node=true", "--sysfs-root=/gen",
             "--dry-run"]
    argv = [*podman, "run", "--rm", *flags, "--entrypoint", c["command"][0], image, *args]
    print("pod:", " ".join(argv))
    proc = subprocess.Popen(argv, stderr=subprocess.STDOUT, stdout=subprocess.PIPE, text=True)
    seen, applied, deadline = [], False, time.monotonic() + 60
    import selectors
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline and not applied and proc.poll() is None:
        if sel.select(timeout=1):
            line = proc.stdout.readline()
            seen.append(line.rstrip())
            applied = "VFs 0-7 as sriov_highnet" in line
    running = proc.poll() is None
    time.sleep(1)  # past the first reconcile's end
    proc.send_signal(signal.SIGTERM)
    try:
        seen += proc.communicate(timeout=30)[0].splitlines()
    except subprocess.TimeoutExpired:
        proc.kill()
        seen += proc.communicate()[0].splitlines()
    print("pod output:\n  " + "\n  ".join(seen))
    check(running and applied, "the DaemonSet's container (its securityContext and mounts) "
                               "applies the seed policy")
    bad = [l for l in seen if "[err]" in l or "[warning]" in l or "ead-only file system" in l
           or "ermission denied" in l or "Operation not permitted" in l]
    check(not bad, f"no error, warning or denied access inside the pod: {bad}")
    check(proc.returncode == 0, f"SIGTERM ends it with status 0 (got {proc.returncode})")


def main():
    tmp = tempfile.mkdtemp(prefix="sriov-image-test-", dir=BUILD)
    try:
        test(tmp)
    finally:
        for c in cleanups:
            c()
        shutil.rmtree(tmp, ignore_errors=True)


def test(tmp):
    archive = os.path.join(tmp, "image.oci.tar")
    info, out = build(archive)
    version = run([AGENT, "version"]).stdout.split()[1]
    name = info.get("image", "")
    ds = yaml.safe_load(open(DAEMONSET))
    pod = ds["spec"]["template"]["spec"]
    images = {c["image"] for c in pod["containers"] + pod.get("initContainers", [])}
    check(name == f"localhost/sriov-agent:{version}", f"default name {name}")
    check(images == {name}, f"the DaemonSet's containers run the image the script builds: "
                            f"{sorted(images)}")
    with_cni = os.access(CNI, os.X_OK)
    print(f"CNI plugin {CNI}: {'built, checked in the image' if with_cni else 'not built: plugin checks skipped'}")

    # -- the archive
    layout, index, manifest, config, layers = read_oci(archive)
    check(layout.get("imageLayoutVersion") == "1.0.0", "an OCI image layout")
    # the full name, as podman/skopeo write it (podman load then tags the image with it)
    check(index["manifests"][0]["annotations"].get("org.opencontainers.image.ref.name") ==
          name, f"the archive names the image {name}")
    check(manifest["mediaType"] == "application/vnd.oci.image.manifest.v1+json" and
          config["os"] == "linux" and config["architecture"] == "amd64", "linux/amd64 OCI manifest")
    check(len(layers) == 1, f"one layer, FROM scratch (got {len(layers)})")
    check("history" not in config or not any("FROM" in json.dumps(h) for h in config["history"]),
          "no base image in the history")
    check(manifest["layers"][0]["mediaType"].endswith("tar+gzip"), "the layer is gzipped")
    members = dict(layers[0])
    tops = {n.split("/")[0] for n in members if n}
    check(tops <= {"usr", "etc", "tmp", "opt", "bin", "sbin", "lib", "lib64"},
          f"only the image's own top-level directories: {sorted(tops)}")
    check(not any(n.startswith(("var/lib/dpkg", "etc/apt", "usr/share/man", "usr/include"))
                  for n in members), "no distribution files (dpkg, apt, man, headers)")
    for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"), ("lib64", "usr/lib64")):
        m = members.get(link)
        check(m is not None and m.issym() and m.linkname == target, f"/{link} -> {target}")
    want = ["usr/sbin/sriov-agent", "usr/bin/busybox", "usr/bin/sh", "usr/share/misc/pci.ids.gz",
            "etc/libibverbs.d/mlx5.driver",
            "usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so",
            "usr/share/doc/libc6/copyright", "usr/share/doc/libcurl4/copyright"]
    if with_cni:
        want.append("opt/cni/bin/sriov")
    for f in want:
        check(f in members, f"/{f} is in the image")
    if not with_cni:
        check("opt/cni/bin/sriov" not in members, "no plugin in the image without a built one")
    cfg = config["config"]
    labels = cfg.get("Labels", {})
    head = run(["git", "-C", SRC, "rev-parse", "HEAD"]).stdout.strip() or "unknown"
    check(labels.get("org.opencontainers.image.version") == version,
          f"label version = sriov-agent version ({labels.get('org.opencontainers.image.version')})")
    check(labels.get("org.opencontainers.image.revision") == head, "label revision = git HEAD")
    check(bool(labels.get("org.opencontainers.image.source")) and
          bool(labels.get("org.opencontainers.image.licenses")), f"source and licenses labels: {labels}")
    check(cfg.get("Entrypoint") == ["/usr/sbin/sriov-agent"], f"ENTRYPOINT {cfg.get('Entrypoint')}")
    r = run(["skopeo", "inspect", f"oci-archive:{archive}"])
    check(r.returncode == 0 and json.loads(r.stdout)["Digest"] == info.get("digest"),
          "skopeo reads the archive; its digest is the one printed")

    # -- reproducible
    info2, _ = build(os.path.join(tmp, "again.oci.tar"))
    check(info2.get("digest") == info.get("digest"), "a second build has the same digest")

    # -- unpack (umoci, as a user inspecting the image would)
    layout_dir, bundle = os.path.join(tmp, "layout"), os.path.join(tmp, "bundle")
    os.makedirs(layout_dir)
    with tarfile.open(archive) as t:
        t.extractall(layout_dir)
    r = run(["umoci", "unpack", "--image", f"{layout_dir}:{name}", bundle])
    check(r.returncode == 0, f"umoci unpack ({r.stderr.strip()[:300]})")
    rootfs = os.path.join(bundle, "rootfs")
    size = sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(rootfs) for f in fs)
    print(f"image size: {size / 1048576:.1f} MiB uncompressed, "
          f"{os.path.getsize(archive) / 1048576:.1f} MiB archive")

    elves = []
    for d, _, fs in os.walk(rootfs):
        for f in fs:
            p = os.path.join(d, f)
            if not os.path.islink(p):
                with open(p, "rb") as fh:
                    if fh.read(4) == b"\x7fELF":
                        elves.append("/" + os.path.relpath(p, rootfs))
    check(len(elves) >= 20, f"{len(elves)} ELF files")

    # -- inside the image
    gen = os.path.join(SRC, "test", "sysfs-gen", "gen-sysfs.py")
    sysroot = os.path.join(tmp, "sysfs")
    run([sys.executable, gen, "--out", sysroot, "--profile", "seed"], check=True)
    state = os.path.join(tmp, "state")
    plugins = os.path.join(tmp, "device-plugins")
    hostcni = os.path.join(tmp, "host-cni-bin")
    for d in (state, plugins, hostcni):
        os.makedirs(d)
    mounts = {sysroot: "/gen", state: "/var/lib/sriov-agent",
              plugins: "/var/lib/kubelet/device-plugins", hostcni: "/host/opt/cni/bin"}
    # podman refuses a run root longer than 50 characters: a short dir of its own
    storage = tempfile.mkdtemp(prefix="sriov-img-")
    cleanups.append(lambda: shutil.rmtree(storage, ignore_errors=True))
    podman = ["podman", "--root", f"{storage}/root", "--runroot", f"{storage}/run",
              "--storage-driver", "vfs", "--runtime", "runc"]

    def podman_run(argv, env):
        args = [*podman, "run", "--rm", "--network", "none", "--read-only",
                "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                "--entrypoint", argv[0]]
        for k, v in env.items():
            args += ["--env", f"{k}={v}"]
        for h, c in mounts.items():
            args += ["-v", f"{h}:{c}"]
        return run([*args, name, *argv[1:]])

    def chroot_run(argv, env):
        # the unpacked rootfs with the same directories copied in at the same places
        for h, c in mounts.items():
            dst = rootfs + c
            if os.path.islink(dst) or not os.path.isdir(dst):
                os.makedirs(dst, exist_ok=True)
            subprocess.run(["mount", "--bind", h, dst], check=True)
        try:
            return run(["chroot", rootfs, *argv], env=dict(env, PATH="/usr/sbin:/usr/bin"))
        finally:
            for c in mounts.values():
                subprocess.run(["umount", rootfs + c])

    inside = podman_run
    r = run([*podman, "load", "--input", archive])
    if r.returncode == 0:
        r = podman_run(["/usr/sbin/sriov-agent", "version"], {})
    if r.returncode != 0:
        print(f"podman does not run containers here ({r.stderr.strip()[-300:]}); "
              "using chroot into the unpacked rootfs")
        if os.geteuid() != 0:
            check(False, "neither podman nor chroot (needs root) can run the image here")
            return
        inside = chroot_run
    else:
        print("running inside the image with podman --runtime runc")

    r = inside(["/usr/sbin/sriov-agent", "version"], {})
    check(r.returncode == 0 and r.stdout.strip() == f"sriov-agent {version}",
          f"sriov-agent version inside: {r.stdout.strip()} {r.stderr.strip()[-200:]}")
    r = inside(["/usr/sbin/sriov-agent", "--help"], {})
    check(r.returncode == 0 and "Commands:" in r.stdout, "sriov-agent --help inside")
    r = inside(["/usr/sbin/sriov-agent", "run", "--help"], {})
    check(r.returncode == 0 and "--node-name" in r.stdout, "sriov-agent run --help inside")
    # static programs (busybox) have no loader to ask
    dynamic = [e for e in elves
               if "INTERP" in run(["readelf", "-l", rootfs + e]).stdout or
               "NEEDED" in run(["readelf", "-d", rootfs + e]).stdout]
    static = sorted(set(elves) - set(dynamic))
    check(static == ["/usr/bin/busybox", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"],
          f"the only self-contained ELF files are busybox and the loader: {static}")
    script = ("for e in " + " ".join(dynamic) + "; do out=$(/lib64/ld-linux-x86-64.so.2 --list $e)"
              " || echo \"UNRESOLVED $e\"; echo \"$out\" | grep 'not found' | sed \"s|^|$e: |\"; done")
    r = inside(["/bin/sh", "-c", script], {})
    bad = [l for l in r.stdout.splitlines() if l.strip()]
    check(r.returncode == 0 and not bad,
          f"the libraries of every dynamic ELF ({len(dynamic)}) resolve inside the image through "
          f"its own loader: {bad[:10]} {r.stderr.strip()[-200:]}")
    r = inside(["/usr/sbin/sriov-agent", "discover", "--sysfs-root", "/gen"], {})
    check(r.returncode == 0 and "Mellanox Technologies MT28908 Family [ConnectX-6]" in r.stdout
          and "Intel Corporation Ethernet Controller E810-XXV" in r.stdout,
          f"discover inside names the seed's NICs from the image's pci.ids.gz: "
          f"{r.stdout[:600]} {r.stderr.strip()[-300:]}")

    # The DaemonSet's liveness probe, with the DaemonSet's environment.
    agent_c = pod["containers"][0]
    probe = agent_c["livenessProbe"]["exec"]["command"]
    env = {e["name"]: e["value"] for e in agent_c["env"] if "value" in e}
    r = inside(probe, env)
    check(r.returncode == 0, f"liveness probe inside, no PF owned: alive ({r.stdout}{r.stderr})")
    with open(os.path.join(state, "0000:3b:00.0.json"), "w") as f:
        f.write("{}")
    r = inside(probe, env)
    check(r.returncode == 1 and "serves no" in r.stdout,
          f"liveness probe inside, owns a PF, no socket: not alive ({r.stdout.strip()})")
    os.unlink(os.path.join(state, "0000:3b:00.0.json"))

    if inside is podman_run:
        daemonset_pod_under_podman(pod, podman, name, tmp, sysroot)
    else:
        print("skipped: the DaemonSet's pod under podman (podman does not run here)")

    if not with_cni:
        print("skipped: CNI_COMMAND=VERSION and the install-cni init container "
              f"(no {CNI} in this build)")
        return
    r = inside(["/opt/cni/bin/sriov"], {"CNI_COMMAND": "VERSION"})
    try:
        versions = json.loads(r.stdout).get("supportedVersions", [])
    except ValueError:
        versions = []
    check(r.returncode == 0 and "1.0.0" in versions,
          f"CNI_COMMAND=VERSION sriov inside: {r.stdout.strip()} {r.stderr.strip()[-200:]}")
    init = next(c for c in pod["initContainers"] if c["name"] == "install-cni")
    r = inside(init["command"], {})
    installed = os.path.join(hostcni, "sriov")
    check(r.returncode == 0 and os.access(installed, os.X_OK) and
          os.listdir(hostcni) == ["sriov"],
          f"install-cni puts an executable sriov into the host dir, nothing else: "
          f"{os.listdir(hostcni)} {r.stderr.strip()[-200:]}")
    with open(installed, "rb") as a, open(rootfs + "/opt/cni/bin/sriov", "rb") as b:
        check(a.read() == b.read(), "the installed plugin is the image's")


main()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
