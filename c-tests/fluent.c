/* The fluent output, against tests/fluent_receiver.py (started by the
 * driver, which checks what it decoded). The outputs string is the first
 * argument.
 *
 *   fluent records OUTPUTS    the records the driver checks field by field,
 *                             then 3000 more (several batches), vlog_flush
 *   fluent later OUTPUTS      10 records with no receiver there, a wait of
 *                             2.5 s (the driver starts one), 10 more
 *   fluent flood OUTPUTS N [GO]  N records to a receiver that never
 *                             acknowledges: each call returns, what overflows
 *                             the queue is counted; prints the count. With GO:
 *                             first records until the queue has overflowed
 *                             (the receiver has not begun to read), then GO
 *                             is made (it begins to read, slowly), then the N
 *                             records
 *   fluent refused OUTPUTS    bad and unusable output strings refused, with
 *                             nothing connected to the receiver in OUTPUTS
 *   fluent fork OUTPUTS       "parent before" batched, a fork; the child logs
 *                             "child" and flushes; the parent "parent after":
 *                             each arrives once, the child's on its own
 *                             connection
 *   fluent flushing OUTPUTS   a vlog_flush that waits for a receiver that never
 *                             acknowledges, while another thread logs 1000
 *                             messages: they are all recorded before the
 *                             flush returns (it waits without the lock)
 *   fluent closefds OUTPUTS   "before", then every descriptor from 3 closed
 *                             and a file opened in the socket's place, then
 *                             "after": the file gets nothing of vlog's
 *   fluent exit OUTPUTS       one event, then exit(0): prints how often and
 *                             for how long at most vlog's exit handler
 *                             waited (its poll calls on this thread)
 *   fluent clockback OUTPUTS  "before the step", the wall clock stepped back
 *                             an hour, "after the step"; prints "logged",
 *                             waits for a line on stdin, and leaves with
 *                             _exit (no flush): the batch must go out by its
 *                             age alone
 *   fluent alone OUTPUTS      under VLOG_WRITER=caller: "alone before", no
 *                             thread but this one, unshare(CLONE_NEWUSER)
 *                             (prints "unshared" or why the kernel refused
 *                             it other than for threads), every way to a
 *                             thread of vlog's refused with a message,
 *                             "alone after", exit(0): both reach the
 *                             receiver through the exit handler */
#include "check.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

VLOG_INIT("test.fluent");

/* Seconds taken off CLOCK_REALTIME, as a `date -s` or NTP step back would:
 * this clock_gettime takes the place of libc's for vlog, which is linked
 * into this program. */
static atomic_long realtime_step;

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    long r = syscall(SYS_clock_gettime, clock, ts);

    if (r == 0 && clock == CLOCK_REALTIME)
        ts->tv_sec -= atomic_load(&realtime_step);
    return (int)r;
}

static void records(void)
{
    static char big[8192];

    VLOG_INFO("plain message %d", 42);
    VLOG_FIELDS(VLOG_PRIO_WARN,
                (VLOG_FIELD_STR("USER", "alice"), VLOG_FIELD_INT("BYTES", -12345678901LL),
                 VLOG_FIELD_INT("SMALL", 7)),
                "with fields");
    VLOG_DEBUG("filtered out");
    VLOG_ERROR("not UTF-8: %s", "\xff\xfe!");
    memset(big, 'x', sizeof big - 1);
    VLOG_INFO("%s", big);
    for (int i = 0; i < 3000; i++)
        VLOG_INFO("bulk %d", i);
    CHECK(vlog_flush() == 0);
}

static void later(void)
{
    struct timespec wait = {2, 500 * 1000 * 1000};

    for (int i = 0; i < 10; i++)
        VLOG_INFO("before the receiver %d", i);
    nanosleep(&wait, NULL);
    for (int i = 0; i < 10; i++)
        VLOG_INFO("after the receiver %d", i);
    CHECK(vlog_flush() == 0);
}

