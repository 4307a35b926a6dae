/* 4 threads x 100k messages into the ring at once: afterwards every record is
 * intact and each thread's records are in order with no gap. */
#include "check.h"

#include <pthread.h>

VLOG_INIT("test.threads");

#define THREADS 4
#define PER_THREAD 100000

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;

    for (int i = 0; i < PER_THREAD; i++)
        VLOG_DEBUG("thread %d message %d", id, i);
    return NULL;
}

int main(void)
{
    pthread_t threads[THREADS];
    int last[THREADS], seen[THREADS] = {0};
    vlog_stats stats;
    char *dump, *p;
    int records;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_buffer_size(2 << 20) == 0);
    CHECK(vlog_set_filters("1:test.threads") == 0);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0);
    for (int t = 0; t < THREADS; t++)
        CHECK(pthread_join(threads[t], NULL) == 0);

    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(stats.records == THREADS * PER_THREAD);
    dump = check_dump(&records);
    CHECK(strstr(dump, "vlog:") == NULL);
    CHECK((uint64_t)records + stats.lost == stats.records);
    CHECK(records > 10000);

    for (int t = 0; t < THREADS; t++)
        last[t] = -1;
    for (p = dump; (p = strstr(p, " : thread ")) != NULL; p++) {
        int id, i;
        CHECK(sscanf(p, " : thread %d message %d", &id, &i) == 2);
        CHECK(id >= 0 && id < THREADS);
        /* In order; and once a thread appears, no message of it is missing
         * (the ring drops only the oldest records, from the front). */
        CHECK(last[id] < 0 || i == last[id] + 1);
        last[id] = i;
        seen[id]++;
    }
    for (int t = 0; t < THREADS; t++)
        CHECK(seen[t] == 0 || last[t] == PER_THREAD - 1);
    free(dump);
    puts("ok");
    return 0;
}
