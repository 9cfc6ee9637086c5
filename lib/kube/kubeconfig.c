/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/kubeconfig.h"

#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/base64.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/macro.h"
#include "util/yaml-json.h"

/* Kubeconfigs with embedded certificates are a few KiB; anything near this is not one. */
#define KUBECONFIG_MAX_SIZE (4u * 1024 * 1024)
#define TOKEN_MAX_SIZE      (64u * 1024)

/* Configuration mistakes are logged without a strerror() suffix: the message says it all. */
#define config_error(err, ...) (log_error(__VA_ARGS__), (err))

struct kube_config *kube_config_free(struct kube_config *c)
{
        if (!c)
                return NULL;
        free(c->source);
        free(c->namespace_);
        free(c->server);
        free(c->ca_file);
        free(c->ca_data);
        free(c->client_cert_file);
        free(c->client_key_file);
        free(c->client_cert_data);
        free(c->client_key_data);
        free(c->token);
        free(c->token_file);
        free(c);
        return NULL;
}

/* Finds the entry `name` in a kubeconfig list like clusters: [{name:, cluster: {...}}] and
 * returns its inner mapping; logs and fails naming the field when absent or malformed. */
static int named_entry(const char *file, const char *referrer, json_t *root, const char *list,
                       const char *name, const char *inner, json_t **ret)
{
        json_t *arr = json_object_get(root, list);
        size_t i;
        json_t *item;
        if (arr && !json_is_array(arr))
                return config_error(-EINVAL, "kubeconfig %s: %s: must be a list", file, list);
        json_array_foreach(arr, i, item)
        {
                const char *n = json_string_value(json_object_get(item, "name"));
                if (!n || strcmp(n, name) != 0)
                        continue;
                *ret = json_object_get(item, inner);
                if (!json_is_object(*ret))
                        return config_error(-EINVAL,
                                            "kubeconfig %s: %s[%s].%s: missing or not a mapping",
                                            file, list, name, inner);
                return 0;
        }
        return config_error(-EINVAL, "kubeconfig %s: %s: \"%s\" names no entry in %s", file,
                            referrer, name, list);
}

/* Optional string field; a non-string value is an error naming the field. */
static int get_string(const char *file, const char *where, json_t *obj, const char *field,
                      const char **ret)
{
        json_t *v = json_object_get(obj, field);
        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return config_error(-EINVAL, "kubeconfig %s: %s.%s: must be a string", file, where,
                                    field);
        *ret = json_string_value(v);
        return 0;
}

/* Paths in a kubeconfig are relative to the file's own directory. */
static int resolve_path(const char *kubeconfig, const char *p, char **ret)
{
        if (p[0] == '/') {
                *ret = strdup(p);
                return *ret ? 0 : -ENOMEM;
        }
        _cleanup_free_ char *copy = strdup(kubeconfig);
        if (!copy)
                return -ENOMEM;
        /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
        if (asprintf(ret, "%s/%s", dirname(copy), p) < 0)
                return -ENOMEM;
        return 0;
}

static int decode_data(const char *file, const char *where, const char *field, const char *b64,
                       char **ret, size_t *ret_len)
{
        int k = base64_decode(b64, ret, ret_len);
        if (k < 0)
                return log_error_errno(k, "kubeconfig %s: %s.%s: not valid base64", file, where,
                                       field);
        if (*ret_len == 0)
                return config_error(-EINVAL, "kubeconfig %s: %s.%s: empty after decoding", file,
                                    where, field);
        return 0;
}

static int check_readable(const char *file, const char *where, const char *field, const char *path)
{
        if (access(path, R_OK) < 0)
                return log_error_errno(negative_errno(), "kubeconfig %s: %s.%s: cannot read %s",
                                       file, where, field, path);
        return 0;
}

