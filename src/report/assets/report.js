/* report.js: draws a specgen report (a run or a sim campaign) with Chart.js.
 *
 * Input: the JSON block #sg-data (a static report) or data.json polled every
 * second (the live dashboard, body[data-mode=live]); docs/report.md lists
 * the row layouts (they follow src/report/sg_report_data.c). Every text
 * from the run goes into the page through textContent, never as HTML.
 * Each chart's <figure> gets data-points (the points Chart.js created,
 * counted after it rendered) and data-drawn (renders so far): the browser
 * tests read them. */
(function () {
  'use strict';

  // Row layouts (sg_report_data.c).
  const W = { id: 0, task: 1, state: 2, start: 3, end: 4 };
  const I = { id: 0, wf: 1, num: 2, start: 3, end: 4, reason: 5 };
  const G = { id: 0, it: 1, kind: 2, parent: 3, start: 4, end: 5, pt: 6, ct: 7, cached: 8,
              outcome: 9 };
  // speedup: the kernel's one figure (its latest profile's, else its latest
  // validation's: the summary's and `specgen show`'s), kind: the phase that
  // measured it, at: when that evaluation ended.
  const C = { id: 0, gen: 1, created: 2, bytes: 3, speedup: 4, kind: 5, at: 6 };
  const E = { id: 0, cand: 1, phase: 2, queued: 3, started: 4, ended: 5, status: 6,
              speedup: 7, device: 8, msg: 9 };
  const D = { device: 0, phase: 1, start: 2, end: 3 };
  const X = { wf: 0, it: 1, kind: 2, at: 3, detail: 4 };

  // Above this many points a series is reduced to MAX_POINTS / 2 buckets
  // (each keeps its largest value), so 100,000 events draw in a blink.
  const MAX_POINTS = 4000;
  const UTIL_BUCKETS = 100;
  const PAGE_ROWS = 50;

  const live = document.body.dataset.mode === 'live';
  const app = document.getElementById('app');
  const charts = new Map();
  const state = { task: 'all', earlyOnly: false, page: 0, open: new Set(), data: null,
                  details: null, version: null };

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs)
      for (const [k, v] of Object.entries(attrs)) {
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
        else if (k.startsWith('data-')) e.setAttribute(k, v);
        else e[k] = v;
      }
    for (const kid of kids)
      if (kid !== null && kid !== undefined)
        e.append(kid instanceof Node ? kid : String(kid));
    return e;
  }
  // A kernel's figure, naming the measurement when it is not a profile's.
  const figureText = (c) => (c === null ? '-' : fmt(c[C.speedup]) + 'x' +
    (c[C.kind] === 'validate' ? ' (validation)' : ''));
  const fmt = (v, d = 2) => (v === null || v === undefined || !isFinite(v) ? '-' : v.toFixed(d));
  const color = (i, n) => `hsl(${Math.round((i * 360) / Math.max(n, 1)) % 360} 65% 45%)`;

  // ---- charts -------------------------------------------------------------

  // Counts what Chart.js drew, for the tests, after each render.
  const countPlugin = {
    id: 'sgcount',
    afterRender(chart) {
      let n = 0;
      chart.data.datasets.forEach((d, i) => { n += chart.getDatasetMeta(i).data.length; });
      const fig = chart.canvas.closest('figure');
      fig.dataset.points = String(n);
      fig.dataset.xticks = (chart.scales.x && chart.scales.x.type === 'linear')
        ? chart.scales.x.ticks.map((t) => t.value).join(',') : '';
      fig.dataset.drawn = String(Number(fig.dataset.drawn || 0) + 1);
    },
  };
  // Vertical lines at options.plugins.sgmarkers.xs (the pool's re-splits).
  const markerPlugin = {
    id: 'sgmarkers',
    afterDatasetsDraw(chart, args, opts) {
      const xs = (opts && opts.xs) || [];
      if (!xs.length) return;
      const { ctx, chartArea: a, scales } = chart;
      ctx.save();
      ctx.strokeStyle = 'rgba(102,57,186,0.55)';
      ctx.setLineDash([4, 3]);
      for (const x of xs) {
        const px = scales.x.getPixelForValue(x);
        if (px < a.left || px > a.right) continue;
        ctx.beginPath();
        ctx.moveTo(px, a.top);
        ctx.lineTo(px, a.bottom);
        ctx.stroke();
      }
      ctx.restore();
    },
  };
  Chart.register(countPlugin, markerPlugin);
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 11;

  function figure(id, title, note) {
    const fig = el('figure', { 'data-chart': id },
      el('figcaption', null, title, note ? el('small', { text: ' ' + note }) : null),
      el('div', { class: 'chartbox' }, el('canvas', { id: 'c-' + id })));
    return fig;
  }

  // Creates the chart on its canvas, or updates it in place (live pages).
  function draw(id, config) {
    const old = charts.get(id);
    const canvas = document.getElementById('c-' + id);
    if (old && old.canvas === canvas) {
      old.data = config.data;
      old.options = config.options;
      old.update('none');
      return;
    }
    if (old) old.destroy();
    charts.set(id, new Chart(canvas, config));
  }

  // The x axes: time from the run's start (0, not the first point), and
  // iterations in whole numbers (no 1.5th iteration).
  const timeAxis = (max) => ({ type: 'linear', min: 0, max,
    title: { display: true, text: 'seconds since the run began' } });
  const iterAxis = () => ({ type: 'linear', ticks: { precision: 0 },
    title: { display: true, text: 'iteration' } });

  function linearOpts(xTitle, yTitle, extra) {
    return Object.assign({
      parsing: true, normalized: true, spanGaps: false,
      interaction: { mode: 'nearest', intersect: false },
      scales: { x: { type: 'linear', title: { display: true, text: xTitle } },
                y: { title: { display: true, text: yTitle }, beginAtZero: true } },
      plugins: { legend: { display: true }, sgmarkers: { xs: [] } },
    }, extra || {});
  }

  // A step series from intervals [start, end] (end null: still open, ends
  // at `until`): the level after each start and end, from 0 at time 0.
  function stepSeries(intervals, until) {
    const ev = [];
    for (const [s, e] of intervals) {
      ev.push([s, 1]);
      ev.push([e === null ? until : e, -1]);
    }
    // At equal times a start goes first: an instant interval then shows as
    // a blip up, never as a level below zero.
    ev.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    let cur = 0;
    const pts = [{ x: 0, y: 0 }];
    for (const [t, d] of ev) {
      cur += d;
      pts.push({ x: t, y: cur });
    }
    return decimate(pts, until);
  }

  function decimate(pts, until) {
    if (pts.length <= MAX_POINTS) return pts;
    const nb = MAX_POINTS / 2, w = (until || 1) / nb, out = [];
    let b = -1;
    for (const p of pts) {
      const k = Math.min(nb - 1, Math.floor(p.x / w));
      if (k !== b) { out.push({ x: k * w, y: p.y }); b = k; }
      else if (p.y > out[out.length - 1].y) out[out.length - 1].y = p.y;
    }
    return out;
  }

  // ---- a run ---------------------------------------------------------------

  function index(d) {
    const ix = { wf: new Map(), it: new Map(), gen: new Map(), cand: new Map() };
    d.workflows.forEach((w, i) => ix.wf.set(w[W.id], { row: w, i, its: [], figs: [],
      cands: new Set(), tokens: [0, 0, 0] }));
    for (const it of d.iterations) {
      ix.it.set(it[I.id], { row: it, gens: [], cands: [] });
      const w = ix.wf.get(it[I.wf]);
      if (w) w.its.push(it);
    }
    for (const g of d.generations) {
      ix.gen.set(g[G.id], g);
      const it = ix.it.get(g[G.it]);
      if (!it) continue;
      it.gens.push(g);
      const w = ix.wf.get(it.row[I.wf]);
      if (w) {
        w.tokens[0] += g[G.cached] || 0;
        w.tokens[1] += Math.max(0, (g[G.pt] || 0) - (g[G.cached] || 0));
        w.tokens[2] += g[G.ct] || 0;
      }
    }
    for (const c of d.candidates) {
      const g = ix.gen.get(c[C.gen]);
      const it = g && ix.it.get(g[G.it]);
      const rec = { row: c, kind: g ? g[G.kind] : '?', it, evals: [] };
      ix.cand.set(c[C.id], rec);
      if (it) it.cands.push(rec);
      const w = it && ix.wf.get(it.row[I.wf]);
      if (w && c[C.speedup] !== null && c[C.at] !== null) w.figs.push(c);
    }
    // A kernel written again in a later iteration is that iteration's
    // kernel too, though the store holds it once (under its first
    // generation): its validation was deduplicated there.
    for (const x of d.decisions) {
      if (x[X.kind] !== 'deduplicated' || !x[X.detail] || x[X.detail].phase !== 'validate') continue;
      const it = ix.it.get(x[X.it]), c = ix.cand.get(x[X.detail].candidate_id);
      if (it && c && !it.cands.some((k) => k.row === c.row)) it.cands.push(Object.assign({}, c, { copy: true }));
    }
    for (const e of d.evaluations) {
      const c = ix.cand.get(e[E.cand]);
      if (!c) continue;
      c.evals.push(e);
      const w = c.it && ix.wf.get(c.it.row[I.wf]);
      if (w && e[E.status] === 'ok' && e[E.phase] === 'profile') w.cands.add(e[E.cand]);
    }
    for (const w of ix.wf.values()) {
      w.figs.sort((a, b) => a[C.at] - b[C.at] || a[C.id] - b[C.id]);
      w.its.sort((a, b) => a[I.num] - b[I.num]);
    }
    return ix;
  }

  // Per workflow, the best speedup over time: a point where a kernel's
  // figure (C.speedup, the summary's) beat the best so far, at the end of
  // the evaluation that measured it, and one at each iteration's end
  // (a triangle when it ended early); over iterations: the best of the
  // kernels of iterations 1..k, one point per ended iteration.
  function speedupCharts(d, ix) {
    const nwf = d.workflows.length;
    const byTime = [], byIter = [], earlyTime = [], earlyIter = [];
    let early = 0;
    // The best figure among each iteration's kernels, in one pass.
    const iterBest = new Map();
    for (const c of ix.cand.values())
      if (c.it && c.row[C.speedup] !== null) {
        const id = c.it.row[I.id];
        iterBest.set(id, Math.max(iterBest.get(id) ?? -Infinity, c.row[C.speedup]));
      }
    for (const w of ix.wf.values()) {
      const ended = w.its.filter((it) => it[I.end] !== null);
      const evs = [];
      let best = null;
      for (const c of w.figs)
        if (best === null || c[C.speedup] > best) { best = c[C.speedup]; evs.push({ x: c[C.at], y: best, it: null }); }
      const ends = ended.map((it) => ({ x: it[I.end], y: null, it }));
      const pts = evs.concat(ends).sort((a, b) => a.x - b.x || (a.it ? 1 : 0) - (b.it ? 1 : 0));
      best = null;
      for (const p of pts) {
        if (p.it) p.y = best;
        else best = p.y;
      }
      const isEarly = (it) => it && it[I.reason] === 'early';
      early += ended.filter(isEarly).length;
      // Constant point options: Chart.js then resolves them once per
      // dataset, not per point (per-point arrays cost seconds at 10,000
      // iterations). Early terminations are one marker dataset below.
      const base = { label: w.row[W.task], borderColor: color(w.i, nwf),
                     backgroundColor: color(w.i, nwf), stepped: 'before', borderWidth: 1.5,
                     pointRadius: nwf > 12 ? 0 : 2 };
      byTime.push(Object.assign({}, base, { data: pts.map((p) => ({ x: p.x, y: p.y })) }));
      for (const p of pts) if (isEarly(p.it)) earlyTime.push({ x: p.x, y: p.y });
      best = null;
      const ip = ended.map((it) => {
        const b = iterBest.get(it[I.id]);
        if (b !== undefined && (best === null || b > best)) best = b;
        if (isEarly(it)) earlyIter.push({ x: it[I.num], y: best });
        return { x: it[I.num], y: best };
      });
      byIter.push(Object.assign({}, base, { data: ip }));
    }
    const marks = (data) => ({ label: 'ended early', data, showLine: false, pointStyle: 'triangle',
      pointRadius: 6, borderColor: '#d1242f', backgroundColor: 'rgba(209,36,47,0.6)' });
    byTime.push(marks(earlyTime));
    byIter.push(marks(earlyIter));
    const legend = { display: nwf <= 12 };
    const yScale = { title: { display: true, text: 'best speedup (x)' } };
    draw('speedup-time', { type: 'line', data: { datasets: byTime },
      options: linearOpts('seconds since the run began', 'best speedup (x)',
        { plugins: { legend, sgmarkers: { xs: [] } },
          scales: { x: timeAxis(d.run.e2e_s), y: yScale } }) });
    draw('speedup-iter', { type: 'line', data: { datasets: byIter },
      options: linearOpts('iteration', 'best speedup (x)',
        { plugins: { legend, sgmarkers: { xs: [] } },
          scales: { x: iterAxis(), y: yScale } }) });
    for (const id of ['speedup-time', 'speedup-iter'])
      document.querySelector(`figure[data-chart="${id}"]`).dataset.early = String(early);
  }

  function inflightChart(d) {
    const until = d.run.e2e_s;
    const gens = d.generations.map((g) => [g[G.start], g[G.end]]);
    const val = d.evaluations.filter((e) => e[E.phase] === 'validate')
      .map((e) => [e[E.queued], e[E.ended]]);
    const prof = d.evaluations.filter((e) => e[E.phase] === 'profile')
      .map((e) => [e[E.queued], e[E.ended]]);
    const series = [['generation', gens, '#0969da'], ['validation', val, '#bf8700'],
                    ['profiling', prof, '#1a7f37']];
    draw('inflight', { type: 'line', data: { datasets: series.map(([label, iv, c]) => ({
      label, data: stepSeries(iv, until), stepped: 'after', borderColor: c,
      backgroundColor: c, pointRadius: 0, borderWidth: 1.5 })) },
      options: linearOpts('seconds since the run began', 'requests in flight',
        { scales: { x: timeAxis(until),
                    y: { beginAtZero: true, title: { display: true, text: 'requests in flight' } } } }) });
    document.querySelector('figure[data-chart="inflight"]').dataset.events =
      String(gens.length + val.length + prof.length);
  }

  function utilChart(d) {
    const e2e = d.run.e2e_s || 0, dev = Math.max(1, d.run.devices || 1);
    const w = e2e > 0 ? e2e / UTIL_BUCKETS : 1;
    const busy = { validate: new Float64Array(UTIL_BUCKETS), profile: new Float64Array(UTIL_BUCKETS) };
    for (const iv of d.device_intervals) {
      const arr = busy[iv[D.phase]];
      if (!arr || e2e <= 0) continue;
      const s = iv[D.start], e = iv[D.end];
      for (let k = Math.max(0, Math.floor(s / w)); k < UTIL_BUCKETS && k * w < e; k++) {
        const lo = Math.max(s, k * w), hi = Math.min(e, (k + 1) * w);
        if (hi > lo) arr[k] += hi - lo;
      }
    }
    const pts = (arr) => Array.from(arr, (b, k) => ({ x: (k + 0.5) * w, y: (100 * b) / (dev * w) }));
    const splits = d.decisions.filter((x) => x[X.kind] === 'reallocate');
    const share = splits.map((x) => {
      const v = (x[X.detail] && x[X.detail].validate_devices) || 0;
      const p = (x[X.detail] && x[X.detail].profile_devices) || 0;
      return { x: x[X.at], y: v + p > 0 ? (100 * p) / (v + p) : null };
    }).sort((a, b) => a.x - b.x);
    draw('util', { type: 'line', data: { datasets: [
      { label: 'validation', data: pts(busy.validate), fill: 'origin', stack: 'u',
        borderColor: '#bf8700', backgroundColor: 'rgba(191,135,0,0.35)', pointRadius: 0 },
      { label: 'profiling', data: pts(busy.profile), fill: '-1', stack: 'u',
        borderColor: '#1a7f37', backgroundColor: 'rgba(26,127,55,0.35)', pointRadius: 0 },
      { label: 'pool share for profiling (re-splits)', data: share, stepped: 'after',
        borderColor: '#6639ba', backgroundColor: '#6639ba', pointRadius: 3, yAxisID: 'y2' },
    ] }, options: linearOpts('seconds since the run began', '% of the pool busy',
      { scales: { x: timeAxis(e2e),
                  y: { stacked: true, min: 0, max: 100,
                       title: { display: true, text: '% of the pool busy' } },
                  y2: { position: 'right', min: 0, max: 100, grid: { display: false },
                        title: { display: true, text: '% of the pool for profiling' } } },
        plugins: { sgmarkers: { xs: splits.map((x) => x[X.at]) } } }) });
    document.querySelector('figure[data-chart="util"]').dataset.resplits = String(splits.length);
  }

  function barCharts(d, ix) {
    const ws = [...ix.wf.values()];
    const labels = ws.map((w) => w.row[W.task]);
    const bar = (label, data, c, stack) => ({ label, data, backgroundColor: c, stack });
    const opts = (y, stacked) => ({ indexAxis: 'x', plugins: { legend: { display: stacked } },
      scales: { x: { stacked }, y: { stacked, beginAtZero: true, title: { display: true, text: y } } } });
    draw('e2e', { type: 'bar', data: { labels, datasets: [bar('end-to-end time (s)',
      ws.map((w) => (w.row[W.end] === null ? d.run.e2e_s : w.row[W.end]) - w.row[W.start]),
      '#0969da')] }, options: opts('seconds', false) });
    draw('feedback', { type: 'bar', data: { labels, datasets: [bar('kernels profiled ok',
      ws.map((w) => w.cands.size), '#1a7f37')] }, options: opts('profiling feedback', false) });
    draw('tokens', { type: 'bar', data: { labels, datasets: [
      bar('prompt, cached', ws.map((w) => w.tokens[0]), '#8250df', 't'),
      bar('prompt, not cached', ws.map((w) => w.tokens[1]), '#d4a72c', 't'),
      bar('completion', ws.map((w) => w.tokens[2]), '#0969da', 't')] },
      options: opts('tokens', true) });
  }

  // ---- the iteration table ---------------------------------------------------

  function statusSpan(e) {
    if (!e) return el('span', { class: 'muted', text: '-' });
    const st = e[E.status] === null ? 'running' : e[E.status];
    return el('span', { class: st === 'ok' ? 'st-ok' : st === 'running' ? 'muted' : 'st-bad',
      text: st });
  }

  function iterTable(d, ix) {
    const box = el('section', { id: 'iterations' });
    const tasks = d.workflows.map((w) => w[W.task]);
    const sel = el('select', { onchange: (ev) => { state.task = ev.target.value; state.page = 0; renderTable(); } },
      el('option', { value: 'all', text: 'all tasks' }),
      ...tasks.map((t) => el('option', { value: t, text: t })));
    sel.value = state.task;
    const chk = el('input', { type: 'checkbox', checked: state.earlyOnly,
      onchange: (ev) => { state.earlyOnly = ev.target.checked; state.page = 0; renderTable(); } });
    const pager = el('span', { class: 'pager' });
    const table = el('table', { id: 'itable' });
    box.append(el('h2', { text: 'Iterations' }),
      el('div', { class: 'controls' }, sel, el('label', null, chk, ' early terminations only'), pager),
      table);

    function renderTable() {
      const all = d.iterations.filter((it) => {
        const w = ix.wf.get(it[I.wf]);
        return (state.task === 'all' || (w && w.row[W.task] === state.task)) &&
               (!state.earlyOnly || it[I.reason] === 'early');
      });
      const pages = Math.max(1, Math.ceil(all.length / PAGE_ROWS));
      state.page = Math.min(state.page, pages - 1);
      pager.replaceChildren(
        el('button', { text: '<', disabled: state.page === 0, onclick: () => { state.page--; renderTable(); } }),
        ` page ${state.page + 1} of ${pages} (${all.length} iterations) `,
        el('button', { text: '>', disabled: state.page >= pages - 1, onclick: () => { state.page++; renderTable(); } }));
      const head = el('tr', null, ...['task', 'iteration', 'start (s)', 'duration (s)',
        'ended as', 'generations', 'kernels', 'best speedup'].map((h, k) =>
        el('th', { class: k > 0 && k !== 4 ? 'num' : '', text: h })));
      const body = [head];
      for (const it of all.slice(state.page * PAGE_ROWS, (state.page + 1) * PAGE_ROWS)) {
        const rec = ix.it.get(it[I.id]);
        const w = ix.wf.get(it[I.wf]);
        const spec = rec.gens.filter((g) => g[G.kind] === 'spec').length;
        let best = null;
        for (const c of rec.cands)
          if (c.row[C.speedup] !== null && (best === null || c.row[C.speedup] > best[C.speedup]))
            best = c.row;
        const dur = it[I.end] === null ? null : it[I.end] - it[I.start];
        const row = el('tr', { class: 'it' + (it[I.reason] === 'early' ? ' early' : ''),
          'data-iteration': String(it[I.id]),
          onclick: () => { if (state.open.has(it[I.id])) state.open.delete(it[I.id]);
                           else state.open.add(it[I.id]); renderTable(); } },
          el('td', { text: w ? w.row[W.task] : '?' }), el('td', { class: 'num', text: it[I.num] }),
          el('td', { class: 'num', text: fmt(it[I.start], 1) }), el('td', { class: 'num', text: fmt(dur, 1) }),
          el('td', { text: it[I.reason] === null ? 'running' : it[I.reason] }),
          el('td', { class: 'num', text: `${rec.gens.length - spec} + ${spec} forks` }),
          el('td', { class: 'num', text: rec.cands.length }),
          el('td', { class: 'num', text: figureText(best) }));
        body.push(row);
        if (state.open.has(it[I.id])) body.push(candRows(rec));
      }
      table.replaceChildren(...body);
      table.dataset.rows = String(all.length);
    }
    renderTable();
    return box;
  }

  function candRows(rec) {
    const t = el('table', null, el('tr', null, ...['kernel', 'from', 'validation', 'profile',
      'speedup', 'message', ''].map((h) => el('th', { text: h }))));
    for (const c of rec.cands) {
      // The latest evaluation of a phase that says something about the
      // kernel (an aborted one, withdrawn at an iteration's end, does not).
      const said = (ph) => {
        const es = c.evals.filter((e) => e[E.phase] === ph);
        return es.filter((e) => e[E.status] !== 'aborted' && e[E.status] !== 'infra_error').pop() || es.pop();
      };
      const v = said('validate'), p = said('profile');
      const last = p || v;
      t.append(el('tr', null, el('td', { text: '#' + c.row[C.id] }),
        el('td', { text: c.copy ? c.kind + ', written again' : c.kind }),
        el('td', null, statusSpan(v)), el('td', null, statusSpan(p)),
        el('td', { class: 'num', text: p && p[E.speedup] !== null ? fmt(p[E.speedup]) + 'x' : '-' }),
        el('td', { text: last && last[E.msg] ? last[E.msg] : '' }),
        el('td', null, el('button', { text: 'source and profile', 'data-candidate': String(c.row[C.id]),
          onclick: (ev) => { ev.stopPropagation(); showCandidate(c.row[C.id]); } }))));
    }
    if (!rec.cands.length) t.append(el('tr', null, el('td', { colSpan: 7, class: 'muted', text: 'no kernel' })));
    return el('tr', { class: 'sub' }, el('td', { colSpan: 8 }, t));
  }

  async function candidateData(id) {
    if (live) {
      const r = await fetch(`candidate/${id}.json`, { cache: 'no-store' });
      if (!r.ok) throw new Error(`candidate ${id}: HTTP ${r.status}`);
      return r.json();
    }
    if (!state.details) {
      const blk = document.getElementById('sg-details');
      state.details = blk ? JSON.parse(blk.textContent) : {};
    }
    const c = state.details[String(id)];
    if (!c) throw new Error(`candidate ${id}: not in this report`);
    return c;
  }

  async function showCandidate(id) {
    let box = document.getElementById('details');
    if (!box) {
      box = el('section', { id: 'details' });
      document.getElementById('iterations').before(box);
    }
    box.replaceChildren(el('p', { text: `loading kernel #${id}...` }));
    try {
      const c = await candidateData(id);
      const evs = el('table', null, el('tr', null, ...['evaluation', 'phase', 'status', 'device',
        'speedup', 'reference ms', 'kernel ms'].map((h) => el('th', { text: h }))));
      const more = [];
      for (const e of c.evaluations) {
        evs.append(el('tr', null, el('td', { text: '#' + e.id }), el('td', { text: e.phase }),
          el('td', { text: e.status === null ? 'running' : e.status }), el('td', { text: e.device || '-' }),
          el('td', { class: 'num', text: fmt(e.speedup) }), el('td', { class: 'num', text: fmt(e.ref_ms, 4) }),
          el('td', { class: 'num', text: fmt(e.cand_ms, 4) })));
        const what = `evaluation #${e.id} (${e.phase}, ${e.status === null ? 'running' : e.status})`;
        if (e.message) more.push(el('h3', { text: what + ': message' }), el('pre', { class: 'msg', text: e.message }));
        if (e.metrics) more.push(el('h3', { text: what + ': profile' }),
          el('pre', { class: 'msg', text: JSON.stringify(e.metrics, null, 2) }));
      }
      box.replaceChildren(el('h2', null, `Kernel #${c.id} `,
        el('button', { text: 'close', onclick: () => box.remove() })),
        el('pre', { id: 'source', text: c.source }), evs, ...more);
      box.dataset.candidate = String(c.id);
    } catch (err) {
      box.replaceChildren(el('p', { class: 'st-bad', text: String(err.message || err) }));
    }
  }

  // ---- layouts ---------------------------------------------------------------

  function cards(items) {
    return el('div', { class: 'cards' }, ...items.map(([v, l]) => el('div', { class: 'card' },
      el('b', { text: v }), el('span', { text: l }))));
  }

  function runSkeleton(d) {
    app.replaceChildren(
      el('div', { id: 'cards' }),
      el('h2', { text: 'Best speedup (the paper\'s Figure 13)' }),
      el('div', { class: 'grid' },
        figure('speedup-time', 'Best speedup over time', 'triangles: iterations ended early'),
        figure('speedup-iter', 'Best speedup over iterations', 'triangles: iterations ended early')),
      el('h2', { text: 'Requests and devices (Figures 4 and 12)' }),
      el('div', { class: 'grid' },
        figure('inflight', 'Requests in flight', 'generation, validation and profiling'),
        figure('util', 'Device utilization by phase', 'dashed lines: the pool re-split')),
      el('h2', { text: 'Per task (Figures 10 and 11)' }),
      el('div', { class: 'grid' },
        figure('e2e', 'End-to-end time per task'),
        figure('feedback', 'Profiling feedback per task'),
        figure('tokens', 'Tokens per task', 'cached and not')),
      el('div', { id: 'table' }),
      el('details', null, el('summary', { text: 'configuration' }), el('pre', { id: 'config' })));
    state.skeleton = 'run';
  }

  function renderRun(d) {
    if (state.skeleton !== 'run') runSkeleton(d);
    const ti = performance.now();
    const ix = index(d);
    document.body.dataset.indexMs = (performance.now() - ti).toFixed(0);
    const tok = [0, 0, 0];
    for (const w of ix.wf.values()) w.tokens.forEach((v, k) => { tok[k] += v; });
    let busy = 0;
    for (const iv of d.device_intervals) busy += iv[D.end] - iv[D.start];
    const util = d.run.e2e_s > 0 ? busy / (Math.max(1, d.run.devices) * d.run.e2e_s) : 0;
    const early = d.iterations.filter((it) => it[I.reason] === 'early').length;
    document.getElementById('title').textContent = `specgen run ${d.run.dir}`;
    document.getElementById('subtitle').replaceChildren(
      live ? el('span', { class: 'live-dot' }) : '',
      `${d.run.ended ? 'finished' : live ? 'running (live)' : 'not finished'}; ` +
      `${d.workflows.length} task(s) on ${d.run.devices} device(s)`);
    document.getElementById('cards').replaceChildren(cards([
      [fmt(d.run.e2e_s, 1) + ' s', 'end to end'],
      [(100 * util).toFixed(0) + '%', 'device utilization'],
      [String(d.iterations.filter((it) => it[I.end] !== null).length), 'iterations ended'],
      [String(early), 'early terminations'],
      [String(d.generations.filter((g) => g[G.kind] === 'spec').length), 'speculative forks'],
      [String(tok[0] + tok[1] + tok[2]), 'tokens (' + tok[0] + ' cached)']]));
    const steps = {};
    const timed = (name, f) => { const t = performance.now(); f(); steps[name] = Math.round(performance.now() - t); };
    timed('speedup', () => speedupCharts(d, ix));
    timed('inflight', () => inflightChart(d));
    timed('util', () => utilChart(d));
    timed('bars', () => barCharts(d, ix));
    timed('table', () => document.getElementById('table').replaceChildren(iterTable(d, ix)));
    document.body.dataset.steps = JSON.stringify(steps);
    document.getElementById('config').textContent = JSON.stringify(d.run.config, null, 2);
  }

  // ---- a sim campaign --------------------------------------------------------

  function renderSim(d) {
    const paper = d.paper || {};
    app.replaceChildren();
    document.getElementById('title').textContent = 'specgen sim campaigns';
    document.getElementById('subtitle').textContent =
      d.campaigns.map((c) => c.file).join(', ') + '. Paper numbers: ' + (paper.source || '');
    const presets = [...new Set(d.campaigns.map((c) => c.preset))];
    presets.forEach((preset, pi) => {
      const group = d.campaigns.filter((c) => c.preset === preset);
      const abl = group.reduce((a, c) => (c.configs.length > a.configs.length ? c : a), group[0]);
      const pa = (paper.ablation || {})[preset] || {};
      const pt = (paper.termination || {})[preset] || {};
      const num = (v, dgt) => el('td', { class: 'num', text: fmt(v, dgt) });
      const pnum = (v, dgt) => el('td', { class: 'num paper', text: v === undefined ? '-' : fmt(v, dgt) });
      const get = (o, k) => (o ? o[k] : undefined);
      app.append(el('h2', { text: `Ablation: ${preset}, seed ${abl.seed}, termination ` +
        `${abl.params.termination} (${abl.file})` }));
      const t = el('table', { class: 'ablation', 'data-rows': String(abl.configs.length) },
        el('tr', null, ...['configuration', 'e2e (s)', 'e2e speedup', 'paper', 'profiling feedback',
          'paper (per task)', 'utilization', 'paper', 'early terminations', 'token ratio',
          'best kernel', 'paper'].map((h) => el('th', { class: h === 'configuration' ? '' : 'num', text: h }))));
      for (const c of abl.configs)
        t.append(el('tr', null, el('td', { text: c.name }), num(c.e2e_s, 0),
          num(c.e2e_speedup_vs_baseline), pnum(get(pa.e2e_speedup, c.name)),
          num(c.profiling_feedback, 0), pnum(get(pa.profiling_feedback_per_task, c.name), 1),
          num(100 * c.utilization, 1), pnum(get(pa.utilization, c.name) === undefined ? undefined
            : 100 * pa.utilization[c.name], 1),
          num(c.early_terminations, 0), num(c.tokens_ratio_vs_baseline),
          num(c.best_speedup_geomean), pnum(get(pa.best_speedup_geomean, c.name))));
      app.append(t);
      const terms = group.filter((c) => c.params && c.params.termination);
      app.append(el('h2', { text: `Termination criteria: ${preset} (the "full" configuration; ` +
        'paper: Table 9)' }));
      const tt = el('table', { class: 'termination', 'data-rows': String(terms.length) },
        el('tr', null, ...['criterion', 'e2e (s)', 'e2e speedup', 'paper', 'profiling feedback',
          'paper (additional)', 'best kernel', 'paper', 'token ratio', 'paper',
          'early per 100 iterations', 'paper'].map((h) => el('th', { class: h === 'criterion' ? '' : 'num', text: h }))));
      for (const c of terms) {
        const full = c.configs.find((x) => x.name === 'full') || c.configs[c.configs.length - 1];
        const crit = c.params.termination;
        const p = pt[crit];
        tt.append(el('tr', null, el('td', { text: crit }), num(full.e2e_s, 0),
          num(full.e2e_speedup_vs_baseline), pnum(get(p, 'e2e_speedup')),
          num(full.profiling_feedback, 0), pnum(get(p, 'additional_feedback'), 1),
          num(full.best_speedup_geomean), pnum(get(p, 'kernel_speedup')),
          num(full.tokens_ratio_vs_baseline), pnum(get(p, 'token_ratio')),
          num(full.iterations ? (100 * full.early_terminations) / full.iterations : null, 1),
          pnum(get(p, 'early_per_100'), 1)));
      }
      app.append(tt);
      const labels = abl.configs.map((c) => c.name);
      const id = (s) => `sim${pi}-${s}`;
      app.append(el('div', { class: 'grid' },
        figure(id('e2e'), 'End-to-end time by configuration', '(s)'),
        figure(id('feedback'), 'Profiling feedback by configuration'),
        figure(id('util'), 'Utilization by configuration', 'validation and profiling, %')));
      const bars = (datasets, stacked) => ({ type: 'bar', data: { labels, datasets },
        options: { plugins: { legend: { display: stacked } },
          scales: { x: { stacked }, y: { stacked, beginAtZero: true } } } });
      draw(id('e2e'), bars([{ label: 'e2e (s)', data: abl.configs.map((c) => c.e2e_s), backgroundColor: '#0969da' }], false));
      draw(id('feedback'), bars([{ label: 'feedback', data: abl.configs.map((c) => c.profiling_feedback), backgroundColor: '#1a7f37' }], false));
      draw(id('util'), bars([
        { label: 'validation', data: abl.configs.map((c) => 100 * c.utilization_validation), backgroundColor: '#bf8700', stack: 'u' },
        { label: 'profiling', data: abl.configs.map((c) => 100 * c.utilization_profiling), backgroundColor: '#1a7f37', stack: 'u' }], true));
    });
  }

  // ---- start -----------------------------------------------------------------

  function render(d) {
    const t0 = performance.now();
    state.data = d;
    if (d.kind === 'sim') renderSim(d);
    else renderRun(d);
    document.body.dataset.renderMs = (performance.now() - t0).toFixed(1);
    document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    document.body.dataset.ready = '1';
    // Milliseconds from navigation to the first drawn page (the benchmark).
    if (!document.body.dataset.readyMs) document.body.dataset.readyMs = performance.now().toFixed(0);
  }

  function fail(msg) {
    document.body.dataset.error = msg;
    app.replaceChildren(el('p', { class: 'st-bad', text: msg }));
  }

  async function poll() {
    try {
      const r = await fetch('data.json', { cache: 'no-store' });
      const d = await r.json();
      if (!r.ok) {
        document.getElementById('subtitle').textContent = 'waiting: ' + (d.error || r.status);
      } else if (d.version !== state.version) {
        state.version = d.version;
        document.body.dataset.version = String(d.version);
        render(d);
      }
    } catch (err) {
      document.getElementById('subtitle').textContent = 'dashboard unreachable: ' + err;
    }
    setTimeout(poll, 1000);
  }

  try {
    if (live) poll();
    else render(JSON.parse(document.getElementById('sg-data').textContent));
  } catch (err) {
    fail('cannot draw this report: ' + (err && err.message ? err.message : err));
  }
})();
