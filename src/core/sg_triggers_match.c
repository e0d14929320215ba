/* sg_triggers_match.c: the trigger scanner's keyword matcher.
 *
 * An Aho-Corasick automaton, built once per process from the pattern table
 * below and read-only afterwards, runs over a normalised symbol stream (lower
 * case, a whitespace run as one space, a digit run as one or two symbols, a
 * few typographic UTF-8 characters mapped to ASCII), with word boundaries
 * checked on a small ring of past symbols. It finds design decisions,
 * implementation phrases and self-talk; the sentence machine in
 * sg_triggers.c decides what fires.
 */
#include "core/sg_triggers_priv.h"

#include "common/sg_alloc.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- patterns
 *
 * Pattern syntax: lower case; 'N' stands for a number (a run of digits), '0'
 * for exactly one digit ("float0$" is float4 but not float32); one space for
 * any whitespace run; a leading '^' means "only at the first word of a
 * sentence"; a trailing '$' means "the next symbol is not a word character"
 * (so "mma$" does not match "mmap"). Every pattern that starts with a letter
 * or '_' must also start a word ("mma" does not match in "comma"). A '='
 * expands into "=", " = ", " =", "= " and " " (so "tile_m=0" also matches
 * "#define TILE_M 64" and "TILE_M = 64").
 */
typedef struct pattern_src {
  unsigned char kind;
  const char *text;
} pattern_src;

