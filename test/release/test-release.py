#!/usr/bin/env python3
"""scripts/release as a release manager and a cluster operator meet it.

Usage: test-release.py SRCDIR BUILDDIR

Runs `scripts/release VERSION --arch amd64 --build-dir BUILDDIR --registry registry.example/net`
(VERSION: the build's `sriov-agent version`; the image build reuses BUILDDIR/image-deps, as
image/build does; amd64 alone: the arm64 image's first build takes minutes, test/arm64/run
--image builds and tests it) into a temp dir and checks:
  - every artifact is there and SHA256SUMS verifies all of them (sha256sum -c);
  - the image index archive names the amd64 image as linux/amd64 by its digest;
  - the version is stamped everywhere: the image's org.opencontainers.image.version label and
    its name registry.example/net/sriov-agent:VERSION, the chart's version and appVersion, its
    default image (every container of `helm template` of the package), the plain manifests'
    image, the CNI plugin's own version line; `helm lint --strict` passes on the package;
  - the plain manifests are manifests/*.yaml with only the image changed, the CRDs file is
    crds/;
  - the CNI bundle unpacks to opt/cni/bin/sriov, ib-sriov and .sriov-agent/ (regular files,
    no links), and the plugin runs from it in a chroot holding nothing else (root only);
  - the SBOM is SPDX 2.3 JSON naming sriov-agent VERSION and, with the version dpkg reports,
    every Debian package whose copyright file is in the image, plus the source builds (curl,
    busybox, libmicrohttpd) with their versions;
  - a VERSION other than the build's, and a VERSION that is not X.Y.Z, are refused naming it,
    with nothing written.
Uses only temp dirs."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

import yaml

SRC, BUILD = sys.argv[1:3]
AGENT = os.path.join(BUILD, "sriov-agent")
HELM = os.environ.get("HELM") or shutil.which("helm") or "/opt/sriov-agent-tools/bin/helm"
REGISTRY = "registry.example/net"
CHROOT = shutil.which("chroot", path="/usr/sbin:/usr/bin:/sbin:/bin") or "chroot"
failures = []


def check(cond, what):
    print("ok:" if cond else "FAIL:", what)
    if not cond:
        failures.append(what)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=280, **kw)


def key(o):
    return (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])


def docs_of(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def images_of(objs):
    imgs = set()
    for o in objs:
        spec = o.get("spec", {}).get("template", {}).get("spec", {})
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            imgs.add(c["image"])
    return imgs


def main(tmp):
    version = run([AGENT, "version"]).stdout.split()[1]
    image = f"{REGISTRY}/sriov-agent:{version}"
    out = os.path.join(tmp, "dist")
    env = dict(os.environ, HELM=HELM, HELM_CACHE_HOME=tmp, HELM_CONFIG_HOME=tmp,
               HELM_DATA_HOME=tmp)
    release = os.path.join(SRC, "scripts", "release")

    # -- refusals first (cheap): nothing written
    for bad, want in (("9.9.9", "is " + version + ", not 9.9.9"), ("v1", "want X.Y.Z")):
        bad_out = os.path.join(tmp, "bad-" + bad)
        r = run([release, bad, "--build-dir", BUILD, "--output", bad_out], env=env)
        check(r.returncode != 0 and want in r.stderr and not os.path.exists(bad_out),
              f"VERSION {bad} refused ({r.returncode}: {r.stderr.strip()[-200:]})")

    r = run([release, version, "--arch", "amd64", "--build-dir", BUILD, "--output", out,
             "--registry", REGISTRY], env=env)
    print(r.stdout, r.stderr[-2000:])
    check(r.returncode == 0, f"scripts/release {version} exits 0")
    check(f"skopeo copy --all oci-archive:{out}/sriov-agent-{version}-image.oci.tar "
          f"docker://{image}" in r.stdout, "it prints the command that pushes the image index")
    if r.returncode != 0:
        return
    arch = run(["dpkg", "--print-architecture"]).stdout.strip()
    names = {"index": f"sriov-agent-{version}-image.oci.tar",
             "image": f"sriov-agent-{version}-image-linux-{arch}.oci.tar",
             "chart": f"sriov-agent-{version}.tgz",
             "crds": f"sriov-agent-{version}-crds.yaml",
             "manifests": f"sriov-agent-{version}-manifests.yaml",
             "cni": f"sriov-cni-{version}-linux-{arch}.tar.gz",
             "sbom": f"sriov-agent-{version}.spdx.json"}
    path = {k: os.path.join(out, v) for k, v in names.items()}
    check(sorted(os.listdir(out)) == sorted(list(names.values()) + ["SHA256SUMS"]),
          f"the artifacts, nothing else: {sorted(os.listdir(out))}")
    r = run(["sha256sum", "-c", "SHA256SUMS"], cwd=out)
    with open(os.path.join(out, "SHA256SUMS")) as f:
        listed = {line.split()[1] for line in f if line.strip()}
    check(r.returncode == 0 and listed == set(names.values()),
          f"SHA256SUMS covers every artifact and verifies ({r.stdout.strip()})")

    # -- the image: name and version label
    r = run(["skopeo", "inspect", f"oci-archive:{path['image']}"])
    labels = json.loads(r.stdout).get("Labels", {}) if r.returncode == 0 else {}
    check(labels.get("org.opencontainers.image.version") == version,
          f"image label version {labels.get('org.opencontainers.image.version')} = {version}")
    with tarfile.open(path["image"]) as t:
        index = json.load(t.extractfile("index.json"))
    refs = {m.get("annotations", {}).get("org.opencontainers.image.ref.name")
            for m in index["manifests"]}
    check(image in refs, f"the archive names the image {image} ({refs})")
    # -- the index: one archive naming the image by its digest, as linux/ARCH
    digest = run(["skopeo", "inspect", "--format", "{{.Digest}}",
                  f"oci-archive:{path['image']}"]).stdout.strip()
    r = run(["skopeo", "inspect", "--raw", f"oci-archive:{path['index']}"])
    listed = json.loads(r.stdout) if r.returncode == 0 else {}
    platforms = {(m.get("platform", {}).get("os"), m.get("platform", {}).get("architecture")):
                 m.get("digest") for m in listed.get("manifests", [])}
    check(listed.get("mediaType") == "application/vnd.oci.image.index.v1+json" and
          platforms == {("linux", arch): digest},
          f"the index archive names linux/{arch} {digest} and nothing else ({platforms})")
    with tarfile.open(path["index"]) as t:
        index = json.load(t.extractfile("index.json"))
    refs = {m.get("annotations", {}).get("org.opencontainers.image.ref.name")
            for m in index["manifests"]}
    check(image in refs, f"the index archive is named {image} ({refs})")

    # -- the chart
    with tarfile.open(path["chart"]) as t:
        chart = yaml.safe_load(t.extractfile("sriov-agent/Chart.yaml"))
        values = yaml.safe_load(t.extractfile("sriov-agent/values.yaml"))
    check(chart["version"] == version and str(chart["appVersion"]) == version,
          f"chart version {chart['version']}, appVersion {chart['appVersion']}")
    check(values["image"] == image, f"chart's default image {values['image']}")
    r = run([HELM, "lint", "--strict", path["chart"]], env=env)
    check(r.returncode == 0, f"helm lint --strict of the package ({r.stdout.strip()[-200:]})")
    r = run([HELM, "template", "sriov-agent", path["chart"]], env=env)
    rendered = [o for o in yaml.safe_load_all(r.stdout) if o] if r.returncode == 0 else []
    check(images_of(rendered) == {image}, f"every container of the package runs {image} "
                                          f"({images_of(rendered)})")

    # -- plain manifests and CRDs
    plain = {}
    for p in sorted(glob.glob(os.path.join(SRC, "manifests", "*.yaml"))):
        for o in docs_of(p):
            plain[key(o)] = o
    released = {key(o): o for o in docs_of(path["manifests"])}
    default_image = run([os.path.join(SRC, "scripts", "build-image"), "--print-name",
                         "--build-dir", BUILD]).stdout.strip()
    swapped = {k: json.loads(json.dumps(o).replace(default_image, image))
               for k, o in plain.items()}
    check(released == swapped, "the plain manifests: manifests/*.yaml with only the image "
                               f"changed ({sorted(set(released) ^ set(swapped))})")
    check(images_of(released.values()) == {image}, "the plain manifests run the released image")
    crds = {}
    for p in sorted(glob.glob(os.path.join(SRC, "crds", "*.yaml"))):
        for o in docs_of(p):
            crds[key(o)] = o
    check({key(o): o for o in docs_of(path["crds"])} == crds, "the CRDs file is crds/")

    # -- the CNI bundle
    cni_root = os.path.join(tmp, "node")
    with tarfile.open(path["cni"]) as t:
        members = t.getmembers()
        check(all(m.isfile() or m.isdir() for m in members) and
              all(m.uid == 0 and m.gid == 0 for m in members),
              "the CNI bundle: regular files and directories owned by root, no links")
        t.extractall(cni_root)
    files = sorted(os.path.relpath(os.path.join(d, f), cni_root)
                   for d, _, fs in os.walk(cni_root) for f in fs)
    loader = {"amd64": "ld-linux-x86-64.so.2", "arm64": "ld-linux-aarch64.so.1"}.get(arch)
    check("opt/cni/bin/sriov" in files and "opt/cni/bin/ib-sriov" in files and
          f"opt/cni/bin/.sriov-agent/{loader}" in files,
          f"opt/cni/bin/sriov, ib-sriov and the loader in .sriov-agent/ ({files})")
    check(all(f.startswith("opt/cni/bin/") for f in files), "nothing outside opt/cni/bin")
    if os.geteuid() == 0:
        for prog in ("sriov", "ib-sriov"):
            r = run([CHROOT, cni_root, f"/opt/cni/bin/{prog}"], env={})
            check(r.returncode == 0 and f"CNI {prog} plugin {version}" in r.stderr,
                  f"{prog} runs on a node that has nothing but the bundle and says its "
                  f"version ({r.returncode}: {r.stderr.strip()[:200]})")
            r = run([CHROOT, cni_root, f"/opt/cni/bin/{prog}"],
                    env={"CNI_COMMAND": "VERSION"})
            check(r.returncode == 0 and "supportedVersions" in r.stdout,
                  f"{prog}: CNI_COMMAND=VERSION answers ({r.stdout.strip()[:200]})")
    else:
        print("not root: the chroot run of the plugin is skipped")

    # -- SBOM
    with open(path["sbom"]) as f:
        sbom = json.load(f)
    check(sbom.get("spdxVersion") == "SPDX-2.3" and sbom.get("dataLicense") == "CC0-1.0" and
          sbom.get("SPDXID") == "SPDXRef-DOCUMENT" and sbom.get("documentNamespace") and
          sbom.get("creationInfo", {}).get("created"), "an SPDX 2.3 document")
    pkgs = {p["name"]: p for p in sbom["packages"]}
    check(pkgs.get("sriov-agent", {}).get("versionInfo") == version and
          sbom.get("documentDescribes") == [pkgs["sriov-agent"]["SPDXID"]],
          "it describes sriov-agent VERSION")
    layout = os.path.join(tmp, "layout")
    os.makedirs(layout)
    with tarfile.open(path["image"]) as t:
        t.extractall(layout)
    r = run(["umoci", "unpack", "--image", f"{layout}:{image}", os.path.join(tmp, "bundle")])
    check(r.returncode == 0, f"umoci unpack ({r.stderr.strip()[:200]})")
    doc_dir = os.path.join(tmp, "bundle", "rootfs", "usr", "share", "doc")
    in_image = sorted(os.listdir(doc_dir)) if os.path.isdir(doc_dir) else []
    check(in_image and set(pkgs) - {"sriov-agent"} == set(in_image),
          f"a package for each copyright file in the image, no other "
          f"({sorted(set(pkgs) ^ set(in_image) - {'sriov-agent'})})")
    for name in ("libc6", "libssl3", "libibverbs1"):
        want = run(["dpkg-query", "-W", "-f", "${Version}", name]).stdout.strip()
        check(name in pkgs and pkgs[name]["versionInfo"] == want and
              pkgs[name]["externalRefs"][0]["referenceLocator"].startswith(
                  f"pkg:deb/debian/{name}@{want}"),
              f"{name} {want}, as dpkg reports it, with its purl")
    with open(os.path.join(tmp, "bundle", "rootfs", "etc", "sriov-agent-image.txt")) as f:
        note = f.read()
    for name in ("curl", "busybox", "libmicrohttpd"):
        ver = pkgs.get(name, {}).get("versionInfo", "?")
        check(f"{name} {ver}:" in note, f"{name} {ver}: the source build the image carries")
    related = {r["relatedSpdxElement"] for r in sbom["relationships"]
               if r["relationshipType"] == "CONTAINS"}
    check(related == {p["SPDXID"] for n, p in pkgs.items() if n != "sriov-agent"},
          "sriov-agent CONTAINS every other package")


tmp = tempfile.mkdtemp(prefix="sriov-release-test-")
try:
    main(tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("all checks passed")
