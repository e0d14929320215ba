/* test_tidy.c: #define lines that shadow a kernel's parameters, and a test
 * driver's main, are taken out of a candidate, and nothing else is
 * (core/sg_tidy.h). */
#include "core/sg_tidy.h"

#include <stdlib.h>
#include <string.h>

#include "sg_test.h"

typedef struct fixed {
  char *text; /* NULL: left alone */
  int removed;
} fixed;

static fixed fix(const char *src, const char *lang, const char *entry) {
  fixed f;
  size_t n = 0;
  f.text = sg_tidy_candidate(src, strlen(src), lang, entry, &n, &f.removed);
  if (f.text)
    SG_CHECK_EQ_INT((long long)n, (long long)strlen(f.text));
  else
    SG_CHECK_EQ_INT(f.removed, 0);
  return f;
}

/* What a 1.5B coder model wrote for matmul_transposed_b: the sizes the
 * prompt listed, as macros named like the parameters. */
static void test_sizes_as_macros_are_taken_out(void) {
  const char *src =
      "#include <stdio.h>\n"
      "\n"
      "#define M 160\n"
      "#define K 640\n"
      "#  define   N\t320   \n"
      "#define TILE 32\n"
      "\n"
      "void matmul_transposed_b(const float *A, const float *B, float *C, int M, "
      "int K, int N) {\n"
      "    for (int i = 0; i < M; i++) C[i] = A[i] * B[i] * TILE;\n"
      "}\n";
  fixed f = fix(src, "c", "matmul_transposed_b");
  SG_CHECK(f.text != NULL);
  SG_CHECK_EQ_INT(f.removed, 3);
  SG_CHECK(strstr(f.text, "#define M") == NULL);
  SG_CHECK(strstr(f.text, "#define K") == NULL);
  SG_CHECK(strstr(f.text, "define   N") == NULL);
  SG_CHECK_CONTAINS(f.text, "#define TILE 32\n"); /* not a parameter */
  SG_CHECK_CONTAINS(f.text, "/* specgen took out a #define of M here: M is a "
                            "parameter of matmul_transposed_b, and the macro "
                            "broke its signature */\n");
  SG_CHECK_CONTAINS(f.text, "#include <stdio.h>\n\n/* specgen took out");
  SG_CHECK_CONTAINS(f.text, "int M, int K, int N) {\n    for (int i = 0; i < M;");
  free(f.text);
}

static void test_parameter_forms(void) {
  /* restrict-qualified pointers, arrays, a continued directive, CUDA */
  const char *src =
      "#define x 1\n"
      "#define n \\\n"
      "   (4096)\n"
      "#define scale 2.0f\n"
      "extern \"C\" __global__ void k(const float *__restrict__ x, float y[], "
      "float scale, int n) { y[0] = x[0] * scale + n; }\n";
  fixed f = fix(src, "cuda", "k");
  SG_CHECK(f.text != NULL);
  SG_CHECK_EQ_INT(f.removed, 3);
  SG_CHECK(strstr(f.text, "(4096)") == NULL); /* the continuation went too */
  SG_CHECK(strncmp(f.text, "/* specgen took out a #define of x", 34) == 0);
  SG_CHECK_CONTAINS(f.text, "*/\nextern \"C\" __global__ void k(");
  free(f.text);
}