static const pattern_src pattern_table[] = {
    /* design: tile and block shapes ("64x64 tiles", "a 128 x 128 x 32 tile") */
    {KIND_DESIGN, "NxN til"}, {KIND_DESIGN, "N x N til"},
    {KIND_DESIGN, "NxN block"}, {KIND_DESIGN, "N x N block"},
    {KIND_DESIGN, "NxN sub"}, {KIND_DESIGN, "N x N sub"},
    {KIND_DESIGN, "NxN thread"}, {KIND_DESIGN, "N x N thread"},
    {KIND_DESIGN, "NxN output"}, {KIND_DESIGN, "NxN regist"},
    {KIND_DESIGN, "NxN micro"}, {KIND_DESIGN, "NxN warp"},
    {KIND_DESIGN, "NxN fragment"}, {KIND_DESIGN, "NxN grid"},
    {KIND_DESIGN, "NxN chunk"}, {KIND_DESIGN, "NxN element"},
    {KIND_DESIGN, "NxN shared"}, {KIND_DESIGN, "NxN-til"},
    {KIND_DESIGN, "N-wide til"}, {KIND_DESIGN, "tile of NxN"},
    {KIND_DESIGN, "tiles of NxN"}, {KIND_DESIGN, "tile size of N"},
    {KIND_DESIGN, "tile size N"}, {KIND_DESIGN, "block size of N"},
    {KIND_DESIGN, "block size N"}, {KIND_DESIGN, "blocks of N"},
    {KIND_DESIGN, "block of N"},
    /* design: named sizes ("BLOCK_SIZE = 128", "#define TILE 32") */
    {KIND_DESIGN, "block_size=N"}, {KIND_DESIGN, "blocksize=N"},
    {KIND_DESIGN, "tile_size=N"}, {KIND_DESIGN, "tile=N"},
    {KIND_DESIGN, "tile_dim=N"}, {KIND_DESIGN, "tile_width=N"},
    {KIND_DESIGN, "tile_m=N"}, {KIND_DESIGN, "tile_n=N"},
    {KIND_DESIGN, "tile_k=N"}, {KIND_DESIGN, "block_m=N"},
    {KIND_DESIGN, "block_n=N"}, {KIND_DESIGN, "block_k=N"},
    {KIND_DESIGN, "bm=N"}, {KIND_DESIGN, "bn=N"}, {KIND_DESIGN, "bk=N"},
    {KIND_DESIGN, "tm=N"}, {KIND_DESIGN, "tn=N"},
    {KIND_DESIGN, "threads_per_block=N"}, {KIND_DESIGN, "num_threads=N"},
    {KIND_DESIGN, "block_dim=N"}, {KIND_DESIGN, "blockdim=N"},
    {KIND_DESIGN, "warps_per_block=N"}, {KIND_DESIGN, "unroll=N"},
    {KIND_DESIGN, "vec_size=N"}, {KIND_DESIGN, "elems_per_thread=N"},
    /* design: launch shape and thread mapping */
    {KIND_DESIGN, "N threads per"}, {KIND_DESIGN, "N threads/block"},
    {KIND_DESIGN, "N threads in a block"}, {KIND_DESIGN, "N-thread block"},
    {KIND_DESIGN, "N thread block"}, {KIND_DESIGN, "N warps per"},
    {KIND_DESIGN, "N elements per thread"}, {KIND_DESIGN, "N outputs per thread"},
    {KIND_DESIGN, "dim0 block("}, {KIND_DESIGN, "dim0 threads("},
    {KIND_DESIGN, "dim0 grid("}, {KIND_DESIGN, "<<<"},
    {KIND_DESIGN, "each thread comput"}, {KIND_DESIGN, "each thread handl"},
    {KIND_DESIGN, "each thread load"}, {KIND_DESIGN, "each thread process"},
    {KIND_DESIGN, "each thread is responsible"}, {KIND_DESIGN, "each thread accumulat"},
    {KIND_DESIGN, "each thread writ"}, {KIND_DESIGN, "each warp comput"},
    {KIND_DESIGN, "each warp handl"}, {KIND_DESIGN, "each warp process"},
    {KIND_DESIGN, "each warp is responsible"}, {KIND_DESIGN, "each block comput"},
    {KIND_DESIGN, "each block handl"}, {KIND_DESIGN, "each block process"},
    {KIND_DESIGN, "each block is responsible"}, {KIND_DESIGN, "each thread block"},
    {KIND_DESIGN, "one thread per"}, {KIND_DESIGN, "one warp per"},
    {KIND_DESIGN, "one block per"}, {KIND_DESIGN, "a thread per"},
    {KIND_DESIGN, "a warp per"}, {KIND_DESIGN, "a block per"},
    {KIND_DESIGN, "grid-stride"}, {KIND_DESIGN, "grid stride"},
    {KIND_DESIGN, "thread coarsening"},
    /* design: memory strategies and instructions */
    {KIND_DESIGN, "shared memory til"}, {KIND_DESIGN, "shared-memory til"},
    {KIND_DESIGN, "tile in shared memory"}, {KIND_DESIGN, "tiles in shared memory"},
    {KIND_DESIGN, "into shared memory"}, {KIND_DESIGN, "in shared memory"},
    {KIND_DESIGN, "use shared memory"}, {KIND_DESIGN, "using shared memory"},
    {KIND_DESIGN, "smem til"}, {KIND_DESIGN, "__shared__"},
    {KIND_DESIGN, "float0$"}, {KIND_DESIGN, "half0$"}, {KIND_DESIGN, "int0 load"},
    {KIND_DESIGN, "vectorized load"}, {KIND_DESIGN, "vectorized memory"},
    {KIND_DESIGN, "vectorized access"}, {KIND_DESIGN, "vectorize the load"},
    {KIND_DESIGN, "vectorized stor"}, {KIND_DESIGN, "N-bit load"},
    {KIND_DESIGN, "N-byte load"}, {KIND_DESIGN, "wide load"},
    {KIND_DESIGN, "wmma"}, {KIND_DESIGN, "mma.sync"}, {KIND_DESIGN, "mma$"},
    {KIND_DESIGN, "tensor core"}, {KIND_DESIGN, "tensorcore"},
    {KIND_DESIGN, "ldmatrix"}, {KIND_DESIGN, "__shfl"}, {KIND_DESIGN, "shfl_"},
    {KIND_DESIGN, "warp shuffle"}, {KIND_DESIGN, "warp-level reduc"},
    {KIND_DESIGN, "warp reduc"}, {KIND_DESIGN, "block-level reduc"},
    {KIND_DESIGN, "tree reduc"}, {KIND_DESIGN, "cp.async"},
    {KIND_DESIGN, "async cop"}, {KIND_DESIGN, "tma$"}, {KIND_DESIGN, "__ldg"},
    {KIND_DESIGN, "read-only cache"}, {KIND_DESIGN, "double buffer"},
    {KIND_DESIGN, "double-buffer"}, {KIND_DESIGN, "software pipelin"},
    {KIND_DESIGN, "coalesced"}, {KIND_DESIGN, "coalescing"},
    {KIND_DESIGN, "coalesce the"}, {KIND_DESIGN, "bank conflict"},
    {KIND_DESIGN, "#pragma unroll"}, {KIND_DESIGN, "unroll the"},
    {KIND_DESIGN, "loop unroll"}, {KIND_DESIGN, "unrolled by"},
    {KIND_DESIGN, "unroll by"}, {KIND_DESIGN, "register block"},
    {KIND_DESIGN, "register til"}, {KIND_DESIGN, "in registers"},
    {KIND_DESIGN, "atomicadd"}, {KIND_DESIGN, "__launch_bounds__"},
    {KIND_DESIGN, "kernel fusion"}, {KIND_DESIGN, "fuse the"},
    {KIND_DESIGN, "occupancy"},
    /* design: Triton launch parameters and program mapping */
    {KIND_DESIGN, "num_warps=N"}, {KIND_DESIGN, "num_stages=N"},
    {KIND_DESIGN, "N warps"}, {KIND_DESIGN, "block_size_m=N"},
    {KIND_DESIGN, "block_size_n=N"}, {KIND_DESIGN, "block_size_k=N"},
    {KIND_DESIGN, "group_size_m=N"}, {KIND_DESIGN, "group_size=N"},
    {KIND_DESIGN, "block_size of N"}, {KIND_DESIGN, "block_size to N"},
    {KIND_DESIGN, "block size to N"}, {KIND_DESIGN, "block_size as N"},
    {KIND_DESIGN, "block size as N"}, {KIND_DESIGN, "block size is N"},
    {KIND_DESIGN, "block_size is N"}, {KIND_DESIGN, "tile size is N"},
    {KIND_DESIGN, "tile size to N"}, {KIND_DESIGN, "next power of"},
    {KIND_DESIGN, "each program handl"}, {KIND_DESIGN, "each program comput"},
    {KIND_DESIGN, "each program process"}, {KIND_DESIGN, "each program load"},
    {KIND_DESIGN, "each program instance"},
    {KIND_DESIGN, "each program is responsible"},
    {KIND_DESIGN, "one program per"}, {KIND_DESIGN, "a program per"},
    {KIND_DESIGN, "program per row"}, {KIND_DESIGN, "autotun"},
    {KIND_DESIGN, "tl.dot"}, {KIND_DESIGN, "tl.atomic"},
    {KIND_DESIGN, "block pointer"}, {KIND_DESIGN, "make_block_ptr"},
    {KIND_DESIGN, "persistent kernel"}, {KIND_DESIGN, "split-k"},
    {KIND_DESIGN, "split k"}, {KIND_DESIGN, "stream-k"},
    {KIND_DESIGN, "online softmax"}, {KIND_DESIGN, "welford"},
    {KIND_DESIGN, "swizzl"}, {KIND_DESIGN, "grouped ordering"},
    {KIND_DESIGN, "group_m"}, {KIND_DESIGN, "l2 cache"},
    {KIND_DESIGN, "accumulate in fp0"}, {KIND_DESIGN, "accumulate in float0"},
    {KIND_DESIGN, "fp0 accumulat"}, {KIND_DESIGN, "float0 accumulat"},
    {KIND_DESIGN, "tf0$"}, {KIND_DESIGN, "mixed precision"},
    {KIND_DESIGN, "evict_last"}, {KIND_DESIGN, "evict_first"},
    {KIND_DESIGN, "cache_modifier"}, {KIND_DESIGN, "eviction polic"},
    /* design: more mappings, memory and instructions */
    {KIND_DESIGN, "N threads"}, {KIND_DESIGN, "N items per thread"},
    {KIND_DESIGN, "N rows per"}, {KIND_DESIGN, "N columns per"},
    {KIND_DESIGN, "N cols per"}, {KIND_DESIGN, "map each thread"},
    {KIND_DESIGN, "thread mapping"}, {KIND_DESIGN, "launch configuration"},
    {KIND_DESIGN, "launch config"}, {KIND_DESIGN, "to shared memory"},
    {KIND_DESIGN, "shared memory buffer"},
    {KIND_DESIGN, "dynamic shared memory"}, {KIND_DESIGN, "smem$"},
    {KIND_DESIGN, "N-bit vector"},
    {KIND_DESIGN, "N-byte vector"}, {KIND_DESIGN, "N-bit access"},
    {KIND_DESIGN, "N-byte access"}, {KIND_DESIGN, "N-bit transaction"},
    {KIND_DESIGN, "ld.global"}, {KIND_DESIGN, "ld.shared"},
    {KIND_DESIGN, "__fdividef"}, {KIND_DESIGN, "__expf"},
    {KIND_DESIGN, "__frcp"}, {KIND_DESIGN, "rsqrt"},
    {KIND_DESIGN, "fast math"}, {KIND_DESIGN, "use_fast_math"},
    {KIND_DESIGN, "exp2"}, {KIND_DESIGN, "__half2"}, {KIND_DESIGN, "hmma"},
    {KIND_DESIGN, "dp4a"}, {KIND_DESIGN, "__ballot"},
    {KIND_DESIGN, "__syncwarp"}, {KIND_DESIGN, "cooperative group"},
    {KIND_DESIGN, "atomic add"}, {KIND_DESIGN, "atomic operation"},
    {KIND_DESIGN, "inline asm"},
    {KIND_DESIGN, "inline ptx"}, {KIND_DESIGN, "asm volatile"},
    {KIND_DESIGN, "wgmma"}, {KIND_DESIGN, "cub::"},
    {KIND_DESIGN, "warp-level"}, {KIND_DESIGN, "two-pass"},
    {KIND_DESIGN, "single-pass"}, {KIND_DESIGN, "one-pass"},
    {KIND_DESIGN, "unrolling"}, {KIND_DESIGN, "fusing"},
    {KIND_DESIGN, "fuse it"}, {KIND_DESIGN, "fuse them"},
    {KIND_DESIGN, "fuse into"}, {KIND_DESIGN, "fused into"},
    {KIND_DESIGN, "into a single kernel"}, {KIND_DESIGN, "in a single kernel"},
    {KIND_DESIGN, "operator fusion"}, {KIND_DESIGN, "padding"},
    /* design: more phrasings of real traces */
    {KIND_DESIGN, "number of warps"}, {KIND_DESIGN, "num_warps to"},
    {KIND_DESIGN, "tile of size"}, {KIND_DESIGN, "launch with"},
    {KIND_DESIGN, "launched with"}, {KIND_DESIGN, "in steps of"},
    {KIND_DESIGN, "0d grid"}, {KIND_DESIGN, "0d block"},
    {KIND_DESIGN, "0d tiling"}, {KIND_DESIGN, "mask the load"},
    {KIND_DESIGN, "masked load"}, {KIND_DESIGN, "use vectoriz"},
    {KIND_DESIGN, "vectorize the load"},
    /* design: CPU (C kernels) */
    {KIND_DESIGN, "simd"}, {KIND_DESIGN, "avx"}, {KIND_DESIGN, "sse0"},
    {KIND_DESIGN, "sse$"}, {KIND_DESIGN, "neon$"}, {KIND_DESIGN, "_mm_"},
    {KIND_DESIGN, "_mmN_"}, {KIND_DESIGN, "cache block"},
    {KIND_DESIGN, "cache-block"}, {KIND_DESIGN, "cache til"},
    {KIND_DESIGN, "loop order"}, {KIND_DESIGN, "loop interchange"},
    {KIND_DESIGN, "i-k-j"}, {KIND_DESIGN, "ikj$"}, {KIND_DESIGN, "#pragma omp"},
    {KIND_DESIGN, "openmp"}, {KIND_DESIGN, "auto-vectoriz"},
    {KIND_DESIGN, "vectorize the"}, {KIND_DESIGN, "transpose b"},
    {KIND_DESIGN, "transposed copy"}, {KIND_DESIGN, "blocking factor"},
    {KIND_DESIGN, "fma$"}, {KIND_DESIGN, "fmaf"}, {KIND_DESIGN, "prefetch"},

    /* phrase: the model is about to write the code or the plan */
    {KIND_PHRASE, "let me implement"}, {KIND_PHRASE, "let me write"},
    {KIND_PHRASE, "let me code"}, {KIND_PHRASE, "let me draft"},
    {KIND_PHRASE, "let me put it together"}, {KIND_PHRASE, "let me put this together"},
    {KIND_PHRASE, "let's implement"}, {KIND_PHRASE, "let's write"},
    {KIND_PHRASE, "let's code"}, {KIND_PHRASE, "lets implement"},
    {KIND_PHRASE, "lets write"}, {KIND_PHRASE, "let us implement"},
    {KIND_PHRASE, "let us write"}, {KIND_PHRASE, "i'll implement"},
    {KIND_PHRASE, "i'll write"}, {KIND_PHRASE, "i will implement"},
    {KIND_PHRASE, "i will write"}, {KIND_PHRASE, "i'm going to write"},
    {KIND_PHRASE, "i am going to write"}, {KIND_PHRASE, "i'm going to implement"},
    {KIND_PHRASE, "now to write"}, {KIND_PHRASE, "now write"},
    {KIND_PHRASE, "time to write"}, {KIND_PHRASE, "time to implement"},
    {KIND_PHRASE, "here is the plan"}, {KIND_PHRASE, "here's the plan"},
    {KIND_PHRASE, "here is my plan"}, {KIND_PHRASE, "here's my plan"},
    {KIND_PHRASE, "the plan is"}, {KIND_PHRASE, "my plan is"},
    {KIND_PHRASE, "implementation plan"}, {KIND_PHRASE, "^plan:"},
    {KIND_PHRASE, "here is the kernel"}, {KIND_PHRASE, "here's the kernel"},
    {KIND_PHRASE, "here is the code"}, {KIND_PHRASE, "here's the code"},
    {KIND_PHRASE, "here is the implementation"}, {KIND_PHRASE, "here's the implementation"},
    {KIND_PHRASE, "here is the optimized"}, {KIND_PHRASE, "here's the optimized"},
    {KIND_PHRASE, "here is the final"}, {KIND_PHRASE, "here's the final"},
    {KIND_PHRASE, "here is my"}, {KIND_PHRASE, "here's my"},
    {KIND_PHRASE, "here is a kernel"}, {KIND_PHRASE, "here's a kernel"},
    {KIND_PHRASE, "final implementation"}, {KIND_PHRASE, "final version"},
    {KIND_PHRASE, "final kernel"}, {KIND_PHRASE, "final code"},
    {KIND_PHRASE, "full implementation"}, {KIND_PHRASE, "complete implementation"},
    {KIND_PHRASE, "putting it all together"}, {KIND_PHRASE, "putting it together"},
    {KIND_PHRASE, "putting this together"}, {KIND_PHRASE, "writing the kernel"},
    {KIND_PHRASE, "writing the code"},
    /* phrase: more ways to start writing, revising or presenting code */
    {KIND_PHRASE, "let me now write"}, {KIND_PHRASE, "let me now implement"},
    {KIND_PHRASE, "let me now code"}, {KIND_PHRASE, "let me now put"},
    {KIND_PHRASE, "let me sketch"}, {KIND_PHRASE, "let me rewrite"},
    {KIND_PHRASE, "let me fix the code"},
    {KIND_PHRASE, "let me fix the kernel"}, {KIND_PHRASE, "let me revise"},
    {KIND_PHRASE, "let me correct the code"},
    {KIND_PHRASE, "let me correct the kernel"},
    {KIND_PHRASE, "let me finalize"}, {KIND_PHRASE, "let me try writing"},
    {KIND_PHRASE, "let me try to write"},
    {KIND_PHRASE, "let me try implementing"},
    {KIND_PHRASE, "let me start writing"},
    {KIND_PHRASE, "let me start coding"}, {KIND_PHRASE, "let me go ahead"},
    {KIND_PHRASE, "let me outline the code"},
    {KIND_PHRASE, "let me adjust the code"},
    {KIND_PHRASE, "let me update the code"},
    {KIND_PHRASE, "let me update the kernel"},
    {KIND_PHRASE, "let me modify the code"},
    {KIND_PHRASE, "let me modify the kernel"},
    {KIND_PHRASE, "let me put everything together"},
    {KIND_PHRASE, "let's draft"}, {KIND_PHRASE, "let's put it together"},
    {KIND_PHRASE, "let's put this together"},
    {KIND_PHRASE, "let's put everything together"},
    {KIND_PHRASE, "let's put it all together"},
    {KIND_PHRASE, "let's now write"}, {KIND_PHRASE, "let's now implement"},
    {KIND_PHRASE, "let's now code"}, {KIND_PHRASE, "let's sketch"},
    {KIND_PHRASE, "let's rewrite"}, {KIND_PHRASE, "let's fix the code"},
    {KIND_PHRASE, "let's try writing"}, {KIND_PHRASE, "let's go ahead"},
    {KIND_PHRASE, "let's start writing"}, {KIND_PHRASE, "let's start coding"},
    {KIND_PHRASE, "let's finalize"}, {KIND_PHRASE, "let us code"},
    {KIND_PHRASE, "i'll code"}, {KIND_PHRASE, "i'll now write"},
    {KIND_PHRASE, "i'll now implement"}, {KIND_PHRASE, "i'll now code"},
    {KIND_PHRASE, "i'll draft"}, {KIND_PHRASE, "i'll sketch"},
    {KIND_PHRASE, "i'll rewrite"}, {KIND_PHRASE, "i'll put it"},
    {KIND_PHRASE, "i'll go with the following"}, {KIND_PHRASE, "i will code"},
    {KIND_PHRASE, "i will now"}, {KIND_PHRASE, "i'm going to implement"},
    {KIND_PHRASE, "i'm going to code"},
    {KIND_PHRASE, "i am going to implement"}, {KIND_PHRASE, "time to code"},
    {KIND_PHRASE, "time to put"}, {KIND_PHRASE, "now, write"},
    {KIND_PHRASE, "now, writing"}, {KIND_PHRASE, "^now writing"},
    {KIND_PHRASE, "write the kernel now"}, {KIND_PHRASE, "write the code now"},
    {KIND_PHRASE, "here is the triton"}, {KIND_PHRASE, "here's the triton"},
    {KIND_PHRASE, "here is the cuda"}, {KIND_PHRASE, "here's the cuda"},
    {KIND_PHRASE, "here is the updated"}, {KIND_PHRASE, "here's the updated"},
    {KIND_PHRASE, "here is the revised"}, {KIND_PHRASE, "here's the revised"},
    {KIND_PHRASE, "here is the corrected"},
    {KIND_PHRASE, "here's the corrected"},
    {KIND_PHRASE, "here is the complete"},
    {KIND_PHRASE, "here's the complete"}, {KIND_PHRASE, "here is the full"},
    {KIND_PHRASE, "here's the full"}, {KIND_PHRASE, "here is the fixed"},
    {KIND_PHRASE, "here's the fixed"}, {KIND_PHRASE, "here is the new"},
    {KIND_PHRASE, "here's the new"},
    {KIND_PHRASE, "here is an implementation"},
    {KIND_PHRASE, "here's an implementation"},
    {KIND_PHRASE, "here is a first"}, {KIND_PHRASE, "here's a first"},
    {KIND_PHRASE, "here is a draft"}, {KIND_PHRASE, "here's a draft"},
    {KIND_PHRASE, "here's how the code"},
    {KIND_PHRASE, "here's how the kernel"},
    {KIND_PHRASE, "here is how the code"},
    {KIND_PHRASE, "here is how the kernel"}, {KIND_PHRASE, "here goes"},
    {KIND_PHRASE, "code would be"}, {KIND_PHRASE, "code would look"},
    {KIND_PHRASE, "kernel would look"}, {KIND_PHRASE, "kernel would be"},
    {KIND_PHRASE, "code could be"}, {KIND_PHRASE, "code could look"},
    {KIND_PHRASE, "code might look"}, {KIND_PHRASE, "code will look"},
    {KIND_PHRASE, "code is as follows"}, {KIND_PHRASE, "kernel is as follows"},
    {KIND_PHRASE, "code looks like this"},
    {KIND_PHRASE, "kernel looks like this"},
    {KIND_PHRASE, "something like this:"}, {KIND_PHRASE, "something like:"},
    {KIND_PHRASE, "complete code"}, {KIND_PHRASE, "full code"},
    {KIND_PHRASE, "complete kernel"}, {KIND_PHRASE, "full kernel"},
    {KIND_PHRASE, "put it all together"},
    {KIND_PHRASE, "put everything together"},
    {KIND_PHRASE, "putting everything together"}, {KIND_PHRASE, "first draft"},
    {KIND_PHRASE, "first attempt"}, {KIND_PHRASE, "first version"},
    {KIND_PHRASE, "revised code"}, {KIND_PHRASE, "revised kernel"},
    {KIND_PHRASE, "revised version"}, {KIND_PHRASE, "updated code"},
    {KIND_PHRASE, "updated kernel"}, {KIND_PHRASE, "updated version"},
    {KIND_PHRASE, "corrected code"}, {KIND_PHRASE, "corrected kernel"},
    {KIND_PHRASE, "corrected version"}, {KIND_PHRASE, "modified code"},
    {KIND_PHRASE, "modified kernel"}, {KIND_PHRASE, "fixed code"},
    {KIND_PHRASE, "fixed kernel"}, {KIND_PHRASE, "^code:"},
    {KIND_PHRASE, "^kernel:"}, {KIND_PHRASE, "^implementation:"},
    {KIND_PHRASE, "the code:"}, {KIND_PHRASE, "the kernel:"},
    {KIND_PHRASE, "kernel code:"}, {KIND_PHRASE, "in code:"},

    /* phrase: more phrasings of real traces */
    {KIND_PHRASE, "proceed to write"}, {KIND_PHRASE, "proceed to implement"},
    {KIND_PHRASE, "let's proceed"}, {KIND_PHRASE, "code as follows"},
    {KIND_PHRASE, "kernel as follows"}, {KIND_PHRASE, "the code will be"},
    {KIND_PHRASE, "the code looks like"},
    {KIND_PHRASE, "the kernel looks like"},
    {KIND_PHRASE, "implementing this in"},
    {KIND_PHRASE, "implementing the kernel"},
    {KIND_PHRASE, "implementing it in"}, {KIND_PHRASE, "let's outline"},
    {KIND_PHRASE, "let me outline"}, {KIND_PHRASE, "^now, the code"},
    {KIND_PHRASE, "^now the code"}, {KIND_PHRASE, "here's what the code"},
    {KIND_PHRASE, "here is what the code"},
    {KIND_PHRASE, "let me structure the code"},
    {KIND_PHRASE, "let's structure the code"},
    {KIND_PHRASE, "into code"}, {KIND_PHRASE, "translating this"},
    {KIND_PHRASE, "translate this into"}, {KIND_PHRASE, "coding the kernel"},
    {KIND_PHRASE, "^now, coding"}, {KIND_PHRASE, "writing this out"},
    {KIND_PHRASE, "writing it out"}, {KIND_PHRASE, "here's an attempt"},
    {KIND_PHRASE, "here is an attempt"}, {KIND_PHRASE, "let me attempt"},
    /* self-talk: deliberation, doubt and correction; a sentence holding one
     * is not a decision yet */
    {KIND_SELFTALK, "hmm"}, {KIND_SELFTALK, "^wait$"}, {KIND_SELFTALK, "but wait"},
    {KIND_SELFTALK, "oh wait"}, {KIND_SELFTALK, "no wait"},
    {KIND_SELFTALK, "no, wait"}, {KIND_SELFTALK, "wait, no"},
    {KIND_SELFTALK, "wait no"}, {KIND_SELFTALK, "^actually, no"},
    {KIND_SELFTALK, "^actually no"}, {KIND_SELFTALK, "^no,"},
    {KIND_SELFTALK, "^no no"}, {KIND_SELFTALK, "^no:"}, {KIND_SELFTALK, "hold on"},
    {KIND_SELFTALK, "scratch that"}, {KIND_SELFTALK, "on second thought"},
    {KIND_SELFTALK, "not sure"}, {KIND_SELFTALK, "unsure"},
    {KIND_SELFTALK, "i wonder"}, {KIND_SELFTALK, "what if"},
    {KIND_SELFTALK, "^maybe"}, {KIND_SELFTALK, "or maybe"},
    {KIND_SELFTALK, "^perhaps"}, {KIND_SELFTALK, "let me think"},
    {KIND_SELFTALK, "let me reconsider"}, {KIND_SELFTALK, "let me re-check"},
    {KIND_SELFTALK, "let me recheck"}, {KIND_SELFTALK, "let me double-check"},
    {KIND_SELFTALK, "let me double check"}, {KIND_SELFTALK, "let me check"},
    {KIND_SELFTALK, "let me verify"}, {KIND_SELFTALK, "that's wrong"},
    {KIND_SELFTALK, "that is wrong"}, {KIND_SELFTALK, "that won't work"},
    {KIND_SELFTALK, "that doesn't work"}, {KIND_SELFTALK, "i was wrong"},
    {KIND_SELFTALK, "i made a mistake"}, {KIND_SELFTALK, "^ugh"},
    {KIND_SELFTALK, "^oops"},
    /* self-talk: describing code that exists is analysis, not a decision */
    {KIND_SELFTALK, "the original"},
    {KIND_SELFTALK, "the reference implementation"},
    {KIND_SELFTALK, "the existing"}, {KIND_SELFTALK, "the baseline"},
    {KIND_SELFTALK, "pytorch's"},
    {KIND_SELFTALK, "the current implementation"},
    {KIND_SELFTALK, "the current code"}, {KIND_SELFTALK, "the current kernel"},
    {KIND_SELFTALK, "the previous version"},
    {KIND_SELFTALK, "the previous kernel"},
    {KIND_SELFTALK, "the previous code"},
    /* self-talk: alternatives weighed, not chosen */
    {KIND_SELFTALK, "but maybe"}, {KIND_SELFTALK, "let's consider"},
    {KIND_SELFTALK, "let me consider"}, {KIND_SELFTALK, "consider using"},
    {KIND_SELFTALK, "another approach"}, {KIND_SELFTALK, "another option"},
    {KIND_SELFTALK, "one option"}, {KIND_SELFTALK, "one approach"},
    {KIND_SELFTALK, "^option$"}, {KIND_SELFTALK, "could use"},
    {KIND_SELFTALK, "might use"}, {KIND_SELFTALK, "we could"},
    {KIND_SELFTALK, "i could"},
    {KIND_SELFTALK, "^alternatively"}, {KIND_SELFTALK, "^or$"},
    {KIND_SELFTALK, "what about"}, {KIND_SELFTALK, "how about"},
    {KIND_SELFTALK, "^should$"}, {KIND_SELFTALK, "^could$"},
};


