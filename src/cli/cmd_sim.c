/* cmd_sim.c: `specgen sim`: simulate whole campaigns in virtual time with the
 * real decision core, several configurations side by side (src/sim). */
#include "cli/commands.h"

#include "config/sg_knobs.h"
#include "report/sg_report.h"
#include "sim/sg_sim.h"
#include "sim/sg_sim_params.h"
#include "sim/sg_sim_report.h"
#include "sim/sg_sim_reproduce.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The core's knobs that --set takes, from their rows (config/sg_knobs.h):
 * the same name, range and parser as `specgen run`'s flag. */
static void usage_knobs(FILE *out) {
  fprintf(out, "                      the core's knobs among them, each read as\n"
               "                      `specgen run`'s flag (same range):\n");
  size_t n;
  const sg_knob *t = sg_knobs_table(&n);
  for (size_t i = 0; i < n; i++) {
    char key[64];
    if (sg_knob_sim_key(&t[i], key, sizeof key))
      fprintf(out, "                        %-28s --%s\n", key, t[i].name);
  }
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: specgen sim [--preset paper-glm|paper-dsv4] [--config FILE.yaml]\n"
          "                   [--seed N] [--configs baseline,spec,...] [--workflows N]\n"
          "                   [--devices N] [--iterations N] [--termination CRIT]\n"
          "                   [--set key=value ...] [--json] [--list-params]\n"
          "                   [--out DIR]\n"
          "       specgen sim --reproduce [--seed N] [--set key=value ...] [--json]\n"
          "\n"
          "Runs whole optimization campaigns in virtual time: the real controller and\n"
          "scheduler against models of the LLM and the evaluators, each configuration\n"
          "with the same seed, and reports end-to-end time, profiling feedback,\n"
          "utilization, tokens and kernel quality, with ratios to the baseline.\n"
          "\n"
          "  --preset NAME       start from a preset (default paper-glm)\n"
          "  --config FILE       YAML file of parameters, applied after the preset\n"
          "  --seed N            random seed (same seed, same output)\n"
          "  --configs LIST      comma-separated: baseline, spec, spec+realloc,\n"
          "                      spec+realloc+priority, full (default: all five);\n"
          "                      beyond the paper: full+wc, full+gate, full+cutoff,\n"
          "                      full+gate+cutoff, beyond, full+wcs, and with +vd\n"
          "                      (decide at validation, margin NAME:M) full+vd,\n"
          "                      full+cutoff+vd, full+gate+cutoff+vd, beyond+vd,\n"
          "                      full+wcs+vd, full+wcs+cutoff+vd,\n"
          "                      full+wcs+gate+cutoff+vd; with the cutoff's main\n"
          "                      generation detached full+cutoff+detach,\n"
          "                      full+cutoff+detach+vd, full+gate+cutoff+detach+vd,\n"
          "                      full+wcs+gate+cutoff+detach+vd; deciding at\n"
          "                      validation among a fork's siblings full+vds,\n"
          "                      full+wcs+vds, full+wcs+gate+cutoff+detach+vds;\n"
          "                      with the next iteration's main started ahead\n"
          "                      full+ahead, full+gate+ahead, full+vd+ahead,\n"
          "                      full+gate+vd+ahead, full+wcs+gate+vd+ahead (and\n"
          "                      full+gate+vd, the last two's reference)\n"
          "                      (docs/simulation.md)\n"
          "  --workflows N, --devices N, --iterations N, --termination CRIT\n"
          "                      shorthands for --set of those keys\n"
          "  --set KEY=VALUE     any model parameter (repeatable; after --config)\n");
  usage_knobs(out);
  fprintf(out,
          "  --json              print the report as JSON\n"
          "  --list-params       print every parameter with its value and meaning\n"
          "  --reproduce         the paper's Tables 4, 5, 7, 8 and 9 beside the\n"
          "                      simulator's, both presets (flags apply to both)\n"
          "  --out DIR           also save the campaign as DIR/campaign-PRESET-CRITERION.json\n"
          "                      for `specgen report DIR` (docs/report.md)\n"
          "  -h, --help          this help\n"
          "\n"
          "Order: preset, then --config, then the flags. docs/simulation.md explains\n"
          "the models and their calibration.\n");
}

#define MAX_SETS 256

