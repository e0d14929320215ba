/* bench_kvstore.c: the KV store's PUT and GET over loopback TCP, against the
 * physical limits of the same path, and the time a yield takes.
 *
 * For each block size (the sizes vLLM moves for 7B-70B models: a 16-token
 * block of one layer is 64 KiB with 8 KV heads of 128 (Llama-3-8B, 70B) and
 * 256 KiB with 32 (Llama-2-7B); of all layers 2 MiB (8B) and 5 MiB (70B);
 * LMCache's 256-token chunk of an 8B is 32 MiB), it measures:
 *   - copy: the store's device copy alone (cuMemcpyHtoD / DtoH from pinned
 *     memory on a GPU, memcpy on host), the copy-engine limit;
 *   - tcp: a raw loopback exchange of the same bytes (send the block, get a
 *     1-byte ack; send 8 bytes, get the block back), the network limit;
 *   - PUT: header and block, then an EXIST round trip (PUT has no reply;
 *     the EXIST makes the stored block observable), per operation;
 *   - GET: request to the last byte received.
 * Medians and 99th percentiles of REPS operations each, and GB/s of the
 * medians. Then the yield: the store filled with FILL bytes of 2 MiB blocks,
 * an evaluation asks for all of it: the time to evict and free, with 64 MiB
 * slabs, 512 MiB slabs and one slab per block (what slabs save).
 *
 * Usage: bench_kvstore [--device host|cuda:N] [--reps N] [--fill SIZE]
 *                      [--max-size SIZE]
 * The store runs on its own thread (its libuv loop), the client on the main
 * thread with blocking sockets, as vLLM's LMCache client does.
 */
#include "common/sg_alloc.h"
#include "common/sg_clock.h"
#include "common/sg_stats.h"
#include "kvstore/sg_kv_dev.h"
#include "kvstore/sg_kv_proto.h"
#include "kvstore/sg_kvstore.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_kvstore: %s: %s\n", what, msg);
  exit(1);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double p99(const double *v, size_t n) {
  double *c = sg_malloc(n * sizeof *c);
  memcpy(c, v, n * sizeof *c);
  qsort(c, n, sizeof *c, cmp_d);
  double r = c[(size_t)((double)(n - 1) * 0.99)];
  free(c);
  return r;
}

static void send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k <= 0)
      die("send", "connection lost");
    c += k, n -= (size_t)k;
  }
}

static void recv_all(int fd, void *p, size_t n) {
  char *c = p;
  while (n) {
    ssize_t k = recv(fd, c, n, 0);
    if (k <= 0)
      die("recv", "connection lost");
    c += k, n -= (size_t)k;
  }
}

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
    die("connect", "refused");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* ---- the raw loopback peer: the network's own limit ---- */

static int raw_listen(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bind(fd, (struct sockaddr *)&a, sizeof a);
  listen(fd, 1);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  *port = ntohs(a.sin_port);
  return fd;
}

/* Messages: 'P' + u64 n + n bytes -> 1-byte ack; 'G' + u64 n -> n bytes. */
static void *raw_peer(void *arg) {
  int lfd = *(int *)arg;
  int fd = accept(lfd, NULL, NULL);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  size_t cap = 64 * MiB;
  char *buf = sg_malloc(cap);
  memset(buf, 7, cap);
  for (;;) {
    char hdr[9];
    ssize_t k = recv(fd, hdr, 9, MSG_WAITALL);
    if (k != 9)
      break;
    uint64_t n;
    memcpy(&n, hdr + 1, 8);
    if (hdr[0] == 'P') {
      recv_all(fd, buf, n);
      send_all(fd, "k", 1);
    } else {
      send_all(fd, buf, n);
    }
  }
  close(fd);
  free(buf);
  return NULL;
}

/* ---- the store on its own thread ---- */

typedef struct store_thread {
  uv_loop_t loop;
  uv_async_t stop;
  sg_kvstore *kv;
} store_thread;

