/* VLOG_HEXDUMP: bytes kept as bytes. The program logs 0, 1, 15, 16, 17,
 * 4,096 and 5,000 bytes of every value 0-255 (i & 255), and 64 zeros
 * (repeated lines), to a text file and a JSON file, and writes each
 * buffer to DIR/bytes.N for the driver, which compares the text with
 * `hexdump -C` of the same bytes and decodes the JSON field. It also
 * writes the ring with vlog_dump to DIR/dump.txt. Checked here: a call the
 * filters drop evaluates nothing, at most 4,096 bytes are read, and bad
 * arguments are errors. */
#include "check.h"

#include <fcntl.h>
#include <sys/mman.h>

VLOG_INIT("test.hexdump");

static unsigned char bytes[5000];
static unsigned char zeros[64];
static int evaluated;

static const unsigned char *counted(const unsigned char *p)
{
    evaluated++;
    return p;
}

static void save(const char *dir, const char *name, const void *p, size_t n)
{
    char path[600];
    int fd;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(n == 0 || write(fd, p, n) == (ssize_t)n);
    close(fd);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {0, 1, 15, 16, 17, 4096, 5000};
    char outputs[1300], path[600], name[32];
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *map;
    int fd, records;

    CHECK(argc == 2);
    snprintf(outputs, sizeof outputs, "1:file:%s/text.log 1:json:%s/out.json", argv[1],
             argv[1]);
    CHECK(vlog_set_outputs(outputs) == 0);
    CHECK(vlog_set_level(VLOG_PRIO_INFO) == 0);
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)(i & 255);

    /* Filtered: neither the pointer nor the arguments are evaluated. */
    VLOG_HEXDUMP(VLOG_PRIO_DEBUG, counted(bytes), sizeof bytes, "dropped %p",
                 (void *)counted(bytes));
    CHECK(evaluated == 0);

    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        VLOG_HEXDUMP(VLOG_PRIO_INFO, counted(bytes), sizes[k], "dump %zu", sizes[k]);
        snprintf(name, sizeof name, "bytes.%zu", sizes[k]);
        save(argv[1], name, bytes, sizes[k] < 4096 ? sizes[k] : 4096);
    }
    CHECK(evaluated == 7);
    VLOG_HEXDUMP(VLOG_PRIO_WARN, zeros, sizeof zeros, "dump zeros");
    save(argv[1], "bytes.zeros", zeros, sizeof zeros);

    /* The function form, and what it refuses. */
    CHECK(vlog_write_hexdump(NULL, VLOG_PRIO_WARN, __FILE__, __LINE__, __func__, "fn", 2, 2,
                             bytes + 65, 3) == 1);
    save(argv[1], "bytes.fn", bytes + 65, 3);
    CHECK(vlog_write_hexdump(NULL, VLOG_PRIO_WARN, NULL, 0, NULL, NULL, 0, 0, NULL, 0) == 1);
    CHECK(vlog_write_hexdump(NULL, VLOG_PRIO_WARN, NULL, 0, NULL, "x", 1, 1, NULL, 1) == -1);
    CHECK_ERROR("data is NULL");
    CHECK(vlog_write_hexdump(NULL, VLOG_PRIO_DEBUG, NULL, 0, NULL, "x", 1, 1, NULL, 1) == -1);

    /* No more than 4,096 bytes are read of a larger buffer: the 4,096
     * readable bytes end at a page nothing may read. */
    map = mmap(NULL, 4096 + (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
               -1, 0);
    CHECK(map != MAP_FAILED);
    memset(map, 'g', 4096);
    CHECK(mprotect(map + 4096, (size_t)page, PROT_NONE) == 0);
    VLOG_HEXDUMP(VLOG_PRIO_WARN, map, (size_t)1 << 30, "guarded");

    CHECK(vlog_flush() == 0);
    snprintf(path, sizeof path, "%s/dump.txt", argv[1]);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    records = vlog_dump(fd);
    CHECK(records >= 11);
    close(fd);
    return 0;
}