/* What the flags asked for. The parameter flags (--set and its shorthands)
 * are kept in the order given, applied after the config file: kvs[i] for a
 * --set, else keys[i] = vals[i]. */
typedef struct sim_args {
  const char *preset, *config, *configs, *outdir;
  const char *keys[MAX_SETS], *vals[MAX_SETS], *kvs[MAX_SETS];
  size_t nsets;
  bool json, list, reproduce;
} sim_args;

/* The preset, then the config file, then the flags in order; errors are
 * printed, naming the culprit. */
static int build_params(sg_sim_params *p, const char *preset, const sim_args *a) {
  sg_err err;
  sg_err_clear(&err);
  if (sg_sim_params_preset(p, preset, &err) < 0) {
    fprintf(stderr, "specgen sim: --preset: %s\n", err.msg);
    return -1;
  }
  if (a->config != NULL && sg_sim_params_load_yaml(p, a->config, &err) < 0) {
    fprintf(stderr, "specgen sim: --config: %s\n", err.msg);
    return -1;
  }
  for (size_t i = 0; i < a->nsets; i++) {
    const char *kv = a->kvs[i];
    int rc = kv ? sg_sim_params_set_kv(p, kv, &err)
                : sg_sim_params_set(p, a->keys[i], a->vals[i], &err);
    if (rc < 0) {
      fprintf(stderr, "specgen sim: %s%s: %s\n", kv ? "--set " : "--", kv ? kv : a->keys[i],
              err.msg);
      return -1;
    }
  }
  if (sg_sim_params_validate(p, &err) < 0) {
    fprintf(stderr, "specgen sim: %s\n", err.msg);
    return -1;
  }
  return 0;
}

/* The parameter a shorthand flag sets, by its getopt code; NULL: none. */
static const char *shorthand(int ch) {
  switch (ch) {
  case 's':
    return "seed";
  case 'w':
    return "workflows";
  case 'd':
    return "devices";
  case 'i':
    return "iterations";
  case 't':
    return "termination";
  }
  return NULL;
}

/* One parameter flag, in order; -1 (printed) when there are too many. */
static int add_set(sim_args *a, const char *key, const char *val, const char *kv) {
  if (a->nsets == MAX_SETS) {
    if (kv)
      fprintf(stderr, "specgen sim: more than %d --set flags\n", MAX_SETS);
    else
      fprintf(stderr, "specgen sim: too many flags\n");
    return -1;
  }
  a->keys[a->nsets] = key;
  a->vals[a->nsets] = val;
  a->kvs[a->nsets++] = kv;
  return 0;
}

/* The flags into *a. Returns -1 to go on, else the exit status (help, bad
 * usage). */
static int parse_args(int argc, char **argv, sim_args *a) {
  static const struct option opts[] = {
      {"preset", required_argument, NULL, 'p'},   {"config", required_argument, NULL, 'c'},
      {"seed", required_argument, NULL, 's'},     {"configs", required_argument, NULL, 'C'},
      {"workflows", required_argument, NULL, 'w'}, {"devices", required_argument, NULL, 'd'},
      {"iterations", required_argument, NULL, 'i'},
      {"termination", required_argument, NULL, 't'},
      {"set", required_argument, NULL, 'S'},      {"json", no_argument, NULL, 'j'},
      {"list-params", no_argument, NULL, 'l'},    {"reproduce", no_argument, NULL, 'r'},
      {"out", required_argument, NULL, 'o'},      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  memset(a, 0, sizeof *a);
  a->preset = "paper-glm";
  optind = 1;
  opterr = 0;
  int ch;
  while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
    const char *key = shorthand(ch);
    if (key != NULL || ch == 'S') {
      if (add_set(a, key, key ? optarg : NULL, key ? NULL : optarg) < 0)
        return SG_EXIT_USAGE;
      continue;
    }
    switch (ch) {
    case 'p':
      a->preset = optarg;
      break;
    case 'c':
      a->config = optarg;
      break;
    case 'C':
      a->configs = optarg;
      break;
    case 'o':
      a->outdir = optarg;
      break;
    case 'j':
      a->json = true;
      break;
    case 'l':
      a->list = true;
      break;
    case 'r':
      a->reproduce = true;
      break;
    case 'h':
      usage(stdout);
      return SG_EXIT_OK;
    default:
      return sg_cli_bad_option("sim", argv);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "specgen sim: unexpected argument \"%s\"\n", argv[optind]);
    return SG_EXIT_USAGE;
  }
  return -1;
}

