// fake-dra-kubelet: an independent grpc-go peer playing the kubelet's side of Dynamic Resource
// Allocation for the integration tests.
//
// As the 1.34+ kubelet's plugin watcher does, it watches <root>/plugins_registry for sockets,
// calls pluginregistration GetInfo on each new one, checks the answer (type DRAPlugin, an
// endpoint that can be dialled, a supported version of the service it speaks: --api v1 wants
// "v1.DRAPlugin", v1beta1 "v1beta1.DRAPlugin"), dials the endpoint and reports the outcome
// with NotifyRegistrationStatus. A socket that goes away deregisters its driver. The watcher
// polls (100 ms) instead of using inotify: the Debian Go packages carry no fsnotify.
//
// With --apiserver and --node it also does to ResourceSlices what the kubelet's DRA manager
// does (pkg/kubelet/cm/dra/plugin/registration.go, wipeResourceSlices): at its start (and at a
// "restart") it deletes every ResourceSlice of its node (DeleteCollection with fieldSelector
// spec.nodeName=<node>), and --wiping-delay (upstream's defaultWipingDelay, 30 s) after a
// driver's registration socket went away it deletes that driver's slices of the node, unless
// the driver registered again meanwhile. Each wipe is a "wipe" event.
//
// The test driver sends commands as JSON lines on stdin and reads events as JSON lines on
// stdout (each with a "t" timestamp in milliseconds):
//
//	{"cmd":"prepare","driver":D,"claims":[{"namespace":N,"name":M,"uid":U}]}
//	{"cmd":"unprepare","driver":D,"claims":[...]}
//	{"cmd":"watch-health","driver":D,"version":"v1alpha1"|"v1beta1"|"v1"}   open a DRAResourceHealth
//	                    NodeWatchResources stream; every message is a "health" event
//	{"cmd":"bench-prepare","driver":D,"claims":[...],"n":N}   time N Prepare calls
//	{"cmd":"restart"}   forget every driver, wipe the node's slices and register the drivers
//	                    again, as a restarted kubelet
//	{"cmd":"quit"}
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	dra "sriov-agent/proto/dra"
	health "sriov-agent/proto/drahealth"
	healthv1 "sriov-agent/proto/drahealthv1"
	healthv1alpha1 "sriov-agent/proto/drahealthv1alpha1"
	healthv1beta1 "sriov-agent/proto/drahealthv1beta1"
	drav1 "sriov-agent/proto/drav1"
	drav1beta1 "sriov-agent/proto/drav1beta1"
	reg "sriov-agent/proto/pluginregistration"
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

// socketID tells a socket file from the one that was there before (a plugin restarted).
type socketID struct {
	ino   uint64
	ctime int64
}

type driver struct {
	name     string
	endpoint string
	socket   string
	conn     *grpc.ClientConn
}

type kubelet struct {
	root    string
	api     string
	out     *output
	mu      sync.Mutex
	seen    map[string]socketID // registration socket -> the file we registered
	drivers map[string]*driver  // by driver name

	apiserver   string // "" : no API server, no wiping
	node        string
	wipingDelay time.Duration
	wipes       map[string]*time.Timer // driver -> its pending wipe
}

