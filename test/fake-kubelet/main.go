// fake-kubelet: an independent grpc-go peer for the device-plugin integration tests.
//
// It plays the kubelet side of the device-plugin API v1beta1 and the PodResources API v1:
// it serves Registration on <dir>/kubelet.sock, dials every plugin that registers, calls
// GetDevicePluginOptions and keeps a ListAndWatch stream open, and serves PodResources List
// from a JSON assignment file. The test driver sends commands as JSON lines on stdin and reads
// what the kubelet saw as JSON lines on stdout (one object per event, with a "t" timestamp in
// milliseconds).
//
// With --api-server and --node it also reports the node's extended resources to the API server
// as a kubelet does (pkg/kubelet/nodestatus MachineInfo, the device manager's GetCapacity):
// status.capacity counts every device a plugin listed, status.allocatable the healthy ones,
// patched (strategic merge patch on nodes/NAME/status) whenever a ListAndWatch answer changes
// them. A plugin whose stream ended keeps its capacity with allocatable 0 for the endpoint
// grace period (--endpoint-grace, the kubelet's 5 minutes), then the resource is removed. That
// is what `kubectl describe node` shows under Capacity and Allocatable.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pr "sriov-agent/proto/podresourcesv1"
	dp "sriov-agent/proto/v1beta1"
)

type output struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func (o *output) emit(ev map[string]interface{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	ev["t"] = time.Now().UnixNano() / 1e6
	_ = o.enc.Encode(ev)
}

type plugin struct {
	resource string
	endpoint string
	conn     *grpc.ClientConn
	client   dp.DevicePluginClient
	cancel   context.CancelFunc
	mu       sync.Mutex
	live     bool // its stream is open and its last list had a Healthy device
}

func (p *plugin) isLive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live
}

func (p *plugin) setLive(v bool) {
	p.mu.Lock()
	p.live = v
	p.mu.Unlock()
}

type kubelet struct {
	dir     string
	mode    string
	out     *output
	mu      sync.Mutex
	plugins map[string]*plugin
	server  *grpc.Server
	status  *nodeStatus // nil without --api-server
	loop    chan string // the allocate loop's commands; nil when none runs
	dp.UnimplementedRegistrationServer
}

// nodeStatus reports device-plugin resources in the Node's status, one patch at a time.
type nodeStatus struct {
	url   string // .../api/v1/nodes/NAME/status
	token string
	grace time.Duration
	out   *output
	mu    sync.Mutex
	// per resource: every device listed, the healthy ones; a stopped endpoint's timer
	total, healthy map[string]int
	stopped        map[string]*time.Timer
	sent           map[string][2]int
}

func newNodeStatus(server, node, token string, grace time.Duration, out *output) *nodeStatus {
	return &nodeStatus{url: strings.TrimRight(server, "/") + "/api/v1/nodes/" + node + "/status",
		token: token, grace: grace, out: out, total: map[string]int{},
		healthy: map[string]int{}, stopped: map[string]*time.Timer{}, sent: map[string][2]int{}}
}

// machine sends what a kubelet reports at start besides device plugins.
func (n *nodeStatus) machine() {
	mem := int64(0)
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"),
			"%d", &mem)
	}
	res := map[string]interface{}{"cpu": fmt.Sprint(runtime.NumCPU()),
		"memory": fmt.Sprintf("%dKi", mem), "pods": "110"}
	n.patch(map[string]interface{}{"capacity": res, "allocatable": res}, nil)
}

// devices records a ListAndWatch answer.
func (n *nodeStatus) devices(resource string, devs []*dp.Device) {
	healthy := 0
	for _, d := range devs {
		if d.Health == "Healthy" {
			healthy++
		}
	}
	n.mu.Lock()
	if t := n.stopped[resource]; t != nil {
		t.Stop()
		delete(n.stopped, resource)
	}
	n.total[resource], n.healthy[resource] = len(devs), healthy
	n.mu.Unlock()
	n.sync()
}

