/* Lines a journald output holds for a full journal queue were handed to
 * it, so they lie before where the outputs stopped in the ring; at a crash
 * the dump is their only copy (vlog tells journald so): it has every
 * record then, not only the newest 384 KiB, though 9,000 ring-only records
 * followed them.
 *
 *   dump_held DUMP   in a mount namespace of its own (the journal's socket
 *                    is this program's, at /run/systemd/journal/socket) */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

VLOG_INIT("test.held");

#define LINES 1500

int main(int argc, char **argv)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    int s = socket(AF_UNIX, SOCK_DGRAM, 0), status;
    const char *dump_path = argc > 1 ? argv[1] : "";
    static char seen[LINES];
    char buf[70000];
    ssize_t n;
    pid_t pid;
    int in_journal = 0, in_dump = 0, nowhere = 0, first_nowhere = -1, last_nowhere = -1;

    CHECK(argc == 2);
    strcpy(a.sun_path, "/run/systemd/journal/socket");
    unlink(a.sun_path);
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        int fd = open(dump_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        CHECK(fd >= 0 && dup2(fd, 2) == 2);
        CHECK(vlog_adopt_stderr() == 0);
        CHECK(vlog_set_outputs("2:journald") == 0);
        CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
        for (int i = 0; i < LINES; i++)
            VLOG_INFO("held candidate %d", i);
        /* A call that writes the backlog first: every line handed to the
         * output when it returns (sent, or held for the full queue). */
        CHECK(vlog_set_context("0") == 0);
        for (int i = 0; i < 9000; i++) /* > 384 KiB of ring-only records */
            VLOG_DEBUG("debug filler %d of the flight recorder ....", i);
        raise(SIGSEGV);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    fcntl(s, F_SETFL, O_NONBLOCK);
    while ((n = recv(s, buf, sizeof buf - 1, 0)) > 0) {
        char *p;
        buf[n] = 0;
        if ((p = strstr(buf, "held candidate ")) != NULL) {
            seen[atoi(p + 15)] |= 1;
        } else if ((p = strstr(buf, "vlog: ")) != NULL) {
            printf("journal got: %.*s\n", (int)strcspn(p, "\n"), p);
        }
    }
    {
        char *d = check_slurp_path(dump_path), *p = d, *l;
        l = strstr(d, "vlog: ring, oldest first:\n");
        if (l)
            printf("dump: %.*s\n", (int)strcspn(l + 26, "\n"), l + 26);
        while ((p = strstr(p, "held candidate ")) != NULL) {
            seen[atoi(p + 15)] |= 2;
            p++;
        }
        free(d);
    }
    for (int i = 0; i < LINES; i++) {
        in_journal += seen[i] & 1;
        in_dump += (seen[i] & 2) >> 1;
        if (!seen[i]) {
            nowhere++;
            if (first_nowhere < 0)
                first_nowhere = i;
            last_nowhere = i;
        }
    }
    printf("child signal %d; of %d lines: %d in the journal, %d in the dump, "
           "%d in neither (%d..%d)\n",
           WIFSIGNALED(status) ? WTERMSIG(status) : 0, LINES, in_journal, in_dump, nowhere,
           first_nowhere, last_nowhere);
    unlink(a.sun_path);
    /* Some went to the journal, some were held: the case tested. */
    CHECK(in_journal > 0 && in_journal < LINES);
    return nowhere ? 1 : 0;
}