/* ---------------------------------------------------------------- automaton */

static bool sym_is_word(unsigned char c) {
  return (c >= 'a' && c <= 'z') || c == SYM_DIGIT || c == SYM_DIGIT2 ||
         c == '_';
}

static void add_pattern(automaton *s, unsigned kind, const char *text,
                        size_t len, unsigned flags, unsigned *cap_nodes) {
  assert(len > 0 && len < PAT_MAX);
  uint16_t node = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned c = s->cls_of[(unsigned char)text[i]];
    assert(c != 0);
    uint16_t *slot = &s->next[(size_t)node * s->nclass + c];
    if (*slot == 0) {
      assert(s->nnodes < *cap_nodes);
      *slot = (uint16_t)s->nnodes++;
    }
    node = *slot;
  }
  if (s->out[node] != UINT16_MAX)
    return;  /* the same text twice (an expansion collided): keep the first */
  s->out[node] = (uint16_t)s->npats;
  s->pats[s->npats].kind = (unsigned char)kind;
  s->pats[s->npats].flags = (unsigned char)flags;
  s->pats[s->npats].len = (unsigned char)len;
  s->npats++;
}

/* Digit runs reach the matcher as '0' (the first digit) and '1' (a second
 * one; more are dropped), so 'N' in a pattern expands into "0" and "01". '='
 * expands into the joins below. The expansions of one pattern text. */
