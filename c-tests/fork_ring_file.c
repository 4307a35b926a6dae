/* The daemon() pattern with a ring file: the parent logs, forks and goes quiet
 * (here it waits; daemon() would exit), the child goes on logging. The child
 * keeps writing the same file, so the test driver finds both the parent's
 * record from before the fork and every one of the child's. */
#include "check.h"

#include <sys/wait.h>

VLOG_INIT("test.forkfile");

/* `fork_ring_file daemon`: the real daemon(3). The process the driver started
 * exits at once; the daemon goes on logging into the ring file, with its
 * stdio now /dev/null. */
static int run_daemon(void)
{
    VLOG_WARN("before daemon()");
    CHECK(daemon(1, 0) == 0);
    for (int i = 0; i < 300; i++)
        VLOG_WARN("daemon message %d", i);
    VLOG_WARN("daemon done");
    return 0;
}

int main(int argc, char **argv)
{
    int status;
    pid_t pid;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    if (argc > 1 && strcmp(argv[1], "daemon") == 0)
        return run_daemon();
    VLOG_WARN("parent before fork");
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < 300; i++)
            VLOG_WARN("child message %d", i);
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    puts("ok");
    return 0;
}
