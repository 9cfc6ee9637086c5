#!/usr/bin/env python3
"""The metrics endpoint, end to end: `sriov-agent run --policy-dir --metrics-listen` on a
generated seed node (ConnectX-6 with RDMA devices) with the grpc-go fake kubelet, whose
PodResources says pod ml/train-1 holds one VF.

1. GET /metrics: 200 in text format 0.0.4, parsed by `promtool check metrics` with no finding
   but the camelCase `pciAddr` label of sriov-network-metrics-exporter's families (kept so its
   dashboards work); the pod's VF on the join metrics, the pool's allocated count, the RDMA
   port counters equal to the sysfs files, the agent's own families: an Allocate counted
   (allocate_total, its latency histogram), a reconcile after SIGHUP counted (reconciles_total,
   the duration histogram, the last result), sriov_pf_link_up 1 for the up PF and 0 once its
   operstate (the generated tree's file) says down. Other paths 404, other
   methods 405 with Allow: GET. The CNI plugin's records in --cni-state-dir are counted (two
   attachments, one VF holder; lock files and files being written are not records), and the
   count follows a DEL that removes one.
   OpenMetrics when the Accept header prefers it (Prometheus' own header): its content type,
   counter families declared without _total, "unknown" for untyped, "# EOF" last, the same
   samples as the text format; a header preferring the text format gets the text format.
2. A real Prometheus server (Debian's) started on a loopback port with a generated config
   scrapes the agent (it asks for OpenMetrics first, so its parser checks that output;
   promtool check metrics reads only the text format); its HTTP API shows the target up with
   no scrape error, as many samples as an OpenMetrics scrape has, and the pod's series.
3. Hostile clients from another loopback address (127.0.0.2): 200 idle connections, slowloris
   (a header byte every second), a 64 KiB header. Meanwhile the device plugin answers an
   Allocate at once and a scrape from 127.0.0.1 succeeds; the agent's RSS stays bounded; the
   huge header gets 431 and slow and idle connections are closed after the timeout.
4. A scrape flood (8 scrapers back to back for 4 s) against a fake kubelet with the kubelet's
   PodResources limiter: every scrape answered, the kubelet asked about once a second.
Exit 1 on any failure.
"""
import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import Agent, Proc, check, ev, finish, policy, wait, write_json  # noqa: E402