#define EXPAND_MAX 32
static const char *const eq_joins[] = {"=", " = ", " =", "= ", " "};

static void expand(const char *t, size_t len, char *buf, size_t at,
                   char out[][PAT_MAX], size_t *n) {
  if (len == 0) {
    assert(*n < EXPAND_MAX);
    memcpy(out[*n], buf, at);
    out[*n][at] = '\0';
    (*n)++;
    return;
  }
  if (*t == 'N' || *t == '=') {
    size_t k = *t == 'N' ? 2 : sizeof eq_joins / sizeof eq_joins[0];
    for (size_t j = 0; j < k; j++) {
      const char *ins = *t == 'N' ? (j ? "01" : "0") : eq_joins[j];
      size_t il = strlen(ins);
      assert(at + il < PAT_MAX);
      memcpy(buf + at, ins, il);
      expand(t + 1, len - 1, buf, at + il, out, n);
    }
    return;
  }
  assert(at + 1 < PAT_MAX);
  buf[at] = *t;
  expand(t + 1, len - 1, buf, at + 1, out, n);
}

/* Calls fn for each expanded pattern of the table, with its flags. */
static void each_pattern(void (*fn)(automaton *, unsigned, const char *,
                                    unsigned, unsigned *),
                         automaton *s, unsigned *cap_nodes) {
  for (size_t i = 0; i < sizeof pattern_table / sizeof pattern_table[0]; i++) {
    const char *t = pattern_table[i].text;
    unsigned flags = 0;
    if (*t == '^') {
      flags |= PAT_FLAG_START;
      t++;
    }
    size_t len = strlen(t);
    if (len > 0 && t[len - 1] == '$') {
      flags |= PAT_FLAG_RB;
      len--;
    }
    if ((t[0] >= 'a' && t[0] <= 'z') || t[0] == '_')
      flags |= PAT_FLAG_LB;
    char out[EXPAND_MAX][PAT_MAX], buf[PAT_MAX];
    size_t n = 0;
    expand(t, len, buf, 0, out, &n);
    for (size_t k = 0; k < n; k++)
      fn(s, pattern_table[i].kind, out[k], flags, cap_nodes);
  }
}

