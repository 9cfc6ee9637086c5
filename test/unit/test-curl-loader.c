/* SPDX-License-Identifier: Apache-2.0 */
/* lib/kube/curl-loader: libcurl is mapped only once cluster code calls it (a standalone agent
 * never pays for its TLS/Kerberos/LDAP chain), and calls reach libcurl with their arguments
 * intact, whatever their type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "kube/curl-loader.h"

static size_t discard(char *p, size_t size, size_t n, void *userdata)
{
        return size * n;
}

static void test_not_mapped_until_used(void **state)
{
        /* Must run first: nothing in this process has called libcurl yet. */
        assert_false(curl_loader_loaded());

        char *e = curl_easy_escape(NULL, "a b/c", 0);
        assert_non_null(e);
        assert_string_equal(e, "a%20b%2Fc");
        curl_free(e);
        assert_true(curl_loader_loaded());
        assert_null(curl_loader_error());
}

static void test_arguments_forwarded(void **state)
{
        assert_int_equal(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
        CURL *easy = curl_easy_init();
        assert_non_null(easy);

        /* pointer in, pointer out */
        int marker;
        assert_int_equal(curl_easy_setopt(easy, CURLOPT_PRIVATE, &marker), CURLE_OK);
        void *got = NULL;
        assert_int_equal(curl_easy_getinfo(easy, CURLINFO_PRIVATE, &got), CURLE_OK);
        assert_ptr_equal(got, &marker);

        /* long: libcurl rejects a negative timeout only if it sees the value */
        assert_int_equal(curl_easy_setopt(easy, CURLOPT_TIMEOUT, 5L), CURLE_OK);
        assert_int_equal(curl_easy_setopt(easy, CURLOPT_TIMEOUT, -1L), CURLE_BAD_FUNCTION_ARGUMENT);
        /* string, function pointer, curl_off_t, blob */
        assert_int_equal(curl_easy_setopt(easy, CURLOPT_URL, "http://127.0.0.1:1/"), CURLE_OK);
        assert_int_equal(curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, discard), CURLE_OK);
        assert_int_equal(curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)-1),
                         CURLE_BAD_FUNCTION_ARGUMENT);
        assert_int_equal(curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)1 << 40),
                         CURLE_OK);
        struct curl_blob blob = { .data = (void *)"x", .len = 1, .flags = CURL_BLOB_COPY };
        CURLcode r = curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &blob);
        assert_true(r == CURLE_OK || r == CURLE_NOT_BUILT_IN);

        struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json");
        assert_non_null(h);
        assert_string_equal(h->data, "Accept: application/json");
        curl_slist_free_all(h);

        CURLM *multi = curl_multi_init();
        assert_non_null(multi);
        assert_int_equal(curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 4L), CURLM_OK);
        assert_int_equal(curl_multi_add_handle(multi, easy), CURLM_OK);
        assert_int_equal(curl_multi_remove_handle(multi, easy), CURLM_OK);
        int left = -1;
        assert_null(curl_multi_info_read(multi, &left));
        assert_int_equal(curl_multi_cleanup(multi), CURLM_OK);
        curl_easy_cleanup(easy);
        curl_global_cleanup();
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_not_mapped_until_used),
                cmocka_unit_test(test_arguments_forwarded),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
