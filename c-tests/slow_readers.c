/* Readers slow for a moment lose no line: a pipe on stderr that another
 * process made non-blocking, read slowly; a syslog daemon at /dev/log whose
 * socket queues 10 datagrams (the driver runs this in a mount and network
 * namespace of its own, /dev/log a link to SOCKET, net.unix.max_dgram_qlen
 * 10), read slowly. Every line reaches its reader, none is counted lost.
 *
 *   slow_readers pipe
 *   slow_readers devlog SOCKET */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

VLOG_INIT("test.slow");

#define LINES 3000

static void pause_a_moment(void)
{
    struct timespec ms = {0, 1000000};

    nanosleep(&ms, NULL);
}

/* A reader of the pipe on stderr that takes 512 bytes at a time, a pause
 * between: it counts the lines that reached it and exits with 0 when all
 * did. */
static int slow_pipe_reader(int fd)
{
    char buf[512];
    ssize_t n;
    int lines = 0;

    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++)
            lines += buf[i] == '\n';
        pause_a_moment();
    }
    if (lines != LINES) {
        /* (dprintf: the reader ends with _exit, which flushes no stdio.) */
        dprintf(1, "the pipe's reader got %d lines of %d\n", lines, LINES);
        return 1;
    }
    return 0;
}

static int pipe_mode(void)
{
    int fds[2], status;
    pid_t reader;
    vlog_stats st;

    CHECK(pipe(fds) == 0);
    reader = fork();
    CHECK(reader >= 0);
    if (reader == 0) {
        close(fds[1]);
        _exit(slow_pipe_reader(fds[0]));
    }
    close(fds[0]);
    CHECK(dup2(fds[1], 2) == 2);
    close(fds[1]);
    /* As a supervisor might leave it: non-blocking. */
    CHECK(fcntl(2, F_SETFL, fcntl(2, F_GETFL) | O_NONBLOCK) == 0);
    CHECK(vlog_adopt_stderr() == 0);
    CHECK(vlog_set_outputs("3:stderr") == 0);
    for (int i = 0; i < LINES; i++)
        VLOG_WARN("slow pipe line %d, with words to fill the pipe sooner", i);
    vlog_flush();
    CHECK(vlog_get_stats(&st) == 0);
    close(2);
    CHECK(waitpid(reader, &status, 0) == reader);
    if (st.output_lines_lost != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stdout, "lost %llu, reader status %d\n", (unsigned long long)st.output_lines_lost,
                status);
        return 1;
    }
    return 0;
}

static atomic_int got;

static void *slow_devlog_reader(void *arg)
{
    int fd = *(int *)arg;
    char buf[2048];
    ssize_t n;

    while ((n = recv(fd, buf, sizeof buf - 1, 0)) > 0) {
        buf[n] = 0;
        if (strstr(buf, "slow daemon line ") != NULL)
            atomic_fetch_add(&got, 1);
        pause_a_moment();
    }
    return NULL;
}

static int devlog_mode(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    pthread_t reader;
    vlog_stats st;
    int fd;

    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    CHECK(fd >= 0 && strlen(path) < sizeof addr.sun_path);
    strcpy(addr.sun_path, path);
    unlink(path);
    CHECK(bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    CHECK(pthread_create(&reader, NULL, slow_devlog_reader, &fd) == 0);
    CHECK(vlog_set_outputs("3:syslog:slowtest") == 0);
    for (int i = 0; i < LINES / 10; i++)
        VLOG_WARN("slow daemon line %d", i);
    vlog_flush();
    CHECK(vlog_get_stats(&st) == 0);
    /* Until the reader has taken what was sent (20 s at most). */
    for (int i = 0; i < 20000 && atomic_load(&got) < LINES / 10; i++)
        pause_a_moment();
    if (st.output_lines_lost != 0 || atomic_load(&got) != LINES / 10) {
        fprintf(stdout, "the daemon got %d lines of %d, %llu counted lost\n", atomic_load(&got),
                LINES / 10, (unsigned long long)st.output_lines_lost);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    if (strcmp(argv[1], "pipe") == 0)
        return pipe_mode();
    CHECK(argc == 3 && strcmp(argv[1], "devlog") == 0);
    return devlog_mode(argv[2]);
}