static void count_pattern(automaton *s, unsigned kind, const char *text,
                          unsigned flags, unsigned *cap_nodes) {
  (void)kind;
  (void)flags;
  for (const char *c = text; *c; c++)
    if (s->cls_of[(unsigned char)*c] == 0)
      s->cls_of[(unsigned char)*c] = (unsigned char)s->nclass++;
  *cap_nodes += (unsigned)strlen(text);
  s->npats++;
}

static void insert_pattern(automaton *s, unsigned kind, const char *text,
                           unsigned flags, unsigned *cap_nodes) {
  add_pattern(s, kind, text, strlen(text), flags, cap_nodes);
}

/* Two layout steps for the scan's one dependent load per symbol (the
 * table is 5,000 rows of 86 bytes, bigger than a core's L2, and a scanner
 * runs beside a campaign's or a run's other state): the nodes are
 * renumbered breadth-first, so the shallow rows most prose bytes visit sit
 * together, and each transition carries its target's output mask
 * (NODE_BITS and up), so the common "nothing ends here" needs no second
 * load. bfs[] is every node but the root in breadth-first order. */
static void renumber_and_fold(automaton *s, const uint16_t *bfs, unsigned nbfs) {
  unsigned n = s->nnodes;
  assert(nbfs + 1 == n && n <= NODE_MASK + 1u);
  uint16_t *to = sg_malloc(n * sizeof *to);   /* old id -> new id */
  uint16_t *from = sg_malloc(n * sizeof *from); /* new id -> old id */
  to[0] = from[0] = 0;
  for (unsigned i = 0; i < nbfs; i++) {
    to[bfs[i]] = (uint16_t)(i + 1);
    from[i + 1] = bfs[i];
  }
  uint16_t *next = sg_malloc((size_t)n * s->nclass * sizeof *next);
  uint16_t *out = sg_malloc(n * sizeof *out);
  uint16_t *dict = sg_malloc(n * sizeof *dict);
  uint8_t *omask = sg_malloc(n * sizeof *omask);
  for (unsigned v = 0; v < n; v++) {
    unsigned o = from[v];
    out[v] = s->out[o];
    dict[v] = to[s->dict[o]];
    omask[v] = s->omask[o];
    for (unsigned c = 0; c < s->nclass; c++) {
      uint16_t t = s->next[(size_t)o * s->nclass + c];
      next[(size_t)v * s->nclass + c] =
          (uint16_t)(to[t] | (unsigned)s->omask[t] << NODE_BITS);
    }
  }
  free(s->next);
  free(s->out);
  free(s->dict);
  free(s->omask);
  s->next = next;
  s->out = out;
  s->dict = dict;
  s->omask = omask;
  free(to);
  free(from);
}

