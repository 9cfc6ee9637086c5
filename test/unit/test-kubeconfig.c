/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for lib/kube kubeconfig parsing (with its base64 and YAML helpers): every auth
 * variant, in-cluster config, token file rotation, and clear errors for broken files. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube/kubeconfig.h"
#include "util/base64.h"
#include "util/log.h"
#include "util/yaml-json.h"

#define PEM "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
/* base64 of PEM */
static char pem_b64[256];

struct fixture {
        char dir[64];
};

static void write_file(const char *dir, const char *name, const char *text)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int setup(void **state)
{
        struct fixture *f = calloc(1, sizeof(*f));
        snprintf(f->dir, sizeof(f->dir), "/tmp/test-kubeconfig-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        write_file(f->dir, "ca.crt", PEM);
        write_file(f->dir, "client.crt", PEM);
        write_file(f->dir, "client.key",
                   "-----BEGIN PRIVATE KEY-----\nAA\n-----END PRIVATE KEY-----\n");
        write_file(f->dir, "token", "file-token\n");
        *state = f;
        return 0;
}

static int teardown(void **state)
{
        struct fixture *f = *state;
        const char *names[] = { "ca.crt", "client.crt", "client.key", "token",
                                "kc",     "sa/token",   "sa/ca.crt" };
        char path[256];
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", f->dir, names[i]);
                unlink(path);
        }
        snprintf(path, sizeof(path), "%s/sa", f->dir);
        rmdir(path);
        rmdir(f->dir);
        free(f);
        return 0;
}

/* text with the first `from` replaced by `to`, or NULL when `from` is absent. */
__attribute__((noinline)) static char *replace_first(const char *text, const char *from,
                                                     const char *to)
{
        const char *found = strstr(text, from);
        char *out;

        if (!found ||
            asprintf(&out, "%.*s%s%s", (int)(found - text), text, to, found + strlen(from)) < 0)
                return NULL;
        return out;
}

__attribute__((noinline)) static char *kubeconfig(const char *cluster_extra, const char *user_extra)
{
        char *s;
        assert_true(asprintf(&s,
                             "apiVersion: v1\n"
                             "kind: Config\n"
                             "clusters:\n"
                             "- name: other\n"
                             "  cluster:\n"
                             "    server: https://wrong:1\n"
                             "- name: lab\n"
                             "  cluster:\n"
                             "    server: https://10.0.0.1:6443/\n"
                             "%s"
                             "users:\n"
                             "- name: admin\n"
                             "  user:\n"
                             "%s"
                             "contexts:\n"
                             "- name: lab-admin\n"
                             "  context:\n"
                             "    cluster: lab\n"
                             "    user: admin\n"
                             "current-context: lab-admin\n",
                             cluster_extra, user_extra) > 0);
        return s;
}