static void on_stop(uv_async_t *a) {
  store_thread *t = a->data;
  sg_kvstore_close(t->kv);
  uv_close((uv_handle_t *)&t->stop, NULL);
}

static void *store_main(void *arg) {
  store_thread *t = arg;
  uv_run(&t->loop, UV_RUN_DEFAULT);
  return NULL;
}

static void quiet_log(void *data, const char *line) {
  (void)data;
  (void)line;
}

/* ---- measurements ---- */

typedef struct row {
  double med_s, p99_s;
} row;

static row summarize(double *v, size_t n) {
  row r = {sg_stats_median(v, n), p99(v, n)};
  return r;
}

static void header_of(uint8_t *h, int cmd, int i, size_t len) {
  sg_kv_req r = {.command = cmd, .length = (int32_t)len, .fmt = 1, .dtype = 3,
                 .shape = {(int32_t)len, 0, 0, 0}};
  r.key_len = (size_t)snprintf(r.key, sizeof r.key, "bench@1@0@%x@bfloat16", i);
  sg_kv_req_pack(&r, h);
}

static void print_row(const char *what, size_t size, row r) {
  printf("| %-6s | %8zu KiB | %9.1f | %9.1f | %7.2f |\n", what, size / KiB,
         r.med_s * 1e6, r.p99_s * 1e6, (double)size / r.med_s / 1e9);
}

static void bench_size(size_t size, int reps, int port, int raw_fd,
                       sg_kv_backend *be, size_t budget) {
  double *v = sg_malloc((size_t)reps * sizeof *v);
  char *data = be->host_alloc ? be->host_alloc(be->ctx, size) : sg_malloc(size);
  char *back = be->host_alloc ? be->host_alloc(be->ctx, size) : sg_malloc(size);
  for (size_t i = 0; i < size; i++)
    data[i] = (char)(i * 7 + size);
  /* copy limit: one slab of one block, written and read back */
  uint64_t addr;
  sg_err err;
  if (be->slab_alloc(be->ctx, size, &addr, &err) < 0)
    die("slab", err.msg);
  for (int k = 0; k < reps; k++) {
    double t0 = sg_clock_now_s();
    be->write(be->ctx, addr, data, size, &err);
    v[k] = sg_clock_now_s() - t0;
  }
  print_row("H2D", size, summarize(v, (size_t)reps));
  for (int k = 0; k < reps; k++) {
    double t0 = sg_clock_now_s();
    be->read(be->ctx, back, addr, size, &err);
    v[k] = sg_clock_now_s() - t0;
  }
  if (memcmp(back, data, size) != 0)
    die("copy", "the bytes read back differ");
  print_row("D2H", size, summarize(v, (size_t)reps));
  be->slab_free(be->ctx, addr, size);
  /* tcp limit */
  char hdr[9];
  uint64_t n = size;
  memcpy(hdr + 1, &n, 8);
  for (int k = 0; k < reps; k++) {
    double t0 = sg_clock_now_s();
    hdr[0] = 'P';
    send_all(raw_fd, hdr, 9);
    send_all(raw_fd, data, size);
    char ack;
    recv_all(raw_fd, &ack, 1);
    v[k] = sg_clock_now_s() - t0;
  }
  print_row("tcp up", size, summarize(v, (size_t)reps));
  for (int k = 0; k < reps; k++) {
    double t0 = sg_clock_now_s();
    hdr[0] = 'G';
    send_all(raw_fd, hdr, 9);
    recv_all(raw_fd, back, size);
    v[k] = sg_clock_now_s() - t0;
  }
  print_row("tcp dn", size, summarize(v, (size_t)reps));
  /* the store: keys cycle within the budget so GETs hit */
  int fd = connect_to(port);
  int nkeys = (int)(budget / sg_kv_mem_class(size) / 2);
  if (nkeys < 1)
    nkeys = 1;
  if (nkeys > reps)
    nkeys = reps;
  uint8_t h[SG_KV_REQ_BYTES], rep[SG_KV_REPLY_BYTES];
  for (int k = 0; k < reps; k++) {
    double t0 = sg_clock_now_s();
    header_of(h, SG_KV_PUT, k % nkeys, size);
    send_all(fd, h, sizeof h);
    send_all(fd, data, size);
    header_of(h, SG_KV_EXIST, k % nkeys, 0);
    send_all(fd, h, sizeof h);
    recv_all(fd, rep, sizeof rep);
    v[k] = sg_clock_now_s() - t0;
    sg_kv_reply r;
    sg_kv_reply_unpack(rep, &r);
    if (r.code != SG_KV_SUCCESS)
      die("PUT", "the block was not stored");
  }
  print_row("PUT", size, summarize(v, (size_t)reps));
  for (int k = 0; k < reps; k++) {
    double t0 = sg_clock_now_s();
    header_of(h, SG_KV_GET, k % nkeys, 0);
    send_all(fd, h, sizeof h);
    recv_all(fd, rep, sizeof rep);
    sg_kv_reply r;
    sg_kv_reply_unpack(rep, &r);
    if (r.code != SG_KV_SUCCESS || (size_t)r.length != size)
      die("GET", "missed a stored block");
    recv_all(fd, back, size);
    v[k] = sg_clock_now_s() - t0;
  }
  if (memcmp(back, data, size) != 0)
    die("GET", "wrong bytes");
  print_row("GET", size, summarize(v, (size_t)reps));
  close(fd);
  if (be->host_free) {
    be->host_free(be->ctx, data, size);
    be->host_free(be->ctx, back, size);
  } else {
    free(data);
    free(back);
  }
  free(v);
}