static void test_left_alone(void) {
  static const struct {
    const char *why, *src, *lang, *entry;
  } cases[] = {
      {"no such macro", "#define BLOCK 64\nvoid f(int n) { (void)n; }\n", "c", "f"},
      {"a function-like macro is not a value",
       "#define n(a) (a)\nvoid f(int m) { (void)m; }\n", "c", "f"},
      {"below the definition it shadows nothing",
       "void f(int N) { (void)N; }\n#define N 3\n", "c", "f"},
      {"a name that only contains the parameter's",
       "#define NN 3\n#define N_MAX 4\nvoid f(int N) { (void)N; }\n", "c", "f"},
      {"another function's parameter",
       "#define N 3\nstatic int g(int N) { return N; }\nvoid f(int m) { g(m); }\n", "c",
       "f"},
      {"a prototype only", "#define N 3\nvoid f(int N);\n", "c", "f"},
      {"a cut body", "#define N 3\nvoid f(int N) { if (N) {\n", "c", "f"},
      {"Python", "#define N 3\nvoid f(int N) { }\n", "python", "f"},
      {"no entry", "#define N 3\nvoid f(int N) { }\n", "c", NULL},
      {"#defineN is no directive", "#defineN 3\nvoid f(int N) { }\n", "c", "f"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fixed f = fix(cases[i].src, cases[i].lang, cases[i].entry);
    SG_CHECK_MSG(f.text == NULL, "%s: changed to:\n%s", cases[i].why, f.text);
    free(f.text);
  }
  /* "# define", CRLF line ends: taken out */
  fixed f = fix("# define N 3\r\nvoid f(int N) { }\n", "c", "f");
  SG_CHECK(f.text != NULL && f.removed == 1);
  free(f.text);
}

/* What the same model wrote next: the kernel, and a main that tests it
 * with the sizes as macros. Both the macros and main go; the kernel stays. */
static void test_test_driver_taken_out(void) {
  const char *src =
      "#include <stdio.h>\n"
      "#define N 384\n"
      "void lower(const float *A, float *C, int N) {\n"
      "  for (int i = 0; i < N; i++) C[i] = A[i];\n"
      "}\n"
      "\n"
      "int main() {\n"
      "    float A[N * N], C[N * N];\n"
      "    lower(A, C, N);\n"
      "    printf(\"%f\\n\", C[0]); /* } in a comment, \"}\" in a string */\n"
      "    return 0;\n"
      "}\n"
      "// the end\n";
  fixed f = fix(src, "c", "lower");
  SG_CHECK(f.text != NULL);
  SG_CHECK_EQ_INT(f.removed, 2);
  SG_CHECK(strstr(f.text, "int main") == NULL);
  SG_CHECK(strstr(f.text, "printf") == NULL);
  SG_CHECK_CONTAINS(f.text, "  for (int i = 0; i < N; i++) C[i] = A[i];\n}\n\n"
                            "/* specgen took out main() here: the harness has its "
                            "own and calls lower itself */\n// the end\n");
  free(f.text);
  /* main alone, before the kernel */
  f = fix("int main(void) { return f(0); }\nint f(int x) { return x; }\n", "c", "f");
  SG_CHECK(f.text != NULL && f.removed == 1);
  SG_CHECK_CONTAINS(f.text, "calls f itself */\nint f(int x) { return x; }\n");
  free(f.text);
  /* main is the entry; a prototype of main; a cut main; main without the
   * kernel: left alone */
  f = fix("int main(void) { return 0; }\n", "c", "f");
  SG_CHECK(f.text == NULL);
  f = fix("int main(void) { return 0; }\n", "c", "main");
  SG_CHECK(f.text == NULL);
  f = fix("int main(void);\nvoid f(int x) { (void)x; }\n", "c", "f");
  SG_CHECK(f.text == NULL);
  f = fix("void f(int x) { (void)x; }\nint main(void) { f(1);\n", "c", "f");
  SG_CHECK(f.text == NULL);
}

/* Whatever the text, the result is the text with whole lines replaced:
 * every byte outside the taken-out lines is kept, in order. */
static void test_odd_texts(void) {
  const char *const texts[] = {
      "", "#", "#define", "#define N", "#define N\nvoid f(int N){}",
      "void f(int N){}", "#define N 1\\", "#define N 1\\\n", "f(){}",
      "#define N 1\nvoid f(int N,){}", "#define N 1\nvoid f(int (*N)(int)){}",
      "#define a 1\nvoid f(int a[N][3], int b){}",
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    fixed f = fix(texts[i], "c", "f");
    if (f.text) {
      SG_CHECK(f.removed > 0);
      SG_CHECK_CONTAINS(f.text, "void f(");
    }
    free(f.text);
  }
}

SG_TEST_MAIN(SG_TEST(test_sizes_as_macros_are_taken_out),
             SG_TEST(test_parameter_forms), SG_TEST(test_left_alone),
             SG_TEST(test_test_driver_taken_out),
             SG_TEST(test_odd_texts))
