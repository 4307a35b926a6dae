/* A child forked from a signal handler that interrupted vlog while it held
 * its lock: the allocator, interposed (raise_in_malloc.h), raises the signal
 * inside a configuration call. vlog's fork handlers cannot take the lock in the
 * child then (the interrupted call holds it, and lets go of it once the
 * handler returns), so the child's copy of the logger still names the
 * parent's writer thread, which the child does not have. A line the child
 * prints must be written all the same, while the child runs (by a writer
 * thread of its own), not left in the ring until something else writes.
 * `fork_in_handler DIR`: the output file is DIR/out.log. Under a tool that
 * owns malloc (AddressSanitizer, valgrind) the signal cannot be raised from
 * inside vlog: the test says so and stops. */
#include "check.h"
#include "raise_in_malloc.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

VLOG_INIT("test.fork_in_handler");

static volatile pid_t child = -1;

static void on_signal(int sig)
{
    (void)sig;
    in_handler = 1;
    child = fork();
    in_handler = 0;
}

/* Whether `path` holds `line` within 30 s, looked at every 10 ms. */
static int appears(const char *path, const char *line)
{
    struct timespec pause = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 3000; i++) {
        char *text = check_slurp_path(path);
        int found = strstr(text, line) != NULL;
        free(text);
        if (found)
            return 1;
        nanosleep(&pause, NULL);
    }
    return 0;
}

int main(int argc, char **argv)
{
    char path[256], outputs[300];
    struct sigaction sa;
    int status;

    CHECK(argc == 2);
    snprintf(path, sizeof path, "%s/out.log", argv[1]);
    snprintf(outputs, sizeof outputs, "2:file:%s", path);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(vlog_set_outputs(outputs) == 0);
    CHECK(vlog_set_level(VLOG_PRIO_INFO) == 0);
    /* The parent's writer thread starts and writes it. */
    VLOG_INFO("the parent's first line");
    CHECK(appears(path, " : the parent's first line\n"));
    {
        void *volatile probe = malloc(16);
        free(probe);
    }
    if (!interposed) {
        printf("skipped under a tool that owns malloc: the signal raised from it\n");
        return 0;
    }
    armed = 1;
    CHECK(vlog_set_filters("1:test.fork_in_handler") == 0);
    CHECK(!armed);
    CHECK(child >= 0);
    if (child == 0) {
        VLOG_INFO("the child's line");
        /* _exit: no exit handler writes it; the child's writer thread must
         * have. */
        _exit(appears(path, " : the child's line\n") ? 0 : 3);
    }
    CHECK(waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char *text = check_slurp_path(path);
        fprintf(stderr, "the child's line was not written (status %d); the file:\n%s", status,
                text);
        free(text);
        return 1;
    }
    VLOG_INFO("the parent's last line");
    CHECK(appears(path, " : the parent's last line\n"));
    puts("ok");
    return 0;
}