// wipe deletes the node's ResourceSlices, of one driver or (driver "") of all, as the kubelet's
// wipeResourceSlices does: one DeleteCollection with a field selector.
func (k *kubelet) wipe(driverName, why string) {
	if k.apiserver == "" {
		return
	}
	sel := "spec.nodeName=" + k.node
	if driverName != "" {
		sel += ",spec.driver=" + driverName
	}
	ev := map[string]interface{}{"event": "wipe", "driver": driverName, "why": why}
	defer k.out.emit(ev)
	req, err := http.NewRequest("DELETE", k.apiserver+
		"/apis/resource.k8s.io/v1/resourceslices?fieldSelector="+url.QueryEscape(sel), nil)
	if err != nil {
		ev["code"] = "BadRequest"
		return
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		ev["code"] = "Failed"
		ev["message"] = err.Error()
		return
	}
	defer resp.Body.Close()
	var list struct {
		Items []interface{} `json:"items"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&list)
	ev["status"] = resp.StatusCode
	ev["deleted"] = len(list.Items)
	if resp.StatusCode == 200 {
		ev["code"] = "OK"
	}
}

// scheduleWipe: the driver's slices go wipingDelay after its socket went away; a registration
// meanwhile cancels it (callers hold k.mu).
func (k *kubelet) scheduleWipe(name string) {
	if k.apiserver == "" {
		return
	}
	if t := k.wipes[name]; t != nil {
		t.Stop()
	}
	k.wipes[name] = time.AfterFunc(k.wipingDelay, func() {
		k.mu.Lock()
		_, back := k.drivers[name]
		delete(k.wipes, name)
		k.mu.Unlock()
		if !back {
			k.wipe(name, "driver gone")
		}
	})
}

func dial(path string) (*grpc.ClientConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// kubelets since 1.26 send "localhost" as :authority on unix sockets.
	return grpc.DialContext(ctx, path, grpc.WithInsecure(), grpc.WithBlock(),
		grpc.WithAuthority("localhost"),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
}

func errFields(ev map[string]interface{}, err error) {
	st, _ := status.FromError(err)
	ev["code"] = st.Code().String()
	ev["message"] = st.Message()
}

func (k *kubelet) wantedVersion() string {
	return k.api + ".DRAPlugin"
}

// register does what pluginwatcher's operation executor and the DRA handler do for one socket.
func (k *kubelet) register(sock string) {
	ev := map[string]interface{}{"event": "register", "socket": sock}
	defer k.out.emit(ev)
	conn, err := dial(sock)
	if err != nil {
		ev["code"] = "DialFailed"
		ev["message"] = err.Error()
		return
	}
	defer conn.Close()
	rc := reg.NewRegistrationClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := rc.GetInfo(ctx, &reg.InfoRequest{})
	if err != nil {
		errFields(ev, err)
		return
	}
	ev["type"] = info.Type
	ev["driver"] = info.Name
	ev["endpoint"] = info.Endpoint
	ev["versions"] = info.SupportedVersions
	reject := ""
	found := false
	for _, v := range info.SupportedVersions {
		found = found || v == k.wantedVersion()
	}
	var dconn *grpc.ClientConn
	switch {
	case info.Type != "DRAPlugin":
		reject = "plugin type " + info.Type + " is not DRAPlugin"
	case info.Name == "":
		reject = "empty driver name"
	case !found:
		reject = "none of the versions " + strings.Join(info.SupportedVersions, ",") +
			" is " + k.wantedVersion()
	case !filepath.IsAbs(info.Endpoint):
		reject = "endpoint " + info.Endpoint + " is not an absolute path"
	default:
		if dconn, err = dial(info.Endpoint); err != nil {
			reject = "cannot dial endpoint " + info.Endpoint + ": " + err.Error()
		}
	}
	if _, err := rc.NotifyRegistrationStatus(ctx, &reg.RegistrationStatus{
		PluginRegistered: reject == "", Error: reject}); err != nil {
		ev["notify-error"] = err.Error()
	}
	if reject != "" {
		ev["code"] = "Rejected"
		ev["message"] = reject
		return
	}
	ev["code"] = "OK"
	ev["api"] = k.api
	k.mu.Lock()
	if t := k.wipes[info.Name]; t != nil {
		t.Stop()
		delete(k.wipes, info.Name)
	}
	if old := k.drivers[info.Name]; old != nil {
		old.conn.Close()
	}
	k.drivers[info.Name] = &driver{name: info.Name, endpoint: info.Endpoint, socket: sock,
		conn: dconn}
	k.mu.Unlock()
}

func (k *kubelet) scan() {
	dir := filepath.Join(k.root, "plugins_registry")
	entries, _ := os.ReadDir(dir)
	present := map[string]bool{}
	for _, e := range entries {
		sock := filepath.Join(dir, e.Name())
		var st syscall.Stat_t
		if syscall.Stat(sock, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			continue
		}
		present[sock] = true
		id := socketID{ino: st.Ino, ctime: st.Ctim.Nano()}
		k.mu.Lock()
		old, known := k.seen[sock]
		k.seen[sock] = id
		k.mu.Unlock()
		if !known || old != id {
			k.register(sock)
		}
	}
	k.mu.Lock()
	var gone []string
	for sock := range k.seen {
		if !present[sock] {
			gone = append(gone, sock)
			delete(k.seen, sock)
		}
	}
	for name, d := range k.drivers {
		for _, sock := range gone {
			if d.socket == sock {
				d.conn.Close()
				delete(k.drivers, name)
				k.scheduleWipe(name)
				k.out.emit(map[string]interface{}{"event": "deregister", "driver": name,
					"socket": sock})
			}
		}
	}
	k.mu.Unlock()
}

func (k *kubelet) forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, d := range k.drivers {
		d.conn.Close()
		delete(k.drivers, name)
	}
	k.seen = map[string]socketID{}
}

type claim struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

type command struct {
	Cmd     string  `json:"cmd"`
	Driver  string  `json:"driver"`
	Claims  []claim `json:"claims"`
	Version string  `json:"version"`
	N       int     `json:"n"`
}

// benchPrepare times n sequential NodePrepareResources calls for the same claims, as the
// kubelet makes them (one call per pod sandbox), and reports median and p99 in microseconds.
// draClient is the DRAPlugin service in the version the kubelet speaks (--api): v1 and
// v1beta1 differ only in the service name, their messages are the same (package dra).
type draClient interface {
	NodePrepareResources(ctx context.Context, in *dra.NodePrepareResourcesRequest,
		opts ...grpc.CallOption) (*dra.NodePrepareResourcesResponse, error)
	NodeUnprepareResources(ctx context.Context, in *dra.NodeUnprepareResourcesRequest,
		opts ...grpc.CallOption) (*dra.NodeUnprepareResourcesResponse, error)
}

func (k *kubelet) draClient(d *driver) draClient {
	if k.api == "v1" {
		return drav1.NewDRAPluginClient(d.conn)
	}
	return drav1beta1.NewDRAPluginClient(d.conn)
}

func (k *kubelet) benchPrepare(d *driver, claims []*dra.Claim, n int, ev map[string]interface{}) {
	var lat []float64
	client := k.draClient(d)
	for i := 0; i < n; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t0 := time.Now()
		req := &dra.NodePrepareResourcesRequest{Claims: claims}
		_, err := client.NodePrepareResources(ctx, req)
		cancel()
		if err != nil {
			errFields(ev, err)
			return
		}
		lat = append(lat, float64(time.Since(t0).Microseconds()))
	}
	sort.Float64s(lat)
	ev["code"] = "OK"
	ev["median_us"] = lat[len(lat)/2]
	ev["p99_us"] = lat[(len(lat)*99)/100]
}

// healthStream is what the kubelet's health manager does: one stream per driver, each
// message the full list of the driver's devices.
type healthStream interface {
	Recv() (*health.NodeWatchResourcesResponse, error)
}

func (k *kubelet) watchHealth(d *driver, version string, ev map[string]interface{}) {
	var stream healthStream
	var err error
	ctx := context.Background()
	if version == "v1" {
		stream, err = healthv1.NewDRAResourceHealthClient(d.conn).NodeWatchResources(ctx,
			&health.NodeWatchResourcesRequest{})
	} else if version == "v1beta1" {
		stream, err = healthv1beta1.NewDRAResourceHealthClient(d.conn).NodeWatchResources(ctx,
			&health.NodeWatchResourcesRequest{})
	} else {
		stream, err = healthv1alpha1.NewDRAResourceHealthClient(d.conn).NodeWatchResources(ctx,
			&health.NodeWatchResourcesRequest{})
	}
	if err != nil {
		errFields(ev, err)
		return
	}
	ev["code"] = "OK"
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				k.out.emit(map[string]interface{}{"event": "health-end", "driver": d.name,
					"message": err.Error()})
				return
			}
			var devs []map[string]interface{}
			for _, h := range resp.Devices {
				devs = append(devs, map[string]interface{}{
					"pool": h.GetDevice().GetPoolName(), "device": h.GetDevice().GetDeviceName(),
					"health": h.Health.String(), "message": h.Message,
					"timeout": h.HealthCheckTimeoutSeconds, "updated": h.LastUpdatedTime})
			}
			k.out.emit(map[string]interface{}{"event": "health", "driver": d.name,
				"version": version, "devices": devs})
		}
	}()
}

func (k *kubelet) handle(c command) {
	ev := map[string]interface{}{"event": c.Cmd, "driver": c.Driver}
	defer k.out.emit(ev)
	if c.Cmd == "restart" {
		k.forget()
		k.wipe("", "kubelet start")
		return
	}
	k.mu.Lock()
	d := k.drivers[c.Driver]
	k.mu.Unlock()
	if d == nil {
		ev["code"] = "NoDriver"
		return
	}
	var claims []*dra.Claim
	for _, cl := range c.Claims {
		claims = append(claims, &dra.Claim{Namespace: cl.Namespace, Name: cl.Name, Uid: cl.UID})
	}
	if c.Cmd == "watch-health" {
		k.watchHealth(d, c.Version, ev)
		return
	}
	if c.Cmd == "bench-prepare" {
		if c.N < 1 {
			c.N = 1000
		}
		k.benchPrepare(d, claims, c.N, ev)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev["api"] = k.api
	switch c.Cmd {
	case "prepare":
		req := &dra.NodePrepareResourcesRequest{Claims: claims}
		resp, err := k.draClient(d).NodePrepareResources(ctx, req)
		if err != nil {
			errFields(ev, err)
			return
		}
		ev["code"] = "OK"
		out := map[string]interface{}{}
		for uid, r := range resp.Claims {
			var devs []map[string]interface{}
			for _, dv := range r.Devices {
				devs = append(devs, map[string]interface{}{"requests": dv.RequestNames,
					"pool": dv.PoolName, "device": dv.DeviceName, "cdi": dv.CdiDeviceIds})
			}
			out[uid] = map[string]interface{}{"devices": devs, "error": r.Error}
		}
		ev["claims"] = out
	case "unprepare":
		req := &dra.NodeUnprepareResourcesRequest{Claims: claims}
		resp, err := k.draClient(d).NodeUnprepareResources(ctx, req)
		if err != nil {
			errFields(ev, err)
			return
		}
		ev["code"] = "OK"
		out := map[string]interface{}{}
		for uid, r := range resp.Claims {
			out[uid] = map[string]interface{}{"error": r.Error}
		}
		ev["claims"] = out
	default:
		ev["code"] = "UnknownCommand"
	}
}

func main() {
	root := flag.String("root", "", "kubelet root directory (plugins_registry is watched there)")
	api := flag.String("api", "v1", "DRAPlugin service version spoken: v1 or v1beta1")
	apiserver := flag.String("apiserver", "", "API server URL (anonymous) for wiping ResourceSlices")
	node := flag.String("node", "", "the node's name, whose ResourceSlices are wiped")
	wipingDelay := flag.Duration("wiping-delay", 30*time.Second,
		"how long after a driver's socket went away its slices are wiped")
	flag.Parse()
	if *root == "" || (*api != "v1" && *api != "v1beta1") {
		fmt.Fprintln(os.Stderr, "fake-dra-kubelet: --root DIR and --api v1|v1beta1 are required")
		os.Exit(2)
	}
	k := &kubelet{root: *root, api: *api, out: &output{enc: json.NewEncoder(os.Stdout)},
		seen: map[string]socketID{}, drivers: map[string]*driver{},
		apiserver: strings.TrimRight(*apiserver, "/"), node: *node, wipingDelay: *wipingDelay,
		wipes: map[string]*time.Timer{}}
	if k.apiserver != "" && k.node == "" {
		fmt.Fprintln(os.Stderr, "fake-dra-kubelet: --apiserver needs --node")
		os.Exit(2)
	}
	if err := os.MkdirAll(filepath.Join(*root, "plugins_registry"), 0o750); err != nil {
		fmt.Fprintln(os.Stderr, "fake-dra-kubelet:", err)
		os.Exit(1)
	}
	cmds := make(chan command)
	go func() {
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 1<<20), 16<<20)
		for in.Scan() {
			var c command
			if err := json.Unmarshal(in.Bytes(), &c); err != nil {
				k.out.emit(map[string]interface{}{"event": "bad-command", "message": err.Error()})
				continue
			}
			cmds <- c
		}
		close(cmds)
	}()
	k.wipe("", "kubelet start")
	k.out.emit(map[string]interface{}{"event": "ready", "api": *api})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	// One goroutine does the watching and the commands, so that a command never races a
	// registration of the same driver.
	for {
		select {
		case c, ok := <-cmds:
			if !ok || c.Cmd == "quit" {
				k.forget()
				return
			}
			k.handle(c)
		case <-tick.C:
			k.scan()
		}
	}
}