/* Fills a fresh store with `fill` bytes of 2 MiB blocks and yields all of it
 * (the evaluation's reserve is the whole device). */
static void bench_yield(sg_kv_backend *be, size_t fill, size_t slab) {
  size_t blk = 2 * MiB;
  sg_kv_mem_opts o = {.slab_bytes = slab, .max_block_bytes = fill};
  sg_kv_mem *m;
  sg_err err;
  if (sg_kv_mem_new(be, &fill, 1, &o, &m, &err) < 0)
    die("mem", err.msg);
  char *data = be->host_alloc ? be->host_alloc(be->ctx, blk) : sg_malloc(blk);
  memset(data, 1, blk);
  double t0 = sg_clock_now_s();
  size_t nblk = fill / blk;
  for (size_t i = 0; i < nblk; i++) {
    char key[64];
    int kn = snprintf(key, sizeof key, "y@1@0@%zx@half", i);
    sg_kv_meta meta = {.length = (int32_t)blk, .fmt = 1, .dtype = 2};
    if (sg_kv_mem_put(m, key, (size_t)kn, &meta, data, &err) < 0)
      die("fill", err.msg);
  }
  double fill_s = sg_clock_now_s() - t0;
  sg_kv_stats st;
  sg_kv_mem_stats(m, &st);
  double secs;
  size_t freed = sg_kv_mem_yield(m, 0, (size_t)1 << 50, &secs);
  printf("| %8zu MiB | %6zu | %9.2f | %9zu MiB | %8.2f |\n", slab / MiB,
         st.blocks, fill_s, freed / MiB, secs * 1e3);
  sg_kv_mem_free(m);
  if (be->host_free)
    be->host_free(be->ctx, data, blk);
  else
    free(data);
}

static void open_backend(const char *device, sg_kv_backend *be,
                         sg_kv_cuda **cu, sg_kv_host **host) {
  bool is_cuda;
  int ord;
  sg_err err;
  if (sg_kv_device_parse(device, &is_cuda, &ord, &err) < 0)
    die("--device", err.msg);
  if (is_cuda) {
    if (sg_kv_cuda_open(ord, cu, &err) < 0)
      die(device, err.msg);
    sg_kv_cuda_backend(*cu, be);
    printf("device: %s (%s)\n", device, sg_kv_cuda_name(*cu));
  } else {
    *host = sg_kv_host_new();
    sg_kv_host_backend(*host, be);
    printf("device: host memory\n");
  }
}