/* Loads text as <dir>/kc; captures what was logged to stderr into msg. */
static int load(struct fixture *f, const char *text, struct kube_config **ret, char *msg,
                size_t msg_size)
{
        write_file(f->dir, "kc", text);
        char path[256], logpath[256];
        snprintf(path, sizeof(path), "%s/kc", f->dir);
        snprintf(logpath, sizeof(logpath), "%s/log", f->dir);
        fflush(stderr);
        int saved = dup(STDERR_FILENO);
        int fd = open(logpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
        dup2(fd, STDERR_FILENO);
        int r = kube_config_load_file(path, ret);
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        lseek(fd, 0, SEEK_SET);
        ssize_t n = read(fd, msg, msg_size - 1);
        msg[n > 0 ? n : 0] = '\0';
        close(fd);
        unlink(logpath);
        return r;
}

static void test_base64(void **state)
{
        char *out;
        size_t len;
        assert_int_equal(base64_decode("aGVsbG8=", &out, &len), 0);
        assert_int_equal(len, 5);
        assert_string_equal(out, "hello");
        free(out);
        assert_int_equal(base64_decode("aGVs\nbG8h", &out, &len), 0);
        assert_string_equal(out, "hello!");
        free(out);
        assert_int_equal(base64_decode("aGk", &out, &len), 0); /* missing padding is tolerated */
        assert_string_equal(out, "hi");
        free(out);
        assert_int_equal(base64_decode("a*b=", &out, &len), -EINVAL);
        assert_int_equal(base64_decode("aGk=x", &out, &len), -EINVAL);
        assert_int_equal(base64_decode("a", &out, &len), -EINVAL);
}

static void test_yaml_to_json(void **state)
{
        json_t *j;
        char *err;
        const char *doc = "a: 1\nb: [x, \"true\", true]\nc: {d: null}\n";
        assert_int_equal(yaml_to_json(doc, strlen(doc), 0, &j, &err), 0);
        assert_string_equal(json_string_value(json_object_get(j, "a")), "1");
        assert_true(json_is_string(json_array_get(json_object_get(j, "b"), 1)));
        assert_true(json_is_true(json_array_get(json_object_get(j, "b"), 2)));
        assert_true(json_is_null(json_object_get(json_object_get(j, "c"), "d")));
        json_decref(j);

        const char *typed = "i: 8\nn: -1\nf: 1.5\nq: \"8\"\nv: 1.2.3\nh: 0x10\ne: .\ns: abc\n";
        assert_int_equal(yaml_to_json(typed, strlen(typed), YAML_JSON_TYPED, &j, &err), 0);
        assert_int_equal(json_integer_value(json_object_get(j, "i")), 8);
        assert_int_equal(json_integer_value(json_object_get(j, "n")), -1);
        assert_true(json_is_real(json_object_get(j, "f")));
        assert_string_equal(json_string_value(json_object_get(j, "q")), "8"); /* quoted */
        assert_string_equal(json_string_value(json_object_get(j, "v")), "1.2.3");
        assert_int_equal(json_integer_value(json_object_get(j, "h")), 16); /* as Kubernetes */
        assert_string_equal(json_string_value(json_object_get(j, "e")), ".");
        assert_string_equal(json_string_value(json_object_get(j, "s")), "abc");
        json_decref(j);
        assert_int_equal(yaml_to_json(typed, strlen(typed), 0, &j, &err), 0);
        assert_string_equal(json_string_value(json_object_get(j, "i")), "8"); /* untyped */
        json_decref(j);

        const char *alias = "a: &x [1]\nb: *x\n";
        assert_int_equal(yaml_to_json(alias, strlen(alias), YAML_JSON_NO_ALIASES, &j, &err),
                         -EINVAL);
        assert_non_null(strstr(err, "aliases are not supported"));
        free(err);
        assert_int_equal(yaml_to_json(alias, strlen(alias), 0, &j, &err), 0); /* expanded */
        assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "b"), 0)), 0);
        json_decref(j);

        const char *bad = "a: [1, 2\n";
        assert_int_equal(yaml_to_json(bad, strlen(bad), 0, &j, &err), -EINVAL);
        assert_non_null(strstr(err, "line "));
        free(err);

        char deep[400] = "";
        for (int i = 0; i < 100; i++)
                strcat(deep, "[");
        assert_int_equal(yaml_to_json(deep, strlen(deep), 0, &j, &err), -EINVAL);
        assert_non_null(err);
        free(err);
}

static void test_token(void **state)
{
        struct fixture *f = *state;
        struct kube_config *c = NULL;
        char msg[1024];
        char *text = kubeconfig("", "    token: abc.def\n");
        assert_int_equal(load(f, text, &c, msg, sizeof(msg)), 0);
        assert_string_equal(c->server, "https://10.0.0.1:6443"); /* trailing slash dropped */
        const char *t;
        assert_int_equal(kube_config_current_token(c, &t), 0);
        assert_string_equal(t, "abc.def");
        assert_false(c->insecure_skip_tls_verify);
        assert_null(c->ca_file);
        kube_config_free(c);
        free(text);
}

