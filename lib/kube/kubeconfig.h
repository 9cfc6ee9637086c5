/* SPDX-License-Identifier: Apache-2.0 */
/* Where the API server is and how to authenticate to it.
 *
 * Sources: a kubeconfig file (YAML: current-context → context → cluster + user; fields server,
 * certificate-authority(-data), insecure-skip-tls-verify, client-certificate(-data),
 * client-key(-data), token, tokenFile) or the in-cluster service account
 * (KUBERNETES_SERVICE_HOST/PORT, <sa-dir>/token, <sa-dir>/ca.crt and, optional,
 * <sa-dir>/namespace; <sa-dir> is $SRIOV_AGENT_SERVICE_ACCOUNT_DIR when set, else the
 * standard mount KUBE_SERVICE_ACCOUNT_DIR). Relative file paths in a
 * kubeconfig are relative to the kubeconfig's directory, as kubectl does.
 * TLS verification stays on unless the kubeconfig says insecure-skip-tls-verify: true.
 * Every error is logged naming the file and the field. A token file is re-read whenever its
 * mtime/inode/size changes (projected service-account tokens rotate). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define KUBE_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct kube_config {
        char *source;     /* kubeconfig path or "in-cluster", for messages */
        char *namespace_; /* in-cluster: the pod's namespace (<sa-dir>/namespace), else NULL */
        char *server;     /* "https://host:port", no trailing slash */

        char *ca_file; /* PEM bundle path, or NULL */
        char *ca_data; /* PEM bytes (decoded certificate-authority-data), or NULL */
        size_t ca_data_len;
        bool insecure_skip_tls_verify;

        char *client_cert_file, *client_key_file;
        char *client_cert_data, *client_key_data; /* PEM bytes */
        size_t client_cert_data_len, client_key_data_len;

        char *token;      /* static token, or the cached content of token_file */
        char *token_file; /* re-read when it changes */
        struct timespec token_mtime;
        ino_t token_ino;
        off_t token_size;
};

/* Parses a kubeconfig file. */
int kube_config_load_file(const char *path, struct kube_config **ret);
/* True when running in a pod: KUBERNETES_SERVICE_HOST is set and not empty. */
bool kube_in_cluster(void);
/* Builds the in-cluster configuration; sa_dir NULL means $SRIOV_AGENT_SERVICE_ACCOUNT_DIR,
 * else KUBE_SERVICE_ACCOUNT_DIR. */
int kube_config_load_in_cluster(const char *sa_dir, struct kube_config **ret);
/* The daemon's choice: explicit path, else $KUBECONFIG, else in-cluster when
 * KUBERNETES_SERVICE_HOST is set, else ~/.kube/config. */
int kube_config_load(const char *path, struct kube_config **ret);

/* The bearer token to send now (NULL when none), re-reading token_file if it changed.
 * A failed re-read keeps the previous token and logs. */
int kube_config_current_token(struct kube_config *c, const char **ret);

struct kube_config *kube_config_free(struct kube_config *c);
static inline void kube_config_freep(struct kube_config **c)
{
        kube_config_free(*c);
}
