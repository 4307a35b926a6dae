/* Lines written off the calling thread by vlog's writer thread, and what
 * stays synchronous. `writer MODE FILE`, FILE the output file:
 *   threads  4 threads x 100,000 info lines; the program then exits (the
 *            exit handler writes what is left); the driver checks every line
 *            is in FILE once, in per-thread order
 *   error    info lines, then an error: all of them are in FILE when
 *            VLOG_ERROR returns; a `?sync` output has its info line at once
 *   small    a 16 KiB ring and 20,000 lines: the ring laps many times, and
 *            no line is lost (the caller writes what the ring would lose)
 *   crash    2,000 info lines, then SIGSEGV: the crash handler writes the
 *            lines not written yet after the dump (the driver checks)
 *   killed   1,000 info lines into a ring file, then SIGKILL at once: the
 *            driver finds every line in FILE or in vlog-dump --unprinted
 *   fork     lines before a fork, in the child, and in the parent after:
 *            each in FILE once
 *   alone    with VLOG_WRITER=caller: each line in FILE when its call
 *            returns, and the process has one thread (exits 3 if vlog
 *            started one: VLOG_WRITER was not obeyed)
 *   recover  a SIGSEGV the program's own handler recovers from (after
 *            vlog's dump): lines logged afterwards are still written
 *   sharedfork  with VLOG_BUFFER_FILE: a forked child with outputs of its
 *            own (FILE.child) logs and exits while the parent logs: each
 *            writes its own lines, none of the other's
 *   atexit   an exit handler registered before vlog started, and a
 *            destructor, log after vlog's exit handler ran: their lines are
 *            in FILE
 *   cancel   a thread whose only cancellation points are its info lines
 *            ends when cancelled
 *   smallmany  8 threads x 5,000 long lines into a 16 KiB ring: none lost
 *   smallhuge  4 threads x 1,500 lines of up to 8,000 bytes and 8 thread
 *            fields (and ring-only records between them) into a 16 KiB
 *            ring, where making room
 *            for one moves the head past the tail for a moment: none lost,
 *            and none said to be */
#include "check.h"

#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <time.h>
#include <signal.h>
#include <sys/wait.h>

VLOG_INIT("test.writer");

static const char *file;

static void set_output(const char *prio, const char *suffix)
{
    char spec[600];
    snprintf(spec, sizeof spec, "%s:file:%s%s", prio, file, suffix);
    CHECK(vlog_set_outputs(spec) == 0);
    CHECK(vlog_set_level(VLOG_PRIO_INFO) == 0);
}

static void *burst(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < 100000; i++)
        VLOG_INFO("thread %d line %d", id, i);
    return NULL;
}

static int threads(void)
{
    pthread_t t[4];
    set_output("2", "");
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, burst, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    return 0;
}

static int error(void)
{
    char *text, sync_path[600];
    set_output("2", "");
    for (int i = 0; i < 3; i++)
        VLOG_INFO("info %d before the error", i);
    VLOG_ERROR("the error");
    /* No flush: an error is on its way to every output when it returns,
     * with every line recorded before it, in order. */
    text = check_slurp_path(file);
    CHECK(strstr(text, " : info 0 before the error\n") != NULL);
    CHECK(strstr(text, " : info 2 before the error\n") < strstr(text, " : the error\n"));
    CHECK(strstr(text, " : the error\n") != NULL);
    free(text);
    /* An output that asked for synchronous lines has each one at once. */
    snprintf(sync_path, sizeof sync_path, "%s.sync", file);
    {
        char spec[700];
        snprintf(spec, sizeof spec, "2:file:%s?sync", sync_path);
        CHECK(vlog_set_outputs(spec) == 0);
    }
    VLOG_INFO("a synchronous info line");
    text = check_slurp_path(sync_path);
    CHECK(strstr(text, " : a synchronous info line\n") != NULL);
    free(text);
    return 0;
}

