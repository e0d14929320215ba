/* sg_eval_cpu_check.c: the pure parts of the CPU evaluator (sg_eval_cpu.h)
 * but its values (sg_eval_cpu_values.c: inputs, poison, allclose): the ELF
 * symbol reader and the symbol rules, compiler-diagnostic cuts, signal
 * names, device parsing. Nothing here does I/O, so all of it is tested
 * directly.
 */
#include "eval/sg_eval_cpu.h"

#include "common/sg_alloc.h"
#include "common/sg_buf.h"

#include <elf.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ELF dynamic symbols --------------------------------------------------- */

void sg_elf_symbols_free(sg_elf_sym *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(s[i].name);
  free(s);
}

static bool in_bounds(size_t len, uint64_t off, uint64_t size) {
  return off <= len && size <= len - off;
}

int sg_elf_dynamic_symbols(const void *data, size_t len, sg_elf_sym **out,
                           size_t *n, sg_err *err) {
  *out = NULL;
  *n = 0;
  const unsigned char *p = data;
  Elf64_Ehdr eh;
  if (len < sizeof eh || memcmp(p, ELFMAG, SELFMAG) != 0)
    return sg_err_set(err, SG_EPARSE, "not an ELF file");
  memcpy(&eh, p, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    return sg_err_set(err, SG_EPARSE, "not a 64-bit ELF file");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
#else
  if (eh.e_ident[EI_DATA] != ELFDATA2MSB)
#endif
    return sg_err_set(err, SG_EPARSE, "ELF byte order is not this machine's");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !in_bounds(len, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
    return sg_err_set(err, SG_EPARSE, "ELF section headers out of bounds");
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, p + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_DYNSYM)
      continue;
    if (sh.sh_link >= eh.e_shnum || sh.sh_entsize != sizeof(Elf64_Sym) ||
        !in_bounds(len, sh.sh_offset, sh.sh_size))
      return sg_err_set(err, SG_EPARSE, "ELF .dynsym out of bounds");
    Elf64_Shdr st;
    memcpy(&st, p + eh.e_shoff + (uint64_t)sh.sh_link * sizeof st, sizeof st);
    if (!in_bounds(len, st.sh_offset, st.sh_size))
      return sg_err_set(err, SG_EPARSE, "ELF .dynstr out of bounds");
    const char *strs = (const char *)p + st.sh_offset;
    size_t count = sh.sh_size / sizeof(Elf64_Sym);
    sg_elf_sym *syms = count ? sg_calloc(count, sizeof *syms) : NULL;
    size_t k = 0;
    for (size_t s = 1; s < count; s++) { /* symbol 0 is the null symbol */
      Elf64_Sym sym;
      memcpy(&sym, p + sh.sh_offset + s * sizeof sym, sizeof sym);
      if (sym.st_name == 0 || sym.st_name >= st.sh_size)
        continue;
      const char *name = strs + sym.st_name;
      size_t max = st.sh_size - sym.st_name;
      size_t nl = strnlen(name, max);
      if (nl == max) {
        sg_elf_symbols_free(syms, k);
        return sg_err_set(err, SG_EPARSE, "ELF symbol name not terminated");
      }
      syms[k].name = sg_strndup(name, nl);
      syms[k].defined = sym.st_shndx != SHN_UNDEF;
      syms[k].weak = ELF64_ST_BIND(sym.st_info) == STB_WEAK;
      syms[k].func = ELF64_ST_TYPE(sym.st_info) == STT_FUNC ||
                     ELF64_ST_TYPE(sym.st_info) == STT_GNU_IFUNC;
      k++;
    }
    *out = syms;
    *n = k;
    return 0;
  }
  return 0; /* no dynamic symbols at all */
}

/* ---- the symbol rules ------------------------------------------------------ */

typedef struct rule {
  const char *const *names;
  const char *why;
} rule;

static const char *const spawn_names[] = {
    "fork", "vfork", "_Fork", "clone", "clone3", "execve", "execv", "execvp",
    "execvpe", "execl", "execlp", "execle", "execveat", "fexecve", "system",
    "popen", "posix_spawn", "posix_spawnp", "daemon", NULL};
static const char *const thread_names[] = {
    "pthread_create", "thrd_create", NULL};
static const char *const net_names[] = {
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    "send", "sendto", "sendmsg", "recv", "recvfrom", "recvmsg", "getaddrinfo",
    "gethostbyname", "gethostbyname2", "gethostbyaddr", NULL};
static const char *const file_names[] = {
    "open", "open64", "openat", "openat64", "creat", "creat64", "fopen",
    "fopen64", "freopen", "freopen64", "fdopen", "opendir", "mkstemp",
    "tmpfile", "unlink", "remove", "rename", "truncate", "ftruncate", "mmap",
    "mmap64", "mprotect", "write", "writev", "pwrite", "pwrite64", "pwritev",
    "dup", "dup2", "dup3", "fcntl", "ioctl", NULL};
static const char *const dl_names[] = {
    "dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr", "dlinfo", NULL};
static const char *const sys_names[] = {
    "syscall", "kill", "killpg", "tgkill", "sigqueue", "ptrace", "prctl",
    "setrlimit", "prlimit", "prlimit64", "unshare", "setns", "chroot",
    "chdir", "setpgid", "setsid", "sched_setaffinity", "seccomp", NULL};