/* --reproduce: both presets under the same flags, the paper beside them. */
static int reproduce(const sim_args *a) {
  if (a->configs != NULL || a->list || a->outdir != NULL) {
    fprintf(stderr, "specgen sim: --reproduce runs its own configurations and "
                    "prints them (no --configs, --list-params or --out)\n");
    return SG_EXIT_USAGE;
  }
  sg_sim_params p, q;
  if (build_params(&p, "paper-glm", a) < 0 || build_params(&q, "paper-dsv4", a) < 0)
    return SG_EXIT_USAGE;
  sg_err err;
  sg_err_clear(&err);
  char *out = NULL;
  if (sg_sim_reproduce(&p, &q, a->json, &out, &err) < 0) {
    fprintf(stderr, "specgen sim: %s\n", err.msg);
    return SG_EXIT_FAILED;
  }
  fputs(out, stdout);
  if (a->json)
    fputc('\n', stdout);
  free(out);
  return SG_EXIT_OK;
}

static void list_params(const sg_sim_params *p) {
  for (size_t i = 0; i < sg_sim_param_count(); i++) {
    char buf[128];
    sg_sim_param_format(p, i, buf, sizeof buf);
    printf("%-30s %-14s %s\n", sg_sim_param_get(i)->key, buf, sg_sim_param_get(i)->doc);
  }
}

/* --out DIR: the campaign saved for `specgen report`. */
static int save_campaign(const sim_args *a, const sg_sim_campaign *c) {
  sg_err err;
  sg_err_clear(&err);
  char *text = sg_sim_report_json(c), *path = NULL;
  int rc = sg_report_campaign_save(a->outdir, text, &path, &err);
  free(text);
  if (rc < 0) {
    fprintf(stderr, "specgen sim: --out: %s\n", err.msg);
    return SG_EXIT_FAILED;
  }
  if (!a->json)
    fprintf(stderr, "campaign saved to %s (`specgen report %s` draws it)\n", path,
            a->outdir);
  free(path);
  return SG_EXIT_OK;
}

/* The configurations asked for (default: the paper's five), run and
 * printed. */
static int campaign(const sim_args *a, const sg_sim_params *p) {
  sg_err err;
  sg_err_clear(&err);
  sg_sim_variant v[SG_SIM_MAX_CONFIGS];
  size_t nv = 0;
  if (a->configs == NULL) {
    for (int i = 0; i < SG_SIM_VARIANTS; i++)
      sg_sim_variant_parse(sg_sim_variant_name(i), &v[nv++], &err);
  } else if (sg_sim_configs_parse(a->configs, v, &nv, &err) < 0) {
    fprintf(stderr, "specgen sim: %s\n", err.msg);
    return SG_EXIT_USAGE;
  }
  sg_sim_campaign *c = malloc(sizeof *c);
  if (c == NULL) {
    fprintf(stderr, "specgen sim: out of memory\n");
    return SG_EXIT_FAILED;
  }
  int rc = sg_sim_campaign_run(p, v, nv, c, &err);
  if (rc < 0) {
    fprintf(stderr, "specgen sim: %s\n", err.msg);
    free(c);
    /* A bad criterion or search name is bad input; anything else a failed run. */
    return rc == SG_ENOENT || rc == SG_EINVAL ? SG_EXIT_USAGE : SG_EXIT_FAILED;
  }
  if (a->outdir && save_campaign(a, c) != SG_EXIT_OK) {
    free(c);
    return SG_EXIT_FAILED;
  }
  char *out = a->json ? sg_sim_report_json(c) : sg_sim_report_table(c);
  fputs(out, stdout);
  if (a->json)
    fputc('\n', stdout);
  free(out);
  free(c);
  return SG_EXIT_OK;
}

int sg_cmd_sim(int argc, char **argv) {
  sim_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc >= 0)
    return rc;
  if (a.reproduce)
    return reproduce(&a);
  sg_sim_params p;
  if (build_params(&p, a.preset, &a) < 0)
    return SG_EXIT_USAGE;
  if (a.list) {
    list_params(&p);
    return SG_EXIT_OK;
  }
  return campaign(&a, &p);
}