// endpointStopped: the plugin's stream ended. Its devices stay in capacity, none allocatable,
// until the grace period ends without a new registration.
func (n *nodeStatus) endpointStopped(resource string) {
	n.mu.Lock()
	if _, ok := n.total[resource]; !ok {
		n.mu.Unlock()
		return
	}
	n.healthy[resource] = 0
	if t := n.stopped[resource]; t != nil {
		t.Stop()
	}
	n.stopped[resource] = time.AfterFunc(n.grace, func() {
		n.mu.Lock()
		delete(n.total, resource)
		delete(n.healthy, resource)
		delete(n.stopped, resource)
		n.mu.Unlock()
		n.sync()
	})
	n.mu.Unlock()
	n.sync()
}

// sync patches the resources whose counts differ from what was last sent (null removes one).
func (n *nodeStatus) sync() {
	n.mu.Lock()
	defer n.mu.Unlock()
	capacity, allocatable := map[string]interface{}{}, map[string]interface{}{}
	next := map[string][2]int{}
	for r, t := range n.total {
		next[r] = [2]int{t, n.healthy[r]}
		if n.sent[r] != next[r] || !has(n.sent, r) {
			capacity[r], allocatable[r] = fmt.Sprint(t), fmt.Sprint(n.healthy[r])
		}
	}
	for r := range n.sent {
		if !has(next, r) {
			capacity[r], allocatable[r] = nil, nil
		}
	}
	if len(capacity) == 0 {
		return
	}
	if n.patch(map[string]interface{}{"capacity": capacity, "allocatable": allocatable},
		next) == nil {
		n.sent = next
	}
}

func has(m map[string][2]int, k string) bool {
	_, ok := m[k]
	return ok
}

func (n *nodeStatus) patch(status map[string]interface{}, counts map[string][2]int) error {
	body, _ := json.Marshal(map[string]interface{}{"status": status})
	req, _ := http.NewRequest("PATCH", n.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	if n.token != "" {
		req.Header.Set("Authorization", "Bearer "+n.token)
	}
	ev := map[string]interface{}{"event": "node-status", "status": status}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		ev["code"] = resp.StatusCode
		if resp.StatusCode != 200 {
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
	}
	if err != nil {
		ev["message"] = err.Error()
	}
	n.out.emit(ev)
	return err
}

// Dial modes: how real clients of a device plugin fill the HTTP/2 :authority header.
//
//	kubelet-1.25   Kubernetes <= 1.25: the socket path as the dial target, a unix dialer and no
//	               WithAuthority, so :authority is the path ("/var/lib/kubelet/...sock").
//	kubelet-1.26+  Kubernetes >= 1.26 (kubernetes PR 112597): the same with
//	               WithAuthority("localhost").
//	grpc-core      gRPC C-core >= 1.57 clients of "unix:" targets: the path percent-encoded
//	               ("%2Fvar%2Flib%2F...").
var dialModes = map[string]func(path string) string{
	"kubelet-1.25":  func(path string) string { return "" },
	"kubelet-1.26+": func(path string) string { return "localhost" },
	"grpc-core":     func(path string) string { return percentEncodePath(path) },
}

// percentEncodePath encodes like C-core's URI::PercentEncodeAuthority: unreserved characters and
// sub-delims stay, everything else (the '/' of a path) becomes %XX.
func percentEncodePath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func dial(mode, path string) (*grpc.ClientConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opts := []grpc.DialOption{grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		})}
	if a := dialModes[mode](path); a != "" {
		opts = append(opts, grpc.WithAuthority(a))
	}
	// The target is the bare path (passthrough resolver): without WithAuthority grpc-go
	// sends it as :authority, as kubelets before 1.26 do.
	return grpc.DialContext(ctx, path, opts...)
}

func errFields(ev map[string]interface{}, err error) {
	st, _ := status.FromError(err)
	ev["code"] = st.Code().String()
	ev["message"] = st.Message()
}

