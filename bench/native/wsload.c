/*
 * wsload: a closed-loop WebSocket load generator for the LLMix service benchmark (bench/service.ts).
 *
 * Why hand-written: the house rule is to load a server with a native generator (a Node client saturates
 * before the server does and flatters the ratio), and wrk speaks HTTP only. This is the smallest client
 * that speaks the service's WebSocket protocol: one thread, epoll, N connections, each with one message in
 * flight at a time (as a trainer stepping its sessions does), for a fixed duration.
 *
 *   wsload HOST PORT CONNECTIONS SECONDS MESSAGE_FILE
 *
 * MESSAGE_FILE holds message templates, one per line; line j belongs to connection j % CONNECTIONS, and
 * each connection sends its lines in turn, round and round (so a connection can step several sessions,
 * one at a time). "@ID@" in a template is replaced by a running request id. Prints one JSON line:
 * requests, seconds, rps, p50_us, p99_us, errors (replies with "ok":false, or frames that are not text).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define BUF 65536

#define MAX_TEMPLATES 65536

typedef struct {
  int fd;
  char **templates;
  size_t count;
  size_t turn;
  char in[BUF];
  size_t in_len;
  int upgraded;
  uint64_t sent_at;
  uint64_t next_id;
} conn_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      die("write");
    }
    data += n;
    len -= (size_t)n;
  }
}

/* Send one masked text frame holding the connection's template with its next id. */
static void send_message(conn_t *c) {
  char text[BUF];
  char id[32];
  const char *template = c->templates[c->turn++ % c->count];
  snprintf(id, sizeof id, "%llu", (unsigned long long)c->next_id++);
  const char *at = strstr(template, "@ID@");
  size_t len;
  if (at) {
    size_t head = (size_t)(at - template);
    len = (size_t)snprintf(text, sizeof text, "%.*s%s%s", (int)head, template, id, at + 4);
  } else {
    len = (size_t)snprintf(text, sizeof text, "%s", template);
  }
  unsigned char frame[BUF + 16];
  size_t h = 0;
  frame[h++] = 0x81; /* FIN, text */
  if (len < 126) {
    frame[h++] = (unsigned char)(0x80 | len);
  } else {
    frame[h++] = 0x80 | 126;
    frame[h++] = (unsigned char)(len >> 8);
    frame[h++] = (unsigned char)(len & 0xff);
  }
  const unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
  memcpy(frame + h, mask, 4);
  h += 4;
  for (size_t i = 0; i < len; i++) frame[h + i] = (unsigned char)text[i] ^ mask[i & 3];
  c->sent_at = now_ns();
  write_all(c->fd, (const char *)frame, h + len);
}

