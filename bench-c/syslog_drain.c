/* The benchmarks' stand-in for a syslog daemon on /dev/log: binds a Unix
 * datagram socket at PATH and reads and discards every message as fast as
 * it comes, so that what is measured is the sender.
 *
 *     bench-c/syslog_drain PATH     drains until killed */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct sockaddr_un addr;
    static char buf[1 << 16];
    int fd, size = 8 << 20;

    if (argc != 2 || strlen(argv[1]) >= sizeof addr.sun_path) {
        fprintf(stderr, "usage: syslog_drain PATH\n");
        return 2;
    }
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, argv[1]);
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    unlink(argv[1]);
    /* As journald does: a large receive buffer. */
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("syslog_drain");
        return 1;
    }
    chmod(argv[1], 0666);
    for (;;)
        if (recv(fd, buf, sizeof buf, 0) < 0)
            perror("syslog_drain: recv");
}
