/* A dump to where crash dumps go (here one requested by signal, to a file)
 * of a large ring has its newest 384 KiB of records, after a line that says
 * how many older ones are left out: at most 8,192 record lines (a record
 * takes 48 bytes at least), under journald's default burst of 10,000, the
 * newest record always among them. The cut is a position, so neither a
 * damaged record count in the ring's header nor damage among the older
 * records hides the newest ones. vlog_dump writes the whole ring.
 *
 *   dump_newest DUMP [RING_FILE]
 *       with VLOG_DUMP=file:DUMP and VLOG_DUMP_SIGNAL=USR2; with a ring file
 *       (VLOG_BUFFER_FILE=RING_FILE, VLOG_BUFFER_SIZE=8M), the ring's record
 *       count and oldest records are damaged before the last dump */
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

VLOG_INIT("test.newest");

static const char *dump_path;

/* Checks a dump of a ring holding `before` records, then `count` records
 * "NAME i": the line about what is left out (with its count when
 * `counted`), then consecutive records ending with the newest. */
static void check_newest(const char *name, int before, int count, int counted)
{
    int total = before + count, records = -1, left = -1, expect, n = 0;
    char *dump, *p, pattern[64];

    CHECK(truncate(dump_path, 0) == 0 || errno == ENOENT); /* made at the first */
    raise(SIGUSR2);
    dump = check_slurp_path(dump_path);
    p = strstr(dump, "\nvlog: end of dump, ");
    CHECK(p != NULL && sscanf(p, "\nvlog: end of dump, %d records", &records) == 1);
    p = strstr(dump, "\nvlog: ring, oldest first:\n");
    CHECK(p != NULL);
    p += strlen("\nvlog: ring, oldest first:\n");
    if (counted) {
        CHECK(sscanf(p, "vlog: %d older records are left out: a dump has the newest "
                        "384 KiB of the ring\n", &left) == 1);
    } else {
        const char *line = "vlog: older records are left out: a dump has the newest "
                           "384 KiB of the ring\n";
        if (strncmp(p, line, strlen(line)) != 0) {
            fprintf(stderr, "%s: no line about what is left out:\n%.300s\n", name, p);
            exit(1);
        }
    }
    if (records > 8192 || records < 1000 || (counted && left + records != total)) {
        fprintf(stderr, "%s: %d records written, %d left out, of %d\n%.300s\n", name,
                records, left, total, p);
        exit(1);
    }
    snprintf(pattern, sizeof pattern, " : %s ", name);
    expect = counted ? left - before : -1;
    for (; (p = strstr(p, pattern)) != NULL; p++) {
        int i = atoi(p + strlen(pattern));
        if (expect < 0)
            expect = i;
        if (i != expect) {
            fprintf(stderr, "%s: record %d where %d was expected\n", name, i, expect);
            exit(1);
        }
        expect++;
        n++;
    }
    if (n != records || expect != count) {
        fprintf(stderr, "%s: %d of %d records, up to %d of %d\n", name, n, records, expect,
                count);
        exit(1);
    }
    free(dump);
}

int main(int argc, char **argv)
{
    const int total = 30000;
    int records;

    CHECK(argc > 1);
    dump_path = argv[1];
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    if (argc == 2)
        CHECK(vlog_set_buffer_size(8 << 20) == 0);

    /* Three-argument records: about 4,400 fit. */
    for (int i = 0; i < total; i++)
        VLOG_DEBUG("wide %d served in %d us by worker %s", i, i % 977, "seven");
    check_newest("wide", 0, total, 1);

    /* The smallest records: still at most 8,192 lines. */
    for (int i = 0; i < total; i++)
        VLOG_DEBUG("small %d", i);
    check_newest("small", total, total, 1);

    /* vlog_dump, to a descriptor its caller chose: the whole ring. */
    free(check_dump(&records));
    CHECK(records == 2 * total);

    if (argc > 2) {
        /* The record count in the header (offset 48) made absurd, and the
         * oldest 1 MiB of records overwritten with zeros: the dump is the
         * same newest records, the count of those left out unknown. */
        int fd = open(argv[2], O_RDWR);
        struct stat st;
        unsigned char *map;

        CHECK(fd >= 0 && fstat(fd, &st) == 0);
        map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(map != MAP_FAILED);
        *(volatile uint64_t *)(map + 48) = (uint64_t)1 << 62;
        memset(map + st.st_size - (8 << 20), 0, 1 << 20);
        munmap(map, (size_t)st.st_size);
        close(fd);
        check_newest("small", total, total, 0);
    }
    puts("ok");
    return 0;
}
