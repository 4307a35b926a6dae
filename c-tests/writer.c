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
 *            started one: VLOG_WRITER was not obeyed) */
#include "check.h"

#include <dirent.h>
#include <pthread.h>
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
    if (strcmp(argv[1], "crash") == 0)
        return crash();
    if (strcmp(argv[1], "killed") == 0)
        return killed();
    if (strcmp(argv[1], "fork") == 0)
        return forked();
    if (strcmp(argv[1], "alone") == 0)
        return alone();
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
