/* PRIO:json:PATH: one JSON object per line, valid UTF-8 whatever the message
 * holds. The driver reads the file with Python's json module (strict UTF-8)
 * and compares every field; this program prints its pid for that. */
#include "check.h"

VLOG_INIT("test.json");

int main(int argc, char **argv)
{
    char outputs[600], long_text[5001];

    CHECK(argc == 2);
    snprintf(outputs, sizeof outputs, "1:json:%s", argv[1]);
    unlink(argv[1]);
    CHECK(vlog_set_outputs(outputs) == 0);
    memset(long_text, 'x', 5000);
    memcpy(long_text + 2500, "\xc3\xa9", 2);
    long_text[5000] = '\0';

    VLOG_ERROR("plain text");
    VLOG_ERROR("quote \" and backslash \\ and slash /");
    VLOG_ERROR("newline\ntab\tcr\rbell\aesc\x1b[31m del\x7f");
    VLOG_ERROR("nul %c here", 0);
    VLOG_ERROR("bad %s bytes", "\xff\xfe");
    VLOG_ERROR("cut %s", "\xe2\x82");
    VLOG_ERROR("utf8 %s", "\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\x9b");
    VLOG_ERROR("%s", long_text);
    printf("%d\n", (int)getpid());
    return 0;
}