func (k *kubelet) Register(ctx context.Context, r *dp.RegisterRequest) (*dp.Empty, error) {
	ev := map[string]interface{}{"event": "register", "resource": r.ResourceName,
		"endpoint": r.Endpoint, "version": r.Version,
		"preferred": r.Options.GetGetPreferredAllocationAvailable()}
	if r.Version != "v1beta1" {
		ev["rejected"] = "version"
		k.out.emit(ev)
		return nil, fmt.Errorf("unsupported version %q", r.Version)
	}
	k.out.emit(ev)
	// Like the real kubelet, connect to the plugin after answering Register.
	go k.connect(r.ResourceName, r.Endpoint)
	return &dp.Empty{}, nil
}

func topo(d *dp.Device) []int64 {
	var ids []int64
	for _, n := range d.GetTopology().GetNodes() {
		ids = append(ids, n.ID)
	}
	return ids
}

func (k *kubelet) connect(resource, endpoint string) {
	conn, err := dial(k.mode, filepath.Join(k.dir, endpoint))
	if err != nil {
		k.out.emit(map[string]interface{}{"event": "dial-error", "resource": resource,
			"message": err.Error()})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &plugin{resource: resource, endpoint: endpoint, conn: conn,
		client: dp.NewDevicePluginClient(conn), cancel: cancel}
	k.mu.Lock()
	if old := k.plugins[resource]; old != nil {
		old.cancel()
		old.conn.Close()
	}
	k.plugins[resource] = p
	k.mu.Unlock()

	opts, err := p.client.GetDevicePluginOptions(ctx, &dp.Empty{})
	ev := map[string]interface{}{"event": "options", "resource": resource}
	if err != nil {
		errFields(ev, err)
	} else {
		ev["preferred"] = opts.GetPreferredAllocationAvailable
		ev["prestart"] = opts.PreStartRequired
	}
	k.out.emit(ev)

	stream, err := p.client.ListAndWatch(ctx, &dp.Empty{})
	if err != nil {
		k.out.emit(map[string]interface{}{"event": "watch-error", "resource": resource,
			"message": err.Error()})
		return
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			p.setLive(false)
			ev := map[string]interface{}{"event": "watch-end", "resource": resource}
			errFields(ev, err)
			k.out.emit(ev)
			if k.status != nil && k.plugin(resource) == p {
				k.status.endpointStopped(resource)
			}
			// As the kubelet does (pkg/kubelet/cm/devicemanager/plugin/v1beta1: Run()
			// returns, runClient calls disconnectClient): the stream's end closes the
			// connection, cancelling any call still on it. The endpoint stays known (the
			// kubelet keeps it, stopped), so a later call fails instead of finding none.
			p.cancel()
			p.conn.Close()
			return
		}
		healthy := false
		for _, d := range resp.Devices {
			healthy = healthy || d.Health == "Healthy"
		}
		p.setLive(healthy)
		var devs []map[string]interface{}
		for _, d := range resp.Devices {
			devs = append(devs, map[string]interface{}{"id": d.ID, "health": d.Health,
				"numa": topo(d)})
		}
		k.out.emit(map[string]interface{}{"event": "devices", "resource": resource,
			"devices": devs})
		if k.status != nil {
			k.status.devices(resource, resp.Devices)
		}
	}
}

func (k *kubelet) start() error {
	sock := filepath.Join(k.dir, "kubelet.sock")
	// A starting kubelet removes every socket in the device-plugin directory.
	entries, _ := os.ReadDir(k.dir)
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			os.Remove(filepath.Join(k.dir, e.Name()))
		}
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	k.server = grpc.NewServer()
	dp.RegisterRegistrationServer(k.server, k)
	go k.server.Serve(l)
	return nil
}

func (k *kubelet) stop() {
	k.server.Stop()
	k.mu.Lock()
	for _, p := range k.plugins {
		p.cancel()
		p.conn.Close()
	}
	k.plugins = map[string]*plugin{}
	k.mu.Unlock()
}

type command struct {
	Cmd        string     `json:"cmd"`
	Resource   string     `json:"resource"`
	Containers [][]string `json:"containers"`
	Available  []string   `json:"available"`
	Must       []string   `json:"must"`
	Size       int32      `json:"size"`
	Method     string     `json:"method"`
	Pad        int        `json:"pad"`
	N          int        `json:"n"`
	IDs        []string   `json:"ids"`
	Tag        string     `json:"tag"`
	IntervalMs int        `json:"interval_ms"`
	Seconds    float64    `json:"seconds"`
	Workers    int        `json:"workers"`
}