/* A token over plain http is allowed to a loopback server only; a KUBECONFIG list of several
 * files is refused (not merged, not half read). */
static void test_plain_http_and_lists(void **state)
{
        struct fixture *f = *state;
        struct kube_config *c = NULL;
        char msg[1024];
        char *text = kubeconfig("", "    token: abc\n");
        char *local = replace_first(text, "https://10.0.0.1:6443/", "http://127.0.0.1:8080");
        assert_int_equal(load(f, local, &c, msg, sizeof(msg)), 0);
        kube_config_free(c);
        c = NULL;
        char *v6 = replace_first(text, "https://10.0.0.1:6443/", "http://[::1]:8080");
        assert_int_equal(load(f, v6, &c, msg, sizeof(msg)), 0);
        kube_config_free(c);
        c = NULL;
        char *lookalike =
            replace_first(text, "https://10.0.0.1:6443/", "http://127.0.0.1.evil.example:80");
        assert_int_not_equal(load(f, lookalike, &c, msg, sizeof(msg)), 0);
        assert_non_null(strstr(msg, "refusing to send a bearer token"));
        setenv("SRIOV_AGENT_INSECURE_HTTP_TOKEN", "1", 1); /* the user says so */
        assert_int_equal(load(f, lookalike, &c, msg, sizeof(msg)), 0);
        unsetenv("SRIOV_AGENT_INSECURE_HTTP_TOKEN");
        kube_config_free(c);
        c = NULL;
        write_file(f->dir, "kc", local);
        free(text);
        free(local);
        free(v6);
        free(lookalike);

        char kc[256], env[600];
        snprintf(kc, sizeof(kc), "%s/kc", f->dir);
        snprintf(env, sizeof(env), "%s:%s/other", kc, f->dir);
        setenv("KUBECONFIG", env, 1);
        assert_int_equal(kube_config_load(NULL, &c), -EOPNOTSUPP);
        snprintf(env, sizeof(env), ":%s::", kc); /* empty entries do not count */
        setenv("KUBECONFIG", env, 1);
        assert_int_equal(kube_config_load(NULL, &c), 0);
        kube_config_free(c);
        unsetenv("KUBECONFIG");
}

static void test_client_cert_files_relative(void **state)
{
        struct fixture *f = *state;
        struct kube_config *c = NULL;
        char msg[1024], expect[256];
        char *text =
            kubeconfig("    certificate-authority: ca.crt\n", "    client-certificate: client.crt\n"
                                                              "    client-key: client.key\n");
        assert_int_equal(load(f, text, &c, msg, sizeof(msg)), 0);
        snprintf(expect, sizeof(expect), "%s/ca.crt", f->dir);
        assert_string_equal(c->ca_file, expect);
        snprintf(expect, sizeof(expect), "%s/client.crt", f->dir);
        assert_string_equal(c->client_cert_file, expect);
        snprintf(expect, sizeof(expect), "%s/client.key", f->dir);
        assert_string_equal(c->client_key_file, expect);
        const char *t;
        assert_int_equal(kube_config_current_token(c, &t), 0);
        assert_null(t);
        kube_config_free(c);
        free(text);
}

static void test_ca_and_cert_data(void **state)
{
        struct fixture *f = *state;
        struct kube_config *c = NULL;
        char msg[1024], cluster[512], user[1024];
        snprintf(cluster, sizeof(cluster), "    certificate-authority-data: %s\n", pem_b64);
        snprintf(user, sizeof(user), "    client-certificate-data: %s\n    client-key-data: %s\n",
                 pem_b64, pem_b64);
        char *text = kubeconfig(cluster, user);
        assert_int_equal(load(f, text, &c, msg, sizeof(msg)), 0);
        assert_int_equal(c->ca_data_len, strlen(PEM));
        assert_memory_equal(c->ca_data, PEM, strlen(PEM));
        assert_memory_equal(c->client_cert_data, PEM, strlen(PEM));
        assert_int_equal(c->client_key_data_len, strlen(PEM));
        kube_config_free(c);
        free(text);
}

