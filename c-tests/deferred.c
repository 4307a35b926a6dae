/* Deferred formatting: messages recorded as format and arguments read back
 * as exactly the text snprintf makes from the same call, from the ring
 * (vlog_dump) and in a file output that vlog's writer thread writes (which
 * keeps the argument kinds of the formats it printed last: formats that
 * share a place there, one too long to keep); formats vlog does not render
 * itself, a changing format pointer and over-long arguments fall back to
 * formatting at the call, with the same text. */
#include "check.h"

#include <math.h>
#include <stdint.h>

VLOG_INIT("test.deferred");

static char want[64][2048];
static int cases;

#define CASE(...)                                                             \
    do {                                                                      \
        snprintf(want[cases++], sizeof want[0], __VA_ARGS__);                 \
        VLOG_WARN(__VA_ARGS__);                                               \
    } while (0)

/* The message part of each line of `text`, in order, compared with want[]. */
static void compare(const char *what, char *text)
{
    int i = 0;
    char *line = text, *end;

    for (; (end = strchr(line, '\n')) != NULL; line = end + 1) {
        char *msg;
        *end = '\0';
        msg = strstr(line, ": warning : test.deferred : main:");
        CHECK(msg != NULL);
        msg = strstr(msg + 33, " : ");
        CHECK(msg != NULL);
        msg += 3;
        if (i >= cases || strcmp(msg, want[i]) != 0) {
            fprintf(stderr, "%s, message %d:\n  got  \"%s\"\n  want \"%s\"\n", what, i, msg,
                    i < cases ? want[i] : "(none)");
            exit(1);
        }
        i++;
    }
    CHECK(i == cases);
}

int main(void)
{
    static char long_text[3000];
    const char *volatile null_text = NULL;
    long double ld = 1.25L;
    int records;
    char dir[] = "/tmp/vlog-deferred-XXXXXX";
    char spec[128];
    const char *log;

    CHECK(mkdtemp(dir) != NULL);
    log = check_path(dir, "deferred.log");
    snprintf(spec, sizeof spec, "3:file:%s", log);
    CHECK(vlog_set_outputs(spec) == 0);
    memset(long_text, 'y', sizeof long_text - 1);

    CASE("Starting backup replica garbage collector thread");
    CASE("Opened session with coordinator at %s", "basic+udp:host=192.168.1.140,port=12246");
    CASE("Backup storage speeds (min): %d MB/s read", 181);
    CASE("buffer has consumed %lu bytes of extra storage, current allocation: %lu bytes",
         1032024UL, 1016544UL);
    CASE("Using tombstone ratio balancer with ratio = %0.6lf", 0.4);
    CASE("Initialized InfUdDriver buffers: %lu receive buffers (%u MB), %u transmit buffers "
         "(%u MB), took %0.1lf ms", 50000UL, 97U, 50U, 0U, 26.2);
    CASE("ints %d %i %+d % d %-5d| %05d %hhd %hd %ld %lld %jd %zd %td", -1, 42, 7, 7, 3, -42,
         (signed char)-3, (short)-300, -5L, -6LL, (intmax_t)-7, (ssize_t)-8, (ptrdiff_t)-9);
    CASE("unsigned %u %o %#o %x %#X %hhu %hu %lu %llx %ju %zu", 4000000000U, 8U, 8U, 255U, 255U,
         (unsigned char)250, (unsigned short)65000, 1UL << 40, 0xdeadbeefULL, (uintmax_t)1, (size_t)2);
    CASE("chars %c%c%c [%5c] [%-3c]", 'v', 'l', 'g', 'x', 'y');
    CASE("strings [%s] [%10s] [%-10s] [%.3s] [%s]", "a", "right", "left", "truncate", null_text);
    CASE("pointers %p %p", (void *)0, (void *)(uintptr_t)0x7fff1234);
    CASE("floats %f %e %g %G %a %.0f %#.0f %10.3f %-10.2e| %g", 3.14159, 6.02e23, 1e-5, 1e20,
         1.5, 2.5, 2.5, -1.0 / 3, 12345.678, 100000.0);
    CASE("special %f %e %g %F", INFINITY, -INFINITY, NAN, -NAN);
    CASE("star width [%*d] [%-*d] precision [%.*f] [%*.*s]", 6, 42, 6, 42, 2, 3.14159, 8, 3, "abcdef");
    CASE("percent %% and %d%%", 50);
    errno = ENOENT;
    CASE("errno %m after %s", "open");
    for (int i = 0; i < 5; i++)
        CASE("same site, value %d of %s", i, i % 2 ? "odd" : "even");
    /* Fallbacks: formatted at the call, same text. */
    CASE("long double %Lf", ld);
    CASE("grouping %'d", 1234567);
    for (int i = 0; i < 2; i++) {
        const char *fmt = i ? "changing format B %d" : "changing format A %d";
        CASE(fmt, i);
    }
    CASE("long argument %.2000s", long_text);
    /* Two formats of the same length and last byte, in turn: the writer
     * thread keeps their kinds in one place, and must never read one's
     * words by the other's. Then one longer than it keeps. */
    for (int i = 0; i < 3; i++) {
        CASE("slot %d %d", i, -i);
        CASE("slot %s %d", i % 2 ? "odd" : "even", i);
    }
    CASE("a format longer than the 128 bytes whose kinds the writer thread keeps, "
         "so parsed for each line it prints: %d %s %u", -12, "end", 34U);
    /* A format built in a buffer reuses its address with other contents: it
     * must be formatted at the call, never matched to the first contents. */
    {
        char built[32];
        snprintf(built, sizeof built, "built format %%d");
        CASE(built, 1);
        snprintf(built, sizeof built, "built format %%s");
        CASE(built, "two");
    }

    {
        char *text = check_dump(&records);
        compare("vlog_dump", text);
        free(text);
    }
    CHECK(records == cases);
    /* The same text in the file, as vlog's writer thread wrote it. */
    CHECK(vlog_flush() == 0);
    {
        char *text = check_slurp_path(log);
        compare("file output", text);
        free(text);
    }
    unlink(log);
    rmdir(dir);
    /* For the driver, which compares it with vlog-dump's reading of the ring
     * file (the text above was cut into pieces by compare()). */
    vlog_dump(1);
    puts("ok");
    return 0;
}
