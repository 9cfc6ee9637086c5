// grpc-go-plugin: the comparison peer of bench/run, a device-plugin server written the usual
// way (grpc-go, one server per resource, like sriov-network-device-plugin).
//
// It serves the same 4 pools × 128 synthetic devices as bench/bench-allocate.c (same resource
// names, device IDs, NUMA nodes, IOMMU groups, RDMA char devices) and gives the same answers
// as the agent's C plugin: ListAndWatch device lists, Allocate envs (PCIDEVICE_<RESOURCE> and
// its _INFO JSON) and device specs, and the CNI device-info file written at the first Allocate
// of a device. bench/run checks that the answers are equal before it compares timings, so a
// change on either side that makes them differ is caught rather than measured.
//
// Usage: grpc-go-plugin --dir KUBELET_DIR --devinfo-dir DIR
// Registers every pool with KUBELET_DIR/kubelet.sock and runs until SIGTERM/SIGINT or stdin EOF.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	dp "sriov-agent/proto/v1beta1"
)

const (
	prefix   = "openshift.io"
	nPools   = 4
	nDevices = 128
)

type device struct {
	id, pf      string
	numa        int64
	iommuGroup  int
	rdmaDevice  string
	charDevices []string
}

type pool struct {
	name       string
	vfio       bool
	rdma       bool
	vhost      bool
	devices    []device
	byID       map[string]*device
	devinfoDir string

	mu      sync.Mutex
	written map[string]bool // device-info files already on disk

	dp.UnimplementedDevicePluginServer
}

func (p *pool) resource() string { return prefix + "/" + p.name }

// The pools of bench-allocate.c's build_pools(), device for device.
func buildPools(devinfoDir string) []*pool {
	names := []string{"bench_vfio", "bench_rdma", "bench_vhost", "bench_net"}
	var pools []*pool
	for i := 0; i < nPools; i++ {
		p := &pool{name: names[i], vfio: i == 0, rdma: i == 1, vhost: i == 2,
			byID: map[string]*device{}, devinfoDir: devinfoDir, written: map[string]bool{}}
		for j := 0; j < nDevices; j++ {
			bus := 0x3b + i*2 + j/64
			d := device{id: fmt.Sprintf("0000:%02x:%02x.%d", bus, (j%64)/8, j%8),
				pf: fmt.Sprintf("0000:%02x:00.0", bus), numa: int64(j % 2),
				iommuGroup: 200 + i*nDevices + j}
			if p.rdma {
				d.rdmaDevice = fmt.Sprintf("mlx5_%d", j)
				d.charDevices = []string{fmt.Sprintf("/dev/infiniband/uverbs%d", j),
					fmt.Sprintf("/dev/infiniband/umad%d", j)}
			}
			p.devices = append(p.devices, d)
		}
		for j := range p.devices {
			p.byID[p.devices[j].id] = &p.devices[j]
		}
		pools = append(pools, p)
	}
	return pools
}

