/* vlog_dump reads without the lock while another thread writes into a small
 * ring as fast as it can: every line it prints is a whole record, and records
 * between two reports of overwritten data are consecutive. */
#include "check.h"

#include <pthread.h>

VLOG_INIT("test.concurrent");

static volatile int done;

static void *writer(void *arg)
{
    (void)arg;
    for (long i = 0; !done; i++)
        VLOG_DEBUG("seq %ld %.*s", i, (int)(i % 40), "0123456789012345678901234567890123456789");
    return NULL;
}

int main(void)
{
    pthread_t thread;
    long total_lines = 0, reports = 0;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_buffer_size(16 * 1024) == 0);
    CHECK(vlog_set_filters("1:test.concurrent") == 0);
    CHECK(pthread_create(&thread, NULL, writer, NULL) == 0);
    /* The dumps begin once the writer has (on a loaded machine it may not
     * have run at all in the first milliseconds). */
    for (int wait = 0; wait < 10000; wait++) {
        struct vlog_stats stats;
        CHECK(vlog_get_stats(&stats) == 0);
        if (stats.records >= 100)
            break;
        usleep(1000);
    }

    for (int round = 0; round < 300; round++) {
        int records;
        long prev = -1;
        char *dump = check_dump(&records), *line = dump, *end;
        long lines = 0;

        for (; *line; line = end + 1) {
            long seq;
            int pad;
            end = strchr(line, '\n');
            CHECK(end != NULL);
            if (strncmp(line, "vlog: ", 6) == 0) {
                /* Overwritten while read: the next record may jump ahead. */
                if (strstr(line, "overwritten during the dump") == NULL) {
                    fprintf(stderr, "unexpected report: %.*s\n", (int)(end - line), line);
                    exit(1);
                }
                prev = -1;
                reports++;
                continue;
            }
            CHECK(strstr(line, ": debug : test.concurrent : writer:") != NULL);
            {
                const char *msg = strstr(line, " : seq "), *text;
                CHECK(msg != NULL && sscanf(msg, " : seq %ld%n", &seq, &pad) == 1);
                /* The padding text must be exactly what was logged. */
                text = msg + pad;
                CHECK(*text == ' ');
                text++;
                CHECK(end - text == seq % 40);
                CHECK(strncmp(text, "0123456789012345678901234567890123456789",
                              (size_t)(seq % 40)) == 0);
            }
            CHECK(prev < 0 || seq == prev + 1);
            prev = seq;
            lines++;
        }
        CHECK(lines == records);
        total_lines += lines;
        free(dump);
    }
    done = 1;
    CHECK(pthread_join(thread, NULL) == 0);
    printf("%ld records checked, %ld overwritten-while-reading reports\n", total_lines, reports);
    CHECK(total_lines > 0);
    puts("ok");
    return 0;
}
