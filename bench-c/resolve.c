/* What a logging call costs while a collector's name cannot be resolved:
 * every call's latency, in a network namespace whose name server reads
 * queries and answers none (bench-c/resolve.sh sets it up). A thread logs
 * N messages to a file output (and the ring) while the main thread names
 * collectors the resolver cannot answer for: at start (VLOG_OUTPUTS),
 * through vlog_set_outputs and through the control socket. Printed: the
 * calls' median, 99th and 99.9th percentiles and longest, and how long the
 * two configuration calls took, as one Markdown row.
 *
 *   resolve MODE DIR N      MODE: "collector" (the names) or "file" (the
 *                           same run with no collector: the floor)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <vlog.h>

VLOG_INIT("bench.resolve");

static long n_calls;
static uint64_t *spent;
static atomic_long done;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *logger(void *arg)
{
    (void)arg;
    for (long i = 0; i < n_calls; i++) {
        uint64_t t0 = now_ns();
        VLOG_INFO("request %ld served in %d us", i, 42);
        spent[i] = now_ns() - t0;
        atomic_store(&done, i + 1);
    }
    return NULL;
}

static void wait_for(long calls)
{
    while (atomic_load(&done) < calls)
        usleep(200);
}

static double control(const char *path, const char *request)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char reply[512];
    uint64_t t0 = now_ns();
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    ssize_t n;

    if (strlen(path) >= sizeof sa.sun_path) {
        fprintf(stderr, "%s: too long for a socket's path\n", path);
        exit(1);
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        write(s, request, strlen(request)) != (ssize_t)strlen(request)) {
        perror("control socket");
        exit(1);
    }
    n = read(s, reply, sizeof reply - 1);
    close(s);
    if (n < 3 || strncmp(reply, "ok\n", 3) != 0) {
        fprintf(stderr, "control socket: %.*s\n", (int)(n > 0 ? n : 0), reply);
        exit(1);
    }
    return (double)(now_ns() - t0) / 1e6;
}

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    pthread_t t;
    char spec[512], sock[100], request[600];
    double set_ms, control_ms;
    int collector;
    const char *dir;

    if (argc != 4) {
        fprintf(stderr, "usage: resolve collector|file DIR N\n");
        return 2;
    }
    collector = strcmp(argv[1], "collector") == 0;
    dir = argv[2];
    n_calls = atol(argv[3]);
    spent = calloc((size_t)n_calls, sizeof *spent);
    if (spent == NULL || n_calls < 1000)
        return 2;
    snprintf(sock, sizeof sock, "%s/ctl.sock", dir);
    if (pthread_create(&t, NULL, logger, NULL) != 0)
        return 1;

    wait_for(n_calls / 3);
    snprintf(spec, sizeof spec, "%s1:file:%s/bench.log",
             collector ? "2:syslog:d@tcp://collector.example.net:514 " : "", dir);
    {
        uint64_t t0 = now_ns();
        if (vlog_set_outputs(spec) != 0) {
            fprintf(stderr, "vlog_set_outputs: %s\n", vlog_last_error());
            return 1;
        }
        set_ms = (double)(now_ns() - t0) / 1e6;
    }
    wait_for(2 * n_calls / 3);
    snprintf(request, sizeof request, "outputs %s1:file:%s/bench.log\n",
             collector ? "2:fluent:t@tcp://fluent.example.net:24224 " : "", dir);
    control_ms = control(sock, request);
    pthread_join(t, NULL);

    qsort(spent, (size_t)n_calls, sizeof *spent, cmp);
    printf("| %s | %ld | %llu | %llu | %llu | %.1f | %.2f | %.2f |\n",
           collector ? "a file, and collectors whose names do not resolve" : "a file only",
           n_calls, (unsigned long long)spent[n_calls / 2],
           (unsigned long long)spent[n_calls * 99 / 100],
           (unsigned long long)spent[n_calls * 999 / 1000],
           (double)spent[n_calls - 1] / 1e3, set_ms, control_ms);
    return 0;
}