static int parse_cluster(struct kube_config *c, const char *file, const char *where,
                         json_t *cluster)
{
        const char *server, *ca, *ca_data;
        int k;

        if ((k = get_string(file, where, cluster, "server", &server)) < 0 ||
            (k = get_string(file, where, cluster, "certificate-authority", &ca)) < 0 ||
            (k = get_string(file, where, cluster, "certificate-authority-data", &ca_data)) < 0)
                return k;
        if (!server || !*server)
                return config_error(-EINVAL, "kubeconfig %s: %s.server: missing", file, where);
        if (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)
                return config_error(-EINVAL,
                                    "kubeconfig %s: %s.server: \"%s\" is not an http(s) URL", file,
                                    where, server);
        c->server = strdup(server);
        if (!c->server)
                return -ENOMEM;
        size_t n = strlen(c->server);
        while (n > 0 && c->server[n - 1] == '/')
                c->server[--n] = '\0';

        json_t *insecure = json_object_get(cluster, "insecure-skip-tls-verify");
        if (insecure && !json_is_boolean(insecure) && !json_is_null(insecure))
                return config_error(-EINVAL,
                                    "kubeconfig %s: %s.insecure-skip-tls-verify: must be true "
                                    "or false",
                                    file, where);
        c->insecure_skip_tls_verify = json_is_true(insecure);
        if (c->insecure_skip_tls_verify && (ca || ca_data))
                /* kubectl refuses this too: which one was meant? */
                return config_error(-EINVAL,
                                    "kubeconfig %s: %s: insecure-skip-tls-verify cannot be "
                                    "combined with a certificate-authority",
                                    file, where);
        /* Fields we cannot honour are refused, never silently ignored. */
        if (json_object_get(cluster, "proxy-url"))
                return config_error(-EOPNOTSUPP,
                                    "kubeconfig %s: %s.proxy-url: not supported; set HTTPS_PROXY "
                                    "(and NO_PROXY) in the agent's environment instead",
                                    file, where);
        if (json_object_get(cluster, "tls-server-name"))
                return config_error(-EOPNOTSUPP,
                                    "kubeconfig %s: %s.tls-server-name: not supported; use a "
                                    "server URL whose host name the certificate carries",
                                    file, where);

        if (ca_data) {
                k = decode_data(file, where, "certificate-authority-data", ca_data, &c->ca_data,
                                &c->ca_data_len);
                if (k < 0)
                        return k;
        } else if (ca) {
                if ((k = resolve_path(file, ca, &c->ca_file)) < 0)
                        return k;
                if ((k = check_readable(file, where, "certificate-authority", c->ca_file)) < 0)
                        return k;
        }
        return 0;
}

