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
    install-cni init container command installs it into a host dir with its bundle
    .sriov-agent/ (the image's loader and every library it needs, as files); there its
    interpreter and RPATH are the bundle, and sriov and ib-sriov answer VERSION in a chroot
    holding nothing but that dir as /opt/cni/bin (no host library, loader or ld.so.cache);
  - `--index` writes an OCI image index naming the image as linux/amd64 (its digest
    unchanged) and refuses a second image of one architecture;
  - the uncompressed size is at most 15 MB (issue 19's target; bench/run prints it beside
    upstream's images);
  - libcurl.so.4 is the HTTP/HTTPS-only build of scripts/image-deps: it needs only OpenSSL,
    nghttp2, zlib and libc, defines Debian's CURL_OPENSSL_4 (the agent's references), reports
    HTTP/2, SSL and zlib and no other protocol than http and https (curl_version_info()), and
    no library of Debian's libcurl4 closure (LDAP, Kerberos, SSH, RTMP, GnuTLS...) is in the
    image; the busybox is the small dynamic one with only the applets the pod runs;
  - inside the image, `sriov-agent watch` speaks HTTPS (client certificate, CA from the
    kubeconfig) to test/fake-apiserver on loopback through that libcurl and OpenSSL and
    reports the Node.
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
    # the first build of a build dir also builds libcurl and busybox (scripts/image-deps):
    # ~50 s of CPU, minutes on a loaded machine
    r = run([SCRIPT, "--build-dir", BUILD, "--output", out], timeout=600)
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


def https_watch_inside(podman, image, rootfs, tmp):
    """`sriov-agent watch` inside the image against test/fake-apiserver over HTTPS on loopback:
    the kubeconfig names the CA and a client certificate (the server requires one), so the
    TLS handshake, certificate checks and HTTP run in the image's libcurl + OpenSSL. podman
    when it runs here (host network, read-only root), else chroot into the unpacked rootfs."""
    import selectors
    import signal
    import time
    pki = os.path.join(tmp, "pki")
    os.makedirs(pki)

    def ossl(*a):
        subprocess.run(["openssl", *a], check=True, capture_output=True, cwd=pki)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
         "-days", "2", "-subj", "/CN=fake-ca")
    with open(os.path.join(pki, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for n, cn in (("server", "127.0.0.1"), ("client", "system:node:node1")):
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{n}.key", "-out", f"{n}.csr",
             "-subj", f"/CN={cn}")
        ossl("x509", "-req", "-in", f"{n}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{n}.crt", "-days", "2",
             *(["-extfile", "san.ext"] if n == "server" else []))
    fake = os.path.join(SRC, "test", "fake-apiserver", "fake_apiserver.py")
    server = subprocess.Popen([sys.executable, fake, "--port", "0", "--node", "node1",
                               "--tls-cert", os.path.join(pki, "server.crt"),
                               "--tls-key", os.path.join(pki, "server.key"),
                               "--client-ca", os.path.join(pki, "ca.crt")],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    mounted = None
    try:
        port = int(server.stdout.readline().split()[1])
        b64 = lambda f: __import__("base64").b64encode(
            open(os.path.join(pki, f), "rb").read()).decode()
        with open(os.path.join(pki, "kubeconfig"), "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:{port}
    certificate-authority-data: {b64("ca.crt")}
users:
- name: u
  user:
    client-certificate-data: {b64("client.crt")}
    client-key-data: {b64("client.key")}
contexts:
- name: c
  context: {{cluster: c, user: u}}
current-context: c
""")
        argv = ["/usr/sbin/sriov-agent", "watch", "--node-name", "node1",
                "--kubeconfig", "/kube/kubeconfig"]
        if podman:
            cmd = [*podman, "run", "--rm", "--network", "host", "--read-only",
                   "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
                   "--sig-proxy=true", "-v", f"{pki}:/kube:ro", "--entrypoint", argv[0],
                   image, *argv[1:]]
        else:
            mounted = rootfs + "/kube"
            os.makedirs(mounted, exist_ok=True)
            subprocess.run(["mount", "--bind", pki, mounted], check=True)
            cmd = ["chroot", rootfs, *argv]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        node, deadline = None, time.monotonic() + 30
        while node is None and time.monotonic() < deadline and proc.poll() is None:
            if sel.select(timeout=1):
                line = proc.stdout.readline()
                if '"kind":"Node"' in line:
                    node = json.loads(line)
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        check(node is not None and node["type"] == "ADDED" and node["name"] == "node1",
              f"sriov-agent watch inside the image reports node1 over HTTPS with a client "
              f"certificate (libcurl + OpenSSL of the image): {node} {err.strip()[-400:]}")
        check(not re.search(r"SSL|certificate|TLS|handshake", err),
              f"no TLS error: {err.strip()[-300:]}")
    finally:
        server.terminate()
        server.wait(10)
        if mounted:
            subprocess.run(["umount", mounted])


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
            "usr/share/doc/libc6/copyright", "usr/share/doc/curl/copyright",
            "usr/share/doc/busybox/copyright", "usr/lib/x86_64-linux-gnu/libcurl.so.4",
            "usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12",
            "usr/share/doc/libmicrohttpd/copyright"]
    if with_cni:
        want += ["opt/cni/bin/sriov", "opt/cni/bin/ib-sriov"]
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

    # -- the image index (--index): names the image under its architecture, unchanged (its
    # digest), so that a node pulls its own; two images of one architecture are refused
    multi = os.path.join(tmp, "index.oci.tar")
    r = run([SCRIPT, "--index", multi, archive])
    if check(r.returncode == 0, f"build-image --index exits 0: {r.stderr.strip()}"):
        with tarfile.open(multi) as t:
            top = json.loads(t.extractfile("index.json").read())
            entry = top["manifests"][0]
            algo, hexd = entry["digest"].split(":")
            inner = json.loads(t.extractfile(f"blobs/{algo}/{hexd}").read())
        check(entry.get("annotations", {}).get("org.opencontainers.image.ref.name") == name,
              f"the index archive names {name}")
        check(inner.get("mediaType") == "application/vnd.oci.image.index.v1+json",
              f"an OCI image index: {inner.get('mediaType')}")
        check([(m["digest"], m.get("platform")) for m in inner.get("manifests", [])] ==
              [(info.get("digest"), {"architecture": "amd64", "os": "linux"})],
              f"the index names the image as linux/amd64: {inner.get('manifests')}")
    r = run([SCRIPT, "--index", os.path.join(tmp, "twice.oci.tar"), archive, archive])
    check(r.returncode != 0 and "a second amd64 image" in r.stderr,
          f"two amd64 images in one index are refused: {r.stderr.strip()}")

    # -- unpack (umoci, as a user inspecting the image would)
    layout_dir, bundle = os.path.join(tmp, "layout"), os.path.join(tmp, "bundle")
    os.makedirs(layout_dir)
    with tarfile.open(archive) as t:
        t.extractall(layout_dir)
    r = run(["umoci", "unpack", "--image", f"{layout_dir}:{name}", bundle])
    check(r.returncode == 0, f"umoci unpack ({r.stderr.strip()[:300]})")
    rootfs = os.path.join(bundle, "rootfs")
    # files and links (os.walk lists a link to a directory, e.g. /bin, among the directories)
    size = sum(os.lstat(os.path.join(d, f)).st_size for d, ds, fs in os.walk(rootfs)
               for f in fs + [s for s in ds if os.path.islink(os.path.join(d, s))])
    print(f"image size: {size / 1048576:.1f} MiB uncompressed (files), "
          f"{os.path.getsize(archive) / 1048576:.1f} MiB archive")
    # the figure scripts/build-image prints (and bench/run and docs/install.md quote): du of the rootfs
    m = re.search(r"^size:.*\((\d+) bytes\)", out, re.M)
    printed = int(m.group(1)) if m else 0
    check(printed == size, f"the printed size is the unpacked files' ({printed} = {size})")
    check(0 < size <= 15_000_000,
          f"uncompressed size {size} bytes ({size / 1048576:.1f} MiB) <= 15 MB")

    # -- libmicrohttpd (the metrics endpoint): scripts/image-deps' build without HTTPS, so no
    # GnuTLS and its 8 libraries (6.3 MiB) in the image
    mhd = rootfs + "/usr/lib/x86_64-linux-gnu/libmicrohttpd.so.12"
    needed = set(re.findall(r"\(NEEDED\).*\[(.+)\]", run(["readelf", "-d", mhd]).stdout))
    check(needed == {"libc.so.6"}, f"the image's libmicrohttpd needs libc only: {sorted(needed)}")
    check(not any("libgnutls" in n for n in members), "no GnuTLS in the image")

    # -- libcurl: HTTP(S) over OpenSSL, HTTP/2, nothing else
    curl = rootfs + "/usr/lib/x86_64-linux-gnu/libcurl.so.4"
    needed = set(re.findall(r"\(NEEDED\).*\[(.+)\]", run(["readelf", "-d", curl]).stdout))
    check(needed == {"libnghttp2.so.14", "libssl.so.3", "libcrypto.so.3", "libz.so.1",
                     "libc.so.6"}, f"the image's libcurl needs OpenSSL, nghttp2, zlib, libc only: "
                                   f"{sorted(needed)}")
    check(re.search(r"Name: CURL_OPENSSL_4\b", run(["readelf", "-V", curl]).stdout) is not None,
          "the image's libcurl defines CURL_OPENSSL_4 (Debian's symbol version)")
    info_script = r"""
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [("age", ctypes.c_int), ("version", ctypes.c_char_p),
                ("version_num", ctypes.c_uint), ("host", ctypes.c_char_p),
                ("features", ctypes.c_int), ("ssl_version", ctypes.c_char_p),
                ("ssl_version_num", ctypes.c_long), ("libz_version", ctypes.c_char_p),
                ("protocols", ctypes.POINTER(ctypes.c_char_p))]
lib = ctypes.CDLL(sys.argv[1])
lib.curl_version_info.restype = ctypes.POINTER(Info)
i = lib.curl_version_info(10)[0]
protocols = []
while i.protocols[len(protocols)]:
    protocols.append(i.protocols[len(protocols)].decode())
print(i.features, i.ssl_version.decode(), ",".join(protocols))
"""
    r = run([sys.executable, "-c", info_script, curl])
    features, ssl_version, protocols = (r.stdout.split() + ["0", "", ""])[:3]
    features = int(features)
    bits = {"SSL": 1 << 2, "libz": 1 << 3, "HTTP2": 1 << 16}
    absent = {"NTLM": 1 << 4, "IDN": 1 << 10, "GSS-API": 1 << 17, "Kerberos": 1 << 18,
              "PSL": 1 << 20, "brotli": 1 << 23, "zstd": 1 << 26}
    check(r.returncode == 0 and all(features & b for b in bits.values()) and
          not any(features & b for b in absent.values()) and
          ssl_version.startswith("OpenSSL/3") and protocols == "http,https",
          f"curl_version_info() of the image's libcurl: HTTP2, SSL, libz, {ssl_version}, "
          f"protocols {protocols}, none of {sorted(absent)} ({features:#x}) {r.stderr[-300:]}")
    debian_only = [n for n in members if re.search(
        r"/lib(ldap|lber|gssapi|krb5|k5crypto|sasl2|ssh|rtmp|gnutls|nettle|hogweed|gmp|"
        r"p11-kit|tasn1|psl|idn2|unistring|brotli|keyutils|com_err)[-.]", "/" + n)]
    check(not debian_only, f"none of Debian's libcurl4 libraries in the image: {debian_only}")
    bb = members.get("usr/bin/busybox")
    check(bb is not None and bb.size < 300_000,
          f"the small busybox of scripts/image-deps ({bb.size if bb else None} bytes)")

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
    check(static == ["/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"],
          f"the only self-contained ELF file is the loader: {static}")
    # (the image's busybox has no grep or sed: the shell's own case)
    script = ("for e in " + " ".join(dynamic) + "; do out=$(/lib64/ld-linux-x86-64.so.2 --list $e)"
              " || echo \"UNRESOLVED $e\"; case $out in *'not found'*) echo \"$e: $out\";; esac;"
              " done")
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

    https_watch_inside(podman if inside is podman_run else None, name, rootfs, tmp)

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
          sorted(os.listdir(hostcni)) == [".sriov-agent", "ib-sriov", "sriov"],
          f"install-cni puts executables sriov and ib-sriov and their bundle .sriov-agent/ "
          f"into the host dir, nothing else: {os.listdir(hostcni)} {r.stderr.strip()[-200:]}")
    for f in ("sriov", "ib-sriov"):
        with open(os.path.join(hostcni, f), "rb") as a, open(rootfs + "/opt/cni/bin/sriov", "rb") as b:
            check(a.read() == b.read(), f"the installed {f} is the image's plugin")
    # The node may have none of the plugin's libraries and an older glibc: the installed
    # plugin must bring all it loads. Its loader and RPATH are the bundle; the bundle holds the
    # image's own files (copies, no links into the image); and it runs in a root that holds
    # nothing but that /opt/cni/bin, with LD_LIBRARY_PATH pointing at nothing.
    bundle = os.path.join(hostcni, ".sriov-agent")
    prog = run(["readelf", "-l", installed]).stdout
    check("[Requesting program interpreter: /opt/cni/bin/.sriov-agent/ld-linux-x86-64.so.2]"
          in prog, "the installed plugin's loader is the bundle's")
    dyn = run(["readelf", "-d", installed]).stdout
    check(re.findall(r"\((?:RPATH|RUNPATH)\).*\[(.*)\]", dyn) == ["/opt/cni/bin/.sriov-agent"]
          and "(RPATH)" in dyn, "the installed plugin's DT_RPATH is the bundle, nothing else")
    files = sorted(os.listdir(bundle)) if os.path.isdir(bundle) else []
    missing = []
    for e in [installed] + [os.path.join(bundle, f) for f in files]:
        missing += [f"{os.path.basename(e)}: {n}" for n in re.findall(
            r"\(NEEDED\).*\[(.+)\]", run(["readelf", "-d", e]).stdout) if n not in files]
    check(files and not missing and not any(os.path.islink(os.path.join(bundle, f))
                                            for f in files),
          f"the bundle ({len(files)} files) holds every library the plugin and they need: "
          f"missing {missing}")
    for f in files:
        with open(os.path.join(bundle, f), "rb") as a:
            img = rootfs + "/opt/cni/bin/.sriov-agent/" + f
            # a relative link to the image's file (absolute would name the build host's)
            link = os.readlink(img) if os.path.islink(img) else ""
            check(link.startswith("../../../../usr/lib/") and
                  not os.path.islink(os.path.join(os.path.dirname(img), link)),
                  f"the image's .sriov-agent/{f} links to a file of its own: {link}")
            with open(os.path.join(os.path.dirname(img), link), "rb") as b:
                check(a.read() == b.read(), f"bundle {f} is the image's")
    if os.geteuid() != 0:
        print("skipped: the installed plugin on a bare node (chroot needs root)")
        return
    bare = os.path.join(tmp, "bare-node")
    shutil.copytree(hostcni, os.path.join(bare, "opt", "cni", "bin"), symlinks=True)
    for argv0 in ("sriov", "ib-sriov"):
        r = run([shutil.which("chroot") or "/usr/sbin/chroot", bare, "/opt/cni/bin/" + argv0],
                env={"CNI_COMMAND": "VERSION", "LD_LIBRARY_PATH": "/usr/lib:/lib"})
        try:
            versions = json.loads(r.stdout).get("supportedVersions", [])
        except ValueError:
            versions = []
        check(r.returncode == 0 and "1.0.0" in versions,
              f"CNI_COMMAND=VERSION installed {argv0} on a node with nothing but /opt/cni/bin: "
              f"{r.stdout.strip()[:200]} {r.stderr.strip()[-300:]}")


main()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