static const rule rules[] = {
    {spawn_names, "starts a process or runs a program"},
    {thread_names, "starts threads (the kernel runs on one pinned core)"},
    {net_names, "uses the network"},
    {file_names, "opens, writes or maps files or descriptors"},
    {dl_names, "loads code or looks up symbols at run time"},
    {sys_names, "makes raw system calls or changes its process or limits"},
};

const char *sg_eval_forbidden_symbol(const char *name) {
  if (strncmp(name, "reference", 9) == 0)
    return "calls the reference implementation (symbols named reference* are "
           "off limits)";
  for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
    for (const char *const *n = rules[i].names; *n; n++)
      if (strcmp(name, *n) == 0)
        return rules[i].why;
  return NULL;
}

void sg_eval_check_symbols(const sg_elf_sym *syms, size_t n, const char *entry,
                           sg_eval_resolver resolve, void *ctx,
                           sg_eval_status *status, char **message) {
  *status = SG_EVAL_OK;
  *message = NULL;
  /* rejections first: a forbidden call is the worse news */
  for (size_t i = 0; i < n; i++) {
    if (syms[i].defined)
      continue;
    const char *why = sg_eval_forbidden_symbol(syms[i].name);
    if (why) {
      *status = SG_EVAL_REJECTED;
      *message = sg_asprintf(
          "rejected: the kernel uses `%s`, which %s. A kernel may only compute: "
          "no processes, threads, files, network, dynamic loading, system calls "
          "or calls to the reference.",
          syms[i].name, why);
      return;
    }
  }
  bool has_entry = false;
  for (size_t i = 0; i < n; i++)
    if (syms[i].defined && syms[i].func && strcmp(syms[i].name, entry) == 0)
      has_entry = true;
  if (!has_entry) {
    *status = SG_EVAL_COMPILE_ERROR;
    *message = sg_asprintf(
        "the candidate does not define the entry function `%s` (it must be "
        "defined with external linkage, with the task's signature)",
        entry);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    if (syms[i].defined || syms[i].weak)
      continue;
    if (!resolve(syms[i].name, ctx)) {
      *status = SG_EVAL_COMPILE_ERROR;
      *message = sg_asprintf(
          "link error: undefined reference to `%s` (only the C standard "
          "library and libm are available)",
          syms[i].name);
      return;
    }
  }
}

/* ---- compiler diagnostics ---------------------------------------------- */

static bool is_diagnostic_line(const char *line, size_t len) {
  static const char *const kinds[] = {": error:", ": warning:", ": fatal error:"};
  for (size_t k = 0; k < 3; k++) {
    size_t kl = strlen(kinds[k]);
    for (size_t i = 0; i + kl <= len; i++)
      if (memcmp(line + i, kinds[k], kl) == 0)
        return true;
  }
  return false;
}

char *sg_eval_trim_diagnostics(const char *text, size_t max_diags,
                               size_t max_bytes) {
  sg_buf b;
  sg_buf_init(&b, 0);
  size_t diags = 0, cut_diags = 0;
  bool cut_bytes = false, cutting = false;
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
    bool diag = is_diagnostic_line(p, len);
    if (diag) {
      diags++;
      if (diags > max_diags)
        cutting = true;
    }
    if (cutting) {
      cut_diags += diag;
    } else if (b.len + len > max_bytes) {
      cut_bytes = true;
      cutting = true;
      cut_diags += diag;
    } else {
      sg_buf_append(&b, p, len);
    }
    p += len;
  }
  if (cutting) {
    if (b.len && b.data[b.len - 1] != '\n')
      sg_buf_puts(&b, "\n");
    if (cut_diags)
      sg_buf_printf(&b, "[%zu more diagnostics not shown]\n", cut_diags);
    else if (cut_bytes)
      sg_buf_printf(&b, "[output cut at %zu bytes]\n", max_bytes);
  }
  return sg_buf_steal(&b);
}

char *sg_eval_signal_text(int sig) {
  const char *abbrev = sigabbrev_np(sig);
  const char *descr = sigdescr_np(sig);
  if (!abbrev)
    return sg_asprintf("signal %d", sig);
  char d[64];
  snprintf(d, sizeof d, "%s", descr ? descr : "unknown");
  if (d[0] >= 'A' && d[0] <= 'Z' && !(d[1] >= 'A' && d[1] <= 'Z'))
    d[0] = (char)(d[0] - 'A' + 'a');
  return sg_asprintf("SIG%s (%s)", abbrev, d);
}

int sg_eval_cpu_parse_device(const char *device, int *cpu, sg_err *err) {
  *cpu = 0;
  if (!device)
    return 0;
  if (strncmp(device, "cpu:", 4) != 0 || !device[4])
    return sg_err_set(err, SG_EINVAL,
                      "device \"%s\": the cpu evaluator takes cpu:N (a core number)",
                      device);
  char *end = NULL;
  long v = strtol(device + 4, &end, 10);
  if (*end || v < 0 || v > 4095)
    return sg_err_set(err, SG_EINVAL,
                      "device \"%s\": the cpu evaluator takes cpu:N (a core number)",
                      device);
  *cpu = (int)v;
  return 0;
}