/* A complete server frame at the start of the buffer: its total length, or 0 when more bytes are needed. */
static size_t frame_length(const conn_t *c, size_t *payload_at, size_t *payload_len) {
  if (c->in_len < 2) return 0;
  const unsigned char *b = (const unsigned char *)c->in;
  size_t len = b[1] & 0x7f;
  size_t h = 2;
  if (len == 126) {
    if (c->in_len < 4) return 0;
    len = ((size_t)b[2] << 8) | b[3];
    h = 4;
  } else if (len == 127) {
    if (c->in_len < 10) return 0;
    len = 0;
    for (int i = 0; i < 8; i++) len = (len << 8) | b[2 + i];
    h = 10;
  }
  if (c->in_len < h + len) return 0;
  *payload_at = h;
  *payload_len = len;
  return h + len;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: wsload HOST PORT CONNECTIONS SECONDS MESSAGE_FILE\n");
    return 2;
  }
  const char *host = argv[1];
  int port = atoi(argv[2]);
  int n = atoi(argv[3]);
  double seconds = atof(argv[4]);
  if (n < 1 || n > MAX_CONNS) {
    fprintf(stderr, "wsload: CONNECTIONS must be in [1, %d]\n", MAX_CONNS);
    return 2;
  }
  FILE *f = fopen(argv[5], "r");
  if (!f) die("message file");
  static conn_t conns[MAX_CONNS];
  for (int i = 0; i < n; i++) {
    conns[i].templates = calloc(MAX_TEMPLATES, sizeof(char *));
    conns[i].next_id = 1;
  }
  char *line = NULL;
  size_t cap = 0, lines = 0;
  ssize_t got;
  while ((got = getline(&line, &cap, f)) > 0) {
    while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
    if (got == 0) continue;
    conn_t *c = &conns[lines++ % (size_t)n];
    if (c->count < MAX_TEMPLATES) c->templates[c->count++] = strdup(line);
  }
  fclose(f);
  if (lines < (size_t)n) {
    fprintf(stderr, "wsload: %zu messages for %d connections: every connection needs one\n", lines, n);
    return 2;
  }

  int ep = epoll_create1(0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, host, &addr.sin_addr);
  char handshake[512];
  int hl = snprintf(handshake, sizeof handshake,
                    "GET /v1/ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
                    host, port);
  for (int i = 0; i < n; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    conns[i].fd = fd;
    write_all(fd, handshake, (size_t)hl);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }

  size_t lat_cap = 1 << 20, lat_n = 0;
  uint64_t *lat = malloc(lat_cap * sizeof *lat);
  uint64_t errors = 0, requests = 0;
  uint64_t start = 0, end = 0;
  int ready = 0;
  struct epoll_event events[MAX_CONNS];
  for (;;) {
    int k = epoll_wait(ep, events, MAX_CONNS, 1000);
    if (k < 0) {
      if (errno == EINTR) continue;
      die("epoll_wait");
    }
    uint64_t t = now_ns();
    if (start && t >= end) break;
    for (int e = 0; e < k; e++) {
      conn_t *c = &conns[events[e].data.u32];
      ssize_t r = read(c->fd, c->in + c->in_len, BUF - c->in_len);
      if (r <= 0) {
        fprintf(stderr, "wsload: connection closed by the server\n");
        return 1;
      }
      c->in_len += (size_t)r;
      if (!c->upgraded) {
        char *eoh = memmem(c->in, c->in_len, "\r\n\r\n", 4);
        if (!eoh) continue;
        if (strncmp(c->in, "HTTP/1.1 101", 12) != 0) {
          fprintf(stderr, "wsload: upgrade refused: %.*s\n", (int)(eoh - c->in), c->in);
          return 1;
        }
        size_t used = (size_t)(eoh + 4 - c->in);
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        c->upgraded = 1;
        if (++ready == n) {
          /* Every connection is up: the clock starts now, and every connection sends its first step. */
          start = now_ns();
          end = start + (uint64_t)(seconds * 1e9);
          for (int i = 0; i < n; i++) send_message(&conns[i]);
        }
        continue;
      }
      size_t at, len, total;
      while ((total = frame_length(c, &at, &len)) > 0) {
        unsigned char opcode = (unsigned char)c->in[0] & 0x0f;
        if (opcode != 1 || memmem(c->in + at, len, "\"ok\":false", 10) != NULL) errors++;
        if (lat_n == lat_cap) lat = realloc(lat, (lat_cap *= 2) * sizeof *lat);
        lat[lat_n++] = t - c->sent_at;
        requests++;
        memmove(c->in, c->in + total, c->in_len - total);
        c->in_len -= total;
        if (t < end) send_message(c);
      }
    }
  }
  double elapsed = (double)(now_ns() - start) / 1e9;
  qsort(lat, lat_n, sizeof *lat, cmp_u64);
  double p50 = lat_n ? (double)lat[lat_n / 2] / 1000.0 : 0;
  double p99 = lat_n ? (double)lat[(size_t)((double)lat_n * 0.99)] / 1000.0 : 0;
  printf("{\"requests\":%llu,\"seconds\":%.3f,\"rps\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"errors\":%llu}\n",
         (unsigned long long)requests, elapsed, (double)requests / elapsed, p50, p99, (unsigned long long)errors);
  return 0;
}