func (k *kubelet) plugin(resource string) *plugin {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.plugins[resource]
}

func (k *kubelet) handle(c command) {
	ev := map[string]interface{}{"event": c.Cmd, "resource": c.Resource}
	if c.Tag != "" {
		ev["tag"] = c.Tag
	}
	defer k.out.emit(ev)
	if c.Cmd == "restart" {
		k.stop()
		if err := k.start(); err != nil {
			ev["message"] = err.Error()
		}
		return
	}
	p := k.plugin(c.Resource)
	if p == nil {
		ev["code"] = "NoPlugin"
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch c.Cmd {
	case "allocate":
		ev["sent"] = time.Now().UnixNano() / 1e6
		req := &dp.AllocateRequest{}
		for _, ids := range c.Containers {
			if c.Pad > 0 {
				ids = append(ids, strings.Repeat("x", c.Pad))
			}
			req.ContainerRequests = append(req.ContainerRequests,
				&dp.ContainerAllocateRequest{DevicesIds: ids})
		}
		resp, err := p.client.Allocate(ctx, req)
		if err != nil {
			errFields(ev, err)
			return
		}
		ev["code"] = "OK"
		var crs []map[string]interface{}
		for _, cr := range resp.ContainerResponses {
			var specs []map[string]string
			for _, d := range cr.Devices {
				specs = append(specs, map[string]string{"container_path": d.ContainerPath,
					"host_path": d.HostPath, "permissions": d.Permissions})
			}
			crs = append(crs, map[string]interface{}{"envs": cr.Envs, "devices": specs,
				"mounts": len(cr.Mounts), "annotations": cr.Annotations})
		}
		ev["responses"] = crs
	case "preferred":
		resp, err := p.client.GetPreferredAllocation(ctx, &dp.PreferredAllocationRequest{
			ContainerRequests: []*dp.ContainerPreferredAllocationRequest{{
				AvailableDeviceIDs: c.Available, MustIncludeDeviceIDs: c.Must,
				AllocationSize: c.Size}}})
		if err != nil {
			errFields(ev, err)
			return
		}
		ev["code"] = "OK"
		ids := []string{}
		for _, cr := range resp.ContainerResponses {
			ids = append(ids, cr.DeviceIDs...)
		}
		ev["ids"] = ids
	case "bench": // N sequential Allocate calls, one device each, cycling through IDs
		if len(c.IDs) == 0 || c.N <= 0 {
			ev["code"] = "BadBench"
			return
		}
		lat := make([]time.Duration, 0, c.N)
		for i := 0; i < c.N; i++ {
			req := &dp.AllocateRequest{ContainerRequests: []*dp.ContainerAllocateRequest{
				{DevicesIds: []string{c.IDs[i%len(c.IDs)]}}}}
			t0 := time.Now()
			_, err := p.client.Allocate(context.Background(), req)
			lat = append(lat, time.Since(t0))
			if err != nil {
				errFields(ev, err)
				return
			}
		}
		sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
		ev["code"] = "OK"
		ev["calls"] = c.N
		ev["median_us"] = lat[len(lat)/2].Microseconds()
		ev["p99_us"] = lat[len(lat)*99/100].Microseconds()
		ev["max_us"] = lat[len(lat)-1].Microseconds()
	case "prestart":
		_, err := p.client.PreStartContainer(ctx, &dp.PreStartContainerRequest{})
		ev["code"] = "OK"
		if err != nil {
			errFields(ev, err)
		}
	case "invoke": // an arbitrary method name, for "unknown method" checks
		err := p.conn.Invoke(ctx, c.Method, &dp.Empty{}, &dp.Empty{})
		ev["code"] = "OK"
		if err != nil {
			errFields(ev, err)
		}
	default:
		ev["code"] = "UnknownCommand"
	}
}

// allocLoop plays a kubelet admitting pods one after another: every interval it sends one
// Allocate to the resource's current endpoint, if that endpoint is live (its stream open, a
// Healthy device listed), and reports each call as a "loop-allocate" event with the time it
// was sent. Commands on ctl: "pause" (answered with "loop-paused" once no call is in flight),
// "resume", "stop" (answered with "loop-stopped" and the counts).
func (k *kubelet) allocLoop(c command, ctl chan string) {
	interval := time.Duration(c.IntervalMs) * time.Millisecond
	if interval <= 0 {
		interval = 20 * time.Millisecond
	}
	sent, failed := 0, 0
	stopped := func() {
		k.out.emit(map[string]interface{}{"event": "loop-stopped", "resource": c.Resource,
			"sent": sent, "failed": failed})
	}
	for {
		select {
		case cmd := <-ctl:
			if cmd == "stop" {
				stopped()
				return
			}
			if cmd == "pause" {
				k.out.emit(map[string]interface{}{"event": "loop-paused", "resource": c.Resource})
				for cmd != "resume" && cmd != "stop" {
					cmd = <-ctl
				}
				if cmd == "stop" {
					stopped()
					return
				}
			}
			continue
		case <-time.After(interval):
		}
		p := k.plugin(c.Resource)
		if p == nil || !p.isLive() {
			continue
		}
		req := &dp.AllocateRequest{}
		for _, ids := range c.Containers {
			req.ContainerRequests = append(req.ContainerRequests,
				&dp.ContainerAllocateRequest{DevicesIds: ids})
		}
		ev := map[string]interface{}{"event": "loop-allocate", "resource": c.Resource,
			"sent": time.Now().UnixNano() / 1e6}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := p.client.Allocate(ctx, req)
		cancel()
		sent++
		if err != nil {
			failed++
			errFields(ev, err)
		} else {
			ev["code"] = "OK"
		}
		k.out.emit(ev)
	}
}

type assignment struct {
	Pod       string   `json:"pod"`
	Namespace string   `json:"namespace"`
	Container string   `json:"container"`
	Resource  string   `json:"resource"`
	IDs       []string `json:"ids"`
}

// bucket is the kubelet's limiter for the PodResources API (pkg/kubelet/apis/podresources:
// rate.NewLimiter(DefaultQPS=100, DefaultBurstTokens=10) shared by every caller on the node,
// Allow() or ResourceExhausted "rejected by rate limit"): a token bucket, refilled at qps.
type bucket struct {
	mu     sync.Mutex
	qps    float64
	burst  float64
	tokens float64
	last   time.Time
}

func (b *bucket) allow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.tokens += now.Sub(b.last).Seconds() * b.qps
	if b.tokens > b.burst {
		b.tokens = b.burst
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

type podResources struct {
	file    string
	delay   time.Duration
	limiter *bucket // nil: no limit
	out     *output
	pr.UnimplementedPodResourcesListerServer
}

func (s *podResources) List(ctx context.Context, r *pr.ListPodResourcesRequest) (*pr.ListPodResourcesResponse, error) {
	if s.limiter != nil && !s.limiter.allow() {
		s.out.emit(map[string]interface{}{"event": "podresources-refused"})
		return nil, status.Error(codes.ResourceExhausted, "rejected by rate limit")
	}
	s.out.emit(map[string]interface{}{"event": "podresources-list"})
	if s.delay > 0 { // a busy kubelet: the answer comes late (or the caller gives up first)
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var as []assignment
	if data, err := os.ReadFile(s.file); err == nil {
		if err := json.Unmarshal(data, &as); err != nil {
			return nil, err
		}
	}
	resp := &pr.ListPodResourcesResponse{}
	for _, a := range as {
		resp.PodResources = append(resp.PodResources, &pr.PodResources{Name: a.Pod,
			Namespace: a.Namespace, Containers: []*pr.ContainerResources{{Name: a.Container,
				Devices: []*pr.ContainerDevices{{ResourceName: a.Resource, DeviceIds: a.IDs}}}}})
	}
	return resp, nil
}

func main() {
	dir := flag.String("dir", "", "device-plugin directory (kubelet.sock is created there)")
	prSock := flag.String("podresources", "", "PodResources socket path (optional)")
	assign := flag.String("assignments", "", "JSON file of PodResources assignments")
	prDelay := flag.Duration("podresources-delay", 0, "answer PodResources List after this long")
	prQPS := flag.Float64("podresources-qps", 0,
		"the kubelet's PodResources rate limit for the whole node (the kubelet: 100); 0: none")
	prBurst := flag.Int("podresources-burst", 10, "the limiter's burst (the kubelet: 10)")
	mode := flag.String("dial-mode", "kubelet-1.25",
		"how plugins are dialled: kubelet-1.25, kubelet-1.26+ or grpc-core (the :authority sent)")
	apiServer := flag.String("api-server", "",
		"report the node's resources to this API server (http://HOST:PORT)")
	node := flag.String("node", "", "the Node whose status is reported (with --api-server)")
	token := flag.String("token", "", "bearer token for --api-server (optional)")
	grace := flag.Duration("endpoint-grace", 5*time.Minute,
		"how long a stopped plugin's resource stays in capacity (with --api-server)")
	flag.Parse()
	if dialModes[*mode] == nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet: unknown --dial-mode", *mode)
		os.Exit(2)
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "fake-kubelet: --dir is required")
		os.Exit(2)
	}
	k := &kubelet{dir: *dir, mode: *mode, out: &output{enc: json.NewEncoder(os.Stdout)},
		plugins: map[string]*plugin{}}
	if (*apiServer == "") != (*node == "") {
		fmt.Fprintln(os.Stderr, "fake-kubelet: --api-server and --node go together")
		os.Exit(2)
	}
	if *apiServer != "" {
		k.status = newNodeStatus(*apiServer, *node, *token, *grace, k.out)
		k.status.machine()
	}
	if err := k.start(); err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
		os.Exit(1)
	}
	if *prSock != "" {
		os.Remove(*prSock)
		l, err := net.Listen("unix", *prSock)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
			os.Exit(1)
		}
		s := grpc.NewServer()
		var lim *bucket
		if *prQPS > 0 {
			lim = &bucket{qps: *prQPS, burst: float64(*prBurst), tokens: float64(*prBurst), last: time.Now()}
		}
		pr.RegisterPodResourcesListerServer(s, &podResources{file: *assign, delay: *prDelay, limiter: lim, out: k.out})
		go s.Serve(l)
	}
	k.out.emit(map[string]interface{}{"event": "ready", "dial-mode": *mode})

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	for in.Scan() {
		var c command
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			k.out.emit(map[string]interface{}{"event": "bad-command", "message": err.Error()})
			continue
		}
		if c.Cmd == "quit" {
			break
		}
		switch c.Cmd {
		case "allocate-async": // an Allocate that does not hold up the next command
			c.Cmd = "allocate"
			go k.handle(c)
			continue
		case "allocate-loop":
			if k.loop == nil {
				k.loop = make(chan string)
				go k.allocLoop(c, k.loop)
			}
			continue
		case "podresources-flood": // another caller on the node: List in a loop, c.Seconds long
			go podresourcesFlood(*prSock, c.Seconds, c.Workers, k.out)
			continue
		case "loop-pause", "loop-resume", "loop-stop":
			if k.loop != nil {
				k.loop <- strings.TrimPrefix(c.Cmd, "loop-")
				if c.Cmd == "loop-stop" {
					k.loop = nil
				}
			}
			continue
		}
		k.handle(c)
	}
	k.stop()
}

// podresourcesFlood plays other PodResources callers on the node (monitoring agents, a scraped
// exporter): workers connections calling List back to back for seconds, through the limiter.
func podresourcesFlood(sock string, seconds float64, workers int, out *output) {
	if workers <= 0 {
		workers = 4
	}
	end := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := grpc.Dial("unix://"+sock, grpc.WithInsecure())
			if err != nil {
				return
			}
			defer conn.Close()
			c := pr.NewPodResourcesListerClient(conn)
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, _ = c.List(ctx, &pr.ListPodResourcesRequest{})
				cancel()
			}
		}()
	}
	wg.Wait()
	out.emit(map[string]interface{}{"event": "podresources-flood-done"})
}