static int parse_user(struct kube_config *c, const char *file, const char *where, json_t *user)
{
        const char *cert, *cert_data, *key, *key_data, *token, *token_file;
        int k;

        if ((k = get_string(file, where, user, "client-certificate", &cert)) < 0 ||
            (k = get_string(file, where, user, "client-certificate-data", &cert_data)) < 0 ||
            (k = get_string(file, where, user, "client-key", &key)) < 0 ||
            (k = get_string(file, where, user, "client-key-data", &key_data)) < 0 ||
            (k = get_string(file, where, user, "token", &token)) < 0 ||
            (k = get_string(file, where, user, "tokenFile", &token_file)) < 0)
                return k;
        static const char *const unsupported[] = { "as",       "as-groups",
                                                   "as-uid",   "as-user-extra",
                                                   "username", "password" };
        for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
                if (json_object_get(user, unsupported[i]))
                        return config_error(-EOPNOTSUPP,
                                            "kubeconfig %s: %s.%s: impersonation and basic "
                                            "authentication are not supported; use a token or a "
                                            "client certificate",
                                            file, where, unsupported[i]);
        if (json_object_get(user, "exec") || json_object_get(user, "auth-provider"))
                return config_error(-EOPNOTSUPP,
                                    "kubeconfig %s: %s: exec and auth-provider credential "
                                    "plugins are not supported; use a token or a client "
                                    "certificate",
                                    file, where);

        if (cert_data) {
                k = decode_data(file, where, "client-certificate-data", cert_data,
                                &c->client_cert_data, &c->client_cert_data_len);
                if (k < 0)
                        return k;
        } else if (cert) {
                if ((k = resolve_path(file, cert, &c->client_cert_file)) < 0)
                        return k;
                if ((k = check_readable(file, where, "client-certificate", c->client_cert_file)) <
                    0)
                        return k;
        }
        if (key_data) {
                k = decode_data(file, where, "client-key-data", key_data, &c->client_key_data,
                                &c->client_key_data_len);
                if (k < 0)
                        return k;
        } else if (key) {
                if ((k = resolve_path(file, key, &c->client_key_file)) < 0)
                        return k;
                if ((k = check_readable(file, where, "client-key", c->client_key_file)) < 0)
                        return k;
        }
        bool have_cert = c->client_cert_data || c->client_cert_file;
        bool have_key = c->client_key_data || c->client_key_file;
        if (have_cert != have_key)
                return config_error(-EINVAL,
                                    "kubeconfig %s: %s: client-certificate and client-key "
                                    "must be given together",
                                    file, where);

        if (token) {
                c->token = strdup(token);
                if (!c->token)
                        return -ENOMEM;
        } else if (token_file) {
                if ((k = resolve_path(file, token_file, &c->token_file)) < 0)
                        return k;
                const char *t;
                if ((k = kube_config_current_token(c, &t)) < 0)
                        return log_error_errno(k, "kubeconfig %s: %s.tokenFile: cannot read %s",
                                               file, where, c->token_file);
        }
        return 0;
}

/* http://127.x.y.z, http://localhost, http://[::1], with or without a port. */
static bool server_is_loopback(const char *url)
{
        const char *host = strstr(url, "://");
        host = host ? host + 3 : url;
        size_t n = host[0] == '[' ? strcspn(host, "]") + 1 : strcspn(host, ":/");
        bool ipv4 = n >= 4 && strspn(host, "0123456789.") == n;
        return (ipv4 && strncmp(host, "127.", 4) == 0) ||
               (n == 9 && strncmp(host, "localhost", 9) == 0) ||
               (n == 5 && strncmp(host, "[::1]", 5) == 0);
}

static int config_from_json(const char *file, json_t *root, struct kube_config *c)
{
        if (!json_is_object(root))
                return config_error(-EINVAL, "kubeconfig %s: not a YAML mapping", file);

        const char *context_name;
        int k = get_string(file, "(top level)", root, "current-context", &context_name);
        if (k < 0)
                return k;
        if (!context_name || !*context_name)
                return config_error(-EINVAL, "kubeconfig %s: current-context: missing", file);

        json_t *context;
        if ((k = named_entry(file, "current-context", root, "contexts", context_name, "context",
                             &context)) < 0)
                return k;
        _cleanup_free_ char *ctx_where = NULL;
        if (asprintf(&ctx_where, "contexts[%s].context", context_name) < 0)
                return -ENOMEM;
        const char *cluster_name, *user_name;
        if ((k = get_string(file, ctx_where, context, "cluster", &cluster_name)) < 0 ||
            (k = get_string(file, ctx_where, context, "user", &user_name)) < 0)
                return k;
        if (!cluster_name)
                return config_error(-EINVAL, "kubeconfig %s: %s.cluster: missing", file, ctx_where);

        _cleanup_free_ char *cluster_ref = NULL, *user_ref = NULL;
        if (asprintf(&cluster_ref, "%s.cluster", ctx_where) < 0 ||
            asprintf(&user_ref, "%s.user", ctx_where) < 0)
                return -ENOMEM;
        json_t *cluster;
        if ((k = named_entry(file, cluster_ref, root, "clusters", cluster_name, "cluster",
                             &cluster)) < 0)
                return k;
        _cleanup_free_ char *cluster_where = NULL;
        if (asprintf(&cluster_where, "clusters[%s].cluster", cluster_name) < 0)
                return -ENOMEM;
        if ((k = parse_cluster(c, file, cluster_where, cluster)) < 0)
                return k;

        if (!user_name || !*user_name)
                return 0; /* anonymous */
        json_t *user;
        if ((k = named_entry(file, user_ref, root, "users", user_name, "user", &user)) < 0)
                return k;
        _cleanup_free_ char *user_where = NULL;
        if (asprintf(&user_where, "users[%s].user", user_name) < 0)
                return -ENOMEM;
        if ((k = parse_user(c, file, user_where, user)) < 0)
                return k;
        const char *optin = getenv("SRIOV_AGENT_INSECURE_HTTP_TOKEN");
        if ((c->token || c->token_file) && strncmp(c->server, "http://", 7) == 0 &&
            !server_is_loopback(c->server) && !(optin && strcmp(optin, "1") == 0))
                /* Anyone on the path could read and reuse it. */
                return config_error(-EPERM,
                                    "kubeconfig %s: %s: refusing to send a bearer token over "
                                    "plain http:// to %s (only a loopback server may be "
                                    "reached without TLS, unless "
                                    "SRIOV_AGENT_INSECURE_HTTP_TOKEN=1 says so)",
                                    file, user_where, c->server);
        return 0;
}