int main(int argc, char **argv) {
  const char *device = "host";
  int reps = 50;
  size_t fill = 1024 * MiB, max_size = 32 * MiB;
  sg_err err;
  /* every flag takes a value: a lone or unknown one is a usage error */
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 < argc && !strcmp(argv[i], "--device")) {
      device = argv[i + 1];
    } else if (i + 1 < argc && !strcmp(argv[i], "--reps")) {
      reps = atoi(argv[i + 1]);
    } else if (i + 1 < argc && !strcmp(argv[i], "--fill")) {
      if (sg_size_parse(argv[i + 1], &fill, &err) < 0)
        die("--fill", err.msg);
    } else if (i + 1 < argc && !strcmp(argv[i], "--max-size")) {
      if (sg_size_parse(argv[i + 1], &max_size, &err) < 0)
        die("--max-size", err.msg);
    } else {
      fprintf(stderr, "usage: bench_kvstore [--device host|cuda:N] [--reps N] [--fill SIZE] "
                      "[--max-size SIZE]\n");
      return 2;
    }
  }
  if (reps < 2)
    reps = 2;
  /* The backend used for the copy limit and the yield (the store opens its
   * own). */
  sg_kv_backend be;
  sg_kv_cuda *cu = NULL;
  sg_kv_host *host = NULL;
  open_backend(device, &be, &cu, &host);
  size_t budget = 2 * max_size > 512 * MiB ? 2 * max_size : 512 * MiB;
  store_thread st;
  uv_loop_init(&st.loop);
  const char *devs[1] = {device};
  sg_kvstore_opts o = {.listen = "127.0.0.1:0", .devices = devs, .n_devices = 1,
                       .budget_bytes = budget, .log = quiet_log};
  if (sg_kvstore_start(&st.loop, &o, &st.kv, &err) < 0)
    die("store", err.msg);
  int port = atoi(strrchr(sg_kvstore_url(st.kv), ':') + 1);
  uv_async_init(&st.loop, &st.stop, on_stop);
  st.stop.data = &st;
  pthread_t th, rt;
  pthread_create(&th, NULL, store_main, &st);
  int rport, lfd = raw_listen(&rport);
  pthread_create(&rt, NULL, raw_peer, &lfd);
  int raw_fd = connect_to(rport);

  printf("\nper operation, %d each: median and p99 in us, GB/s of the median\n\n",
         reps);
  printf("| what   | block        | median us | p99 us    | GB/s    |\n");
  printf("|--------|--------------|-----------|-----------|---------|\n");
  static const size_t sizes[] = {64 * KiB, 256 * KiB, 1 * MiB, 2 * MiB,
                                 5 * MiB, 32 * MiB};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (sizes[i] <= max_size)
      bench_size(sizes[i], reps, port, raw_fd, &be, budget);
  close(raw_fd);
  uv_async_send(&st.stop);
  pthread_join(th, NULL);
  pthread_join(rt, NULL);
  uv_loop_close(&st.loop);

  printf("\nyield: the store holds FILL bytes of 2 MiB blocks; an evaluation "
         "takes the device\n\n");
  printf("| slab         | blocks | fill s    | freed         | yield ms |\n");
  printf("|--------------|--------|-----------|---------------|----------|\n");
  bench_yield(&be, fill, 512 * MiB);
  bench_yield(&be, fill, 64 * MiB);
  bench_yield(&be, fill, 2 * MiB);
  if (cu)
    sg_kv_cuda_close(cu);
  if (host)
    sg_kv_host_free(host);
  return 0;
}
