/* A thread cancelled while its logging call waits for room in a full pipe
 * (VLOG_WRITER=caller: it writes its own line, and waits in poll(2), a
 * cancellation point, for the reader to take more): the cancel acts as the
 * call returns (pthread_testcancel as vlog's entry point returns, after
 * vlog has put everything back), never inside it, where an unwind through
 * vlog's frames would abort the process or leave its lock held.
 *
 *   VLOG_WRITER=caller VLOG_OUTPUTS=2:stderr VLOG_LEVEL=2 cancel_room */
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

VLOG_INIT("test.cancel_room");

static atomic_int tid, acted;

static void cleanup(void *arg)
{
    (void)arg;
    atomic_store(&acted, 1);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_cleanup_push(cleanup, NULL);
    atomic_store(&tid, (int)syscall(SYS_gettid));
    VLOG_INFO("a line for a full pipe");
    pthread_testcancel();
    pthread_cleanup_pop(0);
    return NULL;
}

/* Whether thread `t` is in poll(2) or ppoll(2) now. */
static int in_poll(int t)
{
    char path[64], buf[64] = "";
    FILE *f;
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", t);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fgets(buf, sizeof buf, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    return atoi(buf) == SYS_poll || atoi(buf) == SYS_ppoll;
}

int main(void)
{
    int p[2];
    char junk[4096];
    pthread_t t;

    memset(junk, 'x', sizeof junk);
    CHECK(pipe(p) == 0);
    CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
    while (write(p[1], junk, sizeof junk) > 0)
        ;
    CHECK(dup2(p[1], 2) == 2);
    CHECK(vlog_adopt_stderr() == 0);
    CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
    /* Until it waits for the pipe (the wait lasts 5 s at most). */
    while (!atomic_load(&tid) || !in_poll(atomic_load(&tid)))
        sched_yield();
    CHECK(pthread_cancel(t) == 0);
    /* Room: the call writes its line, and returns. */
    CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
    while (read(p[0], junk, sizeof junk) > 0)
        ;
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(acted);
    /* vlog is whole: its lock free, its counters readable, a line logged. */
    {
        vlog_stats st;
        VLOG_WARN("after the cancel");
        CHECK(vlog_get_stats(&st) == 0 && st.records >= 2);
    }
    puts("ok");
    return 0;
}