static void build_automaton(automaton *s) {
  /* First pass: the alphabet (every character some pattern uses gets a
   * class; class 0 is every other symbol) and the sizes. */
  memset(s->cls_of, 0, sizeof s->cls_of);
  s->nclass = 1;
  s->npats = 0;
  unsigned cap_nodes = 1;
  each_pattern(count_pattern, s, &cap_nodes);
  assert(s->nclass < 256);
  assert(cap_nodes < UINT16_MAX);
  s->next = sg_calloc((size_t)cap_nodes * s->nclass, sizeof *s->next);
  s->out = sg_malloc(cap_nodes * sizeof *s->out);
  for (unsigned i = 0; i < cap_nodes; i++)
    s->out[i] = UINT16_MAX;
  s->dict = sg_calloc(cap_nodes, sizeof *s->dict);
  s->omask = sg_calloc(cap_nodes, sizeof *s->omask);
  s->pats = sg_calloc(s->npats, sizeof *s->pats);
  s->nnodes = 1;
  s->npats = 0;
  each_pattern(insert_pattern, s, &cap_nodes);

  /* Breadth-first: failure links folded into a full transition table, so a
   * step is one lookup; dict links chain the outputs along the suffixes. */
  uint16_t *fail = sg_calloc(s->nnodes, sizeof *fail);
  uint16_t *queue = sg_malloc(s->nnodes * sizeof *queue);
  unsigned head = 0, tail = 0;
  for (unsigned c = 0; c < s->nclass; c++) {
    uint16_t v = s->next[c];
    if (v) {
      fail[v] = 0;
      queue[tail++] = v;
    }
  }
  while (head < tail) {
    uint16_t u = queue[head++];
    uint16_t f = fail[u];
    s->dict[u] = s->out[f] != UINT16_MAX ? f : s->dict[f];
    /* the suffix is shallower, so its mask is final already */
    s->omask[u] = s->omask[s->dict[u]];
    if (s->out[u] != UINT16_MAX)
      s->omask[u] |= (s->pats[s->out[u]].flags & PAT_FLAG_RB) ? 2 : 1;
    for (unsigned c = 0; c < s->nclass; c++) {
      uint16_t *slot = &s->next[(size_t)u * s->nclass + c];
      uint16_t fv = s->next[(size_t)f * s->nclass + c];
      if (*slot) {
        fail[*slot] = fv;
        queue[tail++] = *slot;
      } else {
        *slot = fv;
      }
    }
  }
  renumber_and_fold(s, queue, tail);
  free(fail);
  free(queue);
}

