/* Reads only what C allows: a captured string is read up to its precision,
 * never further, for literal and `*` precisions alike (glibc reads at most
 * that many bytes, so a string need not be terminated within them); and
 * whatever `*` width or precision the recording path accepts, every reader
 * renders, cut to the message maximum with the usual marker.
 *
 * The ring is a file (argv[1]), so the test can also look at the bytes that
 * were kept: a secret that follows the precision must not be among them. */
#include "check.h"

#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>

VLOG_INIT("test.precision");

/* `len` bytes of `text` (no NUL) ending exactly where an unreadable page
 * begins: reading one byte past them faults. */
static const char *at_page_end(const char *text, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(map != MAP_FAILED);
    CHECK(mprotect(map + page, (size_t)page, PROT_NONE) == 0);
    memcpy(map + page - len, text, len);
    return map + page - len;
}

/* The message of the record whose line contains `tag`. */
static const char *message_of(const char *dump, const char *tag)
{
    const char *at = strstr(dump, tag);
    CHECK(at != NULL);
    return at;
}

int main(int argc, char **argv)
{
    static const char secret[] = "abcdSECRET-PASSWORD";
    const char *edge = at_page_end("tag1", 4);
    char *dump;
    int records;

    CHECK(argc == 2);
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_filters("1:test.precision") == 0);

    /* Literal and `*` precisions on strings that end at an unreadable page. */
    VLOG_DEBUG("lit [%.4s]", edge);
    VLOG_DEBUG("star [%.*s]", 4, edge);
    VLOG_DEBUG("both [%*.*s]", 6, 4, edge);
    /* The bytes after the precision are not kept. */
    VLOG_DEBUG("secret lit [%.4s]", secret);
    VLOG_DEBUG("secret star [%.*s]", 4, secret);
    /* A negative `*` precision means none: the whole string. */
    VLOG_DEBUG("negative [%.*s]", -1, "whole");
    /* A precision of zero reads nothing at all. */
    VLOG_DEBUG("zero [%.0s]", edge + 4);

    /* Widths and precisions larger than a reader renders itself. */
    VLOG_DEBUG("wide [%*d]", 100000, 7);
    VLOG_DEBUG("precise [%.*f]", 5000, 1.5);
    {
        /* Kept from the compiler, which knows these overflow. glibc takes
         * seconds to count out INT_MAX bytes of padding (as it would for
         * the program's own printf), too long under valgrind. */
        volatile int max = getenv("VLOGTEST_QUICK") ? 100 : INT_MAX, min = INT_MIN;
        VLOG_DEBUG("huge [%*d]", max, 7);
        VLOG_DEBUG("left [%-*d]", 3000, 7);
        VLOG_DEBUG("min [%*d]", min, 7);
    }

    dump = check_dump(&records);
    CHECK(strstr(dump, "damaged") == NULL);
    CHECK(strstr(message_of(dump, "lit ["), "lit [tag1]\n") != NULL);
    CHECK(strstr(message_of(dump, "star ["), "star [tag1]\n") != NULL);
    CHECK(strstr(message_of(dump, "both ["), "both [  tag1]\n") != NULL);
    CHECK(strstr(message_of(dump, "secret lit ["), "secret lit [abcd]\n") != NULL);
    CHECK(strstr(message_of(dump, "negative ["), "negative [whole]\n") != NULL);
    CHECK(strstr(message_of(dump, "zero ["), "zero []\n") != NULL);
    /* Cut to the maximum with the marker giving the full length. */
    CHECK(strstr(message_of(dump, "wide ["), "[truncated: 100007 bytes]") != NULL);
    {
        /* 5,012 bytes: whole, 1.5 and 4,999 zeros. */
        const char *p = message_of(dump, "precise [1.5");
        const char *end = strchr(p, '\n');
        CHECK(end != NULL && end - p == 5012 && end[-1] == ']' && end[-2] == '0');
    }
    CHECK(strstr(message_of(dump, "left ["), "left [7   ") != NULL);
    CHECK(strstr(dump, "huge [") != NULL);
    CHECK(strstr(dump, "min [") != NULL);
    CHECK(records == 12);
    free(dump);

    /* No copy of the secret in the ring's bytes. */
    {
        long size = 0;
        FILE *f = fopen(argv[1], "rb");
        char *bytes;
        CHECK(f != NULL);
        CHECK(fseek(f, 0, SEEK_END) == 0);
        size = ftell(f);
        bytes = malloc((size_t)size);
        CHECK(bytes != NULL);
        rewind(f);
        CHECK(fread(bytes, 1, (size_t)size, f) == (size_t)size);
        fclose(f);
        CHECK(memmem(bytes, (size_t)size, "SECRET", 6) == NULL);
        free(bytes);
    }
    puts("ok");
    return 0;
}
