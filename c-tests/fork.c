/* 1,000 forks while another thread logs: the child can log and dump at once, every
 * time. A hung child is caught by alarm(). */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

VLOG_INIT("test.fork");

static volatile int stop;

static void *busy(void *arg)
{
    (void)arg;
    for (long i = 0; !stop; i++)
        VLOG_DEBUG("parent thread message %ld", i);
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t thread;
    /* 1,000 forks; fewer under valgrind, where each costs a second. */
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    /* Each child dumps the whole ring: a small one, so that 1,000 dumps
     * take seconds (what is tested is the fork, not the dump's length). */
    CHECK(vlog_set_buffer_size(64 * 1024) == 0);
    CHECK(vlog_set_filters("1:test.fork") == 0);
    CHECK(pthread_create(&thread, NULL, busy, NULL) == 0);
    for (int i = 0; i < rounds; i++) {
        int status;
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            int fd, records;
            alarm(10);
            VLOG_DEBUG("child %d logs", i);
            fd = open("/dev/null", O_WRONLY);
            if (fd < 0)
                _exit(2);
            records = vlog_dump(fd);
            _exit(records > 0 ? 0 : 3);
        }
        CHECK(waitpid(pid, &status, 0) == pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child %d: status %#x\n", i, status);
            return 1;
        }
    }
    stop = 1;
    CHECK(pthread_join(thread, NULL) == 0);
    puts("ok");
    return 0;
}
