/* SPDX-License-Identifier: Apache-2.0 */
/* Every request the device plugin accepts from the kubelet, through the real handlers.
 *
 * The handlers are file-local to plugin.c, so this target compiles plugin.c into itself (the
 * static library's copy is then not linked) and calls them as the gRPC server would, on a
 * plugin whose pool is built the normal way (dp_pools_from_desired) from a small inventory.
 * Input: byte 0 picks the method and the pool, the rest is the protobuf request body. */
#include "../../lib/deviceplugin/plugin.c"

#include "../unit/dp-fixture.h"
#include "deviceplugin/pool.h"
#include "fuzz-common.h"

enum { POOL_NETDEV_RDMA, POOL_VFIO, N_POOLS };

static struct dp_plugin plugins[N_POOLS];
static char devinfo_dir[64];

static void build_plugin(struct dp_plugin *p, bool vfio)
{
        struct inventory inv = { 0 };
        const char *driver = vfio ? "vfio-pci" : "mlx5_core";
        struct pf_info *pf = fx_add_pf(&inv, 0x3b, "ens1f0", driver, 4, 0);
        for (int i = 0; i < 4 && !vfio; i++)
                fx_add_rdma(&pf->vfs[i].rdma, &pf->vfs[i].n_rdma, i);
        fx_add_pf(&inv, 0x5e, "ens2f0", driver, 4, 1);

        struct desired_state d = { 0 };
        enum device_type type = vfio ? DEVICE_TYPE_VFIO_PCI : DEVICE_TYPE_NETDEVICE;
        const char *res = vfio ? "vfio" : "net";
        struct vf_group *g = fx_add_group(&d, "0000:3b:00.0", res, type, 0, 3);
        g->is_rdma = !vfio;
        g->need_vhost_net = !vfio;
        fx_add_group(&d, "0000:5e:00.0", res, type, 0, 3);

        struct dp_pool_set s = { 0 };
        if (dp_pools_from_desired(&d, &inv, "example.com", &s) < 0 || s.n_pools != 1)
                abort();
        *p = (struct dp_plugin){ .pool = s.pools[0], .devinfo_dir = devinfo_dir };
        free(s.pools);
        desired_state_done(&d);
        inventory_done(&inv);
}

static void cleanup(void)
{
        for (size_t i = 0; i < N_POOLS; i++) {
                (void)dp_devinfo_remove_all(devinfo_dir, plugins[i].pool.resource);
                strv_free_n(plugins[i].devinfo_ids, plugins[i].n_devinfo_ids);
                dp_pool_done(&plugins[i].pool);
        }
        (void)rmdir(devinfo_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (!plugins[0].devinfo_dir) {
                fuzz_mkdtemp(devinfo_dir, sizeof(devinfo_dir), "fuzz-dp-requests");
                build_plugin(&plugins[POOL_NETDEV_RDMA], false);
                build_plugin(&plugins[POOL_VFIO], true);
                atexit(cleanup);
        }
        if (size < 1)
                return 0;

        static int (*const handlers[])(void *, const uint8_t *, size_t, uint8_t **, size_t *,
                                       struct grpc_status *) = {
                on_allocate,
                on_preferred,
                on_get_options,
                on_prestart,
        };
        const size_t n_handlers = sizeof(handlers) / sizeof(handlers[0]);
        struct dp_plugin *p = &plugins[(data[0] / n_handlers) % N_POOLS];
        struct grpc_status st = { 0 };
        uint8_t *resp = NULL;
        size_t resp_len = 0;
        int code = handlers[data[0] % n_handlers](p, data + 1, size - 1, &resp, &resp_len, &st);
        if (code == GRPC_STATUS_OK && !resp)
                abort(); /* an OK answer always carries a response message */
        free(resp);
        return 0;
}