RESOURCE = "openshift.io/sriov_highnet"
# sriov-network-metrics-exporter's label, on its families only (sriov_vf_*, sriov_kubepoddevice)
ALLOWED_LINT = re.compile(r"^(sriov_vf_\w+|sriov_kubepoddevice) label names should be written "
                          r"in 'snake_case' not 'camelCase'$")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(url, method="GET", timeout=5, headers=None):
    req = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def samples(text):
    """{(name, frozenset(labels)): value} of an exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$', line)
        if not m:
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def find(s, name, **labels):
    want = set(labels.items())
    return [v for (n, ls), v in s.items() if n == name and want <= ls]


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fake-kubelet", required=True)
    ap.add_argument("--gen-sysfs", required=True)
    ap.add_argument("--promtool", required=True)
    ap.add_argument("--prometheus", required=True)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="metrics-")
    sysfs, kdir, pdir, state, devinfo = (os.path.join(work, d) for d in
                                         ("sys", "device-plugins", "policies", "state", "devinfo"))
    for d in (kdir, pdir):
        os.makedirs(d)
    prsock, assign = os.path.join(work, "pod-resources.sock"), os.path.join(work, "assign.json")
    manifest = json.loads(subprocess.check_output(
        [sys.executable, args.gen_sysfs, "--out", sysfs, "--profile", "seed", "--manifest"]))
    cx = next(pf for pf in manifest["pfs"] if pf.get("ifname") == "ens1f0")
    vfs = sorted(v["pciAddress"] for v in cx["vfs"])
    held_vf = vfs[0]
    write_json(assign, [{"pod": "train-1", "namespace": "ml", "container": "trainer",
                         "resource": RESOURCE, "ids": [held_vf]}])
    write_json(os.path.join(pdir, "seed.json"), policy("seed", "sriov_highnet", ["ens1f0"],
                                                       len(vfs)))
    # The CNI plugin's records as it leaves them (lib/cni/state.h): two attachments (one per
    # pod interface), the VF one of them holds, its lock, and a record being written.
    cni = os.path.join(work, "cni-sriov")
    os.makedirs(os.path.join(cni, "pci", "vf_lock"))
    for name in ("0123abcd-net1", "4567ef01-net1"):
        write_json(os.path.join(cni, name), {"cniVersion": "1.0.0", "type": "sriov",
                                             "DeviceID": held_vf})
    with open(os.path.join(cni, "pci", held_vf), "w") as f:
        f.write("/var/run/netns/cni-1")
    open(os.path.join(cni, "pci", "vf_lock", held_vf + ".lock"), "w").close()
    open(os.path.join(cni, ".89abcdef-net1.tmp"), "w").close()
    # with the kubelet's own PodResources limiter (100/s, burst 10, for the whole node)
    kubelet = Proc([args.fake_kubelet, "--dir", kdir, "--podresources", prsock,
                    "--assignments", assign, "--podresources-qps", "100",
                    "--podresources-burst", "10"], os.path.join(work, "kubelet.err"))
    kubelet.wait_for(ev("ready"), 10)
    agent_args = ["--policy-dir", pdir, "--node-labels", "highnet-node=true",
                  "--sysfs-root", sysfs, "--kubelet-dir", kdir, "--devinfo-dir", devinfo,
                  "--state-dir", state, "--pod-resources-socket", prsock, "--cni-state-dir", cni,
                  "--metrics-listen", "127.0.0.1:0", "--log-level", "debug"]
    agent = Agent(args.agent, agent_args, os.path.join(work, "agent.log"))
    prom = None
    try:
        m = wait(lambda: re.search(r"metrics endpoint listening on \S+ \(port (\d+)\)",
                                   agent.text()), 10)
        if not check("endpoint listening", m is not None, agent.text()[-600:]):
            return finish(work)
        port = int(m.group(1))
        base = "http://127.0.0.1:%d" % port
        check("pool registered", kubelet.wait_for(ev("register", RESOURCE), 10) is not None)

        # 1. the exposition
        status, headers, text = get(base + "/metrics")
        check("GET /metrics is 200 in format 0.0.4",
              status == 200 and "version=0.0.4" in headers.get("Content-Type", ""),
              "%s %s" % (status, headers))
        with open(os.path.join(work, "metrics.txt"), "w") as f:
            f.write(text)
        pt = subprocess.run([args.promtool, "check", "metrics"], input=text, text=True,
                            capture_output=True)
        findings = [l for l in (pt.stdout + pt.stderr).splitlines() if l.strip()]
        unexpected = [l for l in findings if not ALLOWED_LINT.match(l)]
        check("promtool check metrics: parses, no finding but upstream's pciAddr",
              pt.returncode in (0, 3) and not unexpected,
              "exit %d: %s" % (pt.returncode, unexpected[:5]))
        s = samples(text)
        check("sriov_kubepoddevice names the pod holding the VF",
              find(s, "sriov_kubepoddevice", pciAddr=held_vf, pod="train-1", namespace="ml",
                   container="trainer", dev_type=RESOURCE) == [1.0],
              str([k for k in s if k[0] == "sriov_kubepoddevice"]))
        check("sriov_agent_pod_device names the pod holding the VF",
              find(s, "sriov_agent_pod_device", pci_address=held_vf, pod="train-1",
                   namespace="ml", container="trainer", resource=RESOURCE) == [1.0])
        check("pool: allocatable and allocated",
              find(s, "sriov_agent_pool_allocatable_devices", resource=RESOURCE) == [len(vfs)]
              and find(s, "sriov_agent_pool_allocated_devices", resource=RESOURCE) == [1.0],
              str([(k, v) for k, v in s.items() if "pool_" in k[0]]))
        check("every VF advertised healthy",
              len(find(s, "sriov_agent_device_healthy", resource=RESOURCE)) == len(vfs))
        rdma_ok = True
        for dev in sorted(os.listdir(os.path.join(sysfs, "class/infiniband"))):
            cdir = os.path.join(sysfs, "class/infiniband", dev, "ports/1/counters")
            for name in (os.listdir(cdir) if os.path.isdir(cdir) else []):
                with open(os.path.join(cdir, name)) as f:
                    want = float(f.read())
                got = find(s, "sriov_rdma_port_stat", device=dev, port="1", counter=name)
                if got != [want]:
                    rdma_ok = False
                    print("  %s %s: sysfs %s, metric %s" % (dev, name, want, got))
        check("RDMA port counters equal the sysfs files", rdma_ok)
        check("RDMA hw_counters, state, rate",
              find(s, "sriov_rdma_port_hw_stat", device="mlx5_0", counter="out_of_buffer")
              and find(s, "sriov_rdma_port_state", device="mlx5_0", state="ACTIVE") == [4.0]
              and find(s, "sriov_rdma_port_rate_bytes_per_second", device="mlx5_0") == [12.5e9])
        # Scrapes keep each port's counter names (no listing): the next one reads the files'
        # new values and leaves out a counter that went; that makes the one after list again,
        # so a counter the driver added shows then.
        port1 = os.path.join(sysfs, "class/infiniband/mlx5_0/ports/1")
        with open(os.path.join(port1, "counters/port_rcv_data"), "w") as f:
            f.write("123456789\n")
        os.remove(os.path.join(port1, "counters/port_xmit_discards"))
        s2 = samples(get(base + "/metrics")[2])
        check("next scrape: a counter's new value read, a removed counter left out",
              find(s2, "sriov_rdma_port_stat", device="mlx5_0", counter="port_rcv_data") ==
              [123456789.0] and
              not find(s2, "sriov_rdma_port_stat", device="mlx5_0", counter="port_xmit_discards"),
              str([(k, v) for k, v in s2.items() if ("device", "mlx5_0") in k[1]]))
        with open(os.path.join(port1, "hw_counters/rx_icrc_encapsulated"), "w") as f:
            f.write("7\n")
        s3 = samples(get(base + "/metrics")[2])
        check("the scrape after lists the names again: a counter the driver added shows",
              find(s3, "sriov_rdma_port_hw_stat", device="mlx5_0",
                   counter="rx_icrc_encapsulated") == [7.0] and
              find(s3, "sriov_rdma_port_stat", device="mlx5_0", counter="port_rcv_data") ==
              [123456789.0],
              str([(k, v) for k, v in s3.items() if ("device", "mlx5_0") in k[1]]))
        check("the agent's own families",
              find(s, "sriov_agent_reconciles_total", result="ok") and
              find(s, "sriov_agent_build_info") == [1.0] and
              find(s, "sriov_agent_node_sync_status", status="Succeeded") == [1.0] and
              find(s, "sriov_agent_device_plugin_registered", resource=RESOURCE) == [1.0] and
              find(s, "process_resident_memory_bytes") and find(s, "process_open_fds"))
        # the agent's work: one Allocate, one more reconcile, the PF's link going down
        def total(s, name, **labels):
            return sum(find(s, name, **labels))
        before = samples(get(base + "/metrics")[2])
        kubelet.send({"cmd": "allocate", "resource": RESOURCE, "containers": [[vfs[2]]]})
        resp = kubelet.wait_for(ev("allocate", RESOURCE), 10) or {}
        check("an Allocate answered", resp.get("code") == "OK", str(resp))
        after = samples(get(base + "/metrics")[2])

        def lat(s, suffix, **labels):
            return total(s, "sriov_agent_allocate_duration_seconds" + suffix, resource=RESOURCE,
                         **labels)
        check("after an Allocate: allocate_total{result=ok} +1, refused unchanged",
              total(after, "sriov_agent_allocate_total", resource=RESOURCE, result="ok") ==
              total(before, "sriov_agent_allocate_total", resource=RESOURCE, result="ok") + 1
              and total(after, "sriov_agent_allocate_total", resource=RESOURCE,
                        result="refused") ==
              total(before, "sriov_agent_allocate_total", resource=RESOURCE, result="refused"),
              str([(k, v) for k, v in after.items() if k[0] == "sriov_agent_allocate_total"]))
        check("after an Allocate: its latency histogram counted it (count, +Inf bucket, sum)",
              lat(after, "_count") == lat(before, "_count") + 1 and
              lat(after, "_bucket", le="+Inf") == lat(after, "_count") and
              0 < lat(after, "_sum") - lat(before, "_sum") < 1.0,
              str([(k, v) for k, v in after.items() if "allocate_duration" in k[0]]))
        n_reconciles = total(after, "sriov_agent_reconciles_total")
        agent.p.send_signal(signal.SIGHUP)  # re-reads the policies: one more reconcile

        def after_reconcile():
            t = samples(get(base + "/metrics")[2])
            return t if total(t, "sriov_agent_reconciles_total") > n_reconciles else None
        again = wait(after_reconcile, 10, 0.2) or {}

        def rec(s, suffix, **labels):
            return total(s, "sriov_agent_reconcile_duration_seconds" + suffix, **labels)
        check("after a reconcile (SIGHUP): reconciles_total +1 and the duration histogram "
              "counted it", total(again, "sriov_agent_reconciles_total") == n_reconciles + 1 and
              rec(again, "_count") == rec(after, "_count") + 1 == n_reconciles + 1 and
              rec(again, "_bucket", le="+Inf") == rec(again, "_count") and
              rec(again, "_sum") > rec(after, "_sum") and
              find(again, "sriov_agent_last_reconcile_result", result="ok") == [1.0] and
              find(again, "sriov_agent_last_reconcile_timestamp_seconds")[0] > time.time() - 30,
              str([(k, v) for k, v in again.items() if "reconcile" in k[0]]))
        operstate = os.path.join(sysfs, "class/net/ens1f0/operstate")
        check("sriov_pf_link_up: 1 for the up PF ens1f0",
              find(again, "sriov_pf_link_up", pf="ens1f0", pci_address=cx["pciAddress"]) ==
              [1.0], str([(k, v) for k, v in again.items() if k[0] == "sriov_pf_link_up"]))
        with open(operstate, "w") as f:  # the link goes down (read at scrape time)
            f.write("down\n")
        down = samples(get(base + "/metrics")[2])
        with open(operstate, "w") as f:
            f.write("up\n")
        check("sriov_pf_link_up: 0 once its operstate is down",
              find(down, "sriov_pf_link_up", pf="ens1f0") == [0.0],
              str([(k, v) for k, v in down.items() if k[0] == "sriov_pf_link_up"]))
        check("the CNI plugin's records: 2 attachments, 1 VF holder",
              find(s, "sriov_agent_cni_attachment_records") == [2.0] and
              find(s, "sriov_agent_cni_vf_holder_records") == [1.0],
              str([(k, v) for k, v in s.items() if "_cni_" in k[0]]))
        os.remove(os.path.join(cni, "0123abcd-net1"))
        os.remove(os.path.join(cni, "pci", held_vf))
        s2 = samples(get(base + "/metrics")[2])
        check("the count follows a DEL: 1 attachment, no holder",
              find(s2, "sriov_agent_cni_attachment_records") == [1.0] and
              find(s2, "sriov_agent_cni_vf_holder_records") == [0.0],
              str([(k, v) for k, v in s2.items() if "_cni_" in k[0]]))
        # OpenMetrics on Accept negotiation, with the header Prometheus 2.x sends.
        om_accept = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                     "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
        status, headers, om = get(base + "/metrics", headers={"Accept": om_accept})
        with open(os.path.join(work, "metrics.om.txt"), "w") as f:
            f.write(om)
        check("Accept preferring OpenMetrics: application/openmetrics-text; version=1.0.0",
              status == 200 and headers.get("Content-Type", "").startswith(
                  "application/openmetrics-text; version=1.0.0"), "%s %s" % (status, headers))
        check("OpenMetrics: ends with # EOF, counters declared without _total, untyped unknown",
              om.endswith("\n# EOF\n") and
              "# TYPE sriov_agent_reconciles counter\n" in om and
              "# TYPE sriov_agent_reconciles_total" not in om and
              "# TYPE sriov_rdma_port_stat unknown\n" in om and " untyped\n" not in om,
              om[-300:])
        om_samples = samples(om)
        text_now = samples(get(base + "/metrics")[2])
        check("OpenMetrics: the same series as the text format",
              set(om_samples) == set(text_now),
              str(sorted(set(om_samples) ^ set(text_now))[:5]))
        status, headers, _ = get(base + "/metrics", headers={
            "Accept": "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;q=0.5"})
        check("Accept preferring the text format: text format",
              headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
              str(headers))
        status, _, _ = get(base + "/")
        check("other paths: 404", status == 404, str(status))
        status, headers, _ = get(base + "/metrics", method="POST")
        check("other methods: 405 with Allow: GET",
              status == 405 and headers.get("Allow") == "GET", "%s %s" % (status, headers))

        # 2. a real Prometheus scrapes it
        prom_port = free_port()
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: sriov-agent\n    static_configs:\n"
                    "      - targets: ['127.0.0.1:%d']\n" % port)
        prom = subprocess.Popen([args.prometheus,
                                 "--config.file", os.path.join(work, "prometheus.yml"),
                                 "--storage.tsdb.path", os.path.join(work, "tsdb"),
                                 "--web.listen-address", "127.0.0.1:%d" % prom_port],
                                stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(work, "prometheus.log"), "w"))
        api = "http://127.0.0.1:%d/api/v1/" % prom_port

        def query(q):
            try:
                _, _, body = get(api + "query?" + urllib.parse.urlencode({"query": q}))
                return json.loads(body)["data"]["result"]
            except (OSError, ValueError, KeyError):
                return []

        def target():
            try:
                _, _, body = get(api + "targets")
                t = json.loads(body)["data"]["activeTargets"]
                return t[0] if t and t[0]["health"] == "up" else None
            except (OSError, ValueError, KeyError, IndexError):
                return None
        up = wait(target, 30, 0.5)
        check("Prometheus: target up, no scrape error", up and not up.get("lastError"),
              json.dumps(up)[:400] if up else "see prometheus.log")
        scraped = wait(lambda: query("scrape_samples_scraped"), 10, 0.5)
        n_om = sum(1 for l in om.splitlines() if l and not l.startswith("#"))
        check("Prometheus: it took every sample of the OpenMetrics output (%d)" % n_om,
              scraped and int(float(scraped[0]["value"][1])) == n_om,
              json.dumps(scraped)[:300])
        series = wait(lambda: query('sriov_kubepoddevice{pod="train-1",namespace="ml"}'), 15, 0.5)
        check("Prometheus: the pod's series", len(series) == 1 and
              series[0]["metric"].get("pciAddr") == held_vf, json.dumps(series)[:400])
        joined = wait(lambda: query('sriov_agent_pool_allocatable_devices * on(resource) '
                                    'group_left() count by (resource) '
                                    '(sriov_agent_pod_device{pod="train-1"})'), 10, 0.5)
        check("Prometheus: a join on the pod metric", len(joined) == 1, json.dumps(joined)[:400])

        # The Grafana dashboard: every query parses in this Prometheus, and every name it
        # uses, like every family the endpoint writes, is documented in docs/metrics.md.
        src = os.environ.get("SRCDIR") or os.path.join(os.path.dirname(__file__), "..", "..")
        with open(os.path.join(src, "manifests/grafana/sriov-agent-dashboard.json")) as f:
            dashboard = json.load(f)
        with open(os.path.join(src, "docs/metrics.md")) as f:
            documented = set(re.findall(r"`((?:sriov|process)_\w+)`", f.read()))
        exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
        bad = []
        for e in exprs:
            q = e.replace("$__rate_interval", "1m").replace("$instance", ".*").replace(
                "$job", ".*")
            _, _, body = get(api + "query?" + urllib.parse.urlencode({"query": q}))
            if json.loads(body).get("status") != "success":
                bad.append((e[:80], body[:200]))
        check("dashboard: every query is valid PromQL (%d)" % len(exprs), exprs and not bad,
              str(bad[:3]))
        used = set(re.findall(r"\b((?:sriov|process)_[a-z_]+?)(?:_bucket)?\b",
                              " ".join(exprs)))
        check("dashboard: every metric it uses is documented", used <= documented,
              str(sorted(used - documented)))
        families = set(re.findall(r"^# TYPE (\S+)", text, re.M))
        check("every family the endpoint writes is documented", families <= documented,
              str(sorted(families - documented)))
        prom.terminate()
        prom.wait(timeout=10)
        prom = None

        # 3. hostile clients from 127.0.0.2
        rss_before = rss_kb(agent.p.pid)
        idle = []
        for _ in range(200):
            c = socket.socket()
            c.bind(("127.0.0.2", 0))
            c.settimeout(2)
            try:
                c.connect(("127.0.0.1", port))
                idle.append(c)
            except OSError:
                c.close()
        slow = socket.socket()  # its own address: not closed by the per-address limit
        slow.bind(("127.0.0.4", 0))
        slow.connect(("127.0.0.1", port))
        slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        kubelet.send({"cmd": "allocate", "resource": RESOURCE, "containers": [[vfs[1]]]})
        resp = kubelet.wait_for(ev("allocate", RESOURCE), 10) or {}
        took = time.monotonic() - t0
        # Not blocked behind them: a server that waited them out would answer only after their
        # 10 s inactivity timeout. The bounds sit well below that, with room for a slow machine
        # (ASan, valgrind); they are no speed targets (bench/bench-allocate.c measures Allocate).
        print("  Allocate with hostile clients connected: %.0f ms" % (took * 1000))
        check("Allocate answered while hostile clients hold connections (< 5 s)",
              resp.get("code") == "OK" and took < 5, "%s after %.2f s" % (resp, took))
        t0 = time.monotonic()
        status, _, text = get(base + "/metrics", timeout=9)
        took = time.monotonic() - t0
        print("  scrape with hostile clients connected: %.0f ms" % (took * 1000))
        check("a scrape from another address is answered meanwhile (< 5 s)",
              status == 200 and took < 5, "%s after %.2f s" % (status, took))
        huge = socket.socket()
        huge.bind(("127.0.0.3", 0))
        huge.settimeout(5)
        answer = b""
        try:
            huge.connect(("127.0.0.1", port))
            huge.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 +
                         b"\r\n\r\n")
            answer = huge.recv(200)
        except OSError as e:
            answer = str(e).encode()
        finally:
            huge.close()
        check("a 64 KiB header is refused with 431 or 413",
              re.match(rb"HTTP/1\.1 4(31|13) ", answer) is not None, answer[:80])

        def open_after(sock, seconds):
            sock.settimeout(seconds)
            try:
                return sock.recv(100) != b""
            except socket.timeout:
                return True
            except OSError:
                return False
        check("slowloris connection still open while it trickles", open_after(slow, 2))
        closed_at = None
        for i in range(20):  # one header byte a second: the 10 s timeout is per inactivity,
            try:             # so MHD's limit on the whole request ends it
                slow.send(b"X")
            except OSError:
                closed_at = i
                break
            if not open_after(slow, 1):
                closed_at = i
                break
        check("slowloris connection closed within 20 s", closed_at is not None)
        rss_after = rss_kb(agent.p.pid)
        print("  RSS %d KiB before hostile clients, %d KiB during" % (rss_before, rss_after))
        check("memory bounded under hostile clients (< 4 MiB added)",
              rss_after - rss_before < 4096, "%d KiB added" % (rss_after - rss_before))
        for c in idle:
            c.close()
        slow.close()
        status, _, _ = get(base + "/metrics")
        check("the endpoint serves again after they left", status == 200, str(status))

        # 4. a scrape flood: the kubelet is asked at most about once a second however many
        # scrape (its PodResources limit is the whole node's, the CNI plugin's checks included)
        kubelet.wait_for(lambda e: False, 0.3)  # what came so far, into kubelet.seen
        n_before = len(kubelet.seen)
        codes, stop_at = [], time.monotonic() + 4.0

        def flood(source):
            while time.monotonic() < stop_at:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5,
                                               source_address=(source, 0))
                try:
                    c.request("GET", "/metrics")
                    r = c.getresponse()
                    r.read()
                    codes.append(r.status)
                except (OSError, http.client.HTTPException) as e:
                    codes.append(str(e))
                finally:
                    c.close()
        # two scrapers per address: within the per-address limit
        threads = [threading.Thread(target=flood, args=("127.0.0.%d" % (1 + i % 4),))
                   for i in range(8)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - t0
        kubelet.wait_for(lambda e: False, 0.5)
        flood_events = [e for e in kubelet.seen[n_before:] if isinstance(e, dict)]
        lists = sum(1 for e in flood_events if e.get("event") == "podresources-list")
        refused = sum(1 for e in flood_events if e.get("event") == "podresources-refused")
        print("  %d scrapes in %.1f s from 8 scrapers: %d PodResources List, %d refused" %
              (len(codes), took, lists, refused))
        check("a scrape flood: every scrape answered 200", codes and
              all(c == 200 for c in codes), str(sorted(set(codes))))
        check("a scrape flood: at most about one List a second (%d in %.1f s, %d scrapes)" %
              (lists, took, len(codes)), len(codes) > 2 * took and lists <= took + 2 and
              refused == 0)

        # 5. --metrics-pod-labels off (nodes whose metrics port tenants reach): the same node
        # and kubelet, and no pod, namespace or container name anywhere in the exposition; the
        # devices in use are still counted.
        agent.stop()
        agent = Agent(args.agent, agent_args + ["--metrics-pod-labels", "off"],
                      os.path.join(work, "agent-no-pod-labels.log"))
        m = wait(lambda: re.search(r"metrics endpoint listening on \S+ \(port (\d+)\)",
                                   agent.text()), 10)
        if check("--metrics-pod-labels off: endpoint listening", m is not None,
                 agent.text()[-600:]):
            url = "http://127.0.0.1:%s/metrics" % m.group(1)

            def allocated():
                status, _, text = get(url)
                s = samples(text) if status == 200 else {}
                return text if find(s, "sriov_agent_pool_allocated_devices",
                                    resource=RESOURCE) == [1.0] else None
            text = wait(allocated, 15, 0.5)
            check("--metrics-pod-labels off: the device in use is still counted", text)
            names = [n for n in ("train-1", '"ml"', "trainer", "TYPE sriov_kubepoddevice",
                                 "TYPE sriov_agent_pod_device") if n in (text or "")]
            check("--metrics-pod-labels off: no pod, namespace or container name", text and
                  not names, str(names))
        bad = subprocess.run([args.agent, "run", "--metrics-pod-labels", "no"],
                             capture_output=True, text=True, timeout=10)
        check("--metrics-pod-labels no: refused, naming the flag and its values",
              bad.returncode != 0 and "--metrics-pod-labels wants on or off" in bad.stderr,
              bad.stderr[-200:])
    finally:
        if prom:
            prom.kill()
            prom.wait()
        agent.stop()
        kubelet.stop()
    return finish(work)


if __name__ == "__main__":
    sys.exit(main())