static void test_insecure(void **state)
{
        struct fixture *f = *state;
        struct kube_config *c = NULL;
        char msg[1024];
        char *text = kubeconfig("    insecure-skip-tls-verify: true\n", "    token: x\n");
        assert_int_equal(load(f, text, &c, msg, sizeof(msg)), 0);
        assert_true(c->insecure_skip_tls_verify);
        kube_config_free(c);
        free(text);
        text = kubeconfig("    insecure-skip-tls-verify: \"true\"\n", "    token: x\n");
        assert_int_equal(load(f, text, &c, msg, sizeof(msg)), -EINVAL);
        assert_non_null(strstr(msg, "clusters[lab].cluster.insecure-skip-tls-verify"));
        free(text);
}

static void test_token_file_rotation(void **state)
{
        struct fixture *f = *state;
        struct kube_config *c = NULL;
        char msg[1024];
        char *text = kubeconfig("", "    tokenFile: token\n");
        assert_int_equal(load(f, text, &c, msg, sizeof(msg)), 0);
        const char *t;
        assert_int_equal(kube_config_current_token(c, &t), 0);
        assert_string_equal(t, "file-token");

        /* Projected tokens are replaced by rename; a new inode must be noticed. */
        char tmp[256], dst[256];
        snprintf(tmp, sizeof(tmp), "%s/token.new", f->dir);
        snprintf(dst, sizeof(dst), "%s/token", f->dir);
        write_file(f->dir, "token.new", "rotated-token-value\n");
        assert_int_equal(rename(tmp, dst), 0);
        assert_int_equal(kube_config_current_token(c, &t), 0);
        assert_string_equal(t, "rotated-token-value");

        /* A vanished file keeps the last good token rather than dropping authentication. */
        unlink(dst);
        assert_int_equal(kube_config_current_token(c, &t), 0);
        assert_string_equal(t, "rotated-token-value");
        write_file(f->dir, "token", "file-token\n");
        kube_config_free(c);
        free(text);
}

static void test_in_cluster(void **state)
{
        struct fixture *f = *state;
        char sa[128];
        snprintf(sa, sizeof(sa), "%s/sa", f->dir);
        assert_int_equal(mkdir(sa, 0700), 0);
        write_file(sa, "token", "sa-token");
        write_file(sa, "ca.crt", PEM);

        setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
        setenv("KUBERNETES_SERVICE_PORT", "443", 1);
        struct kube_config *c = NULL;
        assert_int_equal(kube_config_load_in_cluster(sa, &c), 0);
        assert_string_equal(c->server, "https://[fd00::1]:443");
        const char *t;
        assert_int_equal(kube_config_current_token(c, &t), 0);
        assert_string_equal(t, "sa-token");
        assert_non_null(strstr(c->ca_file, "/sa/ca.crt"));
        assert_null(c->namespace_); /* no namespace file: the caller's default applies */
        kube_config_free(c);

        /* The pod's namespace, as client-go reads it; garbage is refused naming the file. */
        write_file(sa, "namespace", "sriov-network-operator\n");
        assert_int_equal(kube_config_load_in_cluster(sa, &c), 0);
        assert_string_equal(c->namespace_, "sriov-network-operator");
        kube_config_free(c);
        write_file(sa, "namespace", "\n");
        assert_int_equal(kube_config_load_in_cluster(sa, &c), 0);
        assert_null(c->namespace_); /* empty, as client-go: no namespace */
        kube_config_free(c);
        write_file(sa, "namespace", "../nodes");
        assert_int_equal(kube_config_load_in_cluster(sa, &c), -EINVAL);
        char ns_path[160];
        snprintf(ns_path, sizeof(ns_path), "%s/namespace", sa);
        assert_int_equal(unlink(ns_path), 0);

        /* SRIOV_AGENT_SERVICE_ACCOUNT_DIR moves the service-account directory. */
        setenv("SRIOV_AGENT_SERVICE_ACCOUNT_DIR", sa, 1);
        unsetenv("KUBECONFIG");
        assert_true(kube_in_cluster());
        assert_int_equal(kube_config_load(NULL, &c), 0);
        assert_non_null(strstr(c->source, "/sa)"));
        kube_config_free(c);
        unsetenv("SRIOV_AGENT_SERVICE_ACCOUNT_DIR");

        unsetenv("KUBERNETES_SERVICE_HOST");
        assert_false(kube_in_cluster());
        assert_int_equal(kube_config_load_in_cluster(sa, &c), -ENXIO);
        unsetenv("KUBERNETES_SERVICE_PORT");
}

