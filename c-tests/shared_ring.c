/* Several processes writing one ring file at once: a daemon and the workers it
 * forks all log into the file the daemon opened, under the ring's
 * process-shared lock, so nothing is lost or torn. A worker killed while it
 * may hold that lock (SIGKILL mid-append) does not stop the others: the lock
 * is robust.
 *
 *   shared_ring WORKERS MESSAGES     (VLOG_BUFFER_FILE set by the driver)
 *
 * Then the driver reads the file with vlog-dump. */
#include "check.h"

#include <signal.h>
#include <sys/wait.h>

VLOG_INIT("test.shared");

static void work(int proc, int messages)
{
    for (int i = 0; i < messages; i++)
        VLOG_DEBUG("process %d message %d", proc, i);
}

int main(int argc, char **argv)
{
    int workers, messages, status;
    pid_t pids[64];

    CHECK(argc == 3);
    workers = atoi(argv[1]);
    messages = atoi(argv[2]);
    CHECK(workers > 0 && workers <= 64 && messages > 0);
    CHECK(getenv("VLOG_BUFFER_FILE") != NULL);
    VLOG_WARN("daemon starts");
    for (int w = 0; w < workers; w++) {
        pids[w] = fork();
        CHECK(pids[w] >= 0);
        if (pids[w] == 0) {
            work(w + 1, messages);
            _exit(0);
        }
    }
    work(0, messages);
    for (int w = 0; w < workers; w++) {
        CHECK(waitpid(pids[w], &status, 0) == pids[w]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    VLOG_WARN("all workers done");

    /* Workers killed at random moments while logging; the daemon must
     * still be able to log afterwards (an alarm catches a hang on a lock
     * whose holder died). Each logs a bounded number of records, spread
     * over longer than the daemon waits before the kill: a daemon slowed
     * by a busy machine must not see them push the workers' messages above
     * out of the ring. */
    for (int k = 0; k < 20; k++) {
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            for (int i = 0; i < 5000; i++) {
                VLOG_DEBUG("doomed worker %d", k);
                for (volatile int spin = 0; spin < 3000; spin++)
                    ;
            }
            for (;;)
                pause();
        }
        usleep(2000 + 500 * k);
        CHECK(kill(pid, SIGKILL) == 0);
        CHECK(waitpid(pid, &status, 0) == pid);
    }
    alarm(10);
    VLOG_WARN("daemon goes on after killed workers");
    alarm(0);
    puts("ok");
    return 0;
}
