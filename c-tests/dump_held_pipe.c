/* Lines a stderr output holds for a full pipe were handed to it, so they
 * lie before where the outputs stopped in the ring; at a crash the dump is
 * their only copy: it has every record then, not only the newest 384 KiB,
 * though 12,000 ring-only records followed them.
 *
 *   dump_held_pipe DUMP */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

VLOG_INIT("test.heldpipe");

#define LINES 200

int main(int argc, char **argv)
{
    static char seen[LINES], junk[4096];
    int p[2], status, in_pipe = 0, in_dump = 0, nowhere = 0;
    char *dump, *q;
    pid_t pid;

    CHECK(argc == 2);
    CHECK(pipe(p) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
        CHECK(dup2(p[1], 2) == 2);
        memset(junk, '#', sizeof junk);
        while (write(2, junk, sizeof junk) > 0) /* the pipe is full */
            ;
        CHECK(vlog_adopt_stderr() == 0);
        CHECK(vlog_set_outputs("2:stderr") == 0);
        CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
        for (int i = 0; i < LINES; i++)
            VLOG_INFO("held candidate %d", i);
        /* A call that writes the backlog first: every line handed to the
         * output when it returns, held for the full pipe. */
        CHECK(vlog_set_context("0") == 0);
        for (int i = 0; i < 12000; i++)
            VLOG_DEBUG("debug filler %d of the flight recorder ....", i);
        raise(SIGSEGV);
        _exit(0);
    }
    close(p[1]);
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
    {
        static char got[1 << 20];
        size_t len = 0;
        ssize_t n;
        while (len < sizeof got - 1 && (n = read(p[0], got + len, sizeof got - 1 - len)) > 0)
            len += (size_t)n;
        got[len] = '\0';
        for (q = got; (q = strstr(q, "held candidate ")) != NULL; q++)
            seen[atoi(q + 15)] |= 1;
    }
    dump = check_slurp_path(argv[1]);
    for (q = dump; (q = strstr(q, "held candidate ")) != NULL; q++)
        seen[atoi(q + 15)] |= 2;
    for (int i = 0; i < LINES; i++) {
        in_pipe += seen[i] & 1;
        in_dump += (seen[i] & 2) >> 1;
        nowhere += !seen[i];
    }
    if (nowhere) {
        q = strstr(dump, "vlog: ring, oldest first:\n");
        printf("of %d lines: %d in the pipe, %d in the dump, %d in neither; the dump: %.200s\n",
               LINES, in_pipe, in_dump, nowhere, q ? q : dump);
        return 1;
    }
    free(dump);
    puts("ok");
    return 0;
}