int kube_config_load_file(const char *path, struct kube_config **ret)
{
        _cleanup_free_ char *text = NULL;
        size_t size;
        int k = read_full_file(path, KUBECONFIG_MAX_SIZE, &text, &size);
        if (k < 0)
                return log_error_errno(k, "kubeconfig %s: cannot read", path);

        json_auto_t *root = NULL;
        _cleanup_free_ char *error = NULL;
        k = yaml_to_json(text, size, YAML_JSON_NO_ALIASES, &root, &error);
        if (k < 0)
                return config_error(k, "kubeconfig %s: invalid YAML: %s", path,
                                    error ? error : "parse error");

        _cleanup_(kube_config_freep) struct kube_config *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->source = strdup(path);
        if (!c->source)
                /* cppcheck-suppress memleak ; _cleanup_ frees it */
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return -ENOMEM;
        k = config_from_json(path, root, c);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(c);
        return 0;
}

bool kube_in_cluster(void)
{
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        return host && *host;
}

static bool is_dns_label(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* <sa_dir>/namespace, as client-go's in-cluster namespace: absent or empty is fine (NULL),
 * anything but a namespace name is an error naming the file. */
static int read_namespace(const char *sa_dir, char **ret)
{
        _cleanup_free_ char *path = NULL;
        char buf[128];
        if (asprintf(&path, "%s/namespace", sa_dir) < 0)
                return -ENOMEM;
        int k = read_line_file(path, buf, sizeof(buf));
        if (k == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        if (k < 0)
                return log_error_errno(k, "in-cluster configuration: cannot read namespace %s",
                                       path);
        buf[strcspn(buf, " \t\r")] = '\0';
        if (!buf[0]) { /* client-go: an empty file is no namespace */
                *ret = NULL;
                return 0;
        }
        if (!is_dns_label(buf))
                return config_error(-EINVAL,
                                    "in-cluster configuration: %s: \"%s\" is not a namespace name",
                                    path, buf);
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

int kube_config_load_in_cluster(const char *sa_dir, struct kube_config **ret)
{
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        const char *port = getenv("KUBERNETES_SERVICE_PORT");
        if (!sa_dir)
                sa_dir = getenv("SRIOV_AGENT_SERVICE_ACCOUNT_DIR");
        if (!sa_dir || !*sa_dir)
                sa_dir = KUBE_SERVICE_ACCOUNT_DIR;
        if (!host || !*host || !port || !*port)
                return config_error(-ENXIO, "in-cluster configuration: "
                                            "KUBERNETES_SERVICE_HOST and "
                                            "KUBERNETES_SERVICE_PORT must both be set");

        _cleanup_(kube_config_freep) struct kube_config *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        /* IPv6 service addresses need brackets in a URL. */
        bool v6 = strchr(host, ':') != NULL;
        if (asprintf(&c->server, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port) < 0)
                return -ENOMEM;
        if (asprintf(&c->source, "in-cluster (%s)", sa_dir) < 0)
                return -ENOMEM;
        if (asprintf(&c->token_file, "%s/token", sa_dir) < 0 ||
            asprintf(&c->ca_file, "%s/ca.crt", sa_dir) < 0)
                return -ENOMEM;
        const char *t;
        int k = kube_config_current_token(c, &t);
        if (k < 0)
                return log_error_errno(k, "in-cluster configuration: cannot read token %s",
                                       c->token_file);
        if (access(c->ca_file, R_OK) < 0)
                return log_error_errno(negative_errno(),
                                       "in-cluster configuration: cannot read CA %s", c->ca_file);
        k = read_namespace(sa_dir, &c->namespace_);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(c);
        return 0;
}

int kube_config_load(const char *path, struct kube_config **ret)
{
        if (path)
                return kube_config_load_file(path, ret);
        const char *env = getenv("KUBECONFIG");
        if (env && *env) {
                /* kubectl merges a colon-separated list (empty entries ignored); we do not
                 * merge, so a list of several files is refused rather than half read. */
                const char *p = env + strspn(env, ":");
                size_t len = strcspn(p, ":");
                if (p[len] && p[len + strspn(p + len, ":")])
                        return config_error(-EOPNOTSUPP,
                                            "KUBECONFIG=%s lists several files; sriov-agent "
                                            "does not merge them: give --kubeconfig FILE",
                                            env);
                _cleanup_free_ char *first = strndup(p, len);
                if (!first)
                        return -ENOMEM;
                /* NOLINTNEXTLINE(clang-analyzer-unix.Malloc): _cleanup_ frees it */
                return kube_config_load_file(first, ret);
        }
        if (kube_in_cluster())
                return kube_config_load_in_cluster(NULL, ret);
        const char *home = getenv("HOME");
        if (!home)
                return config_error(-ENOENT, "no kubeconfig: give --kubeconfig, set "
                                             "KUBECONFIG, or run inside a cluster");
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/.kube/config", home) < 0)
                return -ENOMEM;
        return kube_config_load_file(p, ret);
}

int kube_config_current_token(struct kube_config *c, const char **ret)
{
        if (!c->token_file) {
                *ret = c->token;
                return 0;
        }
        struct stat st;
        if (stat(c->token_file, &st) < 0) {
                int k = negative_errno();
                if (!c->token)
                        return k;
                log_warning_errno(k, "cannot re-read token file %s, keeping the previous token",
                                  c->token_file);
                *ret = c->token;
                return 0;
        }
        bool changed = !c->token || st.st_ino != c->token_ino || st.st_size != c->token_size ||
                       st.st_mtim.tv_sec != c->token_mtime.tv_sec ||
                       st.st_mtim.tv_nsec != c->token_mtime.tv_nsec;
        if (changed) {
                char *text;
                size_t size;
                int k = read_full_file(c->token_file, TOKEN_MAX_SIZE, &text, &size);
                if (k < 0) {
                        if (!c->token)
                                return k;
                        log_warning_errno(
                            k, "cannot re-read token file %s, keeping the previous token",
                            c->token_file);
                        *ret = c->token;
                        return 0;
                }
                text[strcspn(text, "\r\n")] = '\0'; /* a trailing newline is not token */
                if (!*text) {
                        free(text);
                        if (!c->token)
                                return -ENODATA;
                        *ret = c->token;
                        return 0;
                }
                free(c->token);
                c->token = text;
                c->token_ino = st.st_ino;
                c->token_size = st.st_size;
                c->token_mtime = st.st_mtim;
        }
        *ret = c->token;
        return 0;
}
