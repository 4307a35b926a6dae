/* A child for vlog-relay, run by the tests in tests/c_tests/relay.rs, which
 * check what became of its output in the ring. Every mode first checks what
 * vlog-relay handed it: descriptors 0, 1 and 2 and no other (nothing of
 * vlog-relay's leaked across exec), and no VLOG_* variable (they configure
 * vlog-relay, not the child).
 *
 *   relay_child forms             every line form, and every hostile line
 *   relay_child flood MEGABYTES   that much on stdout as fast as it can, then
 *                                 "flood done" on stderr; exits 2 if a write
 *                                 fails (SIGPIPE would kill it first)
 *   relay_child crash             30 lines and last words on stderr, then
 *                                 SIGSEGV
 *   relay_child signals READY     signals its parent (vlog-relay) with
 *                                 SIGUSR1, which must not come back, creates
 *                                 READY, and exits 7 on SIGTERM
 *   relay_child hang READY        creates READY and waits to be killed
 *   relay_child vlog              logs with vlog itself, to its stderr */
#include "check.h"

#include <fcntl.h>
#include <signal.h>

VLOG_INIT("worker");

extern char **environ;

static void put(int fd, const char *s, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, s, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fprintf(stderr, "relay_child: write: %s\n", strerror(errno));
            exit(2);
        }
        s += n;
        len -= (size_t)n;
    }
}

static void line(int fd, const char *s)
{
    put(fd, s, strlen(s));
}

static void forms(void)
{
    static const char nul_line[] = "a NUL\0inside\n";
    size_t big = 1000000;
    char *x = malloc(big + 1);

    CHECK(x != NULL);
    line(1, "to stdout at the default\n");
    line(1, "[DEBUG] a debug line on stdout\n");
    line(2, "{\"@level\":\"debug\",\"@timestamp\":\"2006-01-02T15:04:05.000000Z\","
            "\"@message\":\"hello\",\"extra\":\"hi\",\"numbers\":[1,2,3]}\n");
    line(2, "{\"@level\":\"info\",\"@message\":5}\n");
    line(2, "{\"@level\":7,\"@message\":\"a number for a level\"}\n");
    line(2, "{\"@level\":\"error\",\"@message\":\"never closed\n");
    line(2, "[ERROR] a prefixed error\n");
    line(2, "<4>a syslog warning\n");
    line(2, "2026-12-01 10:00:00.000+0000: 1234: info : virDomainCreate:42 : "
            "libvirt says hi\n");
    line(2, "not UTF-8: \xff\xfe end\n");
    put(2, nul_line, sizeof nul_line - 1);
    line(2, "ends in CR LF\r\n");
    memset(x, 'x', big);
    x[big] = '\n';
    put(2, x, big + 1);
    free(x);
    line(2, "panic: the child gives up\n");
    line(2, "[DEBUG] after the panic\n");
    line(2, "a last line without its newline");
}

static void flood(long megabytes)
{
    char buf[100];
    long total = megabytes * 1000000, sent = 0;

    memset(buf, 'f', sizeof buf - 1);
    buf[sizeof buf - 1] = '\n';
    while (sent < total) {
        put(1, buf, sizeof buf);
        sent += (long)sizeof buf;
    }
    line(2, "flood done\n");
}

static void crash(void)
{
    char text[64];

    /* All on stderr: lines of two streams are read by two threads, and
     * their order between the streams is not kept. */
    for (int i = 1; i <= 30; i++) {
        snprintf(text, sizeof text, "line %d\n", i);
        line(2, text);
    }
    line(2, "last words\n");
    /* Whatever a sanitizer installed: the default action, a death by the
     * signal. */
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    exit(3);
}

static void on_term(int sig)
{
    static const char said[] = "got SIGTERM\n";
    (void)sig;
    if (write(2, said, sizeof said - 1) < 0)
        _exit(8);
    _exit(7);
}

static void ready(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    close(fd);
}

static void signals(const char *path)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    CHECK(sigaction(SIGTERM, &sa, NULL) == 0);
    /* The default action of SIGUSR1 ends this process: passed back, it
     * would. */
    CHECK(kill(getppid(), SIGUSR1) == 0);
    usleep(200 * 1000);
    line(2, "still here after signalling the parent\n");
    ready(path);
    for (;;)
        pause();
}

static void hang(const char *path)
{
    line(1, "hanging\n");
    ready(path);
    for (;;)
        pause();
}

static void logs_with_vlog(void)
{
    CHECK(vlog_set_outputs("1:stderr") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    VLOG_DEBUG("a debug message of a vlog child, %d", 1);
    VLOG_ERROR("an error of a vlog child");
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    CHECK(check_open_fds() == 3);
    for (char **e = environ; *e; e++)
        CHECK(strncmp(*e, "VLOG_", 5) != 0);

    if (strcmp(argv[1], "forms") == 0)
        forms();
    else if (strcmp(argv[1], "flood") == 0 && argc == 3)
        flood(atol(argv[2]));
    else if (strcmp(argv[1], "crash") == 0)
        crash();
    else if (strcmp(argv[1], "signals") == 0 && argc == 3)
        signals(argv[2]);
    else if (strcmp(argv[1], "hang") == 0 && argc == 3)
        hang(argv[2]);
    else if (strcmp(argv[1], "vlog") == 0)
        logs_with_vlog();
    else
        CHECK(!"a mode: forms, flood MEGABYTES, crash, signals READY, hang READY, vlog");
    return 0;
}