static int small(void)
{
    struct vlog_stats stats;
    CHECK(vlog_set_buffer_size(16 * 1024) == 0);
    set_output("2", "");
    for (int i = 0; i < 20000; i++)
        VLOG_INFO("small ring line %d, with some words to fill the ring sooner", i);
    CHECK(vlog_get_stats(&stats) == 0);
    /* The ring lapped: records were overwritten, lines were not. */
    if (stats.lost == 0) {
        fprintf(stderr, "the ring never lapped (%llu records)\n",
                (unsigned long long)stats.records);
        return 1;
    }
    return 0;
}

static int crash(void)
{
    set_output("2", "");
    for (int i = 0; i < 2000; i++)
        VLOG_INFO("crash burst line %d", i);
    raise(SIGSEGV);
    return 1;
}

static int killed(void)
{
    set_output("2", "");
    for (int i = 0; i < 1000; i++)
        VLOG_INFO("killed burst line %d", i);
    raise(SIGKILL);
    return 1;
}

static int forked(void)
{
    pid_t pid;
    int status;
    set_output("2", "");
    for (int i = 0; i < 100; i++)
        VLOG_INFO("before the fork %d", i);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < 100; i++)
            VLOG_INFO("in the child %d", i);
        exit(0);
    }
    for (int i = 0; i < 100; i++)
        VLOG_INFO("in the parent %d", i);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return 0;
}

/* The threads of this process. */
static int tasks(void)
{
    int n = 0;
    DIR *dir = opendir("/proc/self/task");
    CHECK(dir != NULL);
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(dir);
    return n;
}

static int alone(void)
{
    char *text, want[64];
    set_output("2", "");
    for (int i = 0; i < 1000; i++) {
        VLOG_INFO("alone %d", i);
        if (i % 100 == 0) {
            text = check_slurp_path(file);
            snprintf(want, sizeof want, " : alone %d\n", i);
            CHECK(strstr(text, want) != NULL);
            free(text);
        }
    }
    if (tasks() != 1) {
        fprintf(stderr, "%d threads\n", tasks());
        return 3;
    }
    return 0;
}

static sigjmp_buf recovery;

static void recover_segv(int sig)
{
    (void)sig;
    siglongjmp(recovery, 1);
}

static int recover(void)
{
    char *text;
    set_output("2", "");
    VLOG_INFO("before the fault");
    CHECK(vlog_flush() == 0);
    /* A plain handler, installed after vlog's: it gets the signal after
     * the dump, and the program goes on. */
    CHECK(signal(SIGSEGV, recover_segv) != SIG_ERR);
    if (sigsetjmp(recovery, 1) == 0)
        raise(SIGSEGV);
    VLOG_INFO("info after recovering");
    VLOG_ERROR("error after recovering");
    CHECK(vlog_flush() == 0);
    text = check_slurp_path(file);
    CHECK(check_count(text, " : before the fault\n") == 1);
    CHECK(check_count(text, " : info after recovering\n") == 1);
    CHECK(check_count(text, " : error after recovering\n") == 1);
    free(text);
    return 0;
}

static int sharedfork(void)
{
    char child_file[600];
    pid_t pid;
    int status;
    set_output("2", "");
    snprintf(child_file, sizeof child_file, "%s.child", file);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        char spec[700];
        snprintf(spec, sizeof spec, "2:file:%s", child_file);
        CHECK(vlog_set_outputs(spec) == 0);
        for (int i = 0; i < 100; i++)
            VLOG_INFO("child line %d", i);
        exit(0);
    }
    for (int i = 0; i < 500; i++)
        VLOG_INFO("parent line %d", i);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return 0;
}

static void late_handler(void)
{
    VLOG_WARN("from an exit handler registered before vlog's");
}

static int at_exit_mode;

static __attribute__((destructor)) void late_destructor(void)
{
    if (at_exit_mode)
        VLOG_WARN("from a destructor");
}

