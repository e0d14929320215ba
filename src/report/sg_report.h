/* sg_report.h: what `specgen report`, `specgen show --serve` and
 * `specgen run --dashboard` draw: the data of a run directory (its run.db)
 * or of a simulated campaign (`specgen sim --out DIR`: campaign-*.json), and
 * the one self-contained HTML page that draws it with Chart.js.
 *
 * How it works: a source (sg_report_src) opens the run store READ-ONLY with
 * plain SQLite (the run may be writing it: WAL lets both go on) and turns
 * its tables into one JSON object of compact row arrays (docs/report.md
 * lists the columns); the page's script computes every series from them in
 * the browser. The page embeds the data as a JSON script block that is
 * parsed, never executed, with every '<' written \u003c, so no text from a
 * kernel or a message can end the block; the script puts text into the
 * page with textContent only. Kernel sources and full messages are in a
 * second block parsed on the first click (or fetched from the dashboard).
 *
 * What it must never do: write to the run store, put the run's environment
 * or credentials on the page (the configuration's URL loses its userinfo;
 * API keys are never in the store), or fetch anything at view time.
 */
#ifndef SG_REPORT_H
#define SG_REPORT_H

#include "common/sg_error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Times on the page are seconds since the run began; the data format. */
#define SG_REPORT_FORMAT 1
/* Messages in the row arrays are cut to this; details hold them whole. */
#define SG_REPORT_SHORT_MESSAGE 160

typedef struct sg_report_src sg_report_src;

/* Opens dir: a run directory (dir/run.db, opened read-only) or a sim
 * campaign directory (dir/campaign-*.json). SG_ENOENT naming dir when it
 * holds neither; SG_EPARSE for a damaged store or campaign file;
 * SG_EUNSUPPORTED for a store of a newer schema. */
int sg_report_open(const char *dir, sg_report_src **out, sg_err *err);
void sg_report_close(sg_report_src *s);
bool sg_report_is_sim(const sg_report_src *s);

/* A number that changes whenever the data may have changed since the last
 * call on this source (SQLite's data_version for a run; constant for a
 * campaign). */
int sg_report_version(sg_report_src *s, int64_t *version, sg_err *err);

/* The page's data (caller json_decref()s *out). with_details adds
 * "details": {candidate id: {source, evaluations}} for every candidate (the
 * static report); the dashboard leaves it out and serves one candidate at a
 * time with sg_report_candidate_json. */
int sg_report_data_json(sg_report_src *s, bool with_details, json_t **out,
                        sg_err *err);
/* One candidate's details: {"id", "source", "evaluations": [{"id",
 * "phase", "status", "device", "speedup", "ref_ms", "cand_ms", "message",
 * "metrics"}]}. SG_ENOENT when there is no such candidate. */
int sg_report_candidate_json(sg_report_src *s, int64_t id, json_t **out,
                             sg_err *err);

/* The path of Chart.js's UMD build as Debian's libjs-chart.js installs it
 * (or $SPECGEN_CHARTJS). SG_ENOENT naming every place looked at and the
 * package to install when it is nowhere. The caller frees *path. */
int sg_report_chartjs_path(char **path, sg_err *err);

/* The HTML page (caller frees *html). data NULL: a live page that polls
 * "data.json" and "candidate/ID.json" next to it. */
int sg_report_page(const json_t *data, char **html, size_t *len, sg_err *err);

/* The static report of dir written to out_path (NULL: dir/report.html,
 * atomically). *written (may be NULL) gets the path used (caller frees). */
int sg_report_write(const char *dir, const char *out_path, char **written,
                    sg_err *err);

/* Saves a sim campaign's JSON report (sg_sim_report_json's text) as
 * dir/campaign-PRESET-CRITERION.json (characters other than letters, digits,
 * '-', '+' and '.' become '_'), creating dir. *path (may be NULL) gets the
 * file's path (caller frees). SG_EPARSE when text is not a campaign. */
int sg_report_campaign_save(const char *dir, const char *text, char **path, sg_err *err);

/* JSON text safe inside a <script> block: every '<' becomes \u003c (only
 * strings hold one, so the JSON means the same). Caller frees. */
char *sg_report_json_for_script(const json_t *v);

/* A URL with its userinfo (user:password@) removed; caller frees. */
char *sg_report_redact_url(const char *url);

#endif