struct broken_case {
        const char *cluster, *user, *replace_from, *replace_to;
        const char *message; /* must appear in the log */
};

static void test_broken(void **state)
{
        struct fixture *f = *state;
        const struct broken_case cases[] = {
                { "", "    token: x\n", "current-context: lab-admin\n", "",
                  "current-context: missing" },
                { "", "    token: x\n", "current-context: lab-admin", "current-context: nope",
                  "current-context: \"nope\" names no entry in contexts" },
                { "", "    token: x\n", "    cluster: lab\n", "    cluster: gone\n",
                  "contexts[lab-admin].context.cluster: \"gone\" names no entry in clusters" },
                { "", "    token: x\n", "    user: admin\n", "    user: ghost\n",
                  "contexts[lab-admin].context.user: \"ghost\" names no entry in users" },
                { "", "    token: x\n", "    server: https://10.0.0.1:6443/\n",
                  "    insecure-skip-tls-verify: false\n",
                  "clusters[lab].cluster.server: missing" },
                { "", "    token: x\n", "https://10.0.0.1:6443/", "10.0.0.1:6443",
                  "clusters[lab].cluster.server: \"10.0.0.1:6443\" is not an http(s) URL" },
                { "    certificate-authority-data: \"%%%\"\n", "    token: x\n", NULL, NULL,
                  "clusters[lab].cluster.certificate-authority-data: not valid base64" },
                { "    certificate-authority: missing.crt\n", "    token: x\n", NULL, NULL,
                  "clusters[lab].cluster.certificate-authority: cannot read" },
                { "", "    client-key: client.key\n", NULL, NULL,
                  "users[admin].user: client-certificate and client-key must be given together" },
                { "", "    tokenFile: no-such-token\n", NULL, NULL,
                  "users[admin].user.tokenFile: cannot read" },
                { "", "    token: [1, 2]\n", NULL, NULL,
                  "users[admin].user.token: must be a string" },
                { "", "    exec:\n      command: x\n", NULL, NULL, "exec and auth-provider" },
                { "    proxy-url: http://proxy:3128\n", "    token: x\n", NULL, NULL,
                  "clusters[lab].cluster.proxy-url: not supported" },
                { "    tls-server-name: api.lab\n", "    token: x\n", NULL, NULL,
                  "clusters[lab].cluster.tls-server-name: not supported" },
                { "", "    token: x\n    as: admin\n", NULL, NULL,
                  "users[admin].user.as: impersonation and basic authentication" },
                { "", "    token: x\n    as-groups: [system:masters]\n", NULL, NULL,
                  "users[admin].user.as-groups: impersonation" },
                { "", "    username: u\n    password: p\n", NULL, NULL,
                  "users[admin].user.username: impersonation and basic authentication" },
                { "    insecure-skip-tls-verify: true\n    certificate-authority: ca.crt\n",
                  "    token: x\n", NULL, NULL,
                  "insecure-skip-tls-verify cannot be combined with a certificate-authority" },
                { "", "    token: x\n", "https://10.0.0.1:6443/", "http://10.0.0.1:8080",
                  "refusing to send a bearer token over plain http://" },
                { "", "    token: x\n", "clusters:\n", "clusters: 5\nignored:\n",
                  "clusters: must be a list" },
                { "", "    token: x\n", "apiVersion: v1\n", "apiVersion: [v1\n",
                  "invalid YAML: line" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *text = kubeconfig(cases[i].cluster, cases[i].user);
                if (cases[i].replace_from) {
                        char *n = replace_first(text, cases[i].replace_from, cases[i].replace_to);
                        assert_non_null(n);
                        free(text);
                        text = n;
                }
                struct kube_config *c = NULL;
                char msg[2048], path[256];
                int r = load(f, text, &c, msg, sizeof(msg));
                if (r == 0 || !strstr(msg, cases[i].message))
                        fail_msg("case %zu: r=%d, expected \"%s\" in \"%s\"", i, r,
                                 cases[i].message, msg);
                snprintf(path, sizeof(path), "%s/kc", f->dir);
                assert_non_null(strstr(msg, path)); /* names the file */
                assert_null(c);
                free(text);
        }
        /* Not a kubeconfig at all. */
        struct kube_config *c = NULL;
        char msg[1024];
        assert_int_equal(load(f, "", &c, msg, sizeof(msg)), -EINVAL);
        assert_non_null(strstr(msg, "not a YAML mapping"));
        assert_int_equal(kube_config_load_file("/nonexistent/kc", &c), -ENOENT);
}

static void test_mutations_never_crash(void **state)
{
        /* Every single-byte corruption of a valid kubeconfig either still parses or fails with
         * a logged error; none crashes or leaks (run under ASan/valgrind). */
        struct fixture *f = *state;
        char cluster[512];
        snprintf(cluster, sizeof(cluster), "    certificate-authority-data: %s\n", pem_b64);
        char *text = kubeconfig(cluster, "    token: abc\n    tokenFile: token\n");
        size_t len = strlen(text);
        unsigned seed = 7;
        const char noise[] = ":-[]{}#&*!|>'\"%@` \n\t\\x";
        for (int round = 0; round < 400; round++) {
                char *copy = strdup(text);
                for (int j = 0; j < 3; j++)
                        copy[rand_r(&seed) % len] = noise[rand_r(&seed) % (sizeof(noise) - 1)];
                struct kube_config *c = NULL;
                char msg[4096];
                int r = load(f, copy, &c, msg, sizeof(msg));
                if (r == 0)
                        kube_config_free(c);
                else
                        assert_true(strlen(msg) > 0);
                free(copy);
        }
        free(text);
}

int main(void)
{
        log_setup(LOG_TARGET_STDERR, LOG_INFO);
        static const char alphabet[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const unsigned char *in = (const unsigned char *)PEM;
        size_t n = strlen(PEM), o = 0;
        for (size_t i = 0; i < n; i += 3) {
                unsigned v =
                    in[i] << 16 | (i + 1 < n ? in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
                pem_b64[o++] = alphabet[v >> 18 & 63];
                pem_b64[o++] = alphabet[v >> 12 & 63];
                pem_b64[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
                pem_b64[o++] = i + 2 < n ? alphabet[v & 63] : '=';
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_base64),
                cmocka_unit_test(test_yaml_to_json),
                cmocka_unit_test_setup_teardown(test_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_plain_http_and_lists, setup, teardown),
                cmocka_unit_test_setup_teardown(test_client_cert_files_relative, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ca_and_cert_data, setup, teardown),
                cmocka_unit_test_setup_teardown(test_insecure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_token_file_rotation, setup, teardown),
                cmocka_unit_test_setup_teardown(test_in_cluster, setup, teardown),
                cmocka_unit_test_setup_teardown(test_broken, setup, teardown),
                cmocka_unit_test_setup_teardown(test_mutations_never_crash, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