static automaton shared_ac;
static pthread_once_t shared_ac_once = PTHREAD_ONCE_INIT;

static void build_shared(void) { build_automaton(&shared_ac); }

const automaton *trig_automaton(void) {
  pthread_once(&shared_ac_once, build_shared);
  return &shared_ac;
}

/* ---------------------------------------------------------------- keywords */

static void on_pattern(sg_scanner *s, const pattern *p, uint64_t end_sym) {
  uint64_t start = end_sym + 1 - p->len;
  if ((p->flags & PAT_FLAG_LB) && start > 0 &&
      sym_is_word(s->sym_ring[(start - 1) % SYM_RING]))
    return;
  if ((p->flags & PAT_FLAG_START) && start != s->sent_first_word)
    return;
  if (s->in_fence)
    return;
  if (s->code == CODE_BODY || trig_py_active(s))
    return;  /* code written in the open text is not a sentence */
  switch (p->kind) {
  case KIND_DESIGN: trig_sentence_match(s, 0); break;
  case KIND_PHRASE: trig_sentence_match(s, 1); break;
  case KIND_SELFTALK: s->sent_selftalk = true; break;
  default: break;
  }
}

/* edge: a transition's value, the node with its output mask above. */
static inline void walk_outputs(sg_scanner *s, uint16_t edge, bool rb,
                                uint64_t end_sym) {
  if (!((edge >> NODE_BITS) & (rb ? 2 : 1)))
    return;  /* the common case: nothing ends here */
  uint16_t node = edge & NODE_MASK;
  uint16_t v = s->ac->out[node] != UINT16_MAX ? node : s->ac->dict[node];
  while (v) {
    const pattern *p = &s->ac->pats[s->ac->out[v]];
    if (((p->flags & PAT_FLAG_RB) != 0) == rb)
      on_pattern(s, p, end_sym);
    v = s->ac->dict[v];
  }
}

