/* What the control socket costs a logging thread: ring-only records of
 * NanoLog's twoIntegers (the ring full, 1 MiB) with no control socket,
 * with one open and idle, with a client dumping the ring over and over,
 * with four clients following it, and with sixteen clients that asked for
 * a dump and read none of it (the server holds their replies).
 *
 *     bench-c/control MODE 0 N          (bench-c/control.py runs it)
 *
 * The clients are threads of this program; the socket is in a directory
 * of its own under /tmp. */
#include "harness.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <vlog.h>

VLOG_INIT("bench.control");

static char dir[] = "/tmp/vlog-bench-control-XXXXXX";
static char sock[100];
static atomic_int stop_clients;
static atomic_long streamed;

static void record_run(int msg, long n)
{
    (void)msg;
    for (long i = 0; i < n; i++)
        VLOG_DEBUG("Logging two integers: %ld %ld", (long)i, (long)(n - i));
}

static int dial(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "connect %s: %s\n", sock, strerror(errno));
        exit(1);
    }
    return fd;
}

/* Sends `request` and reads the reply (all of it unless `stall`). */
static int ask(const char *request, int stall)
{
    char buf[65536];
    int fd = dial();
    if (write(fd, request, strlen(request)) < 0)
        exit(1);
    if (stall)
        return fd;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        atomic_fetch_add(&streamed, n);
        if (atomic_load(&stop_clients))
            break;
    }
    close(fd);
    return -1;
}

static void *dumper(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_clients))
        ask("dump\n", 0);
    return NULL;
}

static void *follower(void *arg)
{
    (void)arg;
    ask("follow\n", 0);
    return NULL;
}

static void start(void)
{
    if (mkdtemp(dir) == NULL || chmod(dir, 0700) != 0) {
        perror("mkdtemp");
        exit(1);
    }
    snprintf(sock, sizeof sock, "%.80s/vlog.sock", dir);
    if (vlog_set_filters("1:bench") != 0 || vlog_set_buffer_size(1 << 20) != 0 ||
        vlog_set_outputs("4:stderr") != 0) {
        fprintf(stderr, "%s\n", vlog_last_error());
        exit(1);
    }
    /* The ring full from the start: the steady state. */
    record_run(0, 40000);
}

static void none_setup(void)
{
    start();
}

static void idle_setup(void)
{
    start();
    if (vlog_control_start(sock) != 0) {
        fprintf(stderr, "%s\n", vlog_last_error());
        exit(1);
    }
}

static void spawn(void *(*f)(void *), int n)
{
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, f, NULL) != 0 || pthread_detach(t) != 0)
            exit(1);
    }
}

static void dumping_setup(void)
{
    idle_setup();
    spawn(dumper, 1);
}

static void following_setup(void)
{
    idle_setup();
    spawn(follower, 4);
}

static void stalled_setup(void)
{
    idle_setup();
    for (int i = 0; i < 16; i++)
        ask("dump\n", 1);
    usleep(100 * 1000);
}

static const char *check(long calls)
{
    vlog_stats s;
    atomic_store(&stop_clients, 1);
    if (vlog_get_stats(&s) != 0 || s.records < (unsigned long long)calls)
        return "fewer records than calls";
    return NULL;
}

static const char *check_streamed(long calls)
{
    const char *wrong = check(calls);
    if (wrong == NULL && atomic_load(&streamed) == 0)
        return "the clients received nothing";
    return wrong;
}

int main(int argc, char **argv)
{
    static const struct bench_mode modes[] = {
        {"no-socket", none_setup, record_run, check},
        {"idle", idle_setup, record_run, check},
        {"dumping", dumping_setup, record_run, check_streamed},
        {"following-4", following_setup, record_run, check_streamed},
        {"stalled-16", stalled_setup, record_run, check},
        {NULL, NULL, NULL, NULL},
    };
    int rc;
    signal(SIGPIPE, SIG_IGN);
    rc = bench_main(modes, argc, argv);
    if (sock[0]) {
        vlog_control_stop();
        rmdir(dir);
    }
    return rc;
}
