/* test_unshadow.c: #define lines that shadow a kernel's parameters are taken
 * out, and nothing else is (core/sg_unshadow.h). */
#include "core/sg_unshadow.h"

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
  f.text = sg_unshadow_params(src, strlen(src), lang, entry, &n, &f.removed);
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
             SG_TEST(test_odd_texts))