func (p *pool) envName() string {
	var b strings.Builder
	for _, c := range "PCIDEVICE_" + prefix + "_" + p.name {
		switch {
		case c >= 'a' && c <= 'z':
			b.WriteRune(c - 'a' + 'A')
		case (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_':
			b.WriteRune(c)
		default:
			b.WriteRune('_')
		}
	}
	return b.String()
}

func charDeviceOf(d *device, kind string) string {
	for _, path := range d.charDevices {
		base := filepath.Base(path)
		if strings.HasPrefix(base, kind) && len(base) > len(kind) &&
			base[len(kind)] >= '0' && base[len(kind)] <= '9' {
			return path
		}
	}
	return ""
}

func (p *pool) info(d *device) map[string]interface{} {
	info := map[string]interface{}{"generic": map[string]string{"deviceID": d.id}}
	if p.vfio {
		info["vfio"] = map[string]string{"mount": "/dev/vfio/vfio",
			"dev-mount": fmt.Sprintf("/dev/vfio/%d", d.iommuGroup)}
	}
	if p.rdma {
		r := map[string]string{"rdma_cm": "/dev/infiniband/rdma_cm", "rdma_dev": d.rdmaDevice}
		for _, kind := range []string{"uverbs", "umad", "issm"} {
			if path := charDeviceOf(d, kind); path != "" {
				r[kind] = path
			}
		}
		info["rdma"] = r
	}
	if p.vhost {
		info["vhost"] = map[string]string{"net-mount": "/dev/vhost-net",
			"tun-mount": "/dev/net/tun"}
	}
	return info
}

func addSpec(specs []*dp.DeviceSpec, path string) []*dp.DeviceSpec {
	for _, s := range specs {
		if s.HostPath == path {
			return specs
		}
	}
	return append(specs, &dp.DeviceSpec{ContainerPath: path, HostPath: path, Permissions: "rw"})
}

func (p *pool) writeDevinfo(d *device) {
	p.mu.Lock()
	defer p.mu.Unlock()
	path := filepath.Join(p.devinfoDir,
		strings.ReplaceAll(p.resource(), "/", "-")+"-"+d.id+"-device.json")
	if p.written[d.id] {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	pci := map[string]string{"pci-address": d.id}
	if p.rdma && d.rdmaDevice != "" {
		pci["rdma-device"] = d.rdmaDevice
	}
	data, _ := json.Marshal(map[string]interface{}{"type": "pci", "version": "1.1.0", "pci": pci})
	if err := os.MkdirAll(p.devinfoDir, 0755); err != nil {
		return
	}
	tmp := path + ".tmp"
	if os.WriteFile(tmp, data, 0644) == nil && os.Rename(tmp, path) == nil {
		p.written[d.id] = true
	}
}

func (p *pool) GetDevicePluginOptions(context.Context, *dp.Empty) (*dp.DevicePluginOptions, error) {
	return &dp.DevicePluginOptions{GetPreferredAllocationAvailable: true}, nil
}

func (p *pool) ListAndWatch(_ *dp.Empty, s dp.DevicePlugin_ListAndWatchServer) error {
	resp := &dp.ListAndWatchResponse{}
	for i := range p.devices {
		d := &p.devices[i]
		resp.Devices = append(resp.Devices, &dp.Device{ID: d.id, Health: "Healthy",
			Topology: &dp.TopologyInfo{Nodes: []*dp.NUMANode{{ID: d.numa}}}})
	}
	if err := s.Send(resp); err != nil {
		return err
	}
	<-s.Context().Done() // the pool never changes
	return nil
}

func (p *pool) GetPreferredAllocation(_ context.Context, r *dp.PreferredAllocationRequest) (*dp.PreferredAllocationResponse, error) {
	resp := &dp.PreferredAllocationResponse{}
	for _, c := range r.ContainerRequests {
		ids := append([]string{}, c.MustIncludeDeviceIDs...)
		for _, id := range c.AvailableDeviceIDs {
			if int32(len(ids)) >= c.AllocationSize {
				break
			}
			dup := false
			for _, have := range ids {
				dup = dup || have == id
			}
			if !dup {
				ids = append(ids, id)
			}
		}
		resp.ContainerResponses = append(resp.ContainerResponses,
			&dp.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return resp, nil
}

func (p *pool) Allocate(_ context.Context, r *dp.AllocateRequest) (*dp.AllocateResponse, error) {
	resp := &dp.AllocateResponse{}
	var used []*device
	for _, c := range r.ContainerRequests {
		var specs []*dp.DeviceSpec
		infos := map[string]interface{}{}
		for _, id := range c.DevicesIds {
			d := p.byID[id]
			if d == nil {
				return nil, status.Errorf(codes.InvalidArgument,
					"unknown device ID %q for resource %s", id, p.resource())
			}
			if p.vfio {
				specs = addSpec(specs, "/dev/vfio/vfio")
				specs = addSpec(specs, fmt.Sprintf("/dev/vfio/%d", d.iommuGroup))
			}
			if p.rdma {
				for _, cd := range d.charDevices {
					specs = addSpec(specs, cd)
				}
				specs = addSpec(specs, "/dev/infiniband/rdma_cm")
			}
			if p.vhost {
				specs = addSpec(specs, "/dev/vhost-net")
				specs = addSpec(specs, "/dev/net/tun")
			}
			infos[id] = p.info(d)
			used = append(used, d)
		}
		cr := &dp.ContainerAllocateResponse{Devices: specs}
		if len(c.DevicesIds) > 0 {
			info, err := json.Marshal(infos)
			if err != nil {
				return nil, status.Errorf(codes.Internal, "cannot build the allocation: %v", err)
			}
			cr.Envs = map[string]string{p.envName(): strings.Join(c.DevicesIds, ","),
				p.envName() + "_INFO": string(info)}
		}
		resp.ContainerResponses = append(resp.ContainerResponses, cr)
	}
	for _, d := range used {
		p.writeDevinfo(d)
	}
	return resp, nil
}

func (p *pool) PreStartContainer(context.Context, *dp.PreStartContainerRequest) (*dp.PreStartContainerResponse, error) {
	return &dp.PreStartContainerResponse{}, nil
}

func (p *pool) serve(dir string) (*grpc.Server, error) {
	endpoint := prefix + "_" + p.name + ".sock"
	sock := filepath.Join(dir, endpoint)
	os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer()
	dp.RegisterDevicePluginServer(s, p)
	go s.Serve(l)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, "unix://"+filepath.Join(dir, "kubelet.sock"),
		grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		s.Stop()
		return nil, err
	}
	defer conn.Close()
	_, err = dp.NewRegistrationClient(conn).Register(ctx, &dp.RegisterRequest{
		Version: "v1beta1", Endpoint: endpoint, ResourceName: p.resource(),
		Options: &dp.DevicePluginOptions{GetPreferredAllocationAvailable: true}})
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func main() {
	dir := flag.String("dir", "", "kubelet device-plugin directory (with kubelet.sock)")
	devinfo := flag.String("devinfo-dir", "", "device-info directory for CNI")
	flag.Parse()
	if *dir == "" || *devinfo == "" {
		fmt.Fprintln(os.Stderr, "grpc-go-plugin: --dir and --devinfo-dir are required")
		os.Exit(2)
	}
	var servers []*grpc.Server
	for _, p := range buildPools(*devinfo) {
		s, err := p.serve(*dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "grpc-go-plugin: %s: %v\n", p.resource(), err)
			os.Exit(1)
		}
		servers = append(servers, s)
	}
	done := make(chan os.Signal, 1)
	signal.Notify(done, syscall.SIGTERM, syscall.SIGINT)
	go func() { io.Copy(io.Discard, os.Stdin); done <- syscall.SIGTERM }()
	<-done
	for _, s := range servers {
		s.Stop()
	}
}