static int at_exit(void)
{
    at_exit_mode = 1;
    CHECK(atexit(late_handler) == 0);
    set_output("2", "");
    VLOG_INFO("main runs");
    return 0;
}

/* Not instrumented by AddressSanitizer: the cancel unwinds this frame
 * without returning, and ASan would trip over its redzones' poison at
 * the thread's teardown (see cancel.c). */
__attribute__((no_sanitize_address)) static void *logs_until_cancelled(void *arg)
{
    (void)arg;
    for (long i = 0;; i++) {
        /* Work without a cancellation point of its own. */
        for (volatile long spin = 0; spin < 100000; spin++)
            ;
        VLOG_INFO("cancellable %ld", i);
    }
    return NULL;
}

static int cancel(void)
{
    pthread_t t;
    struct timespec deadline;
    set_output("2", "");
    CHECK(pthread_create(&t, NULL, logs_until_cancelled, NULL) == 0);
    CHECK(pthread_cancel(t) == 0);
    CHECK(clock_gettime(CLOCK_REALTIME, &deadline) == 0);
    deadline.tv_sec += 30;
    if (pthread_timedjoin_np(t, NULL, &deadline) != 0) {
        fprintf(stderr, "the cancelled thread still runs after 30 s\n");
        return 1;
    }
    return 0;
}

static void *long_lines(void *arg)
{
    int id = (int)(intptr_t)arg;
    char pad[1500];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = 0;
    for (int i = 0; i < 5000; i++)
        VLOG_INFO("t%d l%d %s", id, i, pad);
    return NULL;
}

static void *huge_lines(void *arg)
{
    int id = (int)(intptr_t)arg;
    static char pad[8001];
    memset(pad, 'y', sizeof pad - 1);
    /* The most a thread's fields take: every record 1 KiB longer. */
    for (int f = 0; f < 8; f++) {
        char name[65], value[65];
        memset(name, 'A' + f, 64);
        memset(value, 'a' + f, 64);
        name[64] = value[64] = 0;
        CHECK(vlog_thread_field_set(name, value) == 0);
    }
    for (int i = 0; i < 1500; i++) {
        VLOG_INFO("t%d l%d %.*s", id, i, (i * 7919) % 8000, pad);
        /* Records no output prints, which making room evicts. */
        if (i % 3 == 0)
            VLOG_DEBUG("ring only %d %d %.*s", id, i, (i * 7919) % 8000, pad);
    }
    return NULL;
}

static int smallhuge(void)
{
    pthread_t t[4];
    CHECK(vlog_set_buffer_size(16 * 1024) == 0);
    set_output("2", "");
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, huge_lines, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    return 0;
}

static int smallmany(void)
{
    pthread_t t[8];
    CHECK(vlog_set_buffer_size(16 * 1024) == 0);
    set_output("2", "");
    for (int i = 0; i < 8; i++)
        CHECK(pthread_create(&t[i], NULL, long_lines, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 8; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    file = argv[2];
    if (strcmp(argv[1], "threads") == 0)
        return threads();
    if (strcmp(argv[1], "error") == 0)
        return error();
    if (strcmp(argv[1], "small") == 0)
        return small();
    if (strcmp(argv[1], "smallhuge") == 0)
        return smallhuge();
    if (strcmp(argv[1], "crash") == 0)
        return crash();
    if (strcmp(argv[1], "killed") == 0)
        return killed();
    if (strcmp(argv[1], "fork") == 0)
        return forked();
    if (strcmp(argv[1], "alone") == 0)
        return alone();
    if (strcmp(argv[1], "recover") == 0)
        return recover();
    if (strcmp(argv[1], "sharedfork") == 0)
        return sharedfork();
    if (strcmp(argv[1], "atexit") == 0)
        return at_exit();
    if (strcmp(argv[1], "cancel") == 0)
        return cancel();
    if (strcmp(argv[1], "smallmany") == 0)
        return smallmany();
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
