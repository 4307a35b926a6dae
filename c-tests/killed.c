/* Four threads log into the ring file until the test driver kills the
 * process with SIGKILL; it then reads the file back with vlog-dump. */
#include "check.h"

#include <pthread.h>

VLOG_INIT("test.killed");

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;

    for (long i = 0;; i++)
        VLOG_DEBUG("thread %d message %ld", id, i);
    return NULL;
}

int main(void)
{
    pthread_t threads[4];

    CHECK(vlog_init() == 0);
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_filters("1:test.killed") == 0);
    for (int t = 0; t < 4; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0);
    puts("ready");
    fflush(stdout);
    for (;;)
        pause();
}
