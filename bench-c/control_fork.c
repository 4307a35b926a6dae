/* What a program pays for the control socket while clients read fast, and
 * how fast they get what they asked for: a 16 MiB ring, full.
 *
 *     bench-c/control_fork fork CLIENTS   the longest and the median fork(2)
 *                                         of 100 (fork's prepare holds the
 *                                         logger's lock while it takes the
 *                                         server's, so every logging thread
 *                                         waits as long) and the longest of
 *                                         200,000 recorded calls, while
 *                                         CLIENTS clients dump the ring over
 *                                         and over
 *     bench-c/control_fork dump [FILTER]  one client's dump of the whole ring
 *                                         (`dump FILTER`): bytes, ms
 *
 * `make bench-control` runs it after bench-c/control.py. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vlog.h>

VLOG_INIT("bench.control");

static char sock[100];
static volatile int stop;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int dial(const char *request)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        write(fd, request, strlen(request)) != (ssize_t)strlen(request)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void *dumper(void *arg)
{
    char buf[1 << 16];
    (void)arg;
    while (!stop) {
        int fd = dial("dump\n");
        if (fd < 0) {
            usleep(1000);
            continue;
        }
        while (!stop && read(fd, buf, sizeof buf) > 0)
            ;
        close(fd);
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/vlog-bench-fork-XXXXXX";
    int rc = 0;

    if (argc < 2 || mkdtemp(dir) == NULL) {
        fprintf(stderr, "usage: %s fork CLIENTS | dump [FILTER]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    snprintf(sock, sizeof sock, "%.80s/vlog.sock", dir);
    if (vlog_set_filters("1:bench") != 0 || vlog_set_buffer_size(16 << 20) != 0 ||
        vlog_set_outputs("4:stderr") != 0) {
        fprintf(stderr, "%s\n", vlog_last_error());
        return 1;
    }
    for (long i = 0; i < 400000; i++)
        VLOG_DEBUG("Logging two integers: %ld %ld", i, i);
    if (vlog_control_start(sock) != 0) {
        fprintf(stderr, "%s\n", vlog_last_error());
        return 1;
    }
    if (strcmp(argv[1], "fork") == 0 && argc == 3) {
        int clients = atoi(argv[2]);
        double forks[100], worst_call = 0;
        for (int i = 0; i < clients; i++) {
            pthread_t t;
            if (pthread_create(&t, NULL, dumper, NULL) != 0 || pthread_detach(t) != 0)
                return 1;
        }
        usleep(300 * 1000);
        for (int i = 0; i < 100; i++) {
            double t0 = now_ms();
            pid_t pid = fork();
            if (pid == 0)
                _exit(0);
            forks[i] = now_ms() - t0;
            waitpid(pid, NULL, 0);
            usleep(10 * 1000);
        }
        for (long i = 0; i < 200000; i++) {
            double t0 = now_ms(), d;
            VLOG_DEBUG("Logging two integers: %ld %ld", i, i);
            d = now_ms() - t0;
            if (d > worst_call)
                worst_call = d;
        }
        qsort(forks, 100, sizeof forks[0], cmp);
        printf("| %d | %.2f | %.2f | %.2f |\n", clients, forks[50], forks[99], worst_call);
        stop = 1;
    } else if (strcmp(argv[1], "dump") == 0) {
        char request[256], buf[1 << 16];
        long total = 0;
        ssize_t n;
        double t0 = now_ms();
        int fd;
        snprintf(request, sizeof request, "dump%s%s\n", argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
        fd = dial(request);
        if (fd < 0)
            return 1;
        while ((n = read(fd, buf, sizeof buf)) > 0)
            total += n;
        close(fd);
        printf("| `%s` | %ld | %.1f |\n", strtok(request, "\n"), total, now_ms() - t0);
    } else {
        rc = 2;
    }
    vlog_control_stop();
    rmdir(dir);
    return rc;
}
