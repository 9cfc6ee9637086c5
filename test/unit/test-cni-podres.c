/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/cni/podres: the pod CNI_ARGS names, the verdict on the kubelet's
 * PodResources answer, and the agent's DRA claim records. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni/podres.h"
#include "util/fileio.h"

static void test_args_pod(void **state)
{
        (void)state;
        struct cni_pod_ref pod;
        struct cni_error e = { 0 };
        assert_int_equal(cni_args_pod("IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web-1;"
                                      "K8S_POD_INFRA_CONTAINER_ID=abc",
                                      &pod, &e),
                         1);
        assert_string_equal(pod.namespace_, "ns");
        assert_string_equal(pod.name, "web-1");
        /* both keys, not empty; K8S_POD_NAME is not a prefix match of K8S_POD_NAMESPACE */
        assert_int_equal(cni_args_pod("K8S_POD_NAMESPACE=ns", &pod, &e), 0);
        assert_int_equal(cni_args_pod("K8S_POD_NAME=web-1", &pod, &e), 0);
        assert_int_equal(cni_args_pod("K8S_POD_NAMESPACE=ns;K8S_POD_NAME=", &pod, &e), 0);
        assert_int_equal(cni_args_pod(NULL, &pod, &e), 0);
        assert_int_equal(cni_args_pod("", &pod, &e), 0);
        /* the last of duplicates, as libcni's LoadArgs */
        assert_int_equal(
            cni_args_pod("K8S_POD_NAMESPACE=a;K8S_POD_NAME=x;K8S_POD_NAME=y", &pod, &e), 1);
        assert_string_equal(pod.name, "y");
        /* longer than a pod's name can be */
        char args[600];
        snprintf(args, sizeof(args), "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=%0300d", 0);
        assert_int_equal(cni_args_pod(args, &pod, &e), -EINVAL);
        assert_int_equal(e.code, CNI_ERR_INVALID_ENV);
        assert_non_null(strstr(e.msg, "K8S_POD_NAME"));
}

static void test_verdict(void **state)
{
        (void)state;
        const struct cni_device_holder h[] = {
                { "openshift.io/net_a", "0000:3b:00.2", "tenant-a", "web-1" },
                { "openshift.io/net_a", "0000:3b:00.3", "tenant-b", "web-2" },
                { "nvidia.com/gpu", "GPU-1", "tenant-a", "web-1" },
        };
        const struct cni_pod_ref a = { "tenant-a", "web-1" }, c = { "tenant-c", "web-1" };
        struct cni_error e = { 0 };
        assert_int_equal(cni_podres_verdict(h, 3, &a, "0000:3b:00.2", "net_a", &e), 0);
        /* another pod's VF: names both pods, the device and the kubelet's resource */
        assert_int_equal(cni_podres_verdict(h, 3, &a, "0000:3b:00.3", "net_a", &e), -EACCES);
        assert_int_equal(e.code, CNI_ERR_INVALID_CONFIG);
        assert_non_null(strstr(e.msg, "0000:3b:00.3"));
        assert_non_null(strstr(e.msg, "openshift.io/net_a"));
        assert_non_null(strstr(e.msg, "tenant-b/web-2"));
        assert_non_null(strstr(e.msg, "tenant-a/web-1"));
        /* nobody's: the pool's resource */
        assert_int_equal(cni_podres_verdict(h, 3, &a, "0000:3b:00.4", "net_a", &e), -EACCES);
        assert_non_null(strstr(e.msg, "resource net_a"));
        /* the same name in another namespace is another pod */
        assert_int_equal(cni_podres_verdict(h, 3, &c, "0000:3b:00.2", "net_a", &e), -EACCES);
        /* an empty answer holds nothing */
        assert_int_equal(cni_podres_verdict(NULL, 0, &a, "0000:3b:00.2", "net_a", &e), -EACCES);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_args_pod),
                cmocka_unit_test(test_verdict),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