static void flood(long n, const char *go)
{
    vlog_stats st;
    long i = 0;
    int fd;

    /* The queue fills because the receiver reads nothing until GO exists,
     * however slowly this program runs (valgrind, a busy machine). The
     * bound only turns a queue that never fills into a failure that says
     * so rather than a timeout. */
    while (go != NULL) {
        for (long j = 0; j < 100; j++, i++)
            VLOG_INFO("flood %ld with some text to fill the queue faster, %s", i,
                      "0123456789012345678901234567890123456789");
        CHECK(vlog_get_stats(&st) == 0);
        if (st.output_lines_lost == 0 && i < 10000000)
            continue;
        if (st.output_lines_lost == 0) {
            printf("never full after %ld records\n", i);
            return;
        }
        fd = open(go, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        close(fd);
        break;
    }
    for (long j = 0; j < n; j++, i++)
        VLOG_INFO("flood %ld with some text to fill the queue faster, %s", i,
                  "0123456789012345678901234567890123456789");
    CHECK(vlog_get_stats(&st) == 0);
    printf("lost %llu\n", (unsigned long long)st.output_lines_lost);
}

static void refused(const char *outputs)
{
    static const char *bad[] = {
        "1:fluent",
        "1:fluent:tag",
        "1:fluent:t@udp://127.0.0.1:1",
        "1:fluent:t@tcp://127.0.0.1",
        "1:fluent:t@unix:relative",
        "1:fluent:t@tcp://127.0.0.1:1?nope",
    };
    char both[600];

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(vlog_set_outputs(bad[i]) == -1);
        CHECK(strstr(vlog_last_error(), "fluent") != NULL ||
              strstr(vlog_last_error(), "output") != NULL);
    }
    /* A good fluent output beside a bad token, or beside a file that cannot
     * be opened: the whole string is refused, and nothing connects. */
    snprintf(both, sizeof both, "%s 9:stderr", outputs);
    CHECK(vlog_set_outputs(both) == -1);
    snprintf(both, sizeof both, "%s 1:file:/nonexistent-dir/x.log", outputs);
    CHECK(vlog_set_outputs(both) == -1);
    CHECK_ERROR("cannot open");
    VLOG_ERROR("to stderr only");
    vlog_shutdown();
}

static void forked(void)
{
    pid_t pid;
    int status;

    VLOG_INFO("parent before");
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        /* Flushed, then _exit: the heap holds what the parent's threads
         * (the ticker among them) own, which a leak checker at exit(3)
         * would take for the child's leaks. */
        VLOG_INFO("child %d", (int)getpid());
        CHECK(vlog_flush() == 0);
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    VLOG_INFO("parent after");
    CHECK(vlog_flush() == 0);
}

static atomic_int flushing, finished_while_flushing;

static void *log_during_flush(void *arg)
{
    struct timespec settle = {0, 20 * 1000 * 1000};

    (void)arg;
    while (!atomic_load(&flushing))
        ;
    nanosleep(&settle, NULL);
    for (int i = 0; i < 1000; i++)
        VLOG_INFO("during the flush %d", i);
    atomic_store(&finished_while_flushing, atomic_load(&flushing));
    return NULL;
}

static void flush_while_logging(void)
{
    pthread_t t;
    vlog_stats st;

    VLOG_INFO("to be acknowledged, never");
    CHECK(pthread_create(&t, NULL, log_during_flush, NULL) == 0);
    atomic_store(&flushing, 1);
    CHECK(vlog_flush() == 0);
    atomic_store(&flushing, 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(atomic_load(&finished_while_flushing) == 1);
    CHECK(vlog_get_stats(&st) == 0);
    CHECK(st.records >= 1001); /* and what vlog said, recorded too */
}

static void closefds(const char *path)
{
    char buf[64];
    int fd;

    VLOG_INFO("before");
    CHECK(vlog_flush() == 0);
    CHECK(syscall(SYS_close_range, 3U, ~0U, 0U) == 0);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd == 3);
    VLOG_INFO("after");
    CHECK(vlog_flush() == 0);
    CHECK(pread(fd, buf, sizeof buf, 0) == 0);
    close(fd);
}

/* vlog waits with poll (on a socket, or on nothing for a nap); this poll
 * takes the place of libc's for vlog, and counts the waits of the thread
 * that exits, once it exits. */
static pthread_t exiting_thread;
static atomic_int exiting;
static long exit_waits, exit_wait_ms;

int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    static int (*next)(struct pollfd *, nfds_t, int);

    if (next == NULL)
        *(void **)&next = dlsym(RTLD_NEXT, "poll");
    if (atomic_load(&exiting) && pthread_equal(pthread_self(), exiting_thread) &&
        timeout != 0) {
        exit_waits++;
        exit_wait_ms += timeout;
    }
    return next(fds, n, timeout);
}

