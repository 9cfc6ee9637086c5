/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the PodResources client: decoding List answers into in-use device sets, and a
 * List call against a small in-process PodResources server (lib/deviceplugin/podresources.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <systemd/sd-event.h>

#include "deviceplugin/podresources.h"
#include "grpc/grpc-server.h"
#include "podresources.pb-c.h"

/* Two pods; pod a has two containers using sriov_net (one ID twice) and a GPU. */
static void pack_sample(uint8_t **ret, size_t *ret_len)
{
        char *ids1[] = { "0000:3b:01.0", "0000:3b:01.1" }, *ids2[] = { "0000:3b:01.1" },
             *gpu[] = { "gpu0" }, *vf[] = { "0000:5e:01.3" };
        V1__ContainerDevices d1 = V1__CONTAINER_DEVICES__INIT, d2 = V1__CONTAINER_DEVICES__INIT,
                             d3 = V1__CONTAINER_DEVICES__INIT, d4 = V1__CONTAINER_DEVICES__INIT;
        d1.resource_name = "openshift.io/sriov_net";
        d1.n_device_ids = 2;
        d1.device_ids = ids1;
        d2.resource_name = "openshift.io/sriov_net";
        d2.n_device_ids = 1;
        d2.device_ids = ids2;
        d3.resource_name = "nvidia.com/gpu";
        d3.n_device_ids = 1;
        d3.device_ids = gpu;
        d4.resource_name = "openshift.io/sriov_vfio";
        d4.n_device_ids = 1;
        d4.device_ids = vf;
        V1__ContainerDevices *c1d[] = { &d1, &d3 }, *c2d[] = { &d2 }, *c3d[] = { &d4 };
        V1__ContainerResources c1 = V1__CONTAINER_RESOURCES__INIT,
                               c2 = V1__CONTAINER_RESOURCES__INIT,
                               c3 = V1__CONTAINER_RESOURCES__INIT;
        c1.name = "c1";
        c1.n_devices = 2;
        c1.devices = c1d;
        c2.name = "c2";
        c2.n_devices = 1;
        c2.devices = c2d;
        c3.name = "c3";
        c3.n_devices = 1;
        c3.devices = c3d;
        V1__ContainerResources *pa[] = { &c1, &c2 }, *pb[] = { &c3 };
        V1__PodResources a = V1__POD_RESOURCES__INIT, b = V1__POD_RESOURCES__INIT;
        a.name = "a";
        a.namespace_ = "ns";
        a.n_containers = 2;
        a.containers = pa;
        b.name = "b";
        b.namespace_ = "ns";
        b.n_containers = 1;
        b.containers = pb;
        V1__PodResources *pods[] = { &a, &b };
        V1__ListPodResourcesResponse resp = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
        resp.n_pod_resources = 2;
        resp.pod_resources = pods;
        *ret_len = v1__list_pod_resources_response__get_packed_size(&resp);
        *ret = malloc(*ret_len);
        v1__list_pod_resources_response__pack(&resp, *ret);
}

static void check_sample(const struct dp_usage *u)
{
        assert_int_equal(u->n_resources, 3);
        const struct dp_resource_usage *r = dp_usage_find(u, "openshift.io/sriov_net");
        assert_non_null(r);
        assert_int_equal(r->n_ids, 2);
        assert_true(dp_usage_in_use(u, "openshift.io/sriov_net", "0000:3b:01.1"));
        assert_true(dp_usage_in_use(u, "openshift.io/sriov_vfio", "0000:5e:01.3"));
        assert_false(dp_usage_in_use(u, "openshift.io/sriov_net", "0000:5e:01.3"));
        assert_false(dp_usage_in_use(u, "openshift.io/other", "0000:3b:01.0"));
        /* who holds each device, for the metrics' pod attribution: every (container, device)
         * in the kubelet's order, the ID held by two containers twice */
        assert_int_equal(u->n_holders, 5);
        const struct dp_device_holder *h = &u->holders[1];
        assert_string_equal(h->resource, "openshift.io/sriov_net");
        assert_string_equal(h->id, "0000:3b:01.1");
        assert_string_equal(h->namespace_, "ns");
        assert_string_equal(h->pod, "a");
        assert_string_equal(h->container, "c1");
        assert_string_equal(u->holders[2].id, "gpu0");
        assert_string_equal(u->holders[3].container, "c2");
        assert_string_equal(u->holders[3].id, "0000:3b:01.1");
        assert_string_equal(u->holders[4].pod, "b");
        assert_string_equal(u->holders[4].container, "c3");
}

static void test_decode(void **state)
{
        uint8_t *buf;
        size_t len;
        pack_sample(&buf, &len);
        struct dp_usage u = { 0 };
        assert_int_equal(dp_usage_from_list_response(buf, len, &u), 0);
        check_sample(&u);
        dp_usage_done(&u);
        free(buf);
        const uint8_t garbage[] = { 0x0a, 0xff, 0xff, 0xff, 0x7f, 1 };
        assert_int_equal(dp_usage_from_list_response(garbage, sizeof(garbage), &u), -EBADMSG);
        assert_int_equal(dp_usage_from_list_response(NULL, 0, &u), 0); /* nothing in use */
        assert_int_equal(u.n_resources, 0);
}

static int list(void *userdata, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                struct grpc_status *st)
{
        pack_sample(ret, ret_len);
        return GRPC_STATUS_OK;
}

struct result {
        bool done;
        int error;
        char message[256];
        size_t n;
};

static void on_usage(void *userdata, int error, const char *message, const struct dp_usage *u)
{
        struct result *r = userdata;
        r->done = true;
        r->error = error;
        snprintf(r->message, sizeof(r->message), "%s", message ?: "");
        if (u)
                check_sample(u);
        r->n = u ? u->n_resources : 0;
}

static void test_list_call(void **state)
{
        char dir[] = "/tmp/test-podres-XXXXXX", path[64];
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/kubelet.sock", dir);
        static const struct grpc_method methods[] = {
                { .path = "/v1.PodResourcesLister/List", .unary = list },
        };
        sd_event *e;
        struct grpc_server *s;
        assert_int_equal(sd_event_new(&e), 0);
        assert_int_equal(grpc_server_new(e, path, methods, 1, NULL, &s), 0);
        struct result r = { 0 };
        assert_int_equal(dp_podresources_list(e, path, 2000000, on_usage, &r, NULL), 0);
        for (int i = 0; i < 1000 && !r.done; i++)
                assert_true(sd_event_run(e, 100000) >= 0);
        assert_true(r.done);
        assert_int_equal(r.error, 0);
        assert_int_equal(r.n, 3);
        grpc_server_free(s);

        /* No kubelet: reported from the loop (never from inside the call), with the reason. */
        r = (struct result){ 0 };
        assert_int_equal(dp_podresources_list(e, path, 2000000, on_usage, &r, NULL), 0);
        assert_false(r.done);
        for (int i = 0; i < 100 && !r.done; i++)
                assert_true(sd_event_run(e, 100000) >= 0);
        assert_true(r.done);
        assert_int_equal(r.error, -ENOENT);
        assert_non_null(strstr(r.message, path));

        /* Cancelled: done is never called. */
        r = (struct result){ 0 };
        struct dp_podresources_call *c = NULL;
        assert_int_equal(dp_podresources_list(e, path, 2000000, on_usage, &r, &c), 0);
        dp_podresources_call_cancel(c);
        for (int i = 0; i < 5; i++)
                assert_true(sd_event_run(e, 10000) >= 0);
        assert_false(r.done);
        sd_event_unref(e);
        struct dp_usage u = { 0 };
        assert_int_equal(dp_podresources_list_sync(path, 1000000, &u), -ENOENT);
        rmdir(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode),
                cmocka_unit_test(test_list_call),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
