/* test_tidy.c: #define lines that shadow a kernel's parameters, and a test
 * driver's main, are taken out of a candidate, a standard header it uses
 * but forgot is added, and nothing else changes (core/sg_tidy.h). */
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

#define ADDED_MATH                                                             \
  "/* specgen added this #include: the kernel uses NAN, declared in "          \
  "<math.h>, which it did not include */\n#include <math.h>\n"

/* What a 1.5B coder model wrote in a live campaign: NAN and fmaxf without
 * <math.h> ("'NAN' undeclared"). The include goes before the model's own. */
static void test_math_header_added(void) {
  const char *src =
      "// max pooling\n"
      "#include <stdio.h>\n"
      "void pool(const float *x, float *y, int n) {\n"
      "  float m = -NAN; /* fabsf in a comment */\n"
      "  for (int i = 0; i < n; i++) m = fmaxf(m, x[i]);\n"
      "  y[0] = m;\n"
      "}\n";
  fixed f = fix(src, "c", "pool");
  SG_CHECK(f.text != NULL);
  SG_CHECK_EQ_INT(f.removed, 1);
  /* the text, with the comment and the #include before the model's own */
  size_t head = strlen("// max pooling\n"), added = strlen(ADDED_MATH);
  SG_CHECK(strncmp(f.text, src, head) == 0);
  SG_CHECK(strncmp(f.text + head, ADDED_MATH, added) == 0);
  SG_CHECK_STR_EQ(f.text + head + added, src + head);
  free(f.text);
  /* no include at all: at the top; each header once, in the table's order */
  f = fix("void g(float *y, size_t n) { int32_t k = 0; y[0] = sqrtf(expf(y[1])); "
          "memset(y, 0, n); (void)k; }\n",
          "c", "g");
  SG_CHECK(f.text != NULL);
  SG_CHECK_EQ_INT(f.removed, 4);
  SG_CHECK(strncmp(f.text, "/* specgen added this #include: the kernel uses sqrtf, "
                           "declared in <math.h>",
                   75) == 0);
  const char *order[] = {"#include <math.h>\n", "#include <stdint.h>\n",
                         "#include <stddef.h>\n", "#include <string.h>\n",
                         "void g("};
  const char *at = f.text;
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    const char *next = strstr(at, order[i]);
    SG_CHECK_MSG(next != NULL, "%s not after the one before in:\n%s", order[i], f.text);
    at = next ? next : at;
  }
  SG_CHECK_CONTAINS(f.text, "uses int32_t, declared in <stdint.h>");
  free(f.text);
  /* with the macros and main taken out too; an #include inside #if is not
   * the place */
  f = fix("#ifdef X\n#include <stdlib.h>\n#endif\n#define n 4\n"
          "void h(float *y, int n) { y[0] = (float)INFINITY * n; }\n"
          "int main(void) { return 0; }\n",
          "c", "h");
  SG_CHECK(f.text != NULL);
  SG_CHECK_EQ_INT(f.removed, 3);
  SG_CHECK(strncmp(f.text, "/* specgen added this #include: the kernel uses "
                           "INFINITY",
                   56) == 0);
  free(f.text);
}

static void test_headers_left_alone(void) {
  static const struct {
    const char *why, *src, *lang;
  } cases[] = {
      {"already included", "#include <math.h>\nvoid f(float *y) { y[0] = NAN; }\n", "c"},
      {"included with quotes and blanks",
       "#  include \"math.h\"\nvoid f(float *y) { y[0] = NAN; }\n", "c"},
      {"tgmath.h declares it", "#include <tgmath.h>\nvoid f(float *y) { y[0] = NAN; }\n",
       "c"},
      {"stdio.h declares size_t", "#include <stdio.h>\nvoid f(size_t n) { (void)n; }\n",
       "c"},
      {"inttypes.h declares int32_t",
       "#include <inttypes.h>\nvoid f(int32_t n) { (void)n; }\n", "c"},
      {"in a comment", "void f(float *y) { y[0] = 0; } // NAN, sqrtf(x)\n", "c"},
      {"in a block comment", "/* expf\n NAN */ void f(float *y) { y[0] = 0; }\n", "c"},
      {"in a string", "void f(float *y) { const char *s = \"NAN sqrtf\"; (void)s; }\n",
       "c"},
      {"in a character literal", "void f(char *y) { y[0] = 'exp'; }\n", "c"},
      {"a longer name", "void f(float *y) { float expf_val = 1, my_sqrt = 2, NANS = 3;"
                        " y[0] = expf_val + my_sqrt + NANS + y.fabsx; }\n",
       "c"},
      {"its own macro", "#define NAN (0.0f / 0.0f)\nvoid f(float *y) { y[0] = NAN; }\n",
       "c"},
      {"its own macro, guarded",
       "#ifndef INFINITY\n#endif\nvoid f(float *y) { y[0] = INFINITY; }\n", "c"},
      {"its own function",
       "static float fmaxf(float a, float b) { return a > b ? a : b; }\n"
       "void f(float *y) { y[0] = fmaxf(y[1], y[2]); }\n",
       "c"},
      {"its own typedef", "typedef int int32_t;\nvoid f(int32_t *y) { y[0] = 0; }\n", "c"},
      {"a feature-test macro and no include",
       "#define _GNU_SOURCE\nvoid f(float *y) { y[0] = sqrtf(y[1]); }\n", "c"},
      {"CUDA", "__global__ void k(float *y) { y[0] = NAN; }\n"
               "extern \"C\" void f(float *y) { k<<<1, 1>>>(y); }\n",
       "cuda"},
      {"a number is no name", "void f(float *y) { y[0] = 1e5f; }\n", "c"},
      {"no definition of the entry (a test driver alone)",
       "int main(void) { float y[2]; memset(y, 0, sizeof y); return (int)y[0]; }\n",
       "c"},
      {"a cut entry", "void f(float *y) { y[0] = NAN;\n", "c"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fixed f = fix(cases[i].src, cases[i].lang, "f");
    SG_CHECK_MSG(f.text == NULL, "%s: changed to:\n%s", cases[i].why, f.text);
    free(f.text);
  }
  /* "return sqrtf(x)" is a use, not a declaration */
  fixed f = fix("float f(float x) { if (x < 0) return NAN; else return sqrtf(x); }\n", "c",
                "f");
  SG_CHECK(f.text != NULL && f.removed == 1);
  free(f.text);
  /* a feature-test macro before the first include: the header goes after it */
  f = fix("#define _GNU_SOURCE\n#include <stdio.h>\nvoid f(float *y) { y[0] = NAN; }\n",
          "c", "f");
  SG_CHECK(f.text != NULL);
  SG_CHECK_CONTAINS(f.text, "#define _GNU_SOURCE\n/* specgen added");
  free(f.text);
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
             SG_TEST(test_math_header_added), SG_TEST(test_headers_left_alone),
             SG_TEST(test_odd_texts))