/* With SLOW_DNS set, a name takes 150 ms to look up (vlog's resolver
 * thread calls this getaddrinfo, linked into the program). */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res)
{
    static int (*next)(const char *, const char *, const struct addrinfo *,
                       struct addrinfo **);

    if (next == NULL)
        *(void **)&next = dlsym(RTLD_NEXT, "getaddrinfo");
    if (getenv("SLOW_DNS") != NULL) {
        struct timespec slow = {0, 150 * 1000 * 1000};
        nanosleep(&slow, NULL);
    }
    return next(node, service, hints, res);
}

/* Registered before vlog's exit handler, so it runs after it. */
static void say_exit_waits(void)
{
    printf("exit waited %ld times, for at most %ld ms\n", exit_waits, exit_wait_ms);
    fflush(stdout);
}

static void exits(void)
{
    VLOG_INFO("at exit");
    exiting_thread = pthread_self();
    atomic_store(&exiting, 1);
    exit(0);
}

static void clock_back(void)
{
    char line[16];

    VLOG_INFO("before the step");
    atomic_store(&realtime_step, 3600);
    VLOG_INFO("after the step");
    printf("logged\n");
    fflush(stdout);
    CHECK(fgets(line, sizeof line, stdin) != NULL);
    _exit(0);
}

/* The threads of this process. */
static int threads_here(void)
{
    return check_entries("/proc/self/task");
}

static void alone(void)
{
    struct vlog_relay *relay;
    int fds[2];

    VLOG_INFO("alone before");
    CHECK(threads_here() == 1);
    if (unshare(CLONE_NEWUSER) == 0) {
        printf("unshared\n");
    } else {
        /* EINVAL is what a second thread makes it; a kernel or container
         * without user namespaces says EPERM or ENOSPC. */
        CHECK(errno != EINVAL);
        printf("unshare refused: %s\n", strerror(errno));
    }
    CHECK(vlog_control_start(NULL) == -1);
    CHECK_ERROR("VLOG_WRITER=caller");
    CHECK(vlog_set_outputs("1:fluent:t@tcp://localhost:24224") == -1);
    CHECK_ERROR("IP address");
    {
        /* Refused before anything is opened: the file is not made. */
        char both[200], made[100];
        snprintf(made, sizeof made, "/tmp/vlog-alone-%d.log", (int)getpid());
        snprintf(both, sizeof both, "1:file:%s 1:syslog:d@udp://localhost:514", made);
        CHECK(vlog_set_outputs(both) == -1);
        CHECK_ERROR("IP address");
        CHECK(access(made, F_OK) == -1 && errno == ENOENT);
    }
    relay = vlog_relay_new("test.fluent.child", VLOG_PRIO_INFO);
    CHECK(relay != NULL && pipe(fds) == 0);
    CHECK(vlog_relay_watch(relay, fds[0]) == -1);
    CHECK_ERROR("VLOG_WRITER=caller");
    vlog_relay_close(relay);
    close(fds[0]);
    close(fds[1]);
    VLOG_INFO("alone after");
    CHECK(threads_here() == 1);
    fflush(stdout);
    exit(0);
}

int main(int argc, char **argv)
{
    CHECK(argc >= 3);
    if (strcmp(argv[1], "exit") == 0)
        CHECK(atexit(say_exit_waits) == 0);
    if (strcmp(argv[1], "refused") == 0) {
        refused(argv[2]);
        return 0;
    }
    CHECK(vlog_set_filters("2:test.fluent") == 0);
    CHECK(vlog_set_outputs(argv[2]) == 0);
    if (strcmp(argv[1], "records") == 0)
        records();
    else if (strcmp(argv[1], "later") == 0)
        later();
    else if (strcmp(argv[1], "flood") == 0 && (argc == 4 || argc == 5))
        flood(atol(argv[3]), argc == 5 ? argv[4] : NULL);
    else if (strcmp(argv[1], "fork") == 0)
        forked();
    else if (strcmp(argv[1], "flushing") == 0)
        flush_while_logging();
    else if (strcmp(argv[1], "closefds") == 0 && argc == 4)
        closefds(argv[3]);
    else if (strcmp(argv[1], "alone") == 0)
        alone();
    else if (strcmp(argv[1], "clockback") == 0)
        clock_back();
    else if (strcmp(argv[1], "exit") == 0)
        exits();
    else
        CHECK(!"a mode: records, later, flood N [GO], refused, fork, flushing, closefds PATH, "
               "clockback, exit");
    return 0;
}
