/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/kube/json-split: objects a real API server accepts but jansson cannot
 * decode (nesting beyond its depth, integers beyond 64 bits) or that are over the size cap
 * become named stubs; well-formed ones decode as they are; the scanner walks any depth. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kube/json-split.h"

static char *deep_policy(const char *name, int depth)
{
        size_t n = 256 + (size_t)depth * 6 + 16;
        char *s = malloc(n);
        int off = snprintf(s, n,
                           "{\"kind\":\"SriovNetworkNodePolicy\",\"apiVersion\":\"sriovnetwork."
                           "openshift.io/v1\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"ns\","
                           "\"annotations\":{\"a\":\"b\"}},\"spec\":{\"bridge\":",
                           name);
        for (int i = 0; i < depth; i++)
                off += snprintf(s + off, n - off, "{\"x\":");
        off += snprintf(s + off, n - off, "{}");
        for (int i = 0; i < depth; i++)
                s[off++] = '}';
        snprintf(s + off, n - off, "}}");
        return s;
}

static void test_deep_object_is_a_stub(void **state)
{
        char reason[256];
        char *text = deep_policy("deep", 2100);
        json_t *obj = kube_json_decode_object(text, strlen(text), 0, reason, sizeof(reason));
        assert_non_null(obj);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")), "deep");
        assert_string_equal(json_string_value(json_object_get(obj, "kind")),
                            "SriovNetworkNodePolicy");
        assert_non_null(strstr(kube_object_undecodable(obj), "cannot be decoded"));
        assert_null(json_object_get(obj, "spec"));
        /* Only the marker is kept among the annotations. */
        assert_int_equal(
            json_object_size(json_object_get(json_object_get(obj, "metadata"), "annotations")), 1);
        json_decref(obj);
        free(text);

        /* Shallow enough: decoded as it is, no marker. */
        text = deep_policy("fine", 100);
        obj = kube_json_decode_object(text, strlen(text), 0, reason, sizeof(reason));
        assert_non_null(obj);
        assert_null(kube_object_undecodable(obj));
        assert_non_null(json_object_get(obj, "spec"));
        json_decref(obj);
        free(text);
}

static void test_huge_integer_and_size_cap(void **state)
{
        char reason[256];
        const char *big =
            "{\"metadata\":{\"name\":\"big\"},\"spec\":{\"mtu\":100000000000000000000}}";
        json_t *obj = kube_json_decode_object(big, strlen(big), 0, reason, sizeof(reason));
        assert_non_null(obj);
        assert_non_null(kube_object_undecodable(obj));
        json_decref(obj);

        const char *ok = "{\"metadata\":{\"name\":\"small\"},\"spec\":{\"mtu\":9000}}";
        obj = kube_json_decode_object(ok, strlen(ok), 16, reason, sizeof(reason));
        assert_non_null(obj);
        assert_non_null(strstr(kube_object_undecodable(obj), "over the 16-byte limit"));
        json_decref(obj);

        /* No name, nothing to report it by: NULL with the reason. */
        const char *anon = "{\"spec\":{\"mtu\":100000000000000000000}}";
        assert_null(kube_json_decode_object(anon, strlen(anon), 0, reason, sizeof(reason)));
        assert_non_null(strstr(reason, "cannot be decoded"));
}

static int count_element(const char *value, size_t len, void *userdata)
{
        (*(int *)userdata)++;
        return 0;
}

static int find_items(const char *key, size_t key_len, const char *value, size_t value_len,
                      void *userdata)
{
        if (key_len == 5 && memcmp(key, "items", 5) == 0)
                return kube_json_array_elements(value, value_len, count_element, userdata);
        return 0;
}

static void test_scanner(void **state)
{
        char *deep = deep_policy("d", 5000);
        size_t n = strlen(deep) + 128;
        char *list = malloc(n);
        snprintf(list, n,
                 "{\"kind\":\"L\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[%s, "
                 "{\"s\":\"a]}\\\"\"} ,3]}",
                 deep);
        int count = 0;
        assert_int_equal(kube_json_object_members(list, strlen(list), find_items, &count), 0);
        assert_int_equal(count, 3);
        free(list);
        free(deep);

        const char *bad[] = { "", "[]", "{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":\"x}" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                count = 0;
                assert_int_equal(
                    kube_json_object_members(bad[i], strlen(bad[i]), find_items, &count), -EBADMSG);
        }
        count = 0;
        assert_int_equal(kube_json_array_elements("[1,[2,", 6, count_element, &count), -EBADMSG);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_deep_object_is_a_stub),
                cmocka_unit_test(test_huge_integer_and_size_cap),
                cmocka_unit_test(test_scanner),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