/* Inlined: the prose fast path calls it for most bytes. */
static inline __attribute__((always_inline)) void symbol(sg_scanner *s,
                                                         unsigned char sym) {
  if (sym == ' ' && s->last_sym == ' ')
    return;
  if (sym == SYM_DIGIT && s->last_sym == SYM_DIGIT)
    sym = SYM_DIGIT2;
  else if (sym == SYM_DIGIT && s->last_sym == SYM_DIGIT2)
    return;
  s->last_sym = sym;
  /* Patterns that must end a word complete one symbol late. */
  if (!sym_is_word(sym) && s->nsym > 0)
    walk_outputs(s, s->node, true, s->nsym - 1);
  if (sym >= 'a' && sym <= 'z' && s->sent_first_word == UINT64_MAX)
    s->sent_first_word = s->nsym;
  s->sym_ring[s->nsym % SYM_RING] = sym;
  s->node = s->ac->next[(size_t)(s->node & NODE_MASK) * s->ac->nclass +
                        s->ac->cls_of[sym]];
  walk_outputs(s, s->node, false, s->nsym);
  s->nsym++;
}

/* What scan_byte does for letters and spaces in plain prose (sg_triggers.c,
 * prose_idle), in the same order. A letter extends the identifier, the
 * sentence's text and the keyword walk; a space (not after a sentence's
 * terminator, where it would end the sentence) ends the identifier, which
 * may start a signature: the run stops there. Nothing else here reads the
 * offset or leaves plain prose; the sentence's terminator is cleared. */
size_t trig_prose_run(sg_scanner *s, const unsigned char *p, size_t n) {
  size_t k = 0;
  while (k < n) {
    unsigned char c = p[k];
    if (trig_is_letter(c)) {
      trig_ident_byte(s, c);
      trig_sentence_byte(s, c);
      /* as trig_normalise: upper case folds; a lower-case letter no
       * pattern uses is SYM_OTHER */
      symbol(s, c <= 'Z' ? (unsigned char)(c + 32) : s->ac->cls_of[c] ? c : SYM_OTHER);
      s->term_pending = false;
      s->term_char = 0;
      s->off++;
      k++;
      continue;
    }
    if (c != ' ' || s->term_pending)
      break;
    trig_code_byte(s, c);
    trig_sentence_byte(s, c);
    symbol(s, ' ');
    s->term_char = 0;
    s->off++;
    k++;
    if (s->code != CODE_IDLE)
      break;
  }
  return k;
}

/* Bytes to symbols: lower case, whitespace and digits to one symbol each,
 * U+00D7 (multiplication sign) to 'x', U+2018/U+2019 (quotes) to '\''. */
void trig_normalise(sg_scanner *s, unsigned char c) {
  if (s->u8_pend) {
    unsigned char p = s->u8_pend;
    s->u8_pend = 0;
    if (p == 0xC3 && c == 0x97) {
      symbol(s, 'x');
      return;
    }
    if (p == 0xE2 && c == 0x80) {
      s->u8_pend = 0x80;
      return;
    }
    if (p == 0x80 && (c == 0x98 || c == 0x99)) {
      symbol(s, '\'');
      return;
    }
    symbol(s, SYM_OTHER);
  }
  if (c == 0xC3 || c == 0xE2) {
    s->u8_pend = c;
    return;
  }
  unsigned char sym;
  if (c >= 'A' && c <= 'Z')
    sym = (unsigned char)(c + 32);
  else if (c >= '0' && c <= '9')
    sym = SYM_DIGIT;
  else if (is_ws(c))
    sym = ' ';
  else if (s->ac->cls_of[c])
    sym = c;
  else
    sym = SYM_OTHER;
  symbol(s, sym);
}

/* The end of the text: a pending UTF-8 lead byte is a symbol of its own, and
 * patterns that must end a word may end at the last symbol. */
void trig_normalise_finish(sg_scanner *s) {
  if (s->u8_pend)
    symbol(s, SYM_OTHER);
  s->u8_pend = 0;
  if (s->nsym > 0)
    walk_outputs(s, s->node, true, s->nsym - 1);
}
