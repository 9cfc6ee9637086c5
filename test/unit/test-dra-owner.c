/* SPDX-License-Identifier: Apache-2.0 */
/* cni_dra_owner_check (agent/cni/dra-owner.c): a VF the agent's DRA driver prepared goes to the
 * pods its claim is reserved for, and to no other pod, from the claim records in a temporary
 * agent state directory as agent/dra.c writes them. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cni/conf.h"
#include "cni/podres.h"
#include "deviceplugin/podresources.h"
#include "dra-owner.h"
#include "podres.h"
#include "util/fileio.h"

#define RECORD_DIR_FMT "%s/dra"

static char dir[64];

static void write_record(const char *uid, const char *text)
{
        char path[256];
        snprintf(path, sizeof(path), RECORD_DIR_FMT "/sriovnetwork.k8snetworkplumbingwg.io-%s.json",
                 dir, uid);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int setup(void **state)
{
        char sub[128];
        snprintf(dir, sizeof(dir), "/tmp/test-dra-owner-XXXXXX");
        assert_non_null(mkdtemp(dir));
        snprintf(sub, sizeof(sub), RECORD_DIR_FMT, dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        write_record("uid-1", "{\"namespace\":\"team-a\",\"name\":\"nic\",\"uid\":\"uid-1\","
                              "\"reservedFor\":[{\"name\":\"train-0\",\"uid\":\"p1\"}],"
                              "\"devices\":[{\"request\":\"nic\",\"pool\":\"n\","
                              "\"device\":\"0000-3b-01-2\",\"cdi\":\"x\"}]}");
        /* an agent before the claim's pods were recorded wrote this one */
        write_record("uid-old", "{\"devices\":[{\"device\":\"0000-3b-01-5\"}]}");
        return 0;
}

static int teardown(void **state)
{
        char path[256];
        snprintf(path, sizeof(path),
                 RECORD_DIR_FMT "/sriovnetwork.k8snetworkplumbingwg.io-uid-1.json", dir);
        unlink(path);
        snprintf(path, sizeof(path),
                 RECORD_DIR_FMT "/sriovnetwork.k8snetworkplumbingwg.io-uid-old.json", dir);
        unlink(path);
        snprintf(path, sizeof(path), RECORD_DIR_FMT, dir);
        rmdir(path);
        rmdir(dir);
        return 0;
}

static void test_claims_pod_takes_it(void **state)
{
        struct cni_error e = { 0 };
        const struct cni_pod_ref pod = { .namespace_ = "team-a", .name = "train-0" };
        assert_int_equal(cni_dra_owner_check(dir, "0000:3b:01.2", &pod, &e), 1);
}

static void test_other_pods_refused(void **state)
{
        struct cni_error e = { 0 };
        /* another tenant's pod of the same name, and another pod of the claim's namespace */
        const struct cni_pod_ref other_ns = { .namespace_ = "team-b", .name = "train-0" };
        assert_int_equal(cni_dra_owner_check(dir, "0000:3b:01.2", &other_ns, &e), -EACCES);
        assert_int_equal(e.code, CNI_ERR_INVALID_CONFIG);
        assert_non_null(strstr(e.msg, "team-a/nic"));
        assert_non_null(strstr(e.msg, "team-b/train-0"));
        const struct cni_pod_ref other = { .namespace_ = "team-a", .name = "intruder" };
        e = (struct cni_error){ 0 };
        assert_int_equal(cni_dra_owner_check(dir, "0000:3b:01.2", &other, &e), -EACCES);
        assert_non_null(strstr(e.msg, "team-a/nic"));
        e = (struct cni_error){ 0 };
        assert_int_equal(cni_dra_owner_check(dir, "0000:3b:01.2", NULL, &e), -EACCES);
        assert_non_null(strstr(e.msg, "names no pod"));
}

static void test_not_a_dra_vf(void **state)
{
        struct cni_error e = { 0 };
        const struct cni_pod_ref pod = { .namespace_ = "team-a", .name = "train-0" };
        assert_int_equal(cni_dra_owner_check(dir, "0000:3b:01.3", &pod, &e), 0);
        assert_int_equal(cni_dra_owner_check("/nonexistent", "0000:3b:01.2", &pod, &e), 0);
}

static void test_record_of_an_older_agent(void **state)
{
        struct cni_error e = { 0 };
        const struct cni_pod_ref pod = { .namespace_ = "x", .name = "y" };
        assert_int_equal(cni_dra_owner_check(dir, "0000:3b:01.5", &pod, &e), 1);
}

/* Through the CNI plugin's PodResources check: no kubelet answers here (that check alone would
 * let any pod through, the pool check deciding), yet the claim's VF is refused to a pod of
 * another namespace and given to the claim's own pod. */
static void test_podres_check(void **state)
{
        struct cni_error e = { 0 };
        assert_int_equal(cni_podres_check("/nonexistent/pod-resources.sock", 200, dir,
                                          "K8S_POD_NAMESPACE=team-b;K8S_POD_NAME=train-0",
                                          "0000:3b:01.2", "openshift.io/sriov_highnet", &e),
                         -EACCES);
        assert_non_null(strstr(e.msg, "DRA ResourceClaim team-a/nic"));
        e = (struct cni_error){ 0 };
        assert_int_equal(cni_podres_check("/nonexistent/pod-resources.sock", 200, dir,
                                          "K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=train-0",
                                          "0000:3b:01.2", "openshift.io/sriov_highnet", &e),
                         0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_claims_pod_takes_it),
                cmocka_unit_test(test_other_pods_refused),
                cmocka_unit_test(test_not_a_dra_vf),
                cmocka_unit_test(test_record_of_an_older_agent),
                cmocka_unit_test(test_podres_check),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
