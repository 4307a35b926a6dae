/* A child forked while another thread is inside a configuration call that
 * writes (here vlog_set_context, writing a backlog for a slow stderr pipe
 * first, with what may wait for the outputs bounded meanwhile) is not
 * bound by that call, which is not the child's: its burst into the 8 MiB
 * ring is absorbed there, though its stderr is a pipe nobody reads, where
 * the bound would make every call wait for the pipe.
 *
 *   VLOG_LEVEL=2 VLOG_BUFFER_SIZE=8M VLOG_OUTPUTS=2:stderr fork_configuring */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

VLOG_INIT("test.forkconf");

static atomic_int a_started, a_done, logged_in_child;
static int pipefd[2];

static void *reader(void *arg)
{
    char buf[4096];
    (void)arg;
    for (;;) {
        ssize_t n = read(pipefd[0], buf, sizeof buf);
        if (n <= 0)
            return NULL;
        /* a slow reader: about 40 MB/s at most */
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

static void *configurer(void *arg)
{
    (void)arg;
    atomic_store(&a_started, 1);
    CHECK(vlog_set_context("5") == 0);
    atomic_store(&a_done, 1);
    return NULL;
}

static void on_alarm(int sig)
{
    char msg[160];
    int n = snprintf(msg, sizeof msg,
                     "child: a logging call blocked until the alarm after %d lines (a_done at fork=%d)\n",
                     atomic_load(&logged_in_child), atomic_load(&a_done));
    (void)sig;
    if (write(1, msg, (size_t)n) < 0)
        _exit(3);
    _exit(2);
}

static void child(void)
{
    int p2[2];
    int was_done = atomic_load(&a_done);
    CHECK(pipe(p2) == 0);
    CHECK(dup2(p2[1], 2) == 2); /* a stderr pipe whose reader is slow (stopped) */
    CHECK(vlog_adopt_stderr() == 0);
    signal(SIGALRM, on_alarm);
    alarm(20); /* a failure's end, not a measurement */
    struct timespec t0; clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 8000; i++) { /* about 900 KB of lines, far below 8 MiB */
        VLOG_INFO("child line %d of a burst the 8 MiB ring should absorb ..........", i);
        atomic_store(&logged_in_child, i + 1);
    }
    {
        struct timespec t1; char b[65536]; ssize_t got = 0, n;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        fcntl(p2[0], F_SETFL, O_NONBLOCK);
        while ((n = read(p2[0], b, sizeof b)) > 0) got += n;
        printf("child: all 8000 lines logged in %.1f ms, %zd bytes in the pipe (a_done at fork=%d)\n",
               (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6, got, was_done);
    }
    fflush(stdout);
    _exit(0);
}

int main(void)
{
    pthread_t r, a;
    int status;
    pid_t pid;

    CHECK(pipe(pipefd) == 0);
    CHECK(dup2(pipefd[1], 2) == 2);
    CHECK(vlog_adopt_stderr() == 0);
    CHECK(pthread_create(&r, NULL, reader, NULL) == 0);
    for (int i = 0; i < 60000; i++)
        VLOG_INFO("parent line %d of the backlog ..................................", i);
    /* The call writes 60,000 lines for a slow reader first: the fork comes
     * while it does. */
    CHECK(pthread_create(&a, NULL, configurer, NULL) == 0);
    while (!atomic_load(&a_started))
        ;
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        child();
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(pthread_join(a, NULL) == 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("the child did not end well: status %d\n", status);
        return 1;
    }
    puts("ok");
    fflush(stdout);
    _exit(0);
}
