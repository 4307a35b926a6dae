/* Bytes from the caller never reach a terminal or a log daemon raw: the
 * syslog outputs escape ESC, NUL, CR and LF in messages and field values as
 * the text lines do, and vlog's own warnings escape what they quote (a bad
 * field name). The driver checks stderr for the warning.
 *
 *   escapes
 */
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

VLOG_INIT("test.escapes");

static int bound(int type, int *port)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t len = sizeof addr;
    int fd = socket(AF_INET, type, 0);

    CHECK(fd >= 0);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    if (type == SOCK_STREAM)
        CHECK(listen(fd, 4) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&addr, &len) == 0);
    *port = ntohs(addr.sin_port);
    return fd;
}

static ssize_t receive(int fd, char *buf, size_t cap)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    size_t got = 0;
    ssize_t n;

    while (got < cap && poll(&p, 1, 2000) == 1) {
        n = recv(fd, buf + got, cap - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (strstr(buf, "END") != NULL)
            break;
    }
    return (ssize_t)got;
}

/* The message part must hold no raw control byte, and hold the escapes. */
static void check_escaped(const char *what, const char *buf, ssize_t n)
{
    ssize_t i;

    for (i = 0; i < n; i++) {
        unsigned char b = (unsigned char)buf[i];
        if (b == 0x1b || b == 0 || b == '\r' || b == '\n') {
            fprintf(stderr, "%s: raw byte 0x%02x at %zd: %.*s\n", what, b, i, (int)n, buf);
            exit(1);
        }
    }
    CHECK(memmem(buf, (size_t)n, "esc \\x1b[31m", 12) != NULL);
    CHECK(memmem(buf, (size_t)n, "nul \\x00 cr \\r lf \\n", 20) != NULL);
    CHECK(memmem(buf, (size_t)n, "PATH=\"a\\nb\\x1b\"", 15) != NULL);
}

int main(void)
{
    int udp_port, tcp_port, udp = bound(SOCK_DGRAM, &udp_port);
    int tcp = bound(SOCK_STREAM, &tcp_port), conn;
    char outputs[300], buf[8192];
    ssize_t n;

    snprintf(outputs, sizeof outputs,
             "1:syslog:esc@udp://127.0.0.1:%d 1:syslog:esc@tcp://127.0.0.1:%d", udp_port,
             tcp_port);
    CHECK(vlog_set_outputs(outputs) == 0);
    VLOG_FIELDS(VLOG_PRIO_ERROR, (VLOG_FIELD_STR("PATH", "a\nb\x1b")),
                "esc \x1b[31m nul %c cr \r lf \n END", 0);
    memset(buf, 0, sizeof buf);
    n = receive(udp, buf, sizeof buf - 1);
    CHECK(n > 0);
    check_escaped("udp", buf, n);
    conn = accept(tcp, NULL, NULL);
    CHECK(conn >= 0);
    memset(buf, 0, sizeof buf);
    n = receive(conn, buf, sizeof buf - 1);
    CHECK(n > 0);
    check_escaped("tcp", buf, n);
    /* A bad field name, quoted in vlog's warning on stderr. */
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    VLOG_FIELDS(VLOG_PRIO_ERROR, (VLOG_FIELD_STR("bad\nname\x1b[2J", "v")), "bad field");
    return 0;
}
